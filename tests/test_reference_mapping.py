"""Every published metric is mapped to a probe of ours (or explicitly to none) with the method difference spelled out."""
import shutil

import pandas as pd
import pytest

from osbench_analysis import reference
from osbench_analysis.reference_compare import PROBE_PRIMITIVE
from osbench_analysis.registry import DEFAULT_PROBES


@pytest.fixture(scope="module")
def mapping():
    return reference.load_probe_mapping()


def _metrics():
    return {(s, spec["table_id"], m): meta for s, spec in reference.load_table_specs() for m, meta in spec.get("metrics", {}).items()}


def test_every_metric_has_exactly_one_mapping_row(mapping):
    keys = list(zip(mapping["source_id"], mapping["table_id"], mapping["metric_id"]))
    assert len(keys) == len(set(keys))
    assert set(keys) == set(_metrics())


def test_exact_matches_measure_the_same_primitive(mapping):
    metrics = _metrics()
    for _, r in mapping[mapping["match"] == "exact"].iterrows():
        assert metrics[(r["source_id"], r["table_id"], r["metric_id"])]["primitive"] == PROBE_PRIMITIVE[r["probe"]], r["metric_id"]


def test_mapped_convertible_metrics_say_how_many_of_our_ops_make_one_of_theirs(mapping):
    metrics = _metrics()
    for _, r in mapping[mapping["match"] != "none"].iterrows():
        m = metrics[(r["source_id"], r["table_id"], r["metric_id"])]
        if m["convertible"] and r["source_id"] != "osbench_blog":
            assert r["our_ops_per_published_op"] > 0, r["metric_id"]


def test_every_probe_of_ours_has_a_primitive_and_a_published_counterpart(mapping):
    assert set(PROBE_PRIMITIVE) == set(DEFAULT_PROBES)
    assert set(mapping.loc[mapping["match"] != "none", "probe"]) == set(DEFAULT_PROBES)


@pytest.mark.parametrize("table_id, metric_id, probe, match", [
    ("table2_lmbench", "process_fork_exit", "fork_exit", "exact"),
    ("table1_unixbench", "syscall_20", "syscall_mix", "exact"),
    ("figures_results", "create_files", "file_create_delete", "close"),
    ("table1_core", "context_switch", "pipe_pingpong", "close"),
])
def test_examples_from_the_issue(mapping, table_id, metric_id, probe, match):
    r = mapping[(mapping["table_id"] == table_id) & (mapping["metric_id"] == metric_id)].iloc[0]
    assert (r["probe"], r["match"]) == (probe, match)
    assert len(r["method_difference"]) > 40


def test_unknown_probe_is_refused(tmp_path):
    dst = tmp_path / "reference"
    shutil.copytree(reference.default_reference_dir(), dst)
    df = pd.read_csv(dst / "probe_mapping.csv", dtype=str, keep_default_na=False)
    df.loc[df["metric_id"] == "spawn_20", "probe"] = "fork_bomb"
    df.to_csv(dst / "probe_mapping.csv", index=False)
    with pytest.raises(reference.ReferenceDataError, match="fork_bomb"):
        reference.load_probe_mapping(dst)


def test_none_match_with_a_probe_is_refused(tmp_path):
    dst = tmp_path / "reference"
    shutil.copytree(reference.default_reference_dir(), dst)
    df = pd.read_csv(dst / "probe_mapping.csv", dtype=str, keep_default_na=False)
    df.loc[df["metric_id"] == "hanoi_20", "probe"] = "null_syscall"
    df.to_csv(dst / "probe_mapping.csv", index=False)
    with pytest.raises(reference.ReferenceDataError, match="hanoi_20"):
        reference.load_probe_mapping(dst)
