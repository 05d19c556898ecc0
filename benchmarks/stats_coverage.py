"""Coverage of the engine's confidence intervals on simulated experiments.

    .venv/bin/python benchmarks/stats_coverage.py [--experiments 1000] [--resamples 2000]
                                                  [--sections A,B,...]

Every cell simulates ``--experiments`` experiments of one scenario from
osbench_analysis.stats.simulate (run-level random effect x within-run family),
computes the interval with osbench_analysis.stats exactly as the analysis
does, and counts how often it contains the exact truth (see
docs/statistics.md for the estimands).  Prints tables; asserts nothing.

Bootstrap methods use ``--resamples`` (default 2,000) resamples per interval
in this study instead of the analysis' 10,000: the 2.5 % / 97.5 % quantiles
are then known to ~0.3 percentage points of coverage, far below the
Monte-Carlo error of 1,000 experiments (+-0.7 points), and the study takes
minutes instead of an hour.

Sections
  A  median, default method (runs-t), unimodal families, runs 5/10/20 x batches 10/50,
     run-dominant and batch-dominant variance
  B  the alternatives on the same grid: hier-percentile, hier-bca, runs-os
  C  naive iid bootstrap (ignores runs) on the same grid (runs <= 10)
  D  bimodal families (reported, no band expected)
  E  other run-effect shapes (heavy-tailed t3, skewed) for runs-t and runs-os
  F  ratios A/B (runs-t and hier-percentile)
  G  mean estimator (runs-t)
  H  adaptive precision: coverage after sequential stopping on the half-width
  I  scalability sweeps: coverage of the slope interval (welch, bootstrap)
  J  minority-slow runs: a fraction (5-30 %) of whole runs slower by 1.1-3x, 3-30 runs,
     tight batches: coverage of the quoted number (stats.quote) and how often it warns, beside
     the coverage of the mean over runs (runs-t) and of the typical run (runs-os) alone
  Q  the quoted number (stats.quote, quote="auto": the typical run; the mean over runs when
     fewer than 6 runs do not differ) on A's grid and E's run-effect shapes: its
     coverage of the estimand it names, how often each is quoted, and how often it warns
  R  campaigns as a level of replication: campaign effects tau 0-0.3 (log-sd of the host state
     per campaign), 1-10 campaigns of 6 runs x 10 batches, lognormal runs, with and without a
     minority of slow runs: coverage of the campaign-population value by the pooled interval
     (stats.pooled; with one campaign the within-one-campaign t interval, labelled so), and how
     often a campaign's heterogeneity warning rides along.  --save-campaigns writes its cells.
  K  the tests themselves: false alarms of the heterogeneity test on homogeneous runs
     (incl. AR(1) batches); false alarms of the mode test on unimodal lognormal run
     effects (sd 0.1-0.4) and its power on 10x bimodal conditions with both modes present

``--quick`` runs a smaller grid with 300 experiments per cell (a minute or two);
the numbers in docs/statistics.md come from the full run.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from osbench_analysis import stats
from osbench_analysis.stats import heterogeneity
from osbench_analysis.stats import precision
from osbench_analysis.stats import quality  # noqa: E402
from osbench_analysis.stats import simulate as sim  # noqa: E402

RUNS = (5, 10, 20)
BATCHES = (10, 50)
REGIMES = {  # (run-effect log-sd, batch log-sd)
    "run-dominant": (0.05, 0.03),
    "batch-dominant": (0.02, 0.05),
}
BAND = (0.93, 0.97)


def cell_seed(base: int, *parts) -> int:
    """Independent random streams per cell (identical streams would make cells
    share their Monte-Carlo error and look more consistent than they are)."""
    return int(zlib.crc32(repr((base, *parts)).encode()))


def grid(families, runs=RUNS, batches=BATCHES, run_effect="normal"):
    for fam in families:
        for regime, (rs, bs) in REGIMES.items():
            for r in runs:
                for b in batches:
                    yield regime, sim.Scenario(family=fam, n_runs=r, n_batches=b, run_sigma=rs,
                                               batch_sigma=bs, run_effect=run_effect)


def row(regime: str, res: sim.CoverageResult, extra: dict | None = None) -> dict:
    flag = "" if BAND[0] <= res.coverage <= BAND[1] else ("LOW" if res.coverage < BAND[0] else "HIGH")
    return {"family": res.family, "regime": regime, "runs": res.n_runs, "batches": res.n_batches,
            "method": res.ci_method, "estimand": res.estimand,
            "coverage_%": round(100 * res.coverage, 1), "mc_se_%": round(100 * res.mc_se, 1),
            "miss_below_%": round(100 * res.miss_below, 1), "miss_above_%": round(100 * res.miss_above, 1),
            "halfwidth_%": round(100 * res.median_halfwidth_rel, 2), "band": flag, **(extra or {})}


SAVED: list[dict] = []   # every printed row, with its section, for --save


def show(title: str, rows: list[dict], t0: float) -> None:
    SAVED.extend({"section": title.split(".")[0], "title": title, **r} for r in rows)
    print(f"\n=== {title}  ({time.perf_counter() - t0:.0f} s)")
    if not rows:
        print("(nothing)")
        return
    df = pd.DataFrame(rows)
    print(df.to_string(index=False))
    if "coverage_%" in df:
        c = df["coverage_%"]
        inband = ((c >= 100 * BAND[0]) & (c <= 100 * BAND[1])).sum()
        print(f"-> coverage {c.min():.1f}-{c.max():.1f} %, mean {c.mean():.1f} %; "
              f"{inband}/{len(df)} cells in the {100 * BAND[0]:.0f}-{100 * BAND[1]:.0f} % band")
    sys.stdout.flush()


def show_ok(title: str, rows: list[dict], t0: float, criterion: str) -> None:
    """show(), then how many cells meet the section's criterion (their "ok" column)."""
    show(title, rows, t0)
    ok = sum(r["ok"] == "yes" for r in rows)
    band = f"{100 * BAND[0]:.0f}-{100 * BAND[1]:.0f}"
    print(f"-> {ok}/{len(rows)} cells: {criterion.format(band=band)}")


