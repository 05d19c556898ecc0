"""One condition's estimate with its interval (estimate_ci and the CI-method dispatch)."""
from __future__ import annotations

import math
from dataclasses import dataclass
import numpy as np
from scipy import stats as sps
from osbench_analysis.stats.quality import DEFAULT_FLAG_RULE, FlagRule
from osbench_analysis.stats.ci_methods import ESTIMAND, get as get_ci_method, check_common
from osbench_analysis.stats.params import DEFAULT_CI_METHOD, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from osbench_analysis.stats.rundata import RunData, _as_run_data, _rng
from osbench_analysis.stats.intervals import _t_interval, order_statistic_median_ci


@dataclass(frozen=True)
class Estimate:
    """A point estimate of per-op time with its confidence interval."""

    estimate_ns: float
    ci_low_ns: float
    ci_high_ns: float
    level: float
    ci_method: str          # the method actually used (after any fallback)
    estimator: str
    n_runs: int
    n_batches: int
    note: str = ""

    @property
    def halfwidth_rel(self) -> float:
        """Half the CI width relative to the estimate (the precision target's unit)."""
        if not (self.estimate_ns > 0) or not np.isfinite(self.ci_high_ns - self.ci_low_ns):
            return math.nan
        return (self.ci_high_ns - self.ci_low_ns) / 2 / self.estimate_ns

    @property
    def estimand(self) -> str:
        return ESTIMAND.get((self.estimator, self.ci_method), "run median" if self.n_runs == 1 else "")


def _single_run(rd: RunData, estimator: str, level: float) -> Estimate:
    y = rd.runs[0]
    base = "single run: interval over its batches, blind to run-to-run variation; "
    if estimator == "median":
        med, lo, hi, conf = order_statistic_median_ci(y, level)
        note = base + "distribution-free order-statistic CI for the median"
        if conf < level:
            note += f" has only {conf:.1%} confidence with {y.size} batches ([min, max])"
        return Estimate(med, lo, hi, level, "order-stat", estimator, 1, y.size, note)
    if y.size < 2:
        return Estimate(float(y[0]), math.nan, math.nan, level, "batch-t", estimator, 1, 1,
                        base + "one batch: no interval")
    m, lo, hi = _t_interval(y, level)
    return Estimate(m, lo, hi, level, "batch-t", estimator, 1, y.size, base + "t-interval over batches")


def estimate_ci(per_op, run=None, *, estimator: str = "median", level: float = DEFAULT_LEVEL,
                n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                ci_method: str = DEFAULT_CI_METHOD, exclude_flagged: bool = False,
                rule: FlagRule = DEFAULT_FLAG_RULE, rng: np.random.Generator | None = None) -> Estimate:
    """Estimate and CI for one condition.

    ``per_op`` is a samples DataFrame of one condition (warm-ups are dropped,
    flagged batches too if ``exclude_flagged``), a RunData, or an array of
    per-op times with ``run`` labels.
    """
    check_common(level, estimator, n_resamples, ci_method)
    rd = _as_run_data(per_op, run, exclude_flagged=exclude_flagged, rule=rule)
    rng = rng if rng is not None else _rng(seed)
    R = rd.n_runs
    if R == 0:
        return Estimate(math.nan, math.nan, math.nan, level, ci_method, estimator, 0, 0,
                        "no measured batches")
    if R == 1 and ci_method != "iid-percentile":
        return _single_run(rd, estimator, level)
    few = f"only {R} runs: the interval is wide and rests on few independent units; " if R < 5 else ""
    point, lo, hi, note = get_ci_method(ci_method).interval(rd, estimator, level, n_resamples, rng)
    if not note.startswith("NAIVE") and not note.startswith(f"only {R} runs: [min"):
        note = few + note
    return Estimate(point, lo, hi, level, ci_method, estimator, R, rd.n_batches, note.strip("; "))


def median_ci(samples, run=None, *, level: float = DEFAULT_LEVEL, n_resamples: int = DEFAULT_RESAMPLES,
              seed: int = DEFAULT_SEED, ci_method: str = DEFAULT_CI_METHOD,
              exclude_flagged: bool = False, rule: FlagRule = DEFAULT_FLAG_RULE) -> Estimate:
    """Median per-op time of ONE condition with its CI (see the module docstring)."""
    return estimate_ci(samples, run, estimator="median", level=level, n_resamples=n_resamples,
                       seed=seed, ci_method=ci_method, exclude_flagged=exclude_flagged, rule=rule)


def mean_ci(samples, run=None, *, level: float = DEFAULT_LEVEL, n_resamples: int = DEFAULT_RESAMPLES,
            seed: int = DEFAULT_SEED, ci_method: str = DEFAULT_CI_METHOD,
            exclude_flagged: bool = False, rule: FlagRule = DEFAULT_FLAG_RULE) -> Estimate:
    """Mean per-op time of ONE condition (mean of run means) with its CI."""
    return estimate_ci(samples, run, estimator="mean", level=level, n_resamples=n_resamples,
                       seed=seed, ci_method=ci_method, exclude_flagged=exclude_flagged, rule=rule)
