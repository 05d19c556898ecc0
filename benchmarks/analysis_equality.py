"""Are the analysis' numbers the same as at a base commit?  Every table `analysis.analyze()` returns,
computed by the base commit's code (a `git worktree` of it) and by this checkout's, on the same
campaigns, compared cell by cell: analyze()'s tables and the cross-host tables (analysis/hosts.py).
This checkout runs twice, into an empty on-disk cache (store/values_cache.py) and then with the
cache the first run filled: both must equal the base.

    .venv/bin/python benchmarks/analysis_equality.py [--base REV] [--campaigns ID,ID...] [--synthetic N]

``--base``: the commit to compare with (default: where this branch left main, `git merge-base HEAD main`).
Default campaigns: what `analyze()` selects in this checkout's data/campaigns (the newest round of each
host, pooled with its comparable campaigns), read by both sides; ``--synthetic N``: also N synthetic
campaigns (store.synthetic, on 3 hosts) analysed together (campaign ratios, host ratios, pooling).

Exact where the computation is deterministic: floats must be equal to the last bit (NaN equal to NaN),
strings and flags equal.  The pooled tables are compared like with like: only the conditions whose set of
pooled campaigns (``campaigns``) is the same on both sides (which campaigns pool is another question,
issue 28); the rows left out are counted.  Exit status 1 when any compared cell differs.
"""
from __future__ import annotations

import argparse
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: what one side dumps: name -> table (DataFrames), plus the notes and the methods paragraph
_DUMP = r'''
import os, pickle, sys
import pandas as pd
from osbench_analysis.analysis import pipeline
assert pipeline.__file__.startswith(os.getcwd()), (pipeline.__file__, os.getcwd())   # the tree asked for
campaigns, root, out = sys.argv[1] or None, sys.argv[2] or None, sys.argv[3]
a = pipeline.analyze(campaigns.split(",") if campaigns else None, root=root)
t = {name: getattr(a, name) for name in ("estimates", "quality", "environment_ratios", "campaign_ratios",
                                         "host_ratios", "placement_ratios", "crossing_costs", "service_ipc")}
t["sweeps"] = a.sweeps
full = a.table(full=True)
try:   # the campaign (or the pooled campaigns) of each row, to match rows by name
    from osbench_analysis.analysis import reproducibility
    pooled = reproducibility.pooled_rows(a.pooling)
    ids = list(a.estimates["campaign_id"]) + (list(pooled.loc[pooled["probe"].isin(a.estimates["probe"]),
                                                              "campaign_id"]) if len(pooled) else [])
    full = full.assign(campaign_id=ids) if len(ids) == len(full) else full
except (ImportError, KeyError):
    pass
t["table_full"] = full
t["quality_report"] = a.quality_report(full=True)
p = a.pooling
if p is not None:
    for name in ("values", "estimates", "ratios", "crossing_costs", "canaries"):
        t["pooling." + name] = getattr(p, name)
    t["pooling.spread"] = p.spread()
t["notes"] = pd.DataFrame({"note": a.notes})
t["methods"] = pd.DataFrame({"tex": [a.methods_tex(), a.methods_tex(paper=True)]})
t["campaigns"] = pd.DataFrame([vars(c) for c in a.campaigns])
try:   # every host on its own, compared (analysis/hosts.py), where the tree has it
    from osbench_analysis.analysis import hosts
    cross = hosts.cross_host(root)
    t["cross.hosts"] = cross.hosts
    for kind in ("crossing_costs", "ratios", "estimates"):
        t["cross." + kind] = cross.table(kind)
except ImportError:
    pass
from osbench_analysis.analysis import microkernel   # the guests: GNU Mach against Linux, instructions counted
t["guests.microkernel"] = microkernel.from_campaigns(root=root)[0]
pickle.dump(t, open(out, "wb"))
'''


def _run(tree: Path, campaigns: str, root: str, out: Path, cache: Path) -> dict:
    r = subprocess.run([sys.executable, "-c", _DUMP, campaigns, root, str(out)], cwd=tree, capture_output=True,
                       text=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
                                       "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg",
                                       "OSBENCH_CACHE_DIR": str(cache)})
    if r.returncode:
        raise SystemExit(f"{tree}: analyze failed:\n{r.stderr[-3000:]}")
    return pickle.loads(out.read_bytes())


def _cells_equal(a, b) -> bool:
    import numpy as np
    import pandas as pd

    if a is b:
        return True
    na, nb = a is pd.NA or a is None or (isinstance(a, float) and np.isnan(a)), \
        b is pd.NA or b is None or (isinstance(b, float) and np.isnan(b))
    if na or nb:
        return na and nb
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        return float(a) == float(b) or (np.isinf(a) and np.isinf(b) and np.sign(a) == np.sign(b))
    return a == b


#: what names a row, where a table's rows are matched by name (pooled tables: which campaigns pooled
#: is part of the name, so that only like is compared with like)
ROW_KEYS = ("baseline", "host", "environment", "probe", "variant", "placement", "campaign_id", "campaigns",
            "round", "reference")
CONDITION = ["host", "environment", "probe", "variant", "placement"]
#: columns of the per-campaign rows that depend on which campaigns pool
POOL_DEPENDENT = ("between_campaign_sd",)


def pools(tables: dict) -> dict:
    """condition -> the campaigns pooled for it."""
    p = tables.get("pooling.estimates")
    if p is None or p.empty:
        return {}
    return {tuple(r[:5]): r[5] for r in p[CONDITION + ["campaigns"]].itertuples(index=False)}


