"""What the analysis keeps between calls (issue 33): what it derives from one sealed campaign, on disk
(store/values_cache.py) and the catalog of a campaigns root in memory (store.catalog)."""
import os
import shutil
import warnings

import pandas as pd
import pytest

from osbench_analysis.analysis import reproducibility
from osbench_analysis.hosts.identity import host_identity
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import synthetic, values_cache


@pytest.fixture(scope="module")
def base():
    return synthetic.template()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(values_cache.ENV_VAR, str(tmp_path / "cache"))
    return tmp_path / "cache" / values_cache.SUBDIR


def computed(cid, root) -> pd.DataFrame:
    c = store.load_campaign(cid, root)
    return reproducibility.campaign_values(c.samples.assign(host=host_identity(c.manifest.host).key))


def test_a_campaigns_values_are_kept_and_read_back_to_the_last_bit(tmp_path, cache, base, monkeypatch):
    root = tmp_path / "c"
    synthetic.write_synthetic(root, "s0", base, seed=1)
    first = values_cache.derived(reproducibility.campaign_values, "s0", root)
    assert len(list(cache.rglob("*.parquet"))) == 1
    expected = computed("s0", root)
    pd.testing.assert_frame_equal(first, expected, check_exact=True)
    monkeypatch.setattr(store, "load_campaign", lambda *a, **k: pytest.fail("the samples were read again"))
    pd.testing.assert_frame_equal(values_cache.derived(reproducibility.campaign_values, "s0", root), expected, check_exact=True)


def test_a_file_written_again_is_read_again_and_a_damaged_campaign_left_out_with_a_warning(tmp_path, cache, base):
    root = tmp_path / "c"
    synthetic.write_synthetic(root, "s0", base, seed=1)
    values_cache.derived(reproducibility.campaign_values, "s0", root)
    samples = root / "s0" / store.SAMPLES_FILE
    data = bytearray(samples.read_bytes())
    data[len(data) // 2] ^= 0xFF                     # damaged in place: the seal no longer verifies
    samples.write_bytes(bytes(data))
    with pytest.warns(store.DamagedCampaign, match="s0"):
        assert values_cache.derived(reproducibility.campaign_values, "s0", root) is None


def test_a_new_version_of_a_folder_replaces_its_entry(tmp_path, cache, base):
    root = tmp_path / "c"
    synthetic.write_synthetic(root, "s0", base, seed=1)
    old = values_cache.derived(reproducibility.campaign_values, "s0", root)
    shutil.rmtree(root / "s0")
    synthetic.write_synthetic(root, "s0", base, seed=2)    # the same id, other numbers, sealed anew
    new = values_cache.derived(reproducibility.campaign_values, "s0", root)
    pd.testing.assert_frame_equal(new, computed("s0", root), check_exact=True)
    assert not new["y"].equals(old["y"])
    assert len(list(cache.rglob("*.parquet"))) == 1


def test_the_key_changes_with_any_file_of_the_package(tmp_path):
    """Issue 41: the key hashed derive's own source, not the constants and helpers it uses; now the whole
    package (a scratch copy hashes as the package, and a constant edited in it changes the hash; the
    tables derived again: tests/test_values_cache_code.py)."""
    copy = tmp_path / "pkg"
    shutil.copytree(values_cache.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "_bin", "*.so"))
    assert values_cache.code_key(copy) == values_cache.code_key()
    f = copy / "analysis" / "microkernel.py"     # E1: a constant beside the deriving function
    text = f.read_text()
    f.write_text(text.replace('"campaign_id", "run")', '"campaign_id")', 1))
    assert f.read_text() != text
    values_cache.code_key.cache_clear()
    assert values_cache.code_key(copy) != values_cache.code_key()


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_off_writes_nothing_and_the_entries_stay_bounded(tmp_path, monkeypatch, base):
    root = tmp_path / "c"
    for i in range(4):
        synthetic.write_synthetic(root, f"s{i}", base, seed=i)
    monkeypatch.setenv(values_cache.ENV_VAR, "off")
    assert values_cache.folder() is None
    pd.testing.assert_frame_equal(values_cache.derived(reproducibility.campaign_values, "s0", root), computed("s0", root), check_exact=True)
    assert [p for p in tmp_path.rglob("*.parquet") if root not in p.parents] == []
    monkeypatch.setenv(values_cache.ENV_VAR, str(tmp_path / "cache"))
    monkeypatch.setattr(values_cache, "MAX_ENTRIES", 2)
    monkeypatch.setattr(values_cache, "WRITES_BETWEEN_PRUNES", 1)
    for i in range(4):
        values_cache.derived(reproducibility.campaign_values, f"s{i}", root)
    left = sorted(p.parent.name.split("-")[0] for p in values_cache.folder().rglob("*.parquet"))
    assert len(left) <= 2 and "s3" in left               # the newest kept


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_pooling_is_the_same_with_the_cache_empty_filled_and_off(tmp_path, cache, base, monkeypatch):
    root = tmp_path / "c"
    for i in range(3):
        synthetic.write_synthetic(root, f"s{i}", base, seed=i, hostname="h")
    primary = {"s2": reproducibility.catalog_manifests(root)["s2"]}
    runs = []
    for setting in (str(tmp_path / "cache"), str(tmp_path / "cache"), "off"):
        monkeypatch.setenv(values_cache.ENV_VAR, setting)
        runs.append(reproducibility.pool_campaigns(primary, root))
    assert len(runs[0].campaigns["s2"]) == 3
    for other in runs[1:]:
        assert other.campaigns == runs[0].campaigns and other.rounds == runs[0].rounds
        for name in ("values", "estimates", "ratios", "crossing_costs", "canaries"):
            pd.testing.assert_frame_equal(getattr(other, name), getattr(runs[0], name), check_exact=True)


