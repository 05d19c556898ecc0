"""Sealed campaigns: atomic, complete, never overwritten, corruption detected."""
import dataclasses
import json
import os
import shutil

import pytest

from osbench_analysis.worker import launch
from osbench_analysis.store import records
from osbench_analysis.measure import runner
from osbench_analysis.store import campaigns as store
from osbench_analysis.store.schema import SAMPLE_COLUMNS


def test_campaign_is_sealed_with_checksums_and_host_metadata(tiny_campaign):
    c = tiny_campaign
    files = sorted(os.listdir(c.path))
    assert files == sorted([store.MANIFEST_FILE, store.SAMPLES_FILE, store.SEAL_FILE])
    m = c.manifest
    assert m.schema_version == records.MANIFEST_VERSION
    for key in ("kernel_release", "cpu_model", "clocksource", "virtualization", "mitigations", "memory_bytes"):
        assert key in m.host
    assert m.host["probes"]["source_sha256"] == m.host["probes"]["source_sha256_now"]
    assert m.config["runs"] == 2 and m.environment == "native" and m.arch_class == "monolithic"
    # facts seen by the worker itself: natively they agree with the host's view
    assert m.environment_facts["kernel_release"] == m.host["kernel_release"]
    assert m.environment_facts["cpus_allowed"] == [sorted(os.sched_getaffinity(0))[0]]
    assert list(c.samples.columns) == list(SAMPLE_COLUMNS)
    ok = c.samples[~c.samples["warmup"]]
    assert (ok.groupby(["probe", "placement", "run"]).size() == 3).all()
    assert (c.samples["work_done"] == c.samples["iterations"]).all()


def test_every_sample_records_its_placement(tiny_campaign):
    s = tiny_campaign.samples
    assert set(s.loc[s.probe == "pipe_pingpong", "placement"]) == {"same_cpu", "cross_cpu"}
    assert set(s.loc[s.probe == "null_syscall", "placement"]) == {"same_cpu"}  # no second party
    pinned = sorted(os.sched_getaffinity(0))[0]
    assert (s.loc[s.placement == "same_cpu", "cpu_start"] == pinned).all()


def test_crashed_worker_is_in_the_manifest(tiny_campaign):
    err = tiny_campaign.errors
    assert set(err["probe"]) == {"test_crash_segv"} and set(err["status"]) == {"crashed"}


def test_sealed_campaign_cannot_be_overwritten(tiny_campaign):
    root = tiny_campaign.path.parent
    cfg = runner.make_config("quick", output=str(root), campaign_id=tiny_campaign.id, probes=["null_syscall"])
    with pytest.raises(store.CampaignExists, match="never overwritten"):
        runner.run_campaign(cfg, progress=False)
    with pytest.raises(store.CampaignExists):
        store.write_campaign(root, tiny_campaign.id, tiny_campaign.samples, tiny_campaign.manifest)
    store.load_campaign(tiny_campaign.path)  # untouched


def _copy(c, tmp_path):
    dst = tmp_path / c.id
    shutil.copytree(c.path, dst)
    for f in dst.iterdir():
        f.chmod(0o644)
    return dst


