"""Ratios between systems with their own intervals, and the ratio table."""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
import numpy as np
import pandas as pd
from scipy import stats as sps
from osbench_analysis.errors import OsbenchError
from osbench_analysis.stats.heterogeneity import heterogeneity as _heterogeneity
from osbench_analysis.stats.groups import group_positions
from osbench_analysis.stats.quality import DEFAULT_FLAG_RULE, FlagRule, flag_batches
from osbench_analysis.store.schema import GROUP_KEYS
from osbench_analysis.stats.ci_methods import REGISTRY as CI_REGISTRY, get as get_ci_method, check_common
from osbench_analysis.stats.params import DEFAULT_CI_METHOD, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
from osbench_analysis.stats.rundata import RunData, _as_run_data
from osbench_analysis.stats.bootstrap import _jackknife_runs, hierarchical_bootstrap
from osbench_analysis.stats.estimates import Estimate, estimate_ci
from osbench_analysis.stats.intervals import welch_interval
from osbench_analysis.stats.summary import AnalysisParameters


@dataclass(frozen=True)
class RatioEstimate:
    """A / B of per-op times with its CI; ``different`` iff the CI excludes 1."""

    ratio: float
    ci_low: float
    ci_high: float
    level: float
    ci_method: str
    different: bool
    numerator: Estimate
    denominator: Estimate
    note: str = ""

    @property
    def log_ratio(self) -> float:
        return math.log(self.ratio)


def _welch_log_ratio(ra: RunData, rb: RunData, estimator: str, level: float) -> tuple[float, float, float]:
    va, vb = ra.run_values(estimator), rb.run_values(estimator)
    d, lo, hi = welch_interval(va, vb, level, log_of_means=(estimator == "mean"))
    if not np.isfinite(lo):     # zero spread on both sides
        return float(d), float(d), float(d)
    return float(d), float(lo), float(hi)


class MissingRunLabels(OsbenchError, ValueError):
    """Per-op times given without the run each batch belongs to."""


def _ratio_side(x, name: str, single_run: bool, exclude_flagged: bool, rule: FlagRule) -> RunData:
    if isinstance(x, RunData):
        return x
    if isinstance(x, pd.DataFrame):
        if "run" not in x.columns and not single_run:
            raise MissingRunLabels(
                f"ratio_ci: {name} has no 'run' column, so its batches cannot be grouped into runs "
                "(the independent unit of the interval); pass the samples with their run column, a "
                "RunData, or single_run=True if the batches really are one worker's")
        return _as_run_data(x, exclude_flagged=exclude_flagged, rule=rule)
    if not single_run:
        raise MissingRunLabels(
            f"ratio_ci: {name} is a plain array of per-op times without run labels; the interval "
            "needs runs (worker processes) as its independent unit.  Pass RunData.from_arrays(per_op, "
            "run), the samples DataFrame, or single_run=True to state that each array is ONE run "
            "(the interval is then blind to run-to-run variation)")
    return RunData.from_arrays(np.asarray(x, dtype=float))