def test_the_catalog_is_remembered_until_a_folder_changes(tmp_path, base):
    root = tmp_path / "c"
    synthetic.write_synthetic(root, "s0", base, seed=1)
    assert list(store.catalog(root)["campaign_id"]) == ["s0"]
    synthetic.write_synthetic(root, "s1", base, seed=2)
    assert list(store.catalog(root)["campaign_id"]) == ["s0", "s1"]
    (root / "s1" / "notes.txt").write_text("a file its seal does not cover")
    for _ in range(2):      # named on every call, not only when first seen
        with pytest.warns(store.DamagedCampaign, match="s1"):
            assert list(store.catalog(root)["campaign_id"]) == ["s0"]
    os.unlink(root / "s1" / "notes.txt")
    with warnings.catch_warnings():
        warnings.simplefilter("error", store.DamagedCampaign)
        assert list(store.catalog(root)["campaign_id"]) == ["s0", "s1"]
    t = store.catalog(root)
    t.loc[0, "campaign_id"] = "changed by a caller"
    assert list(store.catalog(root)["campaign_id"]) == ["s0", "s1"]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_analyze_is_the_same_with_its_tables_cached_filled_and_off(tmp_path, base, monkeypatch):
    """Per campaign and kept on disk, the condition tables are those of all campaigns in one pass."""
    from osbench_analysis import stats
    from osbench_analysis.analysis import pipeline, pooling_cache

    root = tmp_path / "c"
    for i in range(2):
        synthetic.write_synthetic(root, f"s{i}", base, seed=i, hostname="h")
    probe = sorted(set(base.samples["probe"]) - set(reproducibility.CANARY_PROBES))[0]
    runs = []
    for setting in (str(tmp_path / "cache"), str(tmp_path / "cache"), "off"):
        monkeypatch.setenv(values_cache.ENV_VAR, setting)
        pooling_cache.clear()
        runs.append([pipeline.analyze(root=root, n_resamples=200), pipeline.analyze(root=root, probes=[probe], n_resamples=300)])
    assert len(list((tmp_path / "cache").rglob("*.parquet"))) >= 2 * 2   # two tables per campaign
    first = runs[0][0]
    one_pass = stats.condition_tables(first.samples, **first.settings.stats_kwargs())
    pd.testing.assert_frame_equal(first.estimates[list(one_pass[0].columns)], one_pass[0], check_exact=True)
    pd.testing.assert_frame_equal(first.quality[list(one_pass[1].columns)], one_pass[1], check_exact=True)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            pd.testing.assert_frame_equal(a.estimates, b.estimates, check_exact=True)
            pd.testing.assert_frame_equal(a.quality, b.quality, check_exact=True)
            assert a.estimates.attrs == b.estimates.attrs
    assert set(runs[0][1].estimates["probe"]) == {probe}
