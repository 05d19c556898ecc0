"""The reference data loads, carries its provenance, keeps printed cells and refuses inconsistent edits."""
import json
import math
import shutil

import pandas as pd
import pytest

from osbench_analysis.reference import studies as reference
from osbench_analysis.store.schema import ARCH_CLASSES


@pytest.fixture(scope="module")
def ref():
    return reference.load_reference()


@pytest.fixture
def data_copy(tmp_path):
    dst = tmp_path / "reference"
    shutil.copytree(reference.default_reference_dir(), dst)
    return dst


def _edit_csv(path, metric, system, **changes):
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    hit = (df["metric_id"] == metric) & (df["system_id"] == system)
    assert hit.sum() == 1
    for col, value in changes.items():
        df.loc[hit, col] = value
    df.to_csv(path, index=False)


def test_loader_returns_every_value_with_provenance(ref):
    assert list(ref.columns) == reference.REFERENCE_COLUMNS
    for col in ["citation", "seed_file", "os", "hardware", "metric_as_published", "system_as_published",
                "cell_as_published", "unit", "unit_label", "semantics", "primitive"]:
        assert (ref[col].astype(str).str.strip() != "").all(), col
    assert set(ref["arch_class"]) <= set(ARCH_CLASSES)
    assert not ref.duplicated(["source_id", "table_id", "metric_id", "system_id"]).any()
    # all five sources contribute tables; four of them numbers
    assert set(ref["source_id"]) == set(reference.load_sources()) - {"osbench_blog"}


def test_every_metric_declares_unit_semantics_and_direction():
    for source_id, spec in reference.load_table_specs():
        for mid, m in spec.get("metrics", {}).items():
            assert m["unit"] in reference.UNITS, (source_id, mid)
            assert m["semantics"].strip(), (source_id, mid)
            assert m["higher_is_better"] in (True, False) or m.get("higher_is_better_note"), (source_id, mid)
            # a metric with a per-operation form must say what the operation is
            if m["convertible"] and reference.UNITS[m["unit"]][1] not in ("kb_to_mb", "identity_mb"):
                assert m.get("op"), (source_id, mid)


def test_costs_are_lower_better_and_rates_higher_better():
    lower = {"us_per_op", "us_total", "s_total"}
    higher = {"count_per_window", "loops_per_s", "loops_per_min", "requests_per_s", "mails_per_s",
              "jobs_per_min", "KB_per_s", "MB_per_s"}
    for source_id, spec in reference.load_table_specs():
        for mid, m in spec.get("metrics", {}).items():
            if m["unit"] in lower:
                assert m["higher_is_better"] is False, (source_id, mid)
            elif m["unit"] in higher:
                assert m["higher_is_better"] is True, (source_id, mid)


@pytest.mark.parametrize("cell, value, unit, status", [
    ("15,333", 15333.0, None, "number"),
    ("954 660", 954660.0, None, "number"),
    ("3 139 256", 3139256.0, None, "number"),
    ("0.1061", 0.1061, None, "number"),
    ("3129.2 reqs/sec", 3129.2, "requests_per_s", "number"),
    ("5.3%", 5.3, "percent", "number"),
    ("312 MB", 312.0, "MB", "number"),
    ("358.7 lmp", 358.7, "loops_per_min", "number"),
    ("1944025.1 loop/s", 1944025.1, "loops_per_s", "number"),
    ("2276.84.00000", math.nan, None, "malformed"),
    ("None", math.nan, None, "published_na"),
    ("12 parsecs", math.nan, None, "malformed"),
])
def test_parse_cell_reads_printed_numbers(cell, value, unit, status):
    parsed = reference.parse_cell(cell)
    assert parsed.status == status
    assert parsed.unit == unit
    assert (math.isnan(parsed.value) and math.isnan(value)) or parsed.value == pytest.approx(value)


def test_duplicated_af_unix_row_is_kept_as_printed_and_set_na(ref):
    lm = ref[(ref["source_id"] == "papadimitriou_macos_freebsd") & (ref["table_id"] == "table2_lmbench")]
    unix = lm[lm["metric_id"] == "af_unix_bandwidth"].set_index("system_id")
    tcp = lm[lm["metric_id"] == "tcp_bandwidth"].set_index("system_id")
    na = unix[unix["correction"] == "set_na"]
    assert len(na) == 4 and na["value"].isna().all() and (na["note"] != "").all()
    # the NA'd cells are exactly the ones that repeat the TCP row (the malformed one up to its extra '.00000')
    for system_id, row in na.iterrows():
        printed = row["cell_as_published"]
        assert printed == tcp.loc[system_id, "cell_as_published"] or printed.startswith("2276.84.")
    assert unix.loc["freebsd_hppc", "cell_as_published"] == "2276.84.00000"
    kept = unix.loc["linux_imac"]
    assert kept["correction"] == "" and kept["value"] == pytest.approx(14107.05) != tcp.loc["linux_imac", "value"]


def test_published_na_cells_keep_their_text(ref):
    minix = ref[(ref["table_id"] == "table2_microseconds") & (ref["system_id"] == "minix3")]
    nones = minix[minix["cell_as_published"] == "None"]
    assert set(nones["metric_id"]) == {"syscall_loop_1_iter", "syscall_loop_10_iter", "syscall_loop_100_iter"}
    assert nones["value"].isna().all() and (nones["note"] != "").all()


