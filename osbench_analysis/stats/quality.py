"""Quality of the data: interference flags, outliers, stability, multimodality.

Everything here works on a samples DataFrame in the schema's columns (see
:mod:`osbench_analysis.store.schema`) and never modifies it in place.

* :func:`flag_batches` adds per-batch flag columns: interference signals the
  runner records (involuntary context switches and page faults above the
  condition's own baseline, CPU migration during the batch, optionally a high
  load average) and Tukey-fence outlier classes (mild / severe) computed on
  the batch's deviation from its own run's median.
* :func:`stability_warnings` gives pyperf-style warnings per condition.
* :func:`detect_multimodality` finds conditions whose batches fall into
  well-separated modes (e.g. pipe round trips on the same CPU vs across
  CPUs) so that they are reported as modes, not averaged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from osbench_analysis.stats.modes import (BETWEEN_ALPHA, MIN_DELTA_BIC, MIN_MODE_FRACTION,  # noqa: F401  (re-exported)
                                          MIN_MODE_RATIO, MIN_SEPARATION, NULL_RUN_SIGMA, Multimodality,
                                          detect_multimodality)
from osbench_analysis.stats.groups import group_medians, group_positions
from osbench_analysis.store.schema import GROUP_KEYS

# ----------------------------------------------------------------- flag rule


@dataclass(frozen=True)
class FlagRule:
    """Which batches count as disturbed ("flagged").

    Counter signals are judged against the condition's own baseline because
    some probes switch context by design (a pipe ping-pong on one CPU has an
    involuntary switch per round trip when the woken partner preempts the
    writer; fork takes page faults).  A batch is flagged for a counter when
    ``count > expected + poisson_sigmas * sqrt(expected) + slack`` where
    ``expected`` is the condition's median count per iteration times the
    batch's iterations.  With a zero baseline this is simply ``count > slack``.

    Involuntary switches also happen for no reason of the probe's: brief
    kernel-thread preemptions.  On our 2-vCPU VMs a quick campaign (~12 ms
    batches) had 1-3 of them in half of its batches with no measurable
    slowdown (median per-op time within 0.2 % of the run's median; 4 and more
    went with slower batches).  So the expected count is at least
    ``background_nivcsw_per_10ms`` per 10 ms of the condition's median batch
    time, and a batch is flagged only beyond that plus 3 Poisson sd (about
    5+ switches in a 10 ms batch of a probe that never switches by itself).
    """

    background_nivcsw_per_10ms: float = 1.0   # harmless preemptions expected per 10 ms
    minflt_slack: int | None = 8   # extra minor faults tolerated (None: don't use)
    poisson_sigmas: float = 3.0
    migration: bool = True         # cpu_start != cpu_end flags the batch
    loadavg_max: float | None = None   # flag batches started above this 1-min load
    tukey_exclude: str | None = "severe"   # outlier class that also counts as flagged

    def __post_init__(self) -> None:
        if self.tukey_exclude not in (None, "mild", "severe"):
            raise ValueError(f"tukey_exclude must be None, 'mild' or 'severe' "
                             f"(got {self.tukey_exclude!r})")
        if self.poisson_sigmas < 0:
            raise ValueError(f"poisson_sigmas must be >= 0 (got {self.poisson_sigmas})")
        if self.background_nivcsw_per_10ms < 0 or (self.minflt_slack is not None and self.minflt_slack < 0):
            raise ValueError("background_nivcsw_per_10ms and minflt_slack must be >= 0")

    def describe(self) -> str:
        """Plain-English exclusion rule, used by the methods paragraph."""
        parts = [f"its involuntary context switches exceeded the condition's median rate "
                 f"(scaled to the batch's iterations, and at least "
                 f"{self.background_nivcsw_per_10ms:g} per 10~ms of the condition's median batch time "
                 f"for background preemptions) by more than {self.poisson_sigmas:g} "
                 f"Poisson standard deviations"]
        if self.minflt_slack is not None:
            parts.append(f"its minor page faults exceeded the condition's median rate by the "
                         f"same rule plus {self.minflt_slack}")
        if self.migration:
            parts.append("the worker migrated to another CPU during the batch")
        if self.loadavg_max is not None:
            parts.append(f"the 1-minute load average exceeded {self.loadavg_max:g} when it started")
        if self.tukey_exclude == "severe":
            parts.append("it was a severe outlier (beyond 3 IQR Tukey fences on the log "
                         "deviation from its run's median)")
        elif self.tukey_exclude == "mild":
            parts.append("it was an outlier (beyond 1.5 IQR Tukey fences on the log "
                         "deviation from its run's median)")
        return "; or ".join(parts)


DEFAULT_FLAG_RULE = FlagRule()

FLAG_COLUMNS = ("flag_nivcsw", "flag_minflt", "flag_migrated", "flag_load",
                "outlier_class", "flag_interference", "flagged")

# Floor on the IQR of log deviations (0.1 %): per-op times averaged over many
# iterations can be so tight that a zero IQR would make every batch an outlier.
_MIN_LOG_IQR = 1e-3


def _group_ids(df: pd.DataFrame) -> np.ndarray:
    keys = [k for k in GROUP_KEYS if k in df.columns]
    if not keys:
        return np.zeros(len(df), dtype=np.int64)
    return df.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()


def per_op_ns(df: pd.DataFrame) -> np.ndarray:
    """Per-op time of each batch: elapsed_ns / iterations (per_op_ns if absent)."""
    if "elapsed_ns" in df.columns and "iterations" in df.columns:
        it = df["iterations"].to_numpy(dtype=float)
        if np.any(it <= 0):
            raise ValueError("iterations must be > 0 in every batch "
                             f"(found {int(np.sum(it <= 0))} batches with iterations <= 0)")
        return df["elapsed_ns"].to_numpy(dtype=float) / it
    if "per_op_ns" in df.columns:
        return df["per_op_ns"].to_numpy(dtype=float)
    raise ValueError("samples need elapsed_ns and iterations (or per_op_ns) columns")


def _measured_mask(df: pd.DataFrame) -> np.ndarray:
    if "warmup" in df.columns:
        return ~df["warmup"].to_numpy(dtype=bool)
    return np.ones(len(df), dtype=bool)


def _counter_excess(count: np.ndarray, iters: np.ndarray, gid: np.ndarray,
                    measured: np.ndarray, sigmas: float, slack, floor=0.0) -> np.ndarray:
    """True where a counter exceeds the condition's baseline rate (see FlagRule)."""
    rate = count / iters
    base = pd.Series(np.where(measured, rate, np.nan)).groupby(gid).transform("median").to_numpy()
    base = np.nan_to_num(base, nan=0.0)
    expected = np.maximum(base * iters, floor)
    return count > expected + sigmas * np.sqrt(expected) + slack


