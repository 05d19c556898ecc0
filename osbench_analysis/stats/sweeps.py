"""Scalability sweeps: the slope of per-op time against a swept quantity, with its interval."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
import numpy as np
import pandas as pd
from scipy import stats as sps
from osbench_analysis.stats.quality import DEFAULT_FLAG_RULE, FlagRule, flag_batches, per_op_ns
from osbench_analysis.stats.ci_methods import check_common
from osbench_analysis.stats.params import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from osbench_analysis.stats.rundata import _rng
from osbench_analysis.stats.intervals import t_interval, welch_interval


@dataclass(frozen=True)
class SweepFit:
    """time = intercept + slope * x over a scalability sweep, with bootstrap CIs.

    ``growth_rel`` is the fitted relative change of per-op time across the
    swept range, slope * (x_max - x_min) / time(x_min); the verdict compares
    its CI with ``tolerance_rel``: 'constant' (CI inside +-tolerance),
    'linear growth' / 'decreasing' (slope CI excludes 0 and the growth CI
    reaches beyond the tolerance), else 'inconclusive'.
    """

    x: str
    intercept_ns: float
    slope_ns: float                 # ns per unit of x
    slope_ci_low_ns: float
    slope_ci_high_ns: float
    intercept_ci_low_ns: float
    intercept_ci_high_ns: float
    growth_rel: float
    growth_ci_low: float
    growth_ci_high: float
    tolerance_rel: float
    verdict: str
    level: float
    n_levels: int
    n_runs: int
    points: pd.DataFrame            # x, run, run_value_ns (one row per run)
    note: str = ""


def _sweep_x(samples: pd.DataFrame, x: str) -> np.ndarray:
    if x in samples.columns:
        return pd.to_numeric(samples[x], errors="raise").to_numpy(dtype=float)
    if "params_json" in samples.columns:
        vals = [json.loads(p).get(x) if isinstance(p, str) and p else None for p in samples["params_json"]]
        if all(v is not None for v in vals):
            return np.asarray(vals, dtype=float)
    raise ValueError(f"sweep variable {x!r} is neither a column nor a key of params_json in every row")


SWEEP_CI_METHODS = ("welch", "bootstrap")


def sweep_fit(samples: pd.DataFrame, x: str, *, estimator: str = "median", level: float = DEFAULT_LEVEL,
              n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, tolerance_rel: float = 0.05,
              ci_method: str = "welch", exclude_flagged: bool = False,
              rule: FlagRule = DEFAULT_FLAG_RULE) -> SweepFit:
    """Fit per-op time = a + b * x over runs of a sweep (x = processes, sockets, ...).

    ``samples``: the rows of ONE probe in one environment and placement, at
    several values of ``x`` (a column, or a key of params_json).  Each run
    (worker process at one x) contributes its median (or mean) per-op time
    and the line is fitted by least squares over runs.  Run-to-run variance
    is estimated separately at every x (it grows with the time itself).

    ``ci_method``:
    ``welch`` (default)  t-intervals for a, b and growth_rel (delta method)
                         with per-level variances and Welch-Satterthwaite
                         degrees of freedom.
    ``bootstrap``        runs resampled within each x value (deviations
                         rescaled by sqrt(n/(n-1))), expanded-percentile
                         intervals with the same degrees of freedom.
    Measured coverage of the 95 % slope interval with 3, 5 and 10 runs per x
    (benchmarks/stats_coverage.py, section I): welch 93.8-95.0 %, bootstrap
    92.7-94.9 %; a plain percentile bootstrap without the rescaling and the
    df correction covered only ~80 % with 3-5 runs.
    """
    check_common(level, estimator, n_resamples, "hier-percentile")
    if tolerance_rel <= 0:
        raise ValueError(f"tolerance_rel must be > 0 (got {tolerance_rel})")
    if ci_method not in SWEEP_CI_METHODS:
        raise ValueError(f"ci_method must be one of {SWEEP_CI_METHODS} for sweeps (got {ci_method!r})")
    df = flag_batches(samples, rule) if exclude_flagged else samples
    for k in ("campaign_id", "environment", "probe", "placement"):
        if k in df.columns and df[k].nunique() > 1:
            raise ValueError(f"sweep_fit needs one {k}; got {sorted(df[k].astype(str).unique())}")
    if "warmup" in df.columns:
        df = df[~df["warmup"].to_numpy(dtype=bool)]
    if exclude_flagged:
        df = df[~df["flagged"].to_numpy(dtype=bool)]
    xs = _sweep_x(df, x)
    y = per_op_ns(df)
    run = df["run"].to_numpy() if "run" in df.columns else np.zeros(len(df), dtype=int)
    pts = pd.DataFrame({"x": xs, "run": run, "y": y})
    agg = "median" if estimator == "median" else "mean"
    pts = pts.groupby(["x", "run"], sort=True)["y"].agg(agg).reset_index(name="run_value_ns")
    levels = np.unique(pts["x"].to_numpy())
    if levels.size < 2:
        raise ValueError(f"a sweep needs at least two values of {x!r} (got {levels.tolist()})")
    xv = pts["x"].to_numpy(dtype=float)
    yv = pts["run_value_ns"].to_numpy(dtype=float)
    xbar = xv.mean()
    sxx = float(np.sum((xv - xbar) ** 2))
    n_l = np.array([np.sum(xv == lv) for lv in levels])
    m_l = np.array([yv[xv == lv].mean() for lv in levels])
    s2_l = np.array([np.var(yv[xv == lv], ddof=1) if k > 1 else 0.0 for lv, k in zip(levels, n_l)])
    # Every estimate below is (to first order) sum_l n_l * w_l * mean_l for
    # per-run weights w_l; its variance is sum_l n_l w_l^2 sigma_l^2.
    c_b = (levels - xbar) / sxx                     # slope
    c_a = 1.0 / xv.size - xbar * c_b                # intercept
    b_hat = float(np.sum(n_l * c_b * m_l))
    a_hat = float(np.sum(n_l * c_a * m_l))
    lo_x, hi_x = float(levels.min()), float(levels.max())
    span = hi_x - lo_x
    base = a_hat + b_hat * lo_x                     # fitted time at the smallest x
    g_hat = b_hat * span / base
    # growth = span * b / f(lo_x): delta-method weights
    c_f = c_a + lo_x * c_b
    c_g = (span / base) * (c_b - (b_hat / base) * c_f)

    def se_df(c: np.ndarray) -> tuple[float, float]:
        v = n_l * c ** 2 * s2_l
        ok = n_l > 1
        den = float(np.sum(v[ok] ** 2 / (n_l[ok] - 1)))
        return float(math.sqrt(np.sum(v))), (float(np.sum(v) ** 2 / den) if den > 0 else math.inf)

    (se_a, df_a), (se_b, df_b), (se_g, df_g) = se_df(c_a), se_df(c_b), se_df(c_g)

    def tq(dfv: float) -> float:
        return float(sps.t.ppf(0.5 + level / 2, max(dfv, 1.0))) if math.isfinite(dfv) else \
            float(sps.norm.ppf(0.5 + level / 2))

    if ci_method == "welch":
        a_lo, a_hi = a_hat - tq(df_a) * se_a, a_hat + tq(df_a) * se_a
        b_lo, b_hi = b_hat - tq(df_b) * se_b, b_hat + tq(df_b) * se_b
        g_lo, g_hi = g_hat - tq(df_g) * se_g, g_hat + tq(df_g) * se_g
    else:
        rng = _rng(seed, "sweep", x)
        Y = np.empty((n_resamples, yv.size))
        for lv, k, mean in zip(levels, n_l, m_l):
            idx = np.nonzero(xv == lv)[0]
            scale = math.sqrt(k / (k - 1)) if k > 1 else 1.0
            Y[:, idx] = mean + scale * (yv[idx[rng.integers(0, k, (n_resamples, k))]] - mean)
        xc = xv - xbar
        bb = (Y - Y.mean(axis=1, keepdims=True)) @ xc / sxx
        ab = Y.mean(axis=1) - bb * xbar
        gb = bb * span / (ab + bb * lo_x)

        def q(dfv: float) -> list[float]:
            alpha = 2 * float(sps.norm.sf(tq(dfv)))     # expanded percentile (Hesterberg 2015)
            return [alpha / 2, 1 - alpha / 2]

        a_lo, a_hi = np.quantile(ab, q(df_a))
        b_lo, b_hi = np.quantile(bb, q(df_b))
        g_lo, g_hi = np.quantile(gb, q(df_g))
    if -tolerance_rel <= g_lo and g_hi <= tolerance_rel:
        verdict = "constant"
    elif b_lo > 0 and g_hi > tolerance_rel:
        verdict = "linear growth"
    elif b_hi < 0 and g_lo < -tolerance_rel:
        verdict = "decreasing"
    else:
        verdict = "inconclusive"
    note = f"{ci_method} intervals"
    if n_l.min() < 3:
        note += (f"; only {int(n_l.min())} run(s) at some x: run-to-run variance there is "
                 "barely (or not) estimated")
    return SweepFit(x, a_hat, b_hat, float(b_lo), float(b_hi), float(a_lo), float(a_hi), float(g_hat),
                    float(g_lo), float(g_hi), float(tolerance_rel), verdict, level, int(levels.size),
                    int(len(pts)), pts, note)


def sweep_points(fit: SweepFit, level: float | None = None, per_unit: bool = False) -> pd.DataFrame:
    """What was measured at each point of a sweep, not what the line fits there: per value of x the
    geometric mean of the runs' values with a t-interval on their logarithms (the paper's estimand over runs);
    ``per_unit`` divides by x (a probe whose operation is a round of x units: the time of one unit).
    Columns x, n_runs, estimate_ns, ci_low_ns, ci_high_ns."""
    level = fit.level if level is None else level
    rows = []
    for xv, g in fit.points.groupby("x", sort=True):
        logs = np.log(g["run_value_ns"].to_numpy(dtype=float) / (float(xv) if per_unit and xv > 0 else 1.0))
        if logs.size > 1:
            m, lo, hi = (float(v) for v in t_interval(logs, level))
        else:
            m, lo, hi = float(logs[0]), math.nan, math.nan
        rows.append({"x": float(xv), "n_runs": int(logs.size), "estimate_ns": math.exp(m),
                     "ci_low_ns": math.exp(lo), "ci_high_ns": math.exp(hi)})
    return pd.DataFrame(rows, columns=["x", "n_runs", "estimate_ns", "ci_low_ns", "ci_high_ns"])


def measured_change(fit: SweepFit, level: float | None = None, per_unit: bool = False) -> tuple[float, float, float]:
    """The measured relative change from the sweep's first point to its last (no line involved): the ratio of
    the geometric means over runs at the two points minus one, with a Welch interval on the difference of the
    runs' mean logarithms.  ``per_unit``: of the time per unit (each point's time divided by its x)."""
    level = fit.level if level is None else level
    xs = sorted(fit.points["x"].unique())
    x0, x1 = float(xs[0]), float(xs[-1])
    ends = []
    for xv in (x0, x1):
        v = fit.points.loc[fit.points["x"] == xv, "run_value_ns"].to_numpy(dtype=float)
        ends.append(np.log(v / (xv if per_unit and xv > 0 else 1.0)))
    if min(e.size for e in ends) < 2:
        d = float(ends[1].mean() - ends[0].mean())
        return math.expm1(d), math.nan, math.nan
    d, lo, hi = (float(v) for v in welch_interval(ends[1], ends[0], level))
    return math.expm1(d), math.expm1(lo), math.expm1(hi)
