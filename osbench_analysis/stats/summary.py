"""The per-condition table: estimates, flags kept and excluded, typical run and heterogeneity."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
import numpy as np
import pandas as pd
from ..heterogeneity import heterogeneity as _heterogeneity
from ..quality import DEFAULT_FLAG_RULE, FlagRule, condition_quality, flag_batches, per_op_ns
from ..schema import GROUP_KEYS
from .ci_methods import ESTIMAND
from .params import DEFAULT_CI_METHOD, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, _check_common
from .rundata import RunData, _rng
from .intervals import order_statistic_median_ci
from .estimates import estimate_ci


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


SUMMARY_COLUMNS = (*GROUP_KEYS, "estimate_ns", "ci_low_ns", "ci_high_ns", "level", "ci_method", "n_runs",
                   "n_batches", "note", "estimator", "halfwidth_rel", "n_flagged", "flagged_fraction",
                   "excluded_flagged", "multimodal", "warnings",
                   # what each number is, and whether the runs are alike (heterogeneity.py)
                   "estimand", "typical_run", "typical_run_low", "typical_run_high",
                   "typical_run_confidence", "heterogeneous", "slow_run_fraction", "slow_run_factor",
                   "runs_needed", "warning")


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


def summarize(samples: pd.DataFrame, *, level: float = DEFAULT_LEVEL, estimator: str = "median",
              n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
              exclude_flagged: bool = False, ci_method: str = DEFAULT_CI_METHOD,
              rule: FlagRule = DEFAULT_FLAG_RULE, quality: bool = True) -> pd.DataFrame:
    """One row per condition (GROUP_KEYS): estimate, CI, flags and warnings.

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
    fewer than runs_needed runs; also appended to warnings), see
    :mod:`heterogeneity`.  Warm-up batches are never used.
    ``df.attrs["analysis_parameters"]`` holds the AnalysisParameters for
    :func:`methods.methods_paragraph`.
    ``quality=False`` skips the warnings and mode test (faster; the runner's
    between-run checks do not need them).
    """
    _check_common(level, estimator, n_resamples, ci_method)
    missing = [k for k in GROUP_KEYS if k not in samples.columns]
    if missing:
        raise ValueError(f"samples lack the condition columns {missing} (see schema.GROUP_KEYS)")
    flagged = flag_batches(samples, rule)
    rows = []
    for key, g in flagged.groupby(list(GROUP_KEYS), sort=True, dropna=False):
        measured = g[~g["warmup"].to_numpy(dtype=bool)] if "warmup" in g.columns else g
        n_flag = int(measured["flagged"].sum())
        use = measured[~measured["flagged"].to_numpy(dtype=bool)] if exclude_flagged else measured
        rd = RunData.from_arrays(per_op_ns(use), use["run"].to_numpy()) if len(use) else RunData((), ())
        est = estimate_ci(rd, estimator=estimator, level=level, n_resamples=n_resamples,
                          ci_method=ci_method, rng=_rng(seed, *key))
        warnings, multimodal = "", False
        if quality and len(measured):
            q = condition_quality(g, rule=rule)
            warnings = "; ".join(q.warnings)
            multimodal = q.multimodality.multimodal
        note = est.note
        if multimodal:
            note = ("MULTIMODAL: a single estimate averages distinct modes; see warnings"
                    + ("; " + note if note else ""))
        het = _heterogeneity(rd)
        tr, tr_lo, tr_hi, tr_conf = typical_run(rd, level)
        warning = het.warning
        if warning:
            warning += f" ({tr:.4g} ns)"
            warnings = "; ".join(w for w in (warnings, warning) if w)
        rows.append({
            **dict(zip(GROUP_KEYS, key)),
            "estimate_ns": est.estimate_ns, "ci_low_ns": est.ci_low_ns, "ci_high_ns": est.ci_high_ns,
            "level": est.level, "ci_method": est.ci_method, "n_runs": est.n_runs,
            "n_batches": est.n_batches, "note": note, "estimator": estimator,
            "halfwidth_rel": est.halfwidth_rel, "n_flagged": n_flag,
            "flagged_fraction": n_flag / len(measured) if len(measured) else math.nan,
            "excluded_flagged": bool(exclude_flagged), "multimodal": multimodal, "warnings": warnings,
            "estimand": ESTIMAND.get((estimator, est.ci_method), est.estimand),
            "typical_run": tr, "typical_run_low": tr_lo, "typical_run_high": tr_hi,
            "typical_run_confidence": tr_conf, "heterogeneous": het.heterogeneous,
            "slow_run_fraction": het.slow_run_fraction, "slow_run_factor": het.slow_run_factor,
            "runs_needed": het.runs_needed if het.clear_split else pd.NA, "warning": warning,
        })
    out = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    out["runs_needed"] = out["runs_needed"].astype("Int64")
    out.attrs["analysis_parameters"] = AnalysisParameters(level, estimator, ci_method, n_resamples, seed,
                                                          exclude_flagged, rule)
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
    kept = summarize(samples, exclude_flagged=False, **kwargs)
    clean = summarize(samples, exclude_flagged=True, quality=False, **kwargs)
    keys = list(GROUP_KEYS)
    c = clean[keys + ["estimate_ns", "ci_low_ns", "ci_high_ns", "n_batches"]].rename(columns={
        "estimate_ns": "estimate_clean_ns", "ci_low_ns": "ci_low_clean_ns",
        "ci_high_ns": "ci_high_clean_ns", "n_batches": "n_batches_clean"})
    out = kept.merge(c, on=keys, how="left")
    out["shift_rel"] = out["estimate_clean_ns"] / out["estimate_ns"] - 1
    out["depends_on_flags"] = ~(
        out["estimate_clean_ns"].between(out["ci_low_ns"], out["ci_high_ns"])
        & out["estimate_ns"].between(out["ci_low_clean_ns"], out["ci_high_clean_ns"]))
    out.attrs = kept.attrs
    return out