def flag_batches(samples: pd.DataFrame, rule: FlagRule = DEFAULT_FLAG_RULE) -> pd.DataFrame:
    """Copy of ``samples`` with per-batch flag columns added.

    Columns added: ``flag_nivcsw``, ``flag_minflt``, ``flag_migrated``,
    ``flag_load`` (bool), ``outlier_class`` ('' | 'mild' | 'severe', Tukey fences
    on log(per-op / run median) pooled over the condition's measured batches),
    ``flag_interference`` (any interference signal) and ``flagged`` (what
    ``exclude_flagged=True`` removes: interference, or an outlier of class
    ``rule.tukey_exclude``).  Warm-up batches are never flagged: they are
    excluded from every estimate anyway.
    """
    return flag_conditions(samples, rule)[0]


def flag_conditions(samples: pd.DataFrame, rule: FlagRule = DEFAULT_FLAG_RULE
                    ) -> tuple[pd.DataFrame, list[tuple], list[np.ndarray], list[Multimodality]]:
    """``flag_batches`` and what it found on the way, for one pass over the conditions:
    (flagged copy, condition keys (GROUP_KEYS present, sorted), row positions of each
    condition, the mode test of each condition's measured batches without interference,
    which is ``condition_quality``'s)."""
    df = samples.copy()
    n = len(df)
    measured = _measured_mask(df)
    names, positions, gid = group_positions(df, [k for k in GROUP_KEYS if k in df.columns])
    iters = df["iterations"].to_numpy(dtype=float) if "iterations" in df.columns else np.ones(n)
    iters = np.where(iters > 0, iters, 1.0)

    def counter_flag(col: str, slack, floor=0.0) -> np.ndarray:
        if slack is None or col not in df.columns:
            return np.zeros(n, dtype=bool)
        return _counter_excess(df[col].to_numpy(dtype=float), iters, gid, measured,
                               rule.poisson_sigmas, slack, floor)

    if "elapsed_ns" in df.columns:
        # the condition's typical batch length, not the batch's own (which a
        # disturbance inflates)
        el = pd.Series(np.where(measured, df["elapsed_ns"].to_numpy(dtype=float), np.nan))
        per_10ms = np.nan_to_num(el.groupby(gid).transform("median").to_numpy(), nan=1e7) / 1e7
    else:
        per_10ms = np.ones(n)
    f_niv = counter_flag("nivcsw", 0.0, rule.background_nivcsw_per_10ms * per_10ms)
    f_flt = counter_flag("minflt", rule.minflt_slack)
    if rule.migration and {"cpu_start", "cpu_end"} <= set(df.columns):
        cs = df["cpu_start"].to_numpy()
        ce = df["cpu_end"].to_numpy()
        # -1 (or any negative) means the runner could not read the CPU
        f_mig = (cs >= 0) & (ce >= 0) & (cs != ce)
    else:
        f_mig = np.zeros(n, dtype=bool)
    if rule.loadavg_max is not None and "loadavg_1m" in df.columns:
        f_load = df["loadavg_1m"].to_numpy(dtype=float) > rule.loadavg_max
    else:
        f_load = np.zeros(n, dtype=bool)

    interference = (f_niv | f_flt | f_mig | f_load) & measured
    outlier = tukey_classes(df, measured=measured, gid=gid)
    # A mode is not an outlier: in a condition whose batches alternate between
    # modes (e.g. unpinned pipe round trips, 30 % of them across CPUs) Tukey
    # fences would flag the whole slower mode.  Those conditions get no outlier
    # classes; the mode test (on batches without interference signals) reports
    # them instead.  Modes between runs keep their outlier classes.
    y = per_op_ns(df)
    run_col = df["run"].to_numpy() if "run" in df.columns else np.zeros(n, dtype=np.int64)
    modes = []
    for pos in positions:
        m = pos[(measured & ~interference)[pos]]
        modes.append(detect_multimodality(y[m], run_col[m]))
        # only modes WITHIN runs: Tukey fences are relative to each run's
        # median, so runs in different modes are not outliers anyway
        if modes[-1].split == "within_runs":
            outlier[pos] = ""
    if rule.tukey_exclude == "severe":
        out_flag = outlier == "severe"
    elif rule.tukey_exclude == "mild":
        out_flag = outlier != ""
    else:
        out_flag = np.zeros(n, dtype=bool)
    df["flag_nivcsw"] = f_niv & measured
    df["flag_minflt"] = f_flt & measured
    df["flag_migrated"] = f_mig & measured
    df["flag_load"] = f_load & measured
    df["outlier_class"] = pd.array(outlier, dtype="string")
    df["flag_interference"] = interference
    df["flagged"] = interference | (out_flag & measured)
    return df, names, positions, modes


