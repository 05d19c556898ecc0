"""Analysis time and peak memory for many campaigns (issue 11).

N synthetic campaigns (the committed quick campaign's samples, scaled by a
per-campaign factor, written and sealed by the real store: synthetic.py),
then, each N in a fresh process so its peak memory is its own:

  list       store.catalog (manifests only, no samples file opened)
  load       store.load_campaigns: every seal verified, one Arrow dataset scan
  estimates  stats.flag_sensitivity over all conditions of all campaigns
  analyze    analysis.analyze(ids): what `osbench analyze` does (its own loading,
             estimates, quality, ratios of every campaign against the first)

Goal: analyze under 60 s and 2 GB for 100 campaigns on 2 cores.  The growth
rate is the log-log slope between the two largest N (1: linear).

    python benchmarks/analysis_scale.py [--n 1,10,100,1000] [--skip-analyze-above 100] [--timeout-s 1800]
"""
from __future__ import annotations

import argparse
import json
import math
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
    if "analyze" in steps:
        t = time.perf_counter()
        analysis.analyze(ids, root=root)
        out["analyze_s"] = time.perf_counter() - t
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1,10,100,1000")
    ap.add_argument("--skip-analyze-above", type=int, default=10**9, help="time only list/load/estimates above")
    ap.add_argument("--timeout-s", type=float, default=1800)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]), args.child[2].split(","))
        return

    from osbench_analysis.store import synthetic

    sizes = sorted(int(x) for x in args.n.split(","))
    root = Path(tempfile.mkdtemp(prefix="osbench-scale-"))
    base = synthetic.template()
    written, results = 0, []
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
        try:
            r = subprocess.run([sys.executable, __file__, "--child", str(root), str(n), ",".join(steps)],
                               capture_output=True, text=True, timeout=args.timeout_s)
        except subprocess.TimeoutExpired:
            print(f"N={n}: did not finish within {args.timeout_s:.0f} s", flush=True)
            break
        if r.returncode != 0:
            print(f"N={n}: failed: {r.stderr.strip().splitlines()[-1:]}", flush=True)
            break
        res = json.loads(r.stdout.strip().splitlines()[-1])
        results.append(res)
        print(f"N={n:5d}  written in {write_s:6.1f} s  " + "  ".join(
            f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in res.items() if k != "n"), flush=True)

    print("\n| campaigns | batches | list s | load s (seals verified) | estimates s | analyze s | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['n']} | {r['rows']} | {r['list_s']:.2f} | {r['load_s']:.2f} | {r.get('estimates_s', math.nan):.1f} "
              f"| {r.get('analyze_s', math.nan):.1f} | {r['peak_rss_mb']:.0f} |")
    for key in ("load_s", "estimates_s", "analyze_s", "peak_rss_mb"):
        pts = [(r["n"], r[key]) for r in results if key in r and r[key] > 0]
        if len(pts) >= 2 and pts[-1][0] > pts[-2][0]:
            (n1, v1), (n2, v2) = pts[-2], pts[-1]
            print(f"growth of {key} between N={n1} and N={n2}: N^{math.log(v2 / v1) / math.log(n2 / n1):.2f}")


if __name__ == "__main__":
    main()