def section_methods(methods, families, args, runs=RUNS, run_effect="normal"):
    rows = []
    for regime, sc in grid(families, runs=runs, run_effect=run_effect):
        for m in methods:
            n = args.experiments
            res = sim.coverage_study(sc, ci_method=m, n_experiments=n, n_resamples=args.resamples,
                                     seed=cell_seed(args.seed, sc, m))
            extra = {"run_effect": run_effect} if run_effect != "normal" else None
            rows.append(row(regime, res, extra))
    return rows


def section_ratio(args):
    rows = []
    pairs = [("heavy_tailed", "contaminated"), ("lognormal", "lognormal"), ("contaminated", "lognormal")]
    for fa, fb in pairs:
        for ra, rb in ((5, 5), (5, 20), (10, 10), (20, 20)):
            for nb in BATCHES:
                for m in ("runs-t", "hier-percentile"):
                    a = sim.Scenario(family=fa, median_ns=8600, n_runs=ra, n_batches=nb)
                    b = sim.Scenario(family=fb, median_ns=1000, n_runs=rb, n_batches=nb)
                    res = sim.ratio_coverage_study(a, b, ci_method=m, n_experiments=args.experiments,
                                                   n_resamples=args.resamples,
                                                   seed=cell_seed(args.seed, a, b, m))
                    r = row("run-dominant", res)
                    r.update({"family": f"{fa}/{fb}", "runs": f"{ra}/{rb}"})
                    rows.append(r)
    return rows


def section_mean(args):
    rows = []
    for regime, sc in grid(("lognormal", "heavy_tailed", "contaminated")):
        res = sim.coverage_study(sc, estimator="mean", n_experiments=args.experiments,
                                 seed=cell_seed(args.seed, sc, "mean"))
        rows.append(row(regime, res))
    return rows