def tukey_classes(samples: pd.DataFrame, *, measured: np.ndarray | None = None,
                  gid: np.ndarray | None = None) -> np.ndarray:
    """Tukey-fence class of each batch: '' (inside), 'mild' or 'severe'.

    The statistic is r = log(per-op / median of the batch's run), pooled over
    the measured batches of a condition: runs differ systematically, so fences
    on raw times would call every batch of a slow run an outlier.  Mild is
    beyond 1.5 IQR from the quartiles, severe beyond 3 IQR (both sides: a
    batch much faster than its run is as suspicious as a slow one).
    """
    df = samples
    n = len(df)
    measured = _measured_mask(df) if measured is None else measured
    gid = _group_ids(df) if gid is None else gid
    y = per_op_ns(df)
    with np.errstate(divide="ignore"):
        ly = np.log(np.where(y > 0, y, np.nan))
    run = df["run"].to_numpy() if "run" in df.columns else np.zeros(n, dtype=np.int64)
    s = pd.Series(np.where(measured, ly, np.nan))
    run_med = s.groupby([gid, run]).transform("median").to_numpy()
    r = ly - run_med
    q1, q3 = _group_nanquantiles(np.where(measured, r, np.nan), gid, (0.25, 0.75))
    iqr = np.maximum(q3 - q1, _MIN_LOG_IQR)
    out = np.full(n, "", dtype=object)
    with np.errstate(invalid="ignore"):
        mild = (r < q1 - 1.5 * iqr) | (r > q3 + 1.5 * iqr)
        severe = (r < q1 - 3.0 * iqr) | (r > q3 + 3.0 * iqr)
    out[mild & measured] = "mild"
    out[severe & measured] = "severe"
    return out