def ratio_ci(a, b, *, estimator: str = "median", level: float = DEFAULT_LEVEL,
             n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
             ci_method: str = DEFAULT_CI_METHOD, exclude_flagged: bool = False,
             rule: FlagRule = DEFAULT_FLAG_RULE, single_run: bool = False) -> RatioEstimate:
    """Ratio A/B of two conditions' per-op times (e.g. gVisor vs native).

    Each side is treated independently (its own runs).  ``runs-t``: Welch
    t-interval on the difference of mean log run medians (log of the ratio of
    geometric means of run medians).  ``hier-*``: independent hierarchical
    bootstraps of both sides, interval of the ratio of the resampled
    statistics (BCa with the two-sample jackknife acceleration).  The ratio
    is ``different`` from 1 only when its CI excludes 1.

    ``a`` and ``b``: samples DataFrames (with their ``run`` column) or
    RunData.  Plain arrays of per-op times carry no run labels and raise
    :class:`MissingRunLabels`, unless ``single_run=True`` says that each array
    is one worker's batches (the interval is then a hierarchical bootstrap
    blind to run-to-run variation, and the note says so).
    """
    check_common(level, estimator, n_resamples, ci_method)
    if get_ci_method(ci_method).ratio is None:
        raise ValueError(f"ratio_ci does not support {ci_method!r} (no two-sample interval); "
                         f"use one of {[m.name for m in CI_REGISTRY.values() if m.ratio]}")
    ra = _ratio_side(a, "a", single_run, exclude_flagged, rule)
    rb = _ratio_side(b, "b", single_run, exclude_flagged, rule)
    rng_a, rng_b = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    kw = dict(estimator=estimator, level=level, n_resamples=n_resamples, ci_method=ci_method)
    ea = estimate_ci(ra, rng=rng_a, **kw)
    eb = estimate_ci(rb, rng=rng_b, **kw)
    if ra.n_runs == 0 or rb.n_runs == 0:
        return RatioEstimate(math.nan, math.nan, math.nan, level, ci_method, False, ea, eb,
                             "no measured batches on one side")
    alpha = 1 - level
    method, note = ci_method, ""
    if get_ci_method(ci_method).ratio == "welch" and min(ra.n_runs, rb.n_runs) < 2:
        method = "hier-percentile"
        note = ("single run on one side: hierarchical bootstrap used, blind to that side's "
                "run-to-run variation")
    if get_ci_method(method).ratio == "welch":
        d, lo, hi = _welch_log_ratio(ra, rb, estimator, level)
        note = note or "Welch t-interval on log run-level values"
    else:
        if method == "iid-percentile":
            pa = RunData((np.sort(np.concatenate(ra.runs)),), (0,))
            pb = RunData((np.sort(np.concatenate(rb.runs)),), (0,))
            ba = hierarchical_bootstrap(pa, estimator, n_resamples, rng_a)
            bb = hierarchical_bootstrap(pb, estimator, n_resamples, rng_b)
            note = "NAIVE: batches resampled as if independent, runs ignored; for demonstration only"
        else:
            ba = hierarchical_bootstrap(ra, estimator, n_resamples, rng_a)
            bb = hierarchical_bootstrap(rb, estimator, n_resamples, rng_b)
        va, vb = ra.run_values(estimator), rb.run_values(estimator)
        if estimator == "median":
            boot = ba - bb
            d = va.mean() - vb.mean()
        else:
            boot = np.log(ba) - np.log(bb)
            d = math.log(va.mean()) - math.log(vb.mean())
        if method == "hier-bca" and ra.n_runs > 1 and rb.n_runs > 1:
            ja, jb = _jackknife_runs(va), _jackknife_runs(vb)
            if estimator == "mean":
                ja, jb = np.log(ja), np.log(jb)
            # two-sample acceleration (Efron & Tibshirani 1993, 14.15)
            ua, ub = (ja.mean() - ja) * (ja.size - 1), -(jb.mean() - jb) * (jb.size - 1)
            num = np.sum(ua ** 3) / ja.size ** 3 + np.sum(ub ** 3) / jb.size ** 3
            den = 6 * (np.sum(ua ** 2) / ja.size ** 2 + np.sum(ub ** 2) / jb.size ** 2) ** 1.5
            acc = num / den if den > 0 else 0.0
            below = np.mean(boot < d) + 0.5 * np.mean(boot == d)
            if 0 < below < 1:
                z0 = sps.norm.ppf(below)
                z = sps.norm.ppf([alpha / 2, 1 - alpha / 2])
                q = sps.norm.cdf(z0 + (z0 + z) / (1 - acc * (z0 + z)))
                q = np.clip(q, 0.5 / boot.size, 1 - 0.5 / boot.size)
            else:
                q = np.array([alpha / 2, 1 - alpha / 2])
            lo, hi = np.quantile(boot, q)
        else:
            lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
        if not note:
            note = f"independent hierarchical bootstraps ({n_resamples} resamples each)"
    ratio, lo_r, hi_r = math.exp(d), math.exp(lo), math.exp(hi)
    different = bool(lo_r > 1 or hi_r < 1)
    return RatioEstimate(ratio, lo_r, hi_r, level, method, different, ea, eb, note)


RATIO_MATCH = ("probe", "variant", "placement")


def ratio_table(samples: pd.DataFrame, *, baseline: str, by: str = "environment",
                match: tuple[str, ...] = RATIO_MATCH, estimator: str = "median",
                level: float = DEFAULT_LEVEL, n_resamples: int = DEFAULT_RESAMPLES,
                seed: int = DEFAULT_SEED, ci_method: str = DEFAULT_CI_METHOD,
                exclude_flagged: bool = False, rule: FlagRule = DEFAULT_FLAG_RULE) -> pd.DataFrame:
    """Every condition of every ``by`` value relative to the ``baseline`` one.

    Long table, one row per (match keys, ``by`` value != baseline): ratio
    (this / baseline, > 1 means slower than the baseline), ci_low, ci_high,
    different, estimate_ns, baseline_estimate_ns, n_runs, baseline_n_runs,
    level, ci_method, note, runs_needed and warning (either side's "runs
    are not alike" warning, see :mod:`heterogeneity`; empty when none).  Conditions missing on the baseline get NaN and a
    note.  ``ratio_matrix`` pivots it to probe x environment.
    """
    if by not in samples.columns:
        raise ValueError(f"by must be a column of samples (got {by!r})")
    values = list(pd.unique(samples[by].astype(str)))
    if baseline not in values:
        raise ValueError(f"baseline {baseline!r} not found in column {by!r}; have {sorted(values)}")
    df = samples
    if exclude_flagged:
        df = flag_batches(df, rule)
        df = df[~df["flagged"]]
    sides = _Sides(df, by)
    names, positions, _ = group_positions(df, list(match))
    rows = []
    for key, pos in zip(names, positions):
        labels = sides.by[pos]
        base = pos[labels == baseline]
        for other in sorted(set(labels) - {baseline}):
            sub = pos[labels == other]
            row = {**dict(zip(match, key)), by: other, "baseline": baseline}
            if not base.size:
                rows.append({**row, "ratio": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                             "different": False, "note": f"no {baseline} measurement of this condition"})
                continue
            ra, rb = sides.run_data(sub, "a"), sides.run_data(base, "b")
            r = ratio_ci(ra, rb, estimator=estimator, level=level, n_resamples=n_resamples,
                         seed=zlib.crc32(f"{seed}|{key}|{other}".encode()), ci_method=ci_method)
            # a ratio inherits each side's "runs are not alike" warning
            hs = [(other, sides.heterogeneity(sub)), (f"{baseline} (baseline)", sides.heterogeneity(base))]
            warned = [(name, h) for name, h in hs if h.warning]
            rows.append({**row, "ratio": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high,
                         "different": r.different, "estimate_ns": r.numerator.estimate_ns,
                         "baseline_estimate_ns": r.denominator.estimate_ns,
                         "n_runs": r.numerator.n_runs, "baseline_n_runs": r.denominator.n_runs,
                         "level": level, "ci_method": r.ci_method, "note": r.note,
                         "runs_needed": max((h.runs_needed for _, h in warned), default=pd.NA),
                         "warning": " | ".join(f"{name}: {h.warning}" for name, h in warned)})
    cols = [*match, by, "baseline", "ratio", "ci_low", "ci_high", "different", "estimate_ns",
            "baseline_estimate_ns", "n_runs", "baseline_n_runs", "level", "ci_method", "note",
            "runs_needed", "warning"]
    out = pd.DataFrame(rows, columns=cols)
    out["runs_needed"] = out["runs_needed"].astype("Int64")
    out["warning"] = out["warning"].fillna("")
    out.attrs["analysis_parameters"] = AnalysisParameters(level, estimator, ci_method, n_resamples, seed,
                                                          exclude_flagged, rule)
    return out


