"""The paper's statistical-methods paragraph, written from the parameters used.

``methods_paragraph(summary)`` reads ``summary.attrs["analysis_parameters"]``
(set by ``stats.summarize`` / ``ratio_table`` / ``flag_sensitivity``) so the
text always states the level, method, resamples, seed and exclusion rule that
produced the numbers next to it.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from osbench_analysis.stats import heterogeneity
from osbench_analysis.stats import quality
from osbench_analysis.formatting import percent_tex
from osbench_analysis.stats import AnalysisParameters, SweepFit, ci_method, runs_for_level
from osbench_analysis.stats.quote import MIN_RUNS, TYPICAL_RUN


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


def _ci_sentence(p: AnalysisParameters, source=None) -> str:
    lvl = percent_tex(p.level)
    if p.estimator == "median":
        what = ("We summarise each run by its median per-operation time. The mean over runs of a "
                "condition is the geometric mean of its run medians: the estimand is "
                "$\\exp(\\mathrm{E}[\\log M])$, where $M$ is a run's median per-operation time, which "
                "equals the median run's median when run effects are symmetric on the log scale. ")
        if p.ci_method == "runs-os":
            what = ("We summarise each run by its median per-operation time, and a condition by the "
                    "median of its run medians (the estimand is the median, over runs, of a run's "
                    "median per-operation time). ")
    else:
        what = ("We summarise each run by its mean per-operation time and a condition by the mean of "
                "its run means; the estimand is the population mean per-operation time. ")
    how = ci_method(p.ci_method).sentence(p)     # each registered CI method describes itself
    single = ("A condition measured in a single run gets a distribution-free order-statistic "
              "interval for that run's median, which reflects batch-to-batch variation only and is "
              "marked as such. ")
    if isinstance(source, pd.DataFrame) and "n_runs" in source.columns and len(source):
        single = single if (source["n_runs"] < 2).any() else ""     # said only where such a condition exists
    return what + how + single


def _flag_sentence(p: AnalysisParameters, source=None) -> str:
    rule = p.flag_rule
    s = ("Each timed batch of many operations is one observation (per-operation time = elapsed time / "
         "iterations); warm-up batches are recorded but never used. "
         f"A batch is flagged as disturbed when {rule.describe()}. ")
    done, other = ("exclude", "kept") if p.exclude_flagged else ("keep", "excluded")
    s += f"The reported estimates {done} flagged batches"
    if isinstance(source, pd.DataFrame) and "depends_on_flags" in source.columns and len(source):
        n = int(source["depends_on_flags"].fillna(False).astype(bool).sum())
        s += (f"; each condition is estimated again with them {other}, and the conclusion of {n} of "
              f"{len(source)} conditions depends on it. ")
    else:
        s += (f"; each condition is estimated again with them {other}, and the estimates table records "
              "whether its conclusion depends on it. ")
    s += ("Outliers are classified with Tukey fences (mild beyond 1.5, severe beyond 3 interquartile "
          "ranges) on the log deviation of each batch from its run's median. ")
    return s


def _mode_sentence() -> str:
    return ("We test every condition for two modes, as happens when two processes sometimes share a "
            "CPU and sometimes do not. Modes within runs: a two-component normal mixture on each "
            "batch's log deviation from its run's median, preferred by BIC by more than "
            f"{quality.MIN_DELTA_BIC:g}, with Ashman's $D > {quality.MIN_SEPARATION:g}$, the smaller "
            f"mode holding at least {percent_tex(quality.MIN_MODE_FRACTION)} of the batches and the modes at "
            f"least {quality.MIN_MODE_RATIO:g}$\\times$ apart. Modes between runs (whole worker "
            "processes in one mode): the log run medians split in two groups farther apart than "
            f"{percent_tex(1 - quality.BETWEEN_ALPHA)} of such splits of unimodal lognormal run effects with "
            f"log-standard deviation {quality.NULL_RUN_SIGMA:g}. Such conditions are reported per "
            "pinned placement instead of averaging the modes. ")


def _quote_sentence(p: AnalysisParameters, source=None) -> str:
    """Which number each condition quotes (stats.quote), with the counts when ``source`` is an estimate table."""
    if p.estimator != "median":
        return ""
    lvl = percent_tex(p.level)
    need = runs_for_level(p.level)
    if p.quote == "mean-over-runs":
        s = "Every condition quotes the geometric mean of its run medians. "
    elif p.quote == "typical-run":
        s = ("Every condition quotes its typical run, the median of its run medians, with a "
             "distribution-free order-statistic interval (Hettmansperger--Sheather interpolation). ")
    else:
        s = ("The number we quote for a condition is its typical run, the median of its run medians, "
             "with a distribution-free order-statistic interval (Hettmansperger--Sheather interpolation), "
             "because a mean over runs depends on how many slower worker runs the sample happened to "
             f"catch. That interval needs {need} runs to reach {lvl}; a condition with fewer runs whose runs "
             "do not differ beyond batch noise quotes the geometric mean of its run medians instead, "
             "with the interval above. ")
    if isinstance(source, pd.DataFrame) and "quoted" in source.columns and len(source):
        n_typ = int((source["quoted"] == TYPICAL_RUN).sum())
        s += (f"Here {n_typ} of {len(source)} conditions quote the typical run and "
              f"{len(source) - n_typ} the mean over runs. ")
    return s


def _paper_quote_sentence(p: AnalysisParameters, source=None) -> str:
    """Which number the package quotes and which the paper prints (paper_estimand): one story, the counts from
    ``source`` (an estimate table)."""
    if p.estimator != "median":
        return ""
    lvl = percent_tex(p.level)
    s = ("The package's stopping rule and its warnings use a condition's typical run, the median of its run "
         "medians, with a distribution-free order-statistic interval (Hettmansperger--Sheather interpolation; "
         f"it needs {runs_for_level(p.level)} runs to reach {lvl}), because a mean over runs depends on how many "
         "slower worker runs the sample happened to catch. The tables and sentences of this paper quote the mean "
         "over runs, the geometric mean of the run medians with its $t$ interval, because every ratio and "
         "difference in the paper is built from it; where a condition's runs are not alike, its typical run "
         "is printed beside it with its interval")
    if isinstance(source, pd.DataFrame) and len(source) and {"warning", "heterogeneous"} <= set(source.columns):
        warned = source["warning"].fillna("").astype(str).ne("") & source["heterogeneous"].fillna(False).astype(bool)
        s += f" (here {int(warned.sum())} of {len(source)} conditions)"
    return s + ". "


def _heterogeneity_sentence(p: AnalysisParameters) -> str:
    if p.estimator != "median":
        return ""
    return ("We test whether runs differ by more than their batch noise "
            "explains (an $F$ test of the variance of the log run medians against the variance of a "
            "median of the run's batches, from a pooled robust within-run scale with a lag-1 "
            f"autocorrelation correction, at the {percent_tex(heterogeneity.ALPHA)} level) and whether a "
            "minority of runs stands apart (the best two-group split of the log run medians against "
            "its distribution for normal run effects). When a minority of share $f$ shows and the "
            f"condition has fewer runs than the smallest $R$ with $1-(1-f)^R \\ge "
            f"{heterogeneity.SEE_PROBABILITY:g}$, its estimate carries a warning with that number of "
            "runs: a mean over runs would then miss or over-weight the minority. An estimate also carries "
            f"a warning when it rests on fewer than {MIN_RUNS} runs, or when it is a typical run whose "
            f"interval cannot reach {percent_tex(p.level)} ($[\\min, \\max]$ of 5 runs has 93.75\\%). ")


def _ratio_sentence(p: AnalysisParameters) -> str:
    if p.ci_method == "runs-t":
        how = ("Welch $t$-intervals on the difference of the mean log run-level values of the two "
               "systems (each system's runs are independent)")
    else:
        how = ("independent hierarchical bootstraps of the two systems, taking the ratio of the "
               "resampled estimates")
    what = "the means over runs" if p.estimator == "median" else "the estimates"
    return (f"Ratios between systems ($A/B$) are estimated by the ratio of {what} with {how}; "
            "they are plotted on a log scale, and a difference is claimed only when the interval "
            "excludes 1. ")


def _sweep_sentence(fit: SweepFit) -> str:
    return ("For scalability sweeps we fit $t = a + bN$ by least squares to the run medians and obtain "
            f"{percent_tex(fit.level)} intervals for $b$ and for the relative change over the swept range by "
            "resampling runs within each $N$; we call the cost constant only when the interval for the "
            f"relative change lies within $\\pm${percent_tex(fit.tolerance_rel)}, and growing only when the "
            "interval for $b$ excludes zero. ")


def _coverage_sentence(results: Sequence) -> str:
    cov = [r.coverage for r in results]
    n_exp = min(r.n_experiments for r in results)
    lvl = percent_tex(results[0].level)
    runs = sorted({r.n_runs for r in results})
    batches = sorted({r.n_batches for r in results})
    families = sorted({r.family.replace("_", "-") for r in results})
    rng = lambda v: f"{v[0]}" if len(v) == 1 else f"{v[0]}--{v[-1]}"  # noqa: E731
    return (f"We validated the procedure on simulated experiments with known truth (run-level random "
            f"effects; {', '.join(families)} batch distributions; {len(results)} settings with "
            f"{rng(runs)} runs and {rng(batches)} batches per run, at least {_int(n_exp)} experiments "
            f"each): the nominal {lvl} intervals covered the true value in {percent_tex(min(cov))}--"
            f"{percent_tex(max(cov))} of experiments. ")


def methods_paragraph(source, *, sweep: SweepFit | None = None, coverage: Sequence | None = None,
                      ratios: bool = True, pooling=None, campaigns: bool = False, paper: bool = False) -> str:
    """LaTeX methods paragraph for the parameters behind ``source``.

    ``source``: an AnalysisParameters or a DataFrame from stats.summarize /
    flag_sensitivity / ratio_table.  ``sweep``: a SweepFit, to describe the
    scalability test with its tolerance.  ``coverage``: CoverageResult
    objects measured by benchmarks/stats_coverage.py (or
    simulate.coverage_study), to state the validated coverage; omitted when
    not given (or measured for another method), so the text never quotes
    numbers that were not computed for this method.  ``pooling`` (a
    reproducibility.Pooling) or ``campaigns=True``: say what the intervals
    cover, over campaigns or within one (issue #20).  ``paper``: the paper's wording of which number is
    quoted (the stopping rule's typical run, the paper's mean over runs: paper_estimand).
    """
    p = _params(source)
    quote = _paper_quote_sentence(p, source) if paper else _quote_sentence(p, source)
    parts = [_flag_sentence(p, source), _ci_sentence(p, source), quote, _heterogeneity_sentence(p),
             _mode_sentence()]
    if ratios:
        parts.append(_ratio_sentence(p))
    if sweep is not None:
        parts.append(_sweep_sentence(sweep))
    if coverage:
        # only the validation of the method actually used may be quoted
        mine = [r for r in coverage if r.ci_method == p.ci_method and r.estimator == p.estimator]
        if mine:
            parts.append(_coverage_sentence(mine))
    if pooling is not None or campaigns:
        from osbench_analysis.analysis.reproducibility import methods_sentence

        parts.append(methods_sentence(pooling, p.level))
    return "".join(parts).strip()