def test_mysql_totals_check_finds_the_freebsd_sum_mismatch(ref):
    for table_id in ("mysql_linux", "mysql_freebsd"):
        csv = pd.read_csv(reference.default_reference_dir() / "bar_freebsd_linux" / f"{table_id}.csv", dtype=str)
        parts = csv[csv["metric_id"] != "totals"]["cell_as_published"].astype(int).sum()
        total = int(csv.loc[csv["metric_id"] == "totals", "cell_as_published"].iloc[0])
        spec = json.loads((reference.default_reference_dir() / "bar_freebsd_linux" / f"{table_id}.json").read_text())
        check = spec["totals_checks"][0]
        m = reference.totals_mismatches(ref, "bar_freebsd_linux", table_id, check["total_metric"],
                                        check["part_metrics"], check["rounding_per_part"])
        assert m["difference"].iloc[0] == parts - total
    issues = reference.source_issues(ref=ref)
    totals = issues[issues["kind"] == "totals"]
    assert list(totals["table_id"]) == ["mysql_freebsd"]
    assert "1826" in totals["what"].iloc[0] and "1832" in totals["what"].iloc[0]


def test_capture_summary_counts_match_the_files(ref):
    summary = reference.capture_summary(ref=ref)
    assert summary["n_values"].sum() == len(ref)
    for _, row in summary.iterrows():
        csv = reference.default_reference_dir() / row["source_id"] / f"{row['table_id']}.csv"
        expected = len(pd.read_csv(csv)) if csv.is_file() else 0
        assert row["n_values"] == expected


def test_malformed_cell_without_correction_is_refused(data_copy):
    csv = data_copy / "papadimitriou_macos_freebsd" / "table2_lmbench.csv"
    _edit_csv(csv, "af_unix_bandwidth", "freebsd_hppc", correction="", note="")
    with pytest.raises(reference.ReferenceDataError, match=r"2276\.84\.00000.*cannot be read"):
        reference.load_reference(data_copy)


def test_correction_needs_a_note(data_copy):
    csv = data_copy / "mcgarry_netbsd_freebsd" / "table1_core.csv"
    _edit_csv(csv, "context_switch", "netbsd_2_0", correction="corrected", value_corrected="2.5", note="")
    with pytest.raises(reference.ReferenceDataError, match="needs a note"):
        reference.load_reference(data_copy)


def test_corrected_value_is_used_and_published_one_kept(data_copy):
    csv = data_copy / "mcgarry_netbsd_freebsd" / "table1_core.csv"
    _edit_csv(csv, "context_switch", "netbsd_2_0", correction="corrected", value_corrected="2.5", note="test")
    ref = reference.load_reference(data_copy)
    row = ref[(ref["metric_id"] == "context_switch") & (ref["system_id"] == "netbsd_2_0")].iloc[0]
    assert row["value_published"] == 2.64 and row["value"] == 2.5 and row["us_per_op"] == 2.5


def test_cell_unit_must_match_metric_unit(data_copy):
    csv = data_copy / "miao_minix3_linux" / "table1_unixbench.csv"
    _edit_csv(csv, "syscall_overhead", "linux_fc6", cell_as_published="521107.6 KBps")
    with pytest.raises(reference.ReferenceDataError, match="KB_per_s.*loops_per_s"):
        reference.load_reference(data_copy)


@pytest.mark.parametrize("column, bad", [("system_id", "netbsd_9"), ("metric_id", "thread_teleport")])
def test_unknown_metric_and_system_are_refused(data_copy, column, bad):
    csv = data_copy / "mcgarry_netbsd_freebsd" / "table2_threads.csv"
    _edit_csv(csv, "thread_lifecycle", "netbsd_2_0", **{column: bad})
    with pytest.raises(reference.ReferenceDataError, match=bad):
        reference.load_reference(data_copy)


def test_convertible_metric_without_window_is_refused(data_copy):
    path = data_copy / "papadimitriou_macos_freebsd" / "table1_unixbench.json"
    spec = json.loads(path.read_text())
    del spec["metrics"]["execl_20"]["window_s"]
    path.write_text(json.dumps(spec))
    with pytest.raises(reference.ReferenceDataError, match="execl_20.*window_s"):
        reference.load_reference(data_copy)


def test_system_arch_class_must_be_known(data_copy):
    path = data_copy / "miao_minix3_linux" / "source.json"
    src = json.loads(path.read_text())
    src["systems"][1]["arch_class"] = "exokernel"
    path.write_text(json.dumps(src))
    with pytest.raises(reference.ReferenceDataError, match="exokernel"):
        reference.load_sources(data_copy)


def test_a_study_without_a_usable_bibkey_is_refused(tmp_path):
    import json
    import shutil

    dst = tmp_path / "reference"
    shutil.copytree(reference.default_reference_dir(), dst)
    path = dst / "bar_freebsd_linux" / "source.json"
    src = json.loads(path.read_text(encoding="utf-8"))
    src["bibkey"] = "bar 2001"
    path.write_text(json.dumps(src), encoding="utf-8")
    with pytest.raises(reference.ReferenceDataError, match="BibTeX key"):
        reference.load_sources(dst)
    del src["bibkey"]
    path.write_text(json.dumps(src), encoding="utf-8")
    with pytest.raises(reference.ReferenceDataError, match="bibkey"):
        reference.load_sources(dst)