class _Sides:
    """The two sides of every ratio of ratio_table as RunData, from arrays of the frame (one
    grouping, no pandas indexing per side), each side's heterogeneity computed once; the same
    checks and numbers as ratio_ci and heterogeneity on the side's rows."""

    def __init__(self, df: pd.DataFrame, by: str):
        self.by = df[by].astype(str).to_numpy()
        self.run = df["run"].to_numpy() if "run" in df.columns else None
        keys = [k for k in GROUP_KEYS if k in df.columns]
        self.condition = group_positions(df, keys)[2] if keys else None
        self.measured = ~df["warmup"].to_numpy(dtype=bool) if "warmup" in df.columns else np.ones(len(df), bool)
        if "elapsed_ns" in df.columns and "iterations" in df.columns:
            self.elapsed, self.iterations = df["elapsed_ns"].to_numpy(dtype=float), df["iterations"].to_numpy(dtype=float)
        elif "per_op_ns" in df.columns:
            self.elapsed, self.iterations = df["per_op_ns"].to_numpy(dtype=float), None
        else:
            raise ValueError("samples need elapsed_ns and iterations (or per_op_ns) columns")
        self._rd: dict[bytes, RunData] = {}
        self._het: dict[bytes, object] = {}

    def run_data(self, pos: np.ndarray, name: str) -> RunData:
        key = pos.tobytes()
        if key not in self._rd:
            self._rd[key] = self._run_data(pos, name)
        return self._rd[key]

    def _run_data(self, pos: np.ndarray, name: str) -> RunData:
        if self.run is None:
            raise MissingRunLabels(
                f"ratio_ci: {name} has no 'run' column, so its batches cannot be grouped into runs "
                "(the independent unit of the interval); pass the samples with their run column, a "
                "RunData, or single_run=True if the batches really are one worker's")
        if self.condition is not None and pos.size and np.unique(self.condition[pos]).size > 1:
            raise ValueError(f"expected the samples of one condition, got {np.unique(self.condition[pos]).size} "
                             "conditions; use summarize() or select one (probe, variant, placement, environment, "
                             "campaign)")
        p = pos[self.measured[pos]]
        if self.iterations is None:
            return RunData.from_arrays(self.elapsed[p], self.run[p])
        it = self.iterations[p]
        if np.any(it <= 0):
            raise ValueError("iterations must be > 0 in every batch "
                             f"(found {int(np.sum(it <= 0))} batches with iterations <= 0)")
        return RunData.from_arrays(self.elapsed[p] / it, self.run[p])

    def heterogeneity(self, pos: np.ndarray):
        key = pos.tobytes()
        if key not in self._het:
            self._het[key] = _heterogeneity(self.run_data(pos, "a"))
        return self._het[key]


def ratio_matrix(table: pd.DataFrame, by: str = "environment", fmt: str = "{:.2f} [{:.2f}, {:.2f}]"
                 ) -> pd.DataFrame:
    """Pivot a ratio_table to condition x ``by`` cells like '8.60 [8.10, 9.15]'."""
    t = table.copy()
    t["cell"] = [fmt.format(r, lo, hi) if np.isfinite(r) else "n/a"
                 for r, lo, hi in zip(t["ratio"], t["ci_low"], t["ci_high"])]
    idx = [c for c in RATIO_MATCH if c in t.columns]
    return t.pivot_table(index=idx, columns=by, values="cell", aggfunc="first")
