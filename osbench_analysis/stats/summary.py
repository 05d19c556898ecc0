"""The per-condition table: estimates, flags kept and excluded, typical run and heterogeneity."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
import numpy as np
import pandas as pd
from osbench_analysis.formatting import time_plain
from osbench_analysis.stats.heterogeneity import heterogeneity as _heterogeneity, prime as _prime_heterogeneity
from osbench_analysis.stats.quality import (DEFAULT_FLAG_RULE, DEFAULT_THRESHOLDS, FlagRule, QualityColumns,
                                            condition_quality_at, flag_conditions, quality_row,
                                            quality_runs)
from osbench_analysis.store.schema import GROUP_KEYS
from osbench_analysis.stats.ci_methods import ESTIMAND, check_common
from osbench_analysis.stats.params import DEFAULT_CI_METHOD, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from osbench_analysis.stats.rundata import RunData, _rng
from osbench_analysis.stats.intervals import order_statistic_median_ci
from osbench_analysis.stats.estimates import Estimate, estimate_ci
from osbench_analysis.stats.quote import (DEFAULT_QUOTE, MEAN_OVER_RUNS, TYPICAL_RUN, below_level, check_quote, quote_warnings,
                    quotes_typical_run)


@dataclass(frozen=True)
class AnalysisParameters:
    """Everything that determines the numbers; feeds methods_paragraph()."""

    level: float = DEFAULT_LEVEL
    estimator: str = "median"
    ci_method: str = DEFAULT_CI_METHOD
    n_resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    exclude_flagged: bool = False
    flag_rule: FlagRule = field(default_factory=FlagRule)
    quote: str = DEFAULT_QUOTE


SUMMARY_COLUMNS = (*GROUP_KEYS, "estimate_ns", "ci_low_ns", "ci_high_ns", "level", "ci_method", "n_runs",
                   "n_batches", "note", "estimator", "halfwidth_rel", "n_flagged", "flagged_fraction",
                   "excluded_flagged", "multimodal", "warnings",
                   # what each number is, and whether the runs are alike (heterogeneity.py)
                   "estimand", "typical_run", "typical_run_low", "typical_run_high",
                   "typical_run_confidence", "heterogeneous", "slow_run_fraction", "slow_run_factor",
                   "runs_needed", "warning",
                   # which of the two the estimate_ns columns quote (stats.quote), its confidence,
                   # and the mean over runs whichever is quoted
                   "quoted", "confidence", "mean_over_runs", "mean_over_runs_low", "mean_over_runs_high")


def typical_run(rd: "RunData", level: float = DEFAULT_LEVEL) -> tuple[float, float, float, float]:
    """The typical run: median of the run medians (ns) with a distribution-free
    order-statistic interval (Hettmansperger-Sheather interpolation).

    Returns (median, low, high, confidence); with fewer than 6 runs at 95 %
    the interval is [min, max] and its confidence is below ``level``.  Unlike
    the geometric mean of run medians it does not move when a minority of
    runs is slower, so it stays a valid estimate of *the median run* when a
    campaign contains none (or too many) of them.
    """
    if rd.n_runs == 0:
        return math.nan, math.nan, math.nan, math.nan
    if rd.n_runs == 1:
        v = float(np.median(rd.runs[0]))
        return v, math.nan, math.nan, 0.0
    med, lo, hi, conf = order_statistic_median_ci(rd.run_values("median"), level, interpolate=True)
    return float(np.exp(med)), float(np.exp(lo)), float(np.exp(hi)), float(conf)


def quoted_estimate(rd: "RunData", mean_over_runs: Estimate, typical: tuple[float, float, float, float],
                    heterogeneous: bool, *, level: float = DEFAULT_LEVEL, quote: str = DEFAULT_QUOTE,
                    estimator: str = "median") -> tuple[Estimate, float, bool]:
    """The number a condition quotes (:mod:`stats.quote`), as an Estimate.

    ``mean_over_runs``: the condition's ``estimate_ci``; ``typical``: its
    ``typical_run(rd, level)``.  Returns (estimate, its interval's confidence,
    whether it is the typical run).  The estimate table and the runner's
    stopping rule (precision.py) both take the quoted number from here.
    """
    if not (rd.n_runs >= 2 and quotes_typical_run(heterogeneous, rd.n_runs, level=level, quote=quote,
                                                  estimator=estimator)):
        return mean_over_runs, mean_over_runs.level, False
    tr, lo, hi, conf = typical
    note = (f"typical run: [min, max] of {rd.n_runs} runs has {100 * conf:.4g}% confidence"
            if below_level(conf, level) else "")
    return Estimate(tr, lo, hi, level, "runs-os", estimator, rd.n_runs, rd.n_batches, note), conf, True


def summarize(samples: pd.DataFrame, *, level: float = DEFAULT_LEVEL, estimator: str = "median",
              n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
              exclude_flagged: bool = False, ci_method: str = DEFAULT_CI_METHOD,
              rule: FlagRule = DEFAULT_FLAG_RULE, quality: bool = True,
              quote: str = DEFAULT_QUOTE) -> pd.DataFrame:
    """One row per condition (GROUP_KEYS): estimate, CI, flags and warnings.

    ``estimate_ns``, ``ci_low_ns`` and ``ci_high_ns`` are the *quoted*
    number (``quoted`` names it, ``estimand`` says what it estimates,
    ``confidence`` is its interval's confidence): with ``quote="auto"`` the
    typical run, except with fewer runs than its interval needs to reach the
    level (6 at 95 %) when the runs do not differ beyond batch noise: then the
    mean over runs (see :mod:`stats.quote`); ``"mean-over-runs"`` or
    ``"typical-run"`` force one.  ``mean_over_runs*`` always hold the mean
    over runs with ``ci_method``, ``typical_run*`` the typical run.

    Columns: GROUP_KEYS + estimate_ns, ci_low_ns, ci_high_ns, level, ci_method,
    n_runs, n_batches, note, estimator, halfwidth_rel (CI half-width /
    estimate), n_flagged, flagged_fraction (of measured batches, whether or
    not excluded), excluded_flagged, multimodal, warnings (stability and
    mode warnings from :mod:`quality`, '; '-joined), and, to say what each
    number is and whether the runs are alike: estimand (of estimate_ns),
    typical_run / typical_run_low / typical_run_high / typical_run_confidence
    (median of run medians, distribution-free interval), heterogeneous,
    slow_run_fraction, slow_run_factor, runs_needed (nullable int) and
    warning (empty unless a minority of runs shows and the condition has
    fewer than runs_needed runs, see :mod:`heterogeneity`, or the quoted
    number rests on too few runs, see :mod:`stats.quote`; '; '-joined, also
    appended to warnings).  Warm-up batches are never used.
    ``df.attrs["analysis_parameters"]`` holds the AnalysisParameters for
    :func:`methods.methods_paragraph`.
    ``quality=False`` skips the warnings and mode test (faster; the runner's
    between-run checks do not need them).
    """
    kept, _, _ = _one_pass(samples, level=level, estimator=estimator, n_resamples=n_resamples, seed=seed,
                           ci_method=ci_method, rule=rule, quote=quote, quality=quality,
                           exclude_flagged=exclude_flagged)
    return kept


def _one_pass(samples: pd.DataFrame, *, level, estimator, n_resamples, seed, ci_method, rule, quote,
              quality: bool, exclude_flagged: bool, clean: bool = False, quality_table: bool = False):
    """(summary rows with flagged batches excluded or not, the clean rows or None, the quality table
    or None): flags once, then each condition from its rows' arrays (stats.groups)."""
    check_common(level, estimator, n_resamples, ci_method)
    check_quote(quote)
    missing = [k for k in GROUP_KEYS if k not in samples.columns]
    if missing:
        raise ValueError(f"samples lack the condition columns {missing} (see schema.GROUP_KEYS)")
    flagged, names, positions, modes = flag_conditions(samples, rule)
    cols = QualityColumns(flagged)
    kw = dict(level=level, estimator=estimator, n_resamples=n_resamples, seed=seed, ci_method=ci_method,
              quote=quote)
    rows, clean_rows, quality_rows = [], [], []
    # every condition's runs as the steps below test them for heterogeneity, tested at once (one numpy call
    # per shape instead of one per test: a quarter of a first analysis)
    runs: list[tuple] = []
    for pos in positions:
        measured = pos[cols.measured[pos]]
        flags = cols.flagged[measured]
        kept = _rundata(cols, measured)
        runs.append((measured, flags, kept, _rundata(cols, measured[~flags]) if flags.any() else kept))
    _prime_heterogeneity([r for m, f, kept, use in runs for r in (
        (kept, use, quality_runs(cols, m)) if (quality or quality_table) and len(m) else (kept, use))])
    for key, pos, mm, (measured, flags, kept, use) in zip(names, positions, modes, runs):
        n_flag = int(flags.sum())
        q = condition_quality_at(cols, pos, DEFAULT_THRESHOLDS, mm) if (quality or quality_table) and len(measured) \
            else None
        row = _summary_row(key, use if exclude_flagged else kept, len(measured), n_flag, q if quality else None,
                           exclude_flagged, **kw)
        rows.append(row)
        if clean:
            clean_rows.append(row if (exclude_flagged or not n_flag) else
                              _summary_row(key, use, len(measured), n_flag, None, True, **kw))
        if quality_table:
            quality_rows.append(quality_row(list(GROUP_KEYS), key, q if q is not None else
                                            condition_quality_at(cols, pos, DEFAULT_THRESHOLDS, mm)))
    params = AnalysisParameters(level, estimator, ci_method, n_resamples, seed, exclude_flagged, rule, quote)
    return (_summary_frame(rows, params), _summary_frame(clean_rows, params) if clean else None,
            pd.DataFrame(quality_rows) if quality_table else None)


def _rundata(cols: QualityColumns, pos: np.ndarray) -> RunData:
    return RunData.from_arrays(cols.y[pos], cols.run[pos]) if len(pos) else RunData((), ())


def _summary_row(key: tuple, rd: RunData, n_measured: int, n_flag: int, q, exclude_flagged: bool, *,
                 level, estimator, n_resamples, seed, ci_method, quote) -> dict:
    """One condition's summary row from its RunData (``q``: its ConditionQuality, None without
    the quality columns)."""
    est = estimate_ci(rd, estimator=estimator, level=level, n_resamples=n_resamples,
                      ci_method=ci_method, rng=_rng(seed, *key))
    warnings = "; ".join(q.warnings) if q is not None else ""
    multimodal = q.multimodality.multimodal if q is not None else False
    note = est.note
    if multimodal:
        note = ("MULTIMODAL: a single estimate averages distinct modes; see warnings"
                + ("; " + note if note else ""))
    het = _heterogeneity(rd)
    tr, tr_lo, tr_hi, tr_conf = typical = typical_run(rd, level)
    qe, q_conf, is_typical = quoted_estimate(rd, est, typical, het.heterogeneous, level=level, quote=quote,
                                             estimator=estimator)
    stat_warnings = [het.warning + f" ({time_plain(tr)})"] if het.warning else []
    if n_measured:
        stat_warnings += quote_warnings(rd.n_runs, is_typical, tr_conf, level, het.p_value)
    warning = "; ".join(stat_warnings)
    if warning:
        seen = warnings.split("; ") if warnings else []
        warnings = "; ".join(seen + [w for w in stat_warnings if w not in seen])
    return {
        **dict(zip(GROUP_KEYS, key)),
        "estimate_ns": qe.estimate_ns, "ci_low_ns": qe.ci_low_ns, "ci_high_ns": qe.ci_high_ns,
        "level": est.level, "ci_method": qe.ci_method, "n_runs": est.n_runs,
        "n_batches": est.n_batches, "note": note, "estimator": estimator,
        "halfwidth_rel": qe.halfwidth_rel, "n_flagged": n_flag,
        "flagged_fraction": n_flag / n_measured if n_measured else math.nan,
        "excluded_flagged": bool(exclude_flagged), "multimodal": multimodal, "warnings": warnings,
        "estimand": ESTIMAND.get((estimator, qe.ci_method), qe.estimand),
        "typical_run": tr, "typical_run_low": tr_lo, "typical_run_high": tr_hi,
        "typical_run_confidence": tr_conf, "heterogeneous": het.heterogeneous,
        "slow_run_fraction": het.slow_run_fraction, "slow_run_factor": het.slow_run_factor,
        "runs_needed": het.runs_needed if het.clear_split else pd.NA, "warning": warning,
        "quoted": TYPICAL_RUN if is_typical else MEAN_OVER_RUNS, "confidence": q_conf,
        "mean_over_runs": est.estimate_ns, "mean_over_runs_low": est.ci_low_ns,
        "mean_over_runs_high": est.ci_high_ns,
    }


def _summary_frame(rows: list[dict], params: AnalysisParameters) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    out["runs_needed"] = out["runs_needed"].astype("Int64")
    out.attrs["analysis_parameters"] = params
    return out


def flag_sensitivity(samples: pd.DataFrame, **kwargs) -> pd.DataFrame:
    """Estimates with flagged batches kept and excluded, side by side.

    Columns: GROUP_KEYS, estimate_ns / ci_low_ns / ci_high_ns (kept),
    estimate_clean_ns / ci_low_clean_ns / ci_high_clean_ns (excluded),
    flagged_fraction, shift_rel (clean / kept - 1) and depends_on_flags: True
    when either estimate lies outside the other's interval, i.e. a reader
    should know the conclusion hinges on the exclusion rule.
    """
    kwargs.pop("exclude_flagged", None)
    return condition_tables(samples, **kwargs)[0]


def condition_tables(samples: pd.DataFrame, *, level: float = DEFAULT_LEVEL, estimator: str = "median",
                     n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                     ci_method: str = DEFAULT_CI_METHOD, rule: FlagRule = DEFAULT_FLAG_RULE,
                     quote: str = DEFAULT_QUOTE) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(``flag_sensitivity``, ``quality.quality_table``) of ``samples`` in one pass: the batches
    flagged once, each condition's mode test, quality and heterogeneity computed once, its
    clean estimate only when it has flagged batches (else it is the kept one)."""
    kept, clean, qual = _one_pass(samples, level=level, estimator=estimator, n_resamples=n_resamples, seed=seed,
                                  ci_method=ci_method, rule=rule, quote=quote, quality=True,
                                  exclude_flagged=False, clean=True, quality_table=True)
    keys = list(GROUP_KEYS)
    # the clean estimate of the number the kept row quotes (excluding batches can change whether
    # the runs differ; the comparison stays within one estimand)
    clean = clean.merge(kept[keys + ["quoted"]].rename(columns={"quoted": "_kept_quoted"}), on=keys, how="left")
    typ = (clean["_kept_quoted"] == TYPICAL_RUN).to_numpy()
    for q, t, m in (("estimate_ns", "typical_run", "mean_over_runs"),
                    ("ci_low_ns", "typical_run_low", "mean_over_runs_low"),
                    ("ci_high_ns", "typical_run_high", "mean_over_runs_high")):
        clean[q] = np.where(typ, clean[t], clean[m])
    c = clean[keys + ["estimate_ns", "ci_low_ns", "ci_high_ns", "n_batches"]].rename(columns={
        "estimate_ns": "estimate_clean_ns", "ci_low_ns": "ci_low_clean_ns",
        "ci_high_ns": "ci_high_clean_ns", "n_batches": "n_batches_clean"})
    out = kept.merge(c, on=keys, how="left")
    out["shift_rel"] = out["estimate_clean_ns"] / out["estimate_ns"] - 1
    out["depends_on_flags"] = ~(
        out["estimate_clean_ns"].between(out["ci_low_ns"], out["ci_high_ns"])
        & out["estimate_ns"].between(out["ci_low_clean_ns"], out["ci_high_clean_ns"]))
    out.attrs = kept.attrs
    return out, qual
