"""Analysis time and peak memory for many campaigns (issue 11).

N synthetic campaigns (the committed quick campaign's samples, scaled by a
per-campaign factor, written and sealed by the real store: synthetic.py),
then, each N in a fresh process so its peak memory is its own:

  list       store.catalog (manifests only, no samples file opened)
  load       store.load_campaigns: every seal verified, one Arrow dataset scan
  estimates  stats.flag_sensitivity over all conditions of all campaigns
  analyze    analysis.analyze(ids): what `osbench analyze` does (its own loading,
             estimates, quality, ratios of every campaign against the first), from cold: an
             empty on-disk cache (store/values_cache.py), which it fills

Goal (issue 33): analyze under 20 s and 1 GB for 100 campaigns, 1,000 under
4 min, on 2 cores.  The growth rate is the log-log slope between the two
largest N (1: linear).

``--base REV`` also runs the code of commit REV (a `git worktree` of it) on the
same campaigns, each N base first then this checkout, so that both see the
same load on a shared machine (up to ``--base-up-to`` campaigns: the base is
slow).  Compare the two rows of one N within one run.

    python benchmarks/analysis_scale.py [--n 1,10,100,1000] [--skip-analyze-above 100] [--timeout-s 1800]
                                        [--base REV] [--base-up-to 100]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _child(root: str, n: int, steps: list[str]) -> None:
    from osbench_analysis import stats
    from osbench_analysis.analysis import pipeline as analysis
    from osbench_analysis.store import campaigns as store

    ids = [f"syn-{i:05d}" for i in range(n)]
    out = {"n": n}
    t = time.perf_counter()
    cat = store.catalog(root)
    assert len(cat) >= n
    out["list_s"] = time.perf_counter() - t
    t = time.perf_counter()
    manifests, samples = store.load_campaigns(ids, root)
    out["load_s"], out["rows"] = time.perf_counter() - t, len(samples)
    if "estimates" in steps:
        t = time.perf_counter()
        est = stats.flag_sensitivity(samples)
        out["estimates_s"], out["conditions"] = time.perf_counter() - t, len(est)
    del samples, manifests
    # analyze() from cold: what the estimates step remembered (heterogeneity per content of the runs)
    # would otherwise make it look faster than a first analysis is
    from osbench_analysis.stats import heterogeneity

    if hasattr(heterogeneity, "_heterogeneity_of"):
        heterogeneity._heterogeneity_of.cache_clear()
    if "analyze" in steps:
        t, c = time.perf_counter(), time.process_time()
        analysis.analyze(ids, root=root)
        out["analyze_s"], out["analyze_cpu_s"] = time.perf_counter() - t, time.process_time() - c
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def _child_run(tree: Path | None, root: Path, n: int, steps: list[str], timeout: float) -> dict | str:
    """One N in a fresh process, importing the package from ``tree`` (None: this checkout's)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    # a first analysis of new campaigns: nothing derived from them kept yet (store/values_cache.py), and the
    # synthetic campaigns' entries not left in build/cache
    cache = tempfile.mkdtemp(prefix="osbench-scale-cache-")
    env["OSBENCH_CACHE_DIR"] = cache
    try:
        r = subprocess.run([sys.executable, __file__, "--child", str(root), str(n), ",".join(steps)],
                           capture_output=True, text=True, timeout=timeout, env=env, cwd=tree or Path.cwd())
    except subprocess.TimeoutExpired:
        return f"did not finish within {timeout:.0f} s"
    finally:
        import shutil

        shutil.rmtree(cache, ignore_errors=True)
    if r.returncode != 0:
        return f"failed: {r.stderr.strip().splitlines()[-1:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1,10,100,1000")
    ap.add_argument("--skip-analyze-above", type=int, default=10**9, help="time only list/load/estimates above")
    ap.add_argument("--timeout-s", type=float, default=1800)
    ap.add_argument("--base", default=None, help="also time this commit's code (A/B, interleaved)")
    ap.add_argument("--base-up-to", type=int, default=100, help="largest N the base code is timed on")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), args.child[2].split(","))
        return

    sizes = sorted(int(x) for x in args.n.split(","))
    root = Path(tempfile.mkdtemp(prefix="osbench-scale-"))
    base_tree = None
    if args.base:
        repo = Path(__file__).resolve().parents[1]
        base_tree = root.parent / (root.name + "-base")
        subprocess.run(["git", "worktree", "add", "--detach", str(base_tree), args.base], cwd=repo, check=True,
                       capture_output=True)
    try:
        results, base_results = _measure(args, sizes, root, base_tree)
    finally:
        if base_tree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)],
                           cwd=Path(__file__).resolve().parents[1], capture_output=True)
    _report(args, results, base_results)


def _measure(args, sizes: list[int], root: Path, base_tree: Path | None) -> tuple[list, list]:
    from osbench_analysis.store import synthetic

    base = synthetic.template()
    written, results, base_results = 0, [], []
    print(f"template {base.id}: {len(base.samples)} batches, "
          f"{base.samples.groupby(['probe', 'variant', 'placement']).ngroups} conditions per campaign; "
          f"campaigns under {root}", flush=True)
    for n in sizes:
        t = time.perf_counter()
        while written < n:
            k = written % 7    # seven hosts: another CPU model each (a hostname alone is the same host)
            synthetic.write_synthetic(root, f"syn-{written:05d}", base, seed=written, hostname=f"host{k}",
                                      host={"cpu_model": f"{base.manifest.host.get('cpu_model', 'CPU')} #{k}"})
            written += 1
        write_s = time.perf_counter() - t
        steps = ["estimates"] + (["analyze"] if n <= args.skip_analyze_above else [])
        sides = ([("base", base_tree)] if base_tree is not None and n <= args.base_up_to else []) + [("this", None)]
        stop = False
        for side, tree in sides:
            res = _child_run(tree, root, n, steps, args.timeout_s)
            if isinstance(res, str):
                print(f"N={n} ({side}): {res}", flush=True)
                stop = side == "this"
                continue
            res["code"] = side
            if side == "this":
                results.append(res)
            else:
                base_results.append(res)
            print(f"N={n:5d} {side:4s} written in {write_s:6.1f} s  " + "  ".join(
                f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in res.items()
                if k not in ("n", "code")), flush=True)
        if stop:
            break
    return results, base_results


def _report(args, results: list, base_results: list) -> None:
    print("\n| campaigns | code | batches | list s | load s (seals verified) | estimates s | analyze s | analyze CPU s | peak RSS MB |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in sorted(base_results + results, key=lambda r: (r["n"], r["code"] == "this")):
        code = f"base {args.base[:10]}" if r["code"] == "base" else "this checkout"
        print(f"| {r['n']} | {code} | {r['rows']} | {r['list_s']:.2f} | {r['load_s']:.2f} "
              f"| {r.get('estimates_s', math.nan):.1f} | {r.get('analyze_s', math.nan):.1f} "
              f"| {r.get('analyze_cpu_s', math.nan):.1f} | {r['peak_rss_mb']:.0f} |")
    print(f"load average {os.getloadavg()[0]:.1f} at the end (a shared machine: the CPU seconds move less than the wall)")
    for key in ("load_s", "estimates_s", "analyze_s", "peak_rss_mb"):
        pts = [(r["n"], r[key]) for r in results if key in r and r[key] > 0]
        if len(pts) >= 2 and pts[-1][0] > pts[-2][0]:
            (n1, v1), (n2, v2) = pts[-2], pts[-1]
            print(f"growth of {key} between N={n1} and N={n2}: N^{math.log(v2 / v1) / math.log(n2 / n1):.2f}")


if __name__ == "__main__":
    main()
