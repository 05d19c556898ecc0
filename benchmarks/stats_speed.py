"""Timings of the statistics engine (prints figures; asserts nothing).

    .venv/bin/python benchmarks/stats_speed.py [--repeat 5]

Targets (issue 3): a hierarchical bootstrap with 10,000 resamples over
20 runs x 50 batches in under 1 s; the analysis of a quick campaign in
under 60 s.  The "quick campaign" here is simulated with the shape of the
runner's quick profile (5 runs x 10 batches, 2 placements, 16 probes, 2
environments), and the analysis is what the analyze notebook asks of the
engine: estimates with flagged batches kept and excluded, quality warnings,
the ratio table, and the three figures.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from osbench_analysis import stats
from osbench_analysis.plots import forest as plots  # noqa: E402
from osbench_analysis.stats import simulate as sim  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, float]:
    fn()  # warm caches (order-statistic tables, imports)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts), statistics.median(ts)


def quick_campaign() -> pd.DataFrame:
    parts = []
    probes = [f"probe_{i:02d}" for i in range(16)]
    families = ["lognormal", "heavy_tailed", "contaminated", "bimodal"]
    k = 0
    for env, factor in (("native", 1.0), ("gvisor", 5.0)):
        for i, probe in enumerate(probes):
            for placement in ("same_cpu", "cross_cpu"):
                sc = sim.Scenario(family=families[i % 4], probe=probe, placement=placement,
                                  environment=env, campaign_id=f"quick-{env}",
                                  median_ns=200.0 * (i + 1) * factor, n_runs=5, n_batches=10, n_warmup=1)
                parts.append(sim.simulate_samples(sc, k))
                k += 1
    return pd.concat(parts, ignore_index=True)


def analysis(samples: pd.DataFrame, n_resamples: int) -> None:
    both = stats.flag_sensitivity(samples, n_resamples=n_resamples)
    table = stats.ratio_table(samples, baseline="native", n_resamples=n_resamples)
    for fig in (plots.forest_plot(both), plots.ratio_forest_plot(table)):
        plots.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows = []
    big = sim.simulate_samples(sim.Scenario(family="heavy_tailed", n_runs=20, n_batches=50), 1)
    rd = stats.run_data(big)
    B = 10_000
    for method in ("hier-percentile", "hier-bca"):
        for estimator in ("median", "mean"):
            t = timed(lambda: stats.estimate_ci(rd, estimator=estimator, ci_method=method, n_resamples=B),
                      args.repeat)
            rows.append((f"{method}, {estimator}: 10,000 resamples, 20 runs x 50 batches", *t, 1.0))
    def direct_two_stage():
        # the textbook implementation, for comparison: gather 10,000 x 20 x 50
        # resampled batches and take medians
        rng = np.random.default_rng(0)
        x = np.stack(rd.runs)
        pick = rng.integers(0, 20, (B, 20))
        idx = rng.integers(0, 50, (B, 20, 50))
        return np.log(np.median(x[pick[..., None], idx], axis=2)).mean(axis=1)

    t = timed(direct_two_stage, max(1, args.repeat // 2))
    rows.append(("  reference: same median bootstrap by direct gather + np.median", *t, None))
    t = timed(lambda: stats.estimate_ci(rd), args.repeat)
    rows.append(("runs-t (default), median: 20 runs x 50 batches", *t, None))
    t = timed(lambda: stats.median_ci(big), args.repeat)
    rows.append(("median_ci from the samples DataFrame (incl. preparation)", *t, None))
    a = sim.simulate_samples(sim.Scenario(median_ns=8600, n_runs=20, n_batches=50), 2)
    t = timed(lambda: stats.ratio_ci(a, big, ci_method="hier-percentile", n_resamples=B), args.repeat)
    rows.append(("ratio_ci hier-percentile: 2 x (10,000 resamples, 20 x 50)", *t, None))
    sweep = []
    for i, n in enumerate((1, 2, 4, 8, 16, 32)):
        d = sim.simulate_samples(sim.Scenario(median_ns=1000 + 10 * n, n_runs=10, n_batches=10), i)
        d["params_json"] = f'{{"n": {n}}}'
        sweep.append(d)
    sweep = pd.concat(sweep, ignore_index=True)
    for m in ("welch", "bootstrap"):
        t = timed(lambda: stats.sweep_fit(sweep, "n", ci_method=m, n_resamples=B), args.repeat)
        rows.append((f"sweep_fit {m}: 6 levels x 10 runs", *t, None))

    camp = quick_campaign()
    n_cond = camp.groupby(["environment", "probe", "placement"]).ngroups
    t = timed(lambda: stats.summarize(camp), max(1, args.repeat // 2))
    rows.append((f"summarize, simulated quick campaign ({n_cond} conditions, {len(camp)} batches)", *t, None))
    t = timed(lambda: analysis(camp, B), max(1, args.repeat // 2))
    rows.append(("analysis of that campaign: kept+excluded estimates, warnings, ratio table, 2 figures",
                 *t, 60.0))
    t = timed(lambda: stats.flag_sensitivity(camp, ci_method="hier-bca", n_resamples=B), 1)
    rows.append(("same estimates with ci_method='hier-bca' (10,000 resamples each)", *t, None))

    width = max(len(r[0]) for r in rows)
    print(f"stats engine timings on {os.cpu_count()} CPU(s), numpy {np.__version__}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'what':<{width}}  {'min s':>8}  {'median s':>8}  target")
    for name, tmin, tmed, target in rows:
        tgt = "" if target is None else (f"< {target:g} s  " + ("met" if tmed < target else "MISSED"))
        print(f"{name:<{width}}  {tmin:8.3f}  {tmed:8.3f}  {tgt}")


if __name__ == "__main__":
    main()