def section_sequential(args):
    """Coverage after adding runs until the half-width meets the target
    (the rule precision.precision_status applies), vectorised over experiments."""
    rows = []
    for fam in ("lognormal", "heavy_tailed", "contaminated"):
        for target_rel, run_sd in ((0.01, 0.02), (0.02, 0.05), (0.05, 0.05)):
            t = precision.PrecisionTarget(target_rel=target_rel, min_runs=5, max_runs=30)
            sc = sim.Scenario(family=fam, n_runs=t.max_runs, n_batches=10, run_sigma=run_sd)
            x, _ = sim.draw_per_op(sc, np.random.default_rng(cell_seed(args.seed, sc, target_rel)),
                                   args.experiments)
            vals = stats.run_level_values(x, "median")
            truth = math.log(sim.true_value_ns(sc))
            stop_r = np.full(vals.shape[0], t.max_runs)
            lo_at = np.empty(vals.shape[0])
            hi_at = np.empty(vals.shape[0])
            done = np.zeros(vals.shape[0], dtype=bool)
            for r in range(t.min_runs, t.max_runs + 1):
                _, lo, hi = stats.t_interval(vals[:, :r], t.level)
                met = (np.sinh((hi - lo) / 2) <= t.target_rel) | (r == t.max_runs)
                new = met & ~done
                lo_at[new], hi_at[new], stop_r[new] = lo[new], hi[new], r
                done |= met
            cov = float(np.mean((lo_at <= truth) & (truth <= hi_at)))
            n = vals.shape[0]
            rows.append({"family": fam, "target_%": 100 * target_rel, "run_sd": run_sd,
                         "runs_min..max": f"{t.min_runs}..{t.max_runs}",
                         "median_runs_used": float(np.median(stop_r)),
                         "reached_max_%": round(100 * float(np.mean(stop_r == t.max_runs)), 1),
                         "coverage_%": round(100 * cov, 1),
                         "mc_se_%": round(100 * math.sqrt(cov * (1 - cov) / n), 1)})
    return rows


def section_sweep(args):
    rows = []
    levels = (1, 2, 4, 8, 16)
    slope = 20.0
    n_exp = args.experiments
    for runs in (3, 5, 10):
        for m in ("welch", "bootstrap"):
            rng = np.random.default_rng(cell_seed(args.seed, runs, m))
            hit = []
            for e in range(n_exp):
                parts = []
                for n in levels:
                    sc = sim.Scenario(median_ns=1000 + slope * n, n_runs=runs, n_batches=10, n_warmup=0)
                    d = sim.simulate_samples(sc, rng)
                    d["params_json"] = f'{{"n": {n}}}'
                    parts.append(d)
                f = stats.sweep_fit(pd.concat(parts, ignore_index=True), "n", ci_method=m,
                                    n_resamples=args.resamples, seed=e)
                hit.append(f.slope_ci_low_ns <= slope <= f.slope_ci_high_ns)
            cov = float(np.mean(hit))
            rows.append({"levels": "1,2,4,8,16", "runs_per_level": runs, "method": m,
                         "true_slope_ns": slope, "experiments": n_exp, "coverage_%": round(100 * cov, 1),
                         "mc_se_%": round(100 * math.sqrt(cov * (1 - cov) / n_exp), 1)})
    return rows


MINORITY_BASE = dict(family="bimodal_runs", run_sigma=0.02, batch_sigma=0.01, n_batches=10)


def quoted_cell(x: np.ndarray, sc, level: float = 0.95) -> dict:
    """The engine's quoted number (stats.quote) on simulated experiments x (experiments, runs, batches):
    per experiment, the typical run, or the mean over runs where fewer than 6 runs do not differ;
    each scored against the exact value of the estimand it names.  Also the two alone."""
    vals = stats.run_level_values(x, "median")
    _, lo, hi = stats.t_interval(vals, level)
    t_geo = math.log(sim.true_value_ns(sc, "geomean_of_run_medians"))
    t_med = math.log(sim.true_value_ns(sc, "median_of_run_medians"))
    _, olo, ohi, oconf = stats.order_statistic_median_ci_rows(vals, level, interpolate=True)
    h = heterogeneity.heterogeneity_arrays(x)
    typ = stats.quotes_typical_run(h["heterogeneous"], sc.n_runs, level=level)
    cov_mean = (lo <= t_geo) & (t_geo <= hi)
    cov_typ = (olo <= t_med) & (t_med <= ohi)
    cov = np.where(typ, cov_typ, cov_mean)
    # what the estimate table warns: the minority warning (heterogeneity) or the quote's own
    warn = h["warn"] | stats.quote_warns(np.full(typ.shape, sc.n_runs), typ, np.full(typ.shape, oconf), level)
    n = x.shape[0]
    c = float(np.mean(cov))
    return {"coverage_%": round(100 * c, 1), "mc_se_%": round(100 * math.sqrt(c * (1 - c) / n), 1),
            "warn_%": round(100 * float(np.mean(warn)), 1),
            "typical_quoted_%": round(100 * float(np.mean(typ)), 1),
            "mean_over_runs_cov_%": round(100 * float(np.mean(cov_mean)), 1),
            "mean_over_runs_miss_below_%": round(100 * float(np.mean(hi < t_geo)), 1),
            "minority_warn_%": round(100 * float(np.mean(h["warn"])), 1),
            "heterogeneous_%": round(100 * float(np.mean(h["heterogeneous"])), 1),
            "typical_run_cov_%": round(100 * float(np.mean(cov_typ)), 1),
            "typical_run_conf_%": round(100 * oconf, 2)}