def compare(name: str, base, new, pooled_apart: set) -> tuple[int, int, list[str]]:
    """(cells compared, cells different, messages) of one table; ``pooled_apart``: the conditions
    pooled over different campaigns by the two sides (their pool-dependent cells are not compared)."""
    msgs = []
    if base is None or new is None or base.empty or new.empty:
        same = (base is None or base.empty) == (new is None or new.empty)
        return 1, 0 if same else 1, [] if same else [f"{name}: empty on one side only"]
    if list(base.columns) != list(new.columns):
        msgs.append(f"{name}: columns differ: {sorted(set(base.columns) ^ set(new.columns))}")
    cols = [c for c in base.columns if c in new.columns]
    if name == "pooling.spread" and pooled_apart:
        return 0, 0, [f"{name}: not compared, {len(pooled_apart)} conditions pooled over different campaigns"]
    keys = [c for c in ROW_KEYS if c in cols]
    if (name.startswith("pooling.") or name == "table_full") and {"campaign_id", "campaigns", "round"} & set(keys):
        # like with like: rows matched by what names them (pooled rows by the campaigns they pool)
        m = base.reset_index(drop=True).merge(new.reset_index(drop=True), on=keys, how="outer",
                                              suffixes=("", "__new"), indicator=True)
        left = int((m["_merge"] != "both").sum())
        if left:
            msgs.append(f"{name}: {left} rows on one side only (pooled over other campaigns), not compared")
        m = m[m["_merge"] == "both"]
        base = m[cols].reset_index(drop=True)
        new = m[[c if c in keys else c + "__new" for c in cols]].set_axis(cols, axis=1).reset_index(drop=True)
    elif len(base) != len(new):
        return max(len(base), len(new)), max(len(base), len(new)), msgs + [f"{name}: {len(base)} rows vs {len(new)}"]
    apart = ([tuple(r) in pooled_apart for r in base[CONDITION].itertuples(index=False)]
             if pooled_apart and set(CONDITION) <= set(cols) else [False] * len(base))
    n = diff = 0
    for c in cols:
        if str(base[c].dtype) != str(new[c].dtype):
            msgs.append(f"{name}.{c}: dtype {base[c].dtype} vs {new[c].dtype}")
        skip = c in POOL_DEPENDENT
        bad = [i for i, (x, y) in enumerate(zip(base[c].tolist(), new[c].tolist()))
               if not (skip and apart[i]) and not _cells_equal(x, y)]
        n += len(base) - (sum(apart) if skip else 0)
        diff += len(bad)
        if bad:
            i = bad[0]
            msgs.append(f"{name}.{c}: {len(bad)} of {len(base)} differ, e.g. row {i}: {base[c].iloc[i]!r} vs "
                        f"{new[c].iloc[i]!r}")
    return n, diff, msgs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None, help="commit to compare with (default: git merge-base HEAD main)")
    ap.add_argument("--campaigns", default="", help="comma-separated ids (default: analyze()'s selection)")
    ap.add_argument("--synthetic", type=int, default=0, help="also compare N synthetic campaigns")
    args = ap.parse_args()
    base = args.base or subprocess.check_output(["git", "merge-base", "HEAD", "main"], cwd=REPO, text=True).strip()
    tmp = Path(tempfile.mkdtemp(prefix="osbench-equality-"))
    tree = tmp / "base"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), base], cwd=REPO, check=True,
                   capture_output=True)
    try:
        # the same campaigns on both sides: this checkout's
        runs = [("committed data", args.campaigns, str(REPO / "data" / "campaigns"))]
        if args.synthetic:
            sys.path.insert(0, str(REPO))
            from osbench_analysis.store import synthetic

            root = tmp / "synthetic"
            tmpl = synthetic.template()
            ids = [f"syn-{i:05d}" for i in range(args.synthetic)]
            for i, cid in enumerate(ids):
                synthetic.write_synthetic(root, cid, tmpl, seed=i, hostname=f"host{i % 3}")
            runs.append((f"{args.synthetic} synthetic campaigns", ",".join(ids), str(root)))
        failed = False
        for what, campaigns, root in runs:
            cache = tmp / f"cache-{len(runs)}-{what[:9]}"   # this checkout's on-disk cache (values_cache): empty, then filled
            old = _run(tree, campaigns, root, tmp / "base.pkl", tmp / "base-cache")
            for side in ("cache empty", "cache filled by the run before"):
                new = _run(REPO, campaigns, root, tmp / "new.pkl", cache)
                failed |= _report(f"{what}: base {base[:10]} vs this checkout, {side}", old, new)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if failed else 0)


def _report(title: str, old: dict, new: dict) -> bool:
    """Print the comparison of every table; whether any compared cell differs."""
    print(f"## {title}")
    total = total_diff = 0
    po, pn = pools(old), pools(new)
    apart = {k for k in set(po) | set(pn) if po.get(k) != pn.get(k)}
    if apart:
        print(f"  {len(apart)} conditions pooled over different campaigns: their pooled values not compared")
    for name in sorted(set(old) | set(new)):
        n, d, msgs = compare(name, old.get(name), new.get(name), apart)
        total, total_diff = total + n, total_diff + d
        rows = len(new.get(name)) if new.get(name) is not None else 0
        print(f"  {name:28s} {rows:6d} rows  {n:8d} cells  {d:5d} different")
        for m in msgs:
            print("    " + m)
    print(f"  all tables: {total} cells compared, {total_diff} different")
    return total_diff > 0


if __name__ == "__main__":
    main()
