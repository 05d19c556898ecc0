"""Damage is named, not hidden (issue 31 part B; reliability review 2026-11-26, section 3): every folder of a
campaigns root is listed with its state, a damaged campaign is left out of an analysis with a warning naming
it and never blocks the others, and the manifest's record of the samples is checked against the file."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import warnings

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from osbench_analysis import analysis
from osbench_analysis.measure import journal
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import inventory, synthetic


def _reseal(d):
    """What a forger does after editing a file: recompute SHA256SUMS (the unkeyed seal)."""
    h = lambda n: hashlib.sha256((d / n).read_bytes()).hexdigest()  # noqa: E731
    (d / store.SEAL_FILE).write_text("".join(f"{h(n)}  {n}\n" for n in (store.MANIFEST_FILE, store.SAMPLES_FILE)))


def _writable(d):
    os.chmod(d, 0o755)
    for f in d.iterdir():
        os.chmod(f, 0o644)


def _halve_samples(d):
    t = pq.read_table(d / store.SAMPLES_FILE)
    i = t.schema.get_field_index("per_op_ns")
    pq.write_table(t.set_column(i, t.schema.field(i), pc.multiply(t["per_op_ns"], 0.5)), d / store.SAMPLES_FILE,
                   compression="zstd")


# each tampering of the review's section 3 that was not named, done to campaign "t" in a root of its own
def t4_seal_deleted(d):
    (d / store.SEAL_FILE).unlink()


def t5_manifest_deleted(d):
    (d / store.MANIFEST_FILE).unlink()


def t6_file_added(d):
    (d / "extra.csv").write_text("x\n")


def t9_samples_rewritten_seal_recomputed(d):
    _halve_samples(d)
    _reseal(d)


def t13_manifest_not_json_resealed(d):
    with open(d / store.MANIFEST_FILE, "a") as f:
        f.write("{{{")
    _reseal(d)


def t14_other_manifest_resealed(d):
    m = json.loads((d / store.MANIFEST_FILE).read_text())
    m["campaign_id"] = "other"
    (d / store.MANIFEST_FILE).write_text(json.dumps(m))
    _reseal(d)


TAMPERING = [t4_seal_deleted, t5_manifest_deleted, t6_file_added, t9_samples_rewritten_seal_recomputed,
             t13_manifest_not_json_resealed, t14_other_manifest_resealed]


@pytest.fixture(scope="module")
def template():
    return synthetic.template()


def _root_with(tmp_path, template, *ids):
    root = tmp_path / "root"
    for i, cid in enumerate(ids):
        synthetic.write_synthetic(root, cid, base=template, seed=i)
    return root


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
@pytest.mark.parametrize("tamper", TAMPERING, ids=[t.__name__ for t in TAMPERING])
def test_a_tampered_campaign_is_named_in_list_and_left_out_of_the_catalog_visibly(tmp_path, template, tamper):
    root = _root_with(tmp_path, template, "good", "t")
    _writable(root / "t")
    tamper(root / "t")
    table = inventory.inventory(root)
    states = dict(zip(table["folder"], table["state"]))
    assert states == {"good": "sealed", "t": "damaged"}
    assert table.set_index("folder").loc["t", "why"]    # and why
    if tamper is t9_samples_rewritten_seal_recomputed:   # only hashing tells: the catalog does not hash
        with pytest.warns(store.DamagedCampaign, match="'t' left out"):
            assert not store.intact("t", root)
    else:
        with pytest.warns(store.DamagedCampaign, match="'t' left out"):
            cat = store.catalog(root)                    # T13: one bad manifest no longer blocks the root
        assert list(cat["campaign_id"]) == ["good"]
    with pytest.raises(store.CampaignCorrupted):
        store.load_campaign("t", root)


def test_t9_samples_replaced_with_the_seal_recomputed_are_refused(tmp_path, template):
    root = _root_with(tmp_path, template, "t9")
    _writable(root / "t9")
    t9_samples_rewritten_seal_recomputed(root / "t9")
    with pytest.raises(store.CampaignCorrupted, match="is not the file its manifest records"):
        store.load_campaign("t9", root)


def test_renamed_and_symlinked_folders_are_named_not_contradictory(tmp_path, template):
    root = _root_with(tmp_path, template, "a", "b")
    (root / "a").rename(root / "a-renamed")                           # T11
    (root / "link").symlink_to(root / "b")                            # T8
    states = inventory.inventory(root).set_index("folder")
    assert states.loc["a-renamed", "state"] == "damaged" and "'a'" in states.loc["a-renamed", "why"]
    assert states.loc["link", "state"] == "damaged" and "symlink" in states.loc["link", "why"]
    assert states.loc["b", "state"] == "sealed"
    with pytest.warns(store.DamagedCampaign):
        assert list(store.catalog(root)["campaign_id"]) == ["b"]      # b once, not twice
    with pytest.raises(store.CampaignCorrupted, match="symlink"):
        store.load_campaign("link", root)


def test_list_names_interrupted_half_written_and_foreign_entries(tmp_path, template):
    root = _root_with(tmp_path, template, "ok")
    journal.Journal.create(root, "stopped", {"config": {}, "campaign_ids": ["stopped"], "owner": "1.None"})
    (root / ".tmp-x-999999.1").mkdir()
    (root / "notes.txt").write_text("mine")
    table = inventory.inventory(root).set_index("folder")
    assert table.loc["ok", "state"] == "sealed" and table.loc["ok", "signature"] == "unsigned"
    assert table.loc[".partial-stopped", "state"] == "interrupted"
    assert "osbench discard stopped" in table.loc[".partial-stopped", "why"]
    assert table.loc[".tmp-x-999999.1", "state"] == "left behind"
    assert table.loc["notes.txt", "state"] == "foreign"


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_osbench_list_shows_every_folder_with_its_state(tmp_path, template):
    root = _root_with(tmp_path, template, "ok", "bad")
    _writable(root / "bad")
    t6_file_added(root / "bad")
    out = subprocess.run([sys.executable, "-m", "osbench_analysis.cli", "list", "--root", str(root)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr          # issue 41: damage is an exit code a script can see
    assert "sealed" in out.stdout and "damaged" in out.stdout and "extra.csv" in out.stdout
    assert out.stderr.strip().splitlines()[-1].startswith("1 folder(s) damaged: bad")


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_damaged_newest_or_older_campaign_never_blocks_the_analysis_of_the_others(tmp_path, template):
    """Review: a damaged *older* campaign (pooled by default) blocked the analysis of a newer intact one;
    a damaged newest campaign blocked the default analysis.  Both are now left out with a warning."""
    root = _root_with(tmp_path, template, "older", "newer")
    for d in ("older",):
        _writable(root / d)
        p = root / d / store.SAMPLES_FILE
        b = bytearray(p.read_bytes())
        b[len(b) // 2] ^= 1
        p.write_bytes(bytes(b))
    kw = dict(probes=["null_syscall"], n_resamples=200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = analysis.analyze(["newer"], root, **kw)
    assert result.campaign_ids == ["newer"]
    assert any(issubclass(w.category, store.DamagedCampaign) and "'older'" in str(w.message) for w in caught)
    # the newest damaged: the default analysis falls back to the intact one, and says so
    shutil.rmtree(root / "older")
    synthetic.write_synthetic(root, "zz-newest", base=template, seed=5)
    _writable(root / "zz-newest")
    (root / "zz-newest" / "extra.csv").write_text("x")
    with pytest.warns(store.DamagedCampaign, match="zz-newest"):
        result = analysis.analyze(None, root, pool=False, **kw)
    assert result.campaign_ids == ["newer"]