def _group_nanquantiles(values: np.ndarray, gid: np.ndarray, qs) -> list[np.ndarray]:
    """Per row, ``np.nanquantile`` (linear) of its group's values, for each q of ``qs``: NaN for a
    group without a value.  numpy's own arithmetic (its _lerp) on all groups at once."""
    ids, gid = np.unique(gid, return_inverse=True)
    ok = ~np.isnan(values)
    v, g = values[ok], gid[ok]
    order = np.lexsort((v, g))
    v, g = v[order], g[order]
    counts = np.bincount(g, minlength=ids.size)
    starts = np.cumsum(counts) - counts
    out = []
    for q in qs:
        virtual = (counts - 1) * q
        prev = np.floor(virtual).astype(np.intp)
        gamma = virtual - prev
        last = virtual >= counts - 1
        prev = np.where(last, counts - 1, prev)
        nxt = np.where(last, counts - 1, prev + 1)
        have = counts > 0
        a = np.where(have, v[np.where(have, starts + prev, 0)] if v.size else np.nan, np.nan)
        b = np.where(have, v[np.where(have, starts + nxt, 0)] if v.size else np.nan, np.nan)
        diff = b - a
        res = a + diff * gamma
        res = np.where(gamma >= 0.5, b - diff * (1 - gamma), res)
        out.append(np.where(have, res, np.nan)[gid])
    return out


@dataclass(frozen=True)
class FlagSummary:
    """Fractions of measured batches flagged in one condition."""

    n_batches: int
    flagged_fraction: float
    interference_fraction: float
    nivcsw_fraction: float
    minflt_fraction: float
    migrated_fraction: float
    mild_outlier_fraction: float
    severe_outlier_fraction: float