def section_minority(args):
    """Coverage and warn rate of the quoted number when a minority of runs is slower."""
    rows = []
    fracs, factors, runs = ((0.1, 0.2), (1.3, 2.0), (3, 5, 10, 20)) if args.quick else \
        ((0.05, 0.1, 0.2, 0.3), (1.1, 1.3, 2.0, 3.0), (3, 5, 10, 20, 30))
    n = args.experiments
    cells = [(0.0, 1.0)] + [(f, k) for f in fracs for k in factors]
    for f, k in cells:
        for r in runs:
            sc = sim.Scenario(n_runs=r, far_fraction=f, far_factor=k,
                              **{**MINORITY_BASE, "run_sigma": args.minority_run_sd})
            x, _ = sim.draw_per_op(sc, np.random.default_rng(cell_seed(args.seed, "J", f, k, r)), n)
            q = quoted_cell(x, sc)
            cov, warn = q["coverage_%"] / 100, q["warn_%"] / 100
            ok = (BAND[0] <= cov <= BAND[1]) or warn >= 0.90
            rows.append({"slow_frac": f, "factor": k, "runs": r,
                         "P_slow_run_in_sample_%": round(100 * (1 - (1 - f) ** r), 1), **q,
                         "ok": "yes" if ok else "NO"})
    return rows


def section_quoted(args):
    """The quoted number on A's unimodal grid (normal run effects) and E's shapes (t3, skewed)."""
    rows = []
    n = args.experiments
    for eff, fams in (("normal", ("lognormal", "heavy_tailed", "contaminated")),
                      ("student_t3", ("lognormal", "contaminated")), ("skewed", ("lognormal", "contaminated"))):
        for regime, sc in grid(fams, run_effect=eff):
            x, _ = sim.draw_per_op(sc, np.random.default_rng(cell_seed(args.seed, "Q", sc)), n)
            q = quoted_cell(x, sc)
            cov, warn = q["coverage_%"] / 100, q["warn_%"] / 100
            rows.append({"family": sc.family, "run_effect": eff, "regime": regime, "runs": sc.n_runs,
                         "batches": sc.n_batches, **q,
                         "ok": "yes" if (BAND[0] <= cov <= BAND[1] or warn >= 0.90) else "NO"})
    return rows


CAMPAIGN_TAUS = (0.0, 0.05, 0.1, 0.2, 0.3)
CAMPAIGN_COUNTS = (1, 2, 3, 5, 10)
CAMPAIGN_SCENARIOS = {   # 6 runs x 10 batches: a quick-profile condition
    "lognormal": dict(family="lognormal", run_sigma=0.05, batch_sigma=0.03, n_runs=6, n_batches=10),
    "minority 10% x2": dict(family="bimodal_runs", run_sigma=0.02, batch_sigma=0.01, far_fraction=0.1,
                            far_factor=2.0, n_runs=6, n_batches=10),
    "minority 20% x1.3": dict(family="bimodal_runs", run_sigma=0.02, batch_sigma=0.01, far_fraction=0.2,
                              far_factor=1.3, n_runs=6, n_batches=10),
}


def section_campaigns(args):
    """Coverage of the campaign-population value by the pooled interval (or the
    within-one-campaign interval, which says so) with campaign-level effects."""
    rows = []
    n = max(args.experiments, 2000)
    for name, kw in CAMPAIGN_SCENARIOS.items():
        sc = sim.Scenario(**kw)
        for tau in CAMPAIGN_TAUS:
            for k in CAMPAIGN_COUNTS:
                r = sim.pooled_coverage_study(sc, k, tau, n_experiments=n, seed=cell_seed(args.seed, "R", name, tau, k))
                cov = r["coverage"]
                ok = (BAND[0] <= cov <= BAND[1] and k > 1) or (k == 1 and r["interval_over"] != "") \
                    or r["warn"] >= 0.90
                rows.append({"scenario": name, "tau": tau, "campaigns": k, "interval_over": r["interval_over"],
                             "coverage_%": round(100 * cov, 1), "mc_se_%": round(100 * r["mc_se"], 1),
                             "miss_below_%": round(100 * r["miss_below"], 1),
                             "miss_above_%": round(100 * r["miss_above"], 1),
                             "halfwidth_%": round(100 * r["halfwidth_rel"], 2),
                             "tau_hat_median": None if math.isnan(r["tau_hat_median"]) else round(r["tau_hat_median"], 3),
                             "warn_%": round(100 * r["warn"], 1),
                             "ok": "yes" if ok else "NO"})
    return rows


