"""A cached table is the table the current code computes (issue 41 item 1; reliability review 2026-11-28
E1, E2, T15).  A scratch copy of the package is edited -- a module constant, a helper in another module,
a module the statistics call -- and run in its own interpreter: each edit changes every key, the tables
are derived again, and with the cache filled they equal those with the cache off.  A byte flipped with
the file's size and time kept is caught on a cache hit, and the campaign is left out, never pooled."""
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import osbench_analysis
from osbench_analysis.analysis import reproducibility
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import synthetic, values_cache

#: run with the scratch copy first on the path: campaign_values and the condition tables of campaign s0,
#: with the cache filled (``cached``) and off (``off``), and the cache's entry files
SCRIPT = r"""
import json, os, sys, warnings
warnings.simplefilter("ignore")
import osbench_analysis
assert osbench_analysis.__file__.startswith(sys.argv[3]), osbench_analysis.__file__
from osbench_analysis.analysis import pipeline, reproducibility
from osbench_analysis.store import values_cache

root, cache = sys.argv[1], sys.argv[2]
kw = dict(level=0.95, n_resamples=200, seed=1, estimator="median", ci_method="runs-t")
out = {}
for name, setting in (("cached", cache), ("off", "off")):
    os.environ[values_cache.ENV_VAR] = setting
    v = values_cache.derived(reproducibility.campaign_values, "s0", root)
    e, q = values_cache.derived(pipeline.campaign_condition_tables, "s0", root, params=kw, parts=2)
    out[name] = [t.to_json(orient="split", double_precision=15) for t in (v, e, q)]
out["entries"] = sorted(str(p.relative_to(cache)) for p in __import__("pathlib").Path(cache).rglob("*.parquet"))
print(json.dumps(out))
"""


def _run(copy: Path, root: Path, cache: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(root), str(cache), str(copy)], env=env, cwd=copy,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} not once in {path}"
    path.write_text(text.replace(old, new))


@pytest.mark.slow
def test_a_changed_constant_helper_or_called_module_is_derived_again_as_with_the_cache_off(tmp_path):
    package = Path(osbench_analysis.__file__).parent
    copy = tmp_path / "copy"
    shutil.copytree(package, copy / package.name, ignore=shutil.ignore_patterns("__pycache__", "_bin"))
    pkg = copy / package.name
    root, cache = tmp_path / "c", tmp_path / "cache"
    synthetic.write_synthetic(root, "s0", synthetic.template(), seed=1, hostname="h")

    first = _run(copy, root, cache)
    assert first["cached"] == first["off"] and len(first["entries"]) == 3   # one table and a pair of tables
    again = _run(copy, root, cache)                                          # warm: the same entries, read back
    assert again["cached"] == first["off"] and again["entries"] == first["entries"]

    edits = [   # (what, file, old, new, which of (values, estimates, quality) must change)
        ("a module constant outside the deriving function (E1)", "analysis/reproducibility.py",
         'CONDITION = ["host", "environment", "probe", "variant", "placement"]',
         'CONDITION = ["host", "environment", "probe", "variant"]', 0),
        ("a helper of another module, the host key (E2)", "hosts/identity.py",
         ".hexdigest()[:6]", ".hexdigest()[:8]", 0),
        ("a module the statistics call two levels down (stats/quote.py)", "stats/quote.py",
         'TYPICAL_RUN = "typical run"', 'TYPICAL_RUN = "typical worker run"', 1),
    ]
    before = first
    for what, name, old, new, changed in edits:
        _edit(pkg / name, old, new)
        now = _run(copy, root, cache)
        assert now["cached"] == now["off"], what              # the table the edited code computes
        assert now["cached"][changed] != before["off"][changed], f"{what}: the edit changed nothing to see"
        assert set(now["entries"]).isdisjoint(before["entries"]), f"{what}: an old entry was kept"
        before = now


def test_the_key_covers_the_package_and_the_libraries(tmp_path, monkeypatch):
    """code_key is one hash of every source file of the package and the library versions (not patched away:
    the version of a library read through importlib.metadata is what changes here)."""
    import importlib.metadata

    first = values_cache.code_key()
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.0-other" if name == "numpy" else real(name))
    values_cache.code_key.cache_clear()
    try:
        assert values_cache.code_key() != first
    finally:
        monkeypatch.undo()
        values_cache.code_key.cache_clear()
    assert values_cache.code_key() == first
    assert {"numpy", "pandas", "scipy", "pyarrow"} <= set(values_cache.LIBRARIES)
    synthetic.write_synthetic(tmp_path / "c", "s0", synthetic.template(), seed=1)
    key = values_cache.key(tmp_path / "c" / "s0", reproducibility.campaign_values)
    monkeypatch.setattr(values_cache, "code_key", lambda: "another package")
    assert values_cache.key(tmp_path / "c" / "s0", reproducibility.campaign_values) != key


def _flip_keeping_size_and_time(path: Path) -> None:
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_byte_flipped_with_size_and_time_kept_is_never_pooled_from_a_warm_cache(tmp_path, monkeypatch):
    """T15: analyze named g1 'left out' yet pooled its cached values."""
    monkeypatch.setenv(values_cache.ENV_VAR, str(tmp_path / "cache"))
    root, base = tmp_path / "c", synthetic.template()
    for i in (1, 2):
        synthetic.write_synthetic(root, f"g{i}", base, seed=i, hostname="h")
    primary = {"g2": reproducibility.catalog_manifests(root)["g2"]}
    assert reproducibility.pool_campaigns(primary, root).campaigns == {"g2": ["g1", "g2"]}   # the cache filled
    _flip_keeping_size_and_time(root / "g1" / store.SAMPLES_FILE)
    with pytest.warns(store.DamagedCampaign, match="g1"):
        warm = reproducibility.pool_campaigns(primary, root)
    monkeypatch.setenv(values_cache.ENV_VAR, "off")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", store.DamagedCampaign)
        off = reproducibility.pool_campaigns(primary, root)
    assert warm.campaigns == off.campaigns == {"g2": ["g2"]}
    assert set(warm.values["campaign_id"]) == {"g2"}
    pd.testing.assert_frame_equal(warm.values, off.values, check_exact=True)
    with pytest.raises(store.CampaignCorrupted, match="does not match its seal"):   # asked for by name
        monkeypatch.setenv(values_cache.ENV_VAR, str(tmp_path / "cache"))
        values_cache.derived(reproducibility.campaign_values, "g1", root, strict=True)
