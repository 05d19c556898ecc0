"""The paper's statistical-methods paragraph, written from the parameters used.

``methods_paragraph(summary)`` reads ``summary.attrs["analysis_parameters"]``
(set by ``stats.summarize`` / ``ratio_table`` / ``flag_sensitivity``) so the
text always states the level, method, resamples, seed and exclusion rule that
produced the numbers next to it.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from . import quality
from .stats import AnalysisParameters, SweepFit


def _pct(x: float) -> str:
    s = f"{100 * x:.1f}".rstrip("0").rstrip(".")
    return s + r"\%"


def _int(n: int) -> str:
    """1000 -> '1{,}000' (LaTeX thousands separator without a trailing space)."""
    return f"{n:,}".replace(",", "{,}")


def _params(source) -> AnalysisParameters:
    if isinstance(source, AnalysisParameters):
        return source
    if isinstance(source, pd.DataFrame):
        p = source.attrs.get("analysis_parameters")
        if isinstance(p, AnalysisParameters):
            return p
        raise ValueError("this DataFrame carries no analysis parameters; pass the output of "
                         "stats.summarize / flag_sensitivity / ratio_table, or an AnalysisParameters")
    raise TypeError(f"expected AnalysisParameters or a summary DataFrame (got {type(source).__name__})")


def _ci_sentence(p: AnalysisParameters) -> str:
    lvl = _pct(p.level)
    if p.estimator == "median":
        what = ("We summarise each run by its median per-operation time, and a condition by the "
                "geometric mean of its run medians: the estimand is $\\exp(\\mathrm{E}[\\log M])$, "
                "where $M$ is a run's median per-operation time, which equals the median run's median "
                "when run effects are symmetric on the log scale. ")
        if p.ci_method == "runs-os":
            what = ("We summarise each run by its median per-operation time, and a condition by the "
                    "median of its run medians (the estimand is the median, over runs, of a run's "
                    "median per-operation time). ")
    else:
        what = ("We summarise each run by its mean per-operation time and a condition by the mean of "
                "its run means; the estimand is the population mean per-operation time. ")
    unit = "log run medians" if p.estimator == "median" else "run means"
    if p.ci_method == "runs-t":
        how = (f"{lvl} confidence intervals are Student-$t$ intervals with $R-1$ degrees of freedom "
               f"on the {unit} of the $R$ runs, so run-to-run variation (ASLR, CPU placement, page "
               "colouring) is part of every interval. ")
    elif p.ci_method in ("hier-percentile", "hier-bca"):
        kind = "percentile" if p.ci_method == "hier-percentile" else \
            "bias-corrected and accelerated (BCa, acceleration from the leave-one-run-out jackknife)"
        how = (f"{lvl} confidence intervals come from a hierarchical bootstrap ({_int(p.n_resamples)} "
               f"resamples, seed {p.seed}): runs are resampled with replacement, then batches within "
               f"each chosen run; intervals are {kind}. ")
    elif p.ci_method == "runs-os":
        how = (f"{lvl} confidence intervals are distribution-free order-statistic intervals for the "
               "median of the run medians (binomial, interpolated between adjacent order statistics "
               "after Hettmansperger and Sheather); with fewer than six runs the interval is the range "
               "of the run medians and its lower confidence is stated. ")
    else:
        how = (f"{lvl} intervals come from a bootstrap of pooled batches that ignores runs "
               "(for comparison only; it under-covers). ")
    single = ("A condition measured in a single run gets a distribution-free order-statistic "
              "interval for that run's median, which reflects batch-to-batch variation only and is "
              "marked as such. ")
    return what + how + single


def _flag_sentence(p: AnalysisParameters) -> str:
    rule = p.flag_rule
    s = ("Each timed batch of many operations is one observation (per-operation time = elapsed time / "
         "iterations); warm-up batches are recorded but never used. "
         f"A batch is flagged as disturbed when {rule.describe()}. ")
    if p.exclude_flagged:
        s += ("The reported estimates exclude flagged batches; the estimates with flagged batches kept "
              "are given alongside, and we point out where a conclusion depends on the exclusion. ")
    else:
        s += ("The reported estimates keep flagged batches; the estimates with flagged batches excluded "
              "are given alongside, and we point out where a conclusion depends on the exclusion. ")
    s += ("Outliers are classified with Tukey fences (mild beyond 1.5, severe beyond 3 interquartile "
          "ranges) on the log deviation of each batch from its run's median. ")
    return s


def _mode_sentence() -> str:
    return ("We test every condition for two modes (a two-component normal mixture on log per-operation "
            f"time preferred by BIC by more than {quality.MIN_DELTA_BIC:g}, Ashman's $D > "
            f"{quality.MIN_SEPARATION:g}$, the smaller mode holding at least "
            f"{_pct(quality.MIN_MODE_FRACTION)} of the batches and the modes at least "
            f"{quality.MIN_MODE_RATIO:g}$\\times$ apart), as happens when two processes sometimes share a "
            "CPU and sometimes do not; such conditions are reported per pinned placement instead of "
            "averaging the modes. ")


def _ratio_sentence(p: AnalysisParameters) -> str:
    if p.ci_method == "runs-t":
        how = ("Welch $t$-intervals on the difference of the mean log run-level values of the two "
               "systems (each system's runs are independent)")
    else:
        how = ("independent hierarchical bootstraps of the two systems, taking the ratio of the "
               "resampled estimates")
    return (f"Ratios between systems ($A/B$) are estimated by the ratio of the estimates with {how}; "
            "they are plotted on a log scale, and a difference is claimed only when the interval "
            "excludes 1. ")


def _sweep_sentence(fit: SweepFit) -> str:
    return ("For scalability sweeps we fit $t = a + bN$ by least squares to the run medians and obtain "
            f"{_pct(fit.level)} intervals for $b$ and for the relative change over the swept range by "
            "resampling runs within each $N$; we call the cost constant only when the interval for the "
            f"relative change lies within $\\pm${_pct(fit.tolerance_rel)}, and growing only when the "
            "interval for $b$ excludes zero. ")


def _coverage_sentence(results: Sequence) -> str:
    cov = [r.coverage for r in results]
    n_exp = min(r.n_experiments for r in results)
    lvl = _pct(results[0].level)
    runs = sorted({r.n_runs for r in results})
    batches = sorted({r.n_batches for r in results})
    families = sorted({r.family.replace("_", "-") for r in results})
    rng = lambda v: f"{v[0]}" if len(v) == 1 else f"{v[0]}--{v[-1]}"  # noqa: E731
    return (f"We validated the procedure on simulated experiments with known truth (run-level random "
            f"effects; {', '.join(families)} batch distributions; {len(results)} settings with "
            f"{rng(runs)} runs and {rng(batches)} batches per run, at least {_int(n_exp)} experiments "
            f"each): the nominal {lvl} intervals covered the true value in {_pct(min(cov))}--"
            f"{_pct(max(cov))} of experiments. ")


def methods_paragraph(source, *, sweep: SweepFit | None = None, coverage: Sequence | None = None,
                      ratios: bool = True) -> str:
    """LaTeX methods paragraph for the parameters behind ``source``.

    ``source``: an AnalysisParameters or a DataFrame from stats.summarize /
    flag_sensitivity / ratio_table.  ``sweep``: a SweepFit, to describe the
    scalability test with its tolerance.  ``coverage``: CoverageResult
    objects measured by benchmarks/stats_coverage.py (or
    simulate.coverage_study), to state the validated coverage; omitted when
    not given (or measured for another method), so the text never quotes
    numbers that were not computed for this method.
    """
    p = _params(source)
    parts = [_flag_sentence(p), _ci_sentence(p), _mode_sentence()]
    if ratios:
        parts.append(_ratio_sentence(p))
    if sweep is not None:
        parts.append(_sweep_sentence(sweep))
    if coverage:
        # only the validation of the method actually used may be quoted
        mine = [r for r in coverage if r.ci_method == p.ci_method and r.estimator == p.estimator]
        if mine:
            parts.append(_coverage_sentence(mine))
    return "".join(parts).strip()