@pytest.mark.parametrize("name", [store.SAMPLES_FILE, store.MANIFEST_FILE])
def test_a_flipped_byte_is_detected_on_load(tiny_campaign, tmp_path, name):
    dst = _copy(tiny_campaign, tmp_path)
    data = bytearray((dst / name).read_bytes())
    data[len(data) // 2] ^= 0x01
    (dst / name).write_bytes(bytes(data))
    with pytest.raises(store.CampaignCorrupted, match="does not match its seal"):
        store.load_campaign(dst)


def test_unsealed_campaigns_are_refused(tiny_campaign, tmp_path):
    dst = _copy(tiny_campaign, tmp_path)
    (dst / store.SEAL_FILE).unlink()
    with pytest.raises(store.CampaignCorrupted, match="not a sealed campaign"):
        store.load_campaign(dst)


def _reseal(dst):
    sums = "".join(f"{store._sha256(dst / n)}  {n}\n" for n in (store.MANIFEST_FILE, store.SAMPLES_FILE))
    (dst / store.SEAL_FILE).write_text(sums)


@pytest.mark.parametrize("change,message", [
    (lambda m: m.update(schema_version=99), "schema version 99"),
    (lambda m: m.update(colour="blue"), "undeclared fields"),
    (lambda m: m.pop("host"), "lacks fields"),
    (lambda m: m["runs"][0].update(status="sort of"), "run status must be one of"),
])
def test_sealed_campaigns_with_a_wrong_manifest_schema_are_refused(tiny_campaign, tmp_path, change, message):
    # a seal that matches does not make a manifest valid: the schema is checked too
    dst = _copy(tiny_campaign, tmp_path)
    m = json.loads((dst / store.MANIFEST_FILE).read_text())
    change(m)
    (dst / store.MANIFEST_FILE).write_text(json.dumps(m))
    _reseal(dst)
    with pytest.raises(store.CampaignCorrupted, match=message):
        store.load_campaign(dst)


def test_sealed_campaign_with_wrong_sample_columns_is_refused(tiny_campaign, tmp_path):
    import pyarrow.parquet as pq

    dst = _copy(tiny_campaign, tmp_path)
    table = pq.read_table(dst / store.SAMPLES_FILE).drop(["minflt"])
    pq.write_table(table, dst / store.SAMPLES_FILE)
    m = json.loads((dst / store.MANIFEST_FILE).read_text())   # the manifest's record follows (issue 31: T9)
    m["files"][store.SAMPLES_FILE]["sha256"] = store._sha256(dst / store.SAMPLES_FILE)
    (dst / store.MANIFEST_FILE).write_text(json.dumps(m))
    _reseal(dst)
    with pytest.raises(store.CampaignCorrupted, match="differ from the schema"):
        store.load_campaign(dst)


def test_catalog_lists_campaigns_but_not_temporary_folders(tiny_campaign, tmp_path):
    root = tmp_path / "campaigns"
    root.mkdir()
    shutil.copytree(tiny_campaign.path, root / tiny_campaign.id)
    (root / ".tmp-half-written-123").mkdir()
    cat = store.catalog(root)
    assert tiny_campaign.id in set(cat["campaign_id"])
    assert not cat["campaign_id"].str.startswith(".").any()
    row = cat.set_index("campaign_id").loc[tiny_campaign.id]
    assert row["n_samples"] == len(tiny_campaign.samples) and row["n_errors"] == 2


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_interrupted_campaign_leaves_no_campaign_and_no_probe_files(campaigns_root, tmp_path, monkeypatch):
    workdir = tmp_path / "work"
    workdir.mkdir()
    calls = []
    real = launch.run

    def interrupt_second(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(launch, "run", interrupt_second)
    cfg = runner.make_config("quick", output=str(campaigns_root), runs=1, batches=1, min_batch_ms=1.0, precision_target=0,
                             probes=["file_create_delete", "open_close"], variants={}, workdir=str(workdir))
    with pytest.raises(KeyboardInterrupt):
        runner.run_campaign(cfg, progress=False)
    # no campaign, only the hidden journal holding the one finished run
    assert [p.name[:9] for p in campaigns_root.iterdir()] == [".partial-"]
    assert store.catalog(campaigns_root).empty
    assert list(workdir.iterdir()) == []


def test_manifest_is_plain_json_that_sha256sum_can_check(tiny_campaign):
    import subprocess

    json.loads((tiny_campaign.path / store.MANIFEST_FILE).read_text())
    r = subprocess.run(["sha256sum", "-c", store.SEAL_FILE], cwd=tiny_campaign.path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_schema_column_is_documented():
    from pathlib import Path

    from osbench_analysis.store.schema import RUN_COLUMNS

    doc = (Path(__file__).resolve().parent.parent / "docs" / "campaign_format.md").read_text()
    manifest_fields = [f.name for f in dataclasses.fields(records.Manifest)]
    missing = [c for c in [*SAMPLE_COLUMNS, *RUN_COLUMNS, *manifest_fields] if f"| `{c}` |" not in doc]
    assert missing == []