def flag_summary(samples: pd.DataFrame, rule: FlagRule = DEFAULT_FLAG_RULE) -> pd.DataFrame:
    """Per condition (GROUP_KEYS): fraction of measured batches flagged, by reason."""
    df = samples if "flagged" in samples.columns else flag_batches(samples, rule)
    df = df[_measured_mask(df)]
    keys = [k for k in GROUP_KEYS if k in df.columns]
    rows = []
    for key, g in df.groupby(keys, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        s = FlagSummary(
            n_batches=len(g),
            flagged_fraction=float(g["flagged"].mean()),
            interference_fraction=float(g["flag_interference"].mean()),
            nivcsw_fraction=float(g["flag_nivcsw"].mean()),
            minflt_fraction=float(g["flag_minflt"].mean()),
            migrated_fraction=float(g["flag_migrated"].mean()),
            mild_outlier_fraction=float((g["outlier_class"] == "mild").mean()),
            severe_outlier_fraction=float((g["outlier_class"] == "severe").mean()),
        )
        rows.append({**dict(zip(keys, key)), **s.__dict__})
    return pd.DataFrame(rows)


# ------------------------------------------------------ stability warnings


@dataclass(frozen=True)
class StabilityThresholds:
    """When to warn (pyperf-like).  All relative values are fractions."""

    max_cv: float = 0.10            # batch-to-batch coefficient of variation
    max_over_median: float = 1.5    # slowest batch / median batch
    min_runs: int = 5               # fewer runs: run-to-run variance poorly known
    max_run_cv: float = 0.05        # spread of run medians (CV), when beyond batch noise
    min_batch_ns: float = 100_000.0  # shorter batches: clock overhead and resolution matter
    max_flagged_fraction: float = 0.10
    max_drift: float = 0.02         # per-op change over a run's batches (relative)


DEFAULT_THRESHOLDS = StabilityThresholds()


@dataclass(frozen=True)
class ConditionQuality:
    """Quality report of one condition."""

    n_runs: int
    n_batches: int
    cv: float
    max_over_median: float
    run_cv: float
    flagged_fraction: float
    multimodality: Multimodality
    warnings: tuple[str, ...] = field(default_factory=tuple)


def few_runs_warning(n_runs: int, min_runs: int) -> str:
    """The warning of a condition with fewer than ``min_runs`` runs (here and on the quoted estimate)."""
    return (f"only {n_runs} run(s): run-to-run variance is poorly estimated and a "
            f"minority of slower runs may be missing entirely (want >= {min_runs})")


def condition_quality(group: pd.DataFrame, thresholds: StabilityThresholds = DEFAULT_THRESHOLDS,
                      rule: FlagRule = DEFAULT_FLAG_RULE, *, multimodality: Multimodality | None = None
                      ) -> ConditionQuality:
    """Stability warnings and mode test for one condition's samples (``multimodality``: the mode
    test of its measured batches without interference, when already done: flag_conditions)."""
    df = group if "flagged" in group.columns else flag_batches(group, rule)
    return condition_quality_at(QualityColumns(df), np.arange(len(df)), thresholds, multimodality)


class QualityColumns:
    """The columns condition_quality reads, as arrays over a flagged samples frame (per-op
    times of measured batches only: a warm-up batch is never divided)."""

    def __init__(self, df: pd.DataFrame):
        n = len(df)
        self.measured = _measured_mask(df)
        self.y = np.full(n, np.nan)
        if self.measured.all():
            self.y = per_op_ns(df)
        elif self.measured.any():
            self.y[self.measured] = per_op_ns(df[self.measured])
        self.run = df["run"].to_numpy() if "run" in df.columns else np.zeros(n, dtype=int)
        self.flagged = df["flagged"].to_numpy(dtype=bool)
        self.interference = df["flag_interference"].to_numpy(dtype=bool)
        self.elapsed = df["elapsed_ns"].to_numpy() if "elapsed_ns" in df.columns else None
        self.batch = df["batch"].to_numpy(dtype=float) if "batch" in df.columns else None


def quality_runs(c: QualityColumns, measured: np.ndarray) -> list[np.ndarray]:
    """The per-run arrays of the measured rows ``measured`` of ``c``, in batch order, as
    condition_quality_at tests them for heterogeneity."""
    y, run = c.y[measured], c.run[measured]
    return [y[run == r] for r in np.unique(run)]


def condition_quality_at(c: QualityColumns, pos: np.ndarray, thresholds: StabilityThresholds,
                       mm: Multimodality | None) -> ConditionQuality:
    """condition_quality of the rows ``pos`` of ``c``."""
    pos = pos[c.measured[pos]]
    y = c.y[pos]
    run = c.run[pos]
    warnings: list[str] = []
    runs = np.unique(run)
    n_runs = int(runs.size)
    if y.size == 0:
        mm = detect_multimodality(y, run)
        return ConditionQuality(0, 0, math.nan, math.nan, math.nan, math.nan, mm,
                                ("no measured batches",))
    med = float(np.median(y))
    cv = float(np.std(y, ddof=1) / np.mean(y)) if y.size > 1 else 0.0
    mx = float(np.max(y) / med) if med > 0 else math.nan
    by_run = [y[run == r] for r in runs]
    run_meds = group_medians(y, run)[2]
    # Classical CV of the run medians: a robust (MAD) one is ~0 when most runs
    # agree, and so blind to a minority of slower runs (issue 12).  It counts
    # only when the runs differ beyond their batch noise (heterogeneity test).
    run_cv = float(np.std(run_meds, ddof=1) / np.mean(run_meds)) if run_meds.size >= 2 else 0.0
    from osbench_analysis.stats.heterogeneity import heterogeneity
    het = heterogeneity(by_run)
    beyond_noise = het.heterogeneous or not np.isfinite(het.p_value)
    flagged = float(np.mean(c.flagged[pos]))
    if mm is None:
        clean = ~c.interference[pos]
        mm = detect_multimodality(y[clean], run[clean])
    t = thresholds
    if mm.multimodal:
        warnings.append("multimodal: " + mm.message)
    if cv > t.max_cv:
        warnings.append(f"unstable: batch coefficient of variation (sd/mean) is {cv:.0%} "
                        f"(> {t.max_cv:.0%})")
    if mx > t.max_over_median:
        warnings.append(f"the slowest batch is {mx:.1f}x the median (> {t.max_over_median:g}x)")
    if n_runs < t.min_runs:
        warnings.append(few_runs_warning(n_runs, t.min_runs))
    if run_cv > t.max_run_cv and beyond_noise:
        warnings.append(f"runs differ systematically: run medians vary by {run_cv:.1%} "
                        f"(CV > {t.max_run_cv:.0%}, beyond batch noise); add runs rather than batches")
    if c.elapsed is not None:
        shortest = float(c.elapsed[pos].min())
        if shortest < t.min_batch_ns:
            warnings.append(f"batches as short as {shortest / 1e3:.0f} us "
                            f"(< {t.min_batch_ns / 1e3:.0f} us): raise iterations per batch")
    if flagged > t.max_flagged_fraction:
        warnings.append(f"{flagged:.0%} of batches flagged for interference/outliers "
                        f"(> {t.max_flagged_fraction:.0%}): check the results without them")
    drift, significant = _drift(None if c.batch is None else c.batch[pos], y, run, runs)
    if significant and abs(drift) > t.max_drift:
        warnings.append(f"drift: per-op time changes by {drift:+.1%} from first to last batch "
                        "within runs (frequency scaling, thermal, caches warming?)")
    return ConditionQuality(n_runs, int(y.size), cv, mx, run_cv, flagged, mm, tuple(warnings))


#: scipy's Theil-Sen estimator without its NaN- and axis-policy wrapper (finite 1-D arrays here), which took
#: three quarters of each call
_theilslopes = getattr(stats.theilslopes, "__wrapped__", stats.theilslopes)


def _drift(b: np.ndarray | None, y: np.ndarray, run: np.ndarray, runs: np.ndarray) -> tuple[float, bool]:
    """Relative change of per-op time from a run's first to its last batch.

    Theil-Sen slope (robust: one spike is not drift) of log(per-op / run
    median) against the batch index ``b``, pooled over runs, times the typical
    batch span of a run.  Returns (drift, significant) where significant
    means the 99 % interval of the slope excludes 0: with 10 noisy batches a
    per-run slope of a few % is mostly noise, so the warning needs both.
    """
    if b is None or y.size < 8:
        return 0.0, False
    ly = np.log(y)
    _, inv, med = group_medians(ly, run)      # the runs in `runs`' order (np.unique's)
    resid = ly - med[inv]
    first, last = np.full(med.size, np.inf), np.full(med.size, -np.inf)
    np.minimum.at(first, inv, b)
    np.maximum.at(last, inv, b)
    span = float(np.median(last - first))
    if span == 0 or np.ptp(b) == 0:
        return 0.0, False
    res = _theilslopes(resid, b, alpha=0.99)
    drift = float(math.expm1(res.slope * span))
    return drift, bool(res.low_slope > 0 or res.high_slope < 0)


def quality_row(keys: list[str], key: tuple, q: ConditionQuality) -> dict:
    """One row of the quality table."""
    return {
        **dict(zip(keys, key)),
        "n_runs": q.n_runs, "n_batches": q.n_batches,
        "cv": q.cv, "max_over_median": q.max_over_median, "run_cv": q.run_cv,
        "flagged_fraction": q.flagged_fraction,
        "multimodal": q.multimodality.multimodal,
        "mode_ratio": q.multimodality.mode_ratio if q.multimodality.multimodal else math.nan,
        "high_mode_fraction": (q.multimodality.high_mode_fraction
                               if q.multimodality.multimodal else math.nan),
        "warnings": "; ".join(q.warnings),
    }


def quality_table(samples: pd.DataFrame, thresholds: StabilityThresholds = DEFAULT_THRESHOLDS,
                  rule: FlagRule = DEFAULT_FLAG_RULE) -> pd.DataFrame:
    """One row per condition: CVs, flagged fraction, mode test and warnings."""
    keys = [k for k in GROUP_KEYS if k in samples.columns]
    if "flagged" in samples.columns:
        df = samples
        names, positions, _ = group_positions(df, keys)
        modes = [None] * len(names)
    else:
        df, names, positions, modes = flag_conditions(samples, rule)
    cols = QualityColumns(df)
    return pd.DataFrame([quality_row(keys, key, condition_quality_at(cols, pos, thresholds, mm))
                         for key, pos, mm in zip(names, positions, modes)])