def section_tests(args):
    """False alarms and power of the heterogeneity and mode tests."""
    n = args.experiments
    het_rows = []
    runs = (3, 5, 10) if args.quick else (2, 3, 5, 10, 20, 30)
    for fam, ar in (("lognormal", 0.0), ("heavy_tailed", 0.0), ("contaminated", 0.0), ("lognormal", 0.5),
                    ("heavy_tailed", 0.5), ("lognormal", 0.8)):
        for b in (10, 50):
            row_ = {"family": fam, "batch_ar1": ar, "batches": b}
            for r in runs:
                sc = sim.Scenario(family=fam, n_runs=r, n_batches=b, run_sigma=0.0, batch_sigma=0.03,
                                  batch_ar1=ar)
                x, _ = sim.draw_per_op(sc, np.random.default_rng(cell_seed(args.seed, "K1", fam, ar, b, r)), n)
                h = heterogeneity.heterogeneity_arrays(x)
                row_[f"R={r} het_%"] = round(100 * float(np.mean(h["heterogeneous"])), 1)
                row_[f"R={r} warn_%"] = round(100 * float(np.mean(h["warn"])), 1)
            het_rows.append(row_)
    mode_rows = []
    n_mode = n if not args.quick else min(n, 200)
    for label, kw in (("unimodal lognormal run effects, sd 0.1", dict(run_sigma=0.1)),
                      ("unimodal lognormal run effects, sd 0.25", dict(run_sigma=0.25)),
                      ("unimodal lognormal run effects, sd 0.4", dict(run_sigma=0.4)),
                      ("bimodal_runs 10x (30 % of runs), both modes in sample",
                       dict(family="bimodal_runs", far_factor=10.0, far_fraction=0.3)),
                      ("bimodal within runs 10x (30 % of batches)",
                       dict(family="bimodal", far_factor=10.0, far_fraction=0.3))):
        row_ = {"condition": label, "what": "power" if "bimodal" in label else "false alarm"}
        for r in runs:
            sc = sim.Scenario(n_runs=r, n_batches=10, batch_sigma=kw.pop("batch_sigma", 0.03),
                              **{k: v for k, v in kw.items()})
            x, _ = sim.draw_per_op(sc, np.random.default_rng(cell_seed(args.seed, "K2", label, r)), n_mode)
            run = np.repeat(np.arange(r), sc.n_batches)
            use = np.ones(n_mode, dtype=bool)
            if sc.family == "bimodal_runs":
                med = np.log(np.median(x, axis=2))
                use = (med.max(axis=1) - med.min(axis=1)) > math.log(sc.far_factor) / 2
            hits = [quality.detect_multimodality(x[e].ravel(), run).multimodal for e in np.nonzero(use)[0]]
            rate = float(np.mean(hits)) if hits else math.nan
            row_[f"R={r} %"] = round(100 * rate, 1)
            row_[f"R={r} n"] = len(hits)
        mode_rows.append(row_)
    return het_rows, mode_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiments", type=int, default=1000, help="simulated experiments per cell (>= 1000)")
    ap.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples per interval")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--sections", default="ABCDEFGHIJKQ")
    ap.add_argument("--minority-run-sd", type=float, default=0.02,
                    help="section J: log-sd of the ordinary run effect under the slow minority")
    ap.add_argument("--quick", action="store_true",
                    help="smaller grids and 300 experiments per cell (sections J, K by default)")
    ap.add_argument("--save", metavar="PATH",
                    help="also write every cell as JSON lines (e.g. data/validation/stats_coverage.jsonl, "
                         "which the paper's Method section reads)")
    ap.add_argument("--save-campaigns", metavar="PATH",
                    help="section R's cells as JSON lines (data/validation/campaign_coverage.jsonl)")
    args = ap.parse_args()
    if args.quick:
        args.experiments = min(args.experiments, 300)
        if args.sections == "ABCDEFGHIJKQ":
            args.sections = "JK"
    secs = set(args.sections.replace(",", "").upper())
    uni = ("lognormal", "heavy_tailed", "contaminated")
    print(f"coverage of nominal 95 % intervals; {args.experiments} experiments per cell, "
          f"{args.resamples} bootstrap resamples, seed {args.seed}; band {BAND[0]:.0%}-{BAND[1]:.0%}")
    print("regimes (log-sd of run effect, of batches): "
          + ", ".join(f"{k} {v}" for k, v in REGIMES.items()))
    t0 = time.perf_counter()
    if "A" in secs:
        show("A. median, default runs-t (t on log run medians)", section_methods(["runs-t"], uni, args), t0)
    if "B" in secs:
        for m in ("hier-percentile", "hier-bca", "runs-os"):
            show(f"B. median, {m}", section_methods([m], uni, args), t0)
    if "C" in secs:
        show("C. median, naive iid bootstrap ignoring runs (runs <= 10)",
             section_methods(["iid-percentile"], uni, args, runs=(5, 10)), t0)
    if "D" in secs:
        show("D. bimodal families: runs-t and runs-os (modes should be pinned, not averaged)",
             section_methods(["runs-t", "runs-os"], ("bimodal", "bimodal_runs"), args), t0)
    if "E" in secs:
        for eff in ("student_t3", "skewed"):
            show(f"E. run effect {eff}: runs-t (geometric-mean estimand) and runs-os (median estimand)",
                 section_methods(["runs-t", "runs-os"], ("lognormal", "contaminated"), args,
                                 run_effect=eff), t0)
    if "F" in secs:
        show("F. ratio A/B (true ratio 8.6), run-dominant regime", section_ratio(args), t0)
    if "G" in secs:
        show("G. mean estimator, runs-t (t on run means); truth = population mean", section_mean(args), t0)
    if "H" in secs:
        show("H. adaptive precision: add runs until half-width <= target (min 5, max 30 runs), 10 batches",
             section_sequential(args), t0)
    if "I" in secs:
        show("I. sweep slope interval, time = 1000 + 20 N ns, lognormal runs", section_sweep(args), t0)
    if "J" in secs:
        rows = section_minority(args)
        show_ok(f"J. minority-slow runs (bimodal_runs: base run sd {args.minority_run_sd:g}, batch sd 0.01, "
                "10 batches): the quoted number's coverage and warn rate; the mean over runs (runs-t) and the "
                "typical run (runs-os) alone", rows, t0, "the quoted number's coverage in {band} % or a warning "
                "in >= 90 % of experiments")
    if "Q" in secs:
        rows = section_quoted(args)
        show_ok("Q. the quoted number (the typical run; the mean over runs with fewer than 6 runs that do not "
                "differ) on A's grid and E's run-effect shapes", rows, t0,
                "coverage in {band} % or a warning in >= 90 % of experiments")
    if "R" in secs:
        rows = section_campaigns(args)
        show_ok("R. campaigns as a level: pooled interval over campaigns (t, k-1 df) vs the campaign-population "
                "value; one campaign: the within-one-campaign interval", rows, t0,
                "pooled coverage in {band} %, a heterogeneity warning in >= 90 % of experiments, or one "
                "campaign labelled 'within one campaign'")
        if args.save_campaigns:
            import json
            from pathlib import Path

            out = Path(args.save_campaigns)
            out.parent.mkdir(parents=True, exist_ok=True)
            meta = {"section": "meta", "experiments": max(args.experiments, 2000), "seed": args.seed, "band": list(BAND)}
            out.write_text("".join(json.dumps(r) + "\n" for r in
                                   [meta, *({"section": "R", **r} for r in rows)]))
            print(f"wrote {out}")
    if "K" in secs:
        het_rows, mode_rows = section_tests(args)
        show("K1. heterogeneity test on homogeneous runs (run sd 0, batch sd 0.03): "
             "false 'heterogeneous' and false minority warnings", het_rows, t0)
        show("K2. mode test: false alarms on unimodal run effects, power on 10x bimodal conditions "
             "(10 batches per run)", mode_rows, t0)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if args.save:
        import json
        from pathlib import Path

        out = Path(args.save)
        out.parent.mkdir(parents=True, exist_ok=True)
        meta = {"section": "meta", "experiments": args.experiments, "resamples": args.resamples, "seed": args.seed,
                "sections": "".join(sorted(secs)), "band": list(BAND)}
        tmp = out.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r, default=str) + "\n" for r in [meta, *SAVED]))
        tmp.replace(out)
        print(f"saved {len(SAVED)} cells to {out}")


if __name__ == "__main__":
    main()
