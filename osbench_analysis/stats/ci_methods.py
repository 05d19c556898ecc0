"""Confidence-interval methods as registered objects.

Each method carries what the rest of the package needs to know about it:
its interval for one condition (`interval`), how ratios between two
conditions are formed with it (`ratio`: a Welch interval on run-level log
values, or the difference of two bootstrap distributions; None: no ratio
interval), the estimand it targets per estimator (`estimands`, names as in
simulate.ESTIMANDS) and the sentence the paper's Method prints (`sentence`).
A new method is one subclass and one `register()` call:

    class MyMethod(CIMethod):
        name = "my-method"
        estimands = {"median": "geomean_of_run_medians"}
        ratio = "welch"
        def interval(self, rd, estimator, level, n_resamples, rng): ...
        def sentence(self, p): ...
    register(MyMethod())
"""
from __future__ import annotations

import numpy as np

from osbench_analysis.stats.bootstrap import _bca_interval, _jackknife_runs, hierarchical_bootstrap, resampled_run_medians
from osbench_analysis.stats.intervals import _t_interval, order_statistic_median_ci
from osbench_analysis.stats.params import ESTIMATORS, _check_level
from osbench_analysis.stats.rundata import RunData


class CIMethod:
    name: str = ""
    estimands: dict[str, str] = {}       # estimator -> estimand
    ratio: str | None = "bootstrap"      # "welch" | "bootstrap" | None (no two-sample interval)

    def interval(self, rd: RunData, estimator: str, level: float, n_resamples: int,
                 rng: np.random.Generator) -> tuple[float, float, float, str]:
        """(estimate, low, high, note) in ns per operation for >= 2 runs."""
        raise NotImplementedError

    def sentence(self, p) -> str:
        """How the Method section describes this method's intervals (p: stats.AnalysisParameters)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<CI method {self.name}>"


def _pct(level: float) -> str:
    return f"{level * 100:g}\\%"


def _back(estimator: str):
    return np.exp if estimator == "median" else (lambda v: v)


class RunsT(CIMethod):
    """Student t on run-level values (log run medians, or run means): the default."""
    name = "runs-t"
    estimands = {"median": "geomean_of_run_medians", "mean": "mean"}
    ratio = "welch"

    def interval(self, rd, estimator, level, n_resamples, rng):
        R = rd.n_runs
        m, lo, hi = _t_interval(rd.run_values(estimator), level)
        back = _back(estimator)
        note = (f"t-interval on log run medians ({R - 1} df)" if estimator == "median"
                else f"t-interval on run means ({R - 1} df)")
        return float(back(m)), float(back(lo)), float(back(hi)), note

    def sentence(self, p):
        unit = "log run medians" if p.estimator == "median" else "run means"
        return (f"{_pct(p.level)} confidence intervals are Student-$t$ intervals with $R-1$ degrees of freedom "
                f"on the {unit} of the $R$ runs, so run-to-run variation (ASLR, CPU placement, page "
                "colouring) is part of every interval. ")


class RunsOrderStatistic(CIMethod):
    """Distribution-free interval for the median of the run medians (the typical run)."""
    name = "runs-os"
    estimands = {"median": "median_of_run_medians"}
    ratio = None

    def interval(self, rd, estimator, level, n_resamples, rng):
        R = rd.n_runs
        med, lo, hi, conf = order_statistic_median_ci(rd.run_values("median"), level, interpolate=True)
        note = "order-statistic CI for the median of run medians (interpolated)"
        if conf < level - 1e-9:
            note = (f"only {R} runs: [min, max] of the run medians has {conf:.1%} confidence, "
                    f"below the requested {level:.0%}")
        return float(np.exp(med)), float(np.exp(lo)), float(np.exp(hi)), note

    def sentence(self, p):
        return (f"{_pct(p.level)} confidence intervals are distribution-free order-statistic intervals for the "
                "median of the run medians (binomial, interpolated between adjacent order statistics "
                "after Hettmansperger and Sheather); with fewer than six runs the interval is the range "
                "of the run medians and its lower confidence is stated. ")


class Hierarchical(CIMethod):
    """Hierarchical bootstrap: runs resampled, then batches within runs; percentile or BCa."""
    estimands = {"median": "geomean_of_run_medians", "mean": "mean"}
    ratio = "bootstrap"

    def __init__(self, bca: bool):
        self.bca = bca
        self.name = "hier-bca" if bca else "hier-percentile"

    def interval(self, rd, estimator, level, n_resamples, rng):
        alpha = 1 - level
        vals = rd.run_values(estimator)
        theta = float(vals.mean())
        boot = hierarchical_bootstrap(rd, estimator, n_resamples, rng)
        extra = ""
        if self.bca:
            lo, hi, extra = _bca_interval(boot, theta, _jackknife_runs(vals), level)
        else:
            lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
        note = f"hierarchical bootstrap ({n_resamples} resamples: runs, then batches within runs)"
        if extra:
            note += "; " + extra
        back = _back(estimator)
        return float(back(theta)), float(back(lo)), float(back(hi)), note

    def sentence(self, p):
        kind = ("bias-corrected and accelerated (BCa, acceleration from the leave-one-run-out jackknife)"
                if self.bca else "percentile")
        n = f"{p.n_resamples:,}".replace(",", "{,}")
        return (f"{_pct(p.level)} confidence intervals come from a hierarchical bootstrap ({n} "
                f"resamples, seed {p.seed}): runs are resampled with replacement, then batches within "
                f"each chosen run; intervals are {kind}. ")


class NaiveIID(CIMethod):
    """Batches resampled as if independent, runs ignored: for demonstration only (it under-covers)."""
    name = "iid-percentile"
    estimands = {"median": "pooled_median", "mean": "mean"}
    ratio = "bootstrap"

    def interval(self, rd, estimator, level, n_resamples, rng):
        alpha = 1 - level
        pooled = np.sort(np.concatenate(rd.runs))
        one = RunData((pooled,), (0,))
        if estimator == "median":
            if pooled.size <= 512:
                boot = resampled_run_medians(one, np.zeros(n_resamples, dtype=np.int64), rng)
            else:
                boot = np.concatenate([np.median(pooled[rng.integers(0, pooled.size,
                                                                     (min(500, n_resamples - s), pooled.size))], axis=1)
                                       for s in range(0, n_resamples, 500)])
            point = float(np.median(pooled))
        else:
            boot = hierarchical_bootstrap(one, "mean", n_resamples, rng)
            point = float(pooled.mean())
        lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
        return point, float(lo), float(hi), \
            "NAIVE: batches resampled as if independent, runs ignored; for demonstration only"

    def sentence(self, p):
        return (f"{_pct(p.level)} intervals come from a bootstrap of pooled batches that ignores runs "
                "(for comparison only; it under-covers). ")


REGISTRY: dict[str, CIMethod] = {}


#: The registered methods' names, and what each (estimator, method) pair estimates; kept up to date by register().
CI_METHODS: tuple[str, ...] = ()
ESTIMAND: dict[tuple[str, str], str] = {}


def register(method: CIMethod) -> CIMethod:
    global CI_METHODS
    if not method.name or method.name in REGISTRY:
        raise ValueError(f"a CI method needs a new, non-empty name (got {method.name!r})")
    REGISTRY[method.name] = method
    CI_METHODS = tuple(REGISTRY)
    ESTIMAND.update({(est, method.name): what for est, what in method.estimands.items()})
    return method


def get(name: str) -> CIMethod:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"ci_method must be one of {tuple(REGISTRY)} (got {name!r})") from None


for _m in (RunsT(), Hierarchical(bca=False), Hierarchical(bca=True), RunsOrderStatistic(), NaiveIID()):
    register(_m)


def check_common(level, estimator, n_resamples, ci_method) -> None:
    """Every argument the estimate, summary, ratio and sweep functions share, checked in one place."""
    _check_level(level)
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS} (got {estimator!r})")
    if ci_method not in CI_METHODS:
        raise ValueError(f"ci_method must be one of {CI_METHODS} (got {ci_method!r})")
    if (estimator, ci_method) not in ESTIMAND:
        raise ValueError(f"ci_method {ci_method!r} is for the median only; "
                         f"use one of {[m for (e, m) in ESTIMAND if e == estimator]} with the {estimator}")
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 100:
        raise ValueError(f"n_resamples must be an integer >= 100 (got {n_resamples})")
