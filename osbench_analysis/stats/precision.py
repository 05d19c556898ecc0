"""Adaptive precision: pure functions the runner calls between runs.

Instead of a fixed number of runs, a campaign can ask for a precision target:
keep adding runs (worker processes) to a condition until the CI half-width is
at most ``target_rel`` of the estimate, or the time budget is spent.

How the runner uses it (one condition = probe x variant x placement)::

    from osbench_analysis.stats import precision

    target = precision.PROFILES["quick"]            # or PrecisionTarget(target_rel=0.01, ...)
    t0 = time.monotonic()
    run = 0
    while True:
        for cond in open_conditions:                # round-robin, as now
            measure(cond, run)                      # appends that worker's batches to `rows`
        run += 1
        samples = pd.DataFrame(rows)                # schema columns; campaign_id/env not needed
        report = precision.campaign_precision(samples, target,
                                              elapsed_s=time.monotonic() - t0,
                                              seconds_per_round=(time.monotonic() - t0) / run)
        if report.stop:
            break
        open_conditions = [c for c in conditions if report.needs_more(c.probe, variant_of(c), c.placement)]
    manifest["precision"] = report.to_manifest()    # achieved precision + stop reason

``campaign_precision`` judges every condition with :func:`precision_status`
and decides with :func:`stop_decision`; both are usable on their own.  All
functions are pure: no I/O, no clocks (pass elapsed times in), deterministic
(fixed bootstrap seed).

Statistics.  The half-width is that of the number the analysis quotes
(:mod:`stats.quote`): the typical run's order-statistic interval where the
runs differ beyond batch noise or there are 6 or more runs, else the mean over
runs' interval (``ci_method``, default a t-interval on log run medians), so
what the runner stops on is what the paper reports.  A typical run whose
interval cannot reach the level (5 runs: [min, max], 93.75 %) does not meet
any target, so where 5 runs differ the runner measures a sixth.  A condition is never declared
done before ``min_runs`` runs: the spread of 2-3 run medians is too noisy, and
stopping on a lucky small spread is the main way sequential stopping biases
coverage (benchmarks/stats_coverage.py measures the coverage of this stopping
rule).  ``runs_needed`` projects how many runs the target needs, from the
observed spread of log run medians and the t quantile.

Heterogeneous runs.  When a minority of runs is slower (or faster) beyond
batch noise (:mod:`heterogeneity`), a narrow interval is not enough: a
campaign that has not yet seen enough runs may miss that minority entirely.
The target is then met only once ``runs_needed_heterogeneity`` runs are in
(the smallest R with 1 - (1 - f)^R >= 0.95 for the minority's observed
share f: 14 for 20 %), within ``max_runs`` and the budget; if those stop it
first, the decision's message says how many runs were needed.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from osbench_analysis import stats
from osbench_analysis.stats.heterogeneity import heterogeneity

#: Conditions are keyed like this inside one campaign.
CONDITION_KEYS = ("probe", "variant", "placement")


@dataclass(frozen=True)
class PrecisionTarget:
    """What "precise enough" means, and what may be spent to get there."""

    target_rel: float = 0.01          # CI half-width / estimate
    level: float = 0.95
    min_runs: int = 5
    max_runs: int = 50
    budget_s: float = 3600.0          # wall time for the whole campaign
    estimator: str = "median"
    ci_method: str = stats.DEFAULT_CI_METHOD

    def __post_init__(self) -> None:
        if not (0 < self.target_rel < 1):
            raise ValueError(f"target_rel must be in (0, 1) (got {self.target_rel}); "
                             "0.01 means a CI half-width of 1 % of the estimate")
        stats._check_level(self.level)
        if self.min_runs < 2:
            raise ValueError(f"min_runs must be >= 2: one run says nothing about run-to-run "
                             f"variation (got {self.min_runs})")
        if self.max_runs < self.min_runs:
            raise ValueError(f"max_runs ({self.max_runs}) must be >= min_runs ({self.min_runs})")
        if self.budget_s <= 0:
            raise ValueError(f"budget_s must be > 0 seconds (got {self.budget_s})")


#: Calibrated on a quiet 2-vCPU VM (quick campaign, 10 runs per condition):
#: within a run batches agree to ~1 %, but run medians differ by ~15 % (CV)
#: from one worker process to the next (null_syscall: 141-203 ns), so the
#: run-level half-width is ~18 % after 5 runs and 7-13.5 % after 10.
#: quick: 15 %, met by every condition within 12 runs (< 1 min measuring); at least 6 runs,
#: the fewest whose typical-run interval reaches 95 % (stats.quote).
#: full: 5 %, which needs ~40 runs at that spread; max 60 runs, 2 h budget.
#: runner.PROFILES takes these values; tighter targets are a --precision-target away.
PROFILES: dict[str, PrecisionTarget] = {
    "quick": PrecisionTarget(target_rel=0.15, min_runs=6, max_runs=12, budget_s=240.0),
    "full": PrecisionTarget(target_rel=0.05, min_runs=10, max_runs=60, budget_s=2 * 3600.0),
}


@dataclass(frozen=True)
class PrecisionStatus:
    """Where one condition stands against the target."""

    estimate_ns: float
    ci_low_ns: float
    ci_high_ns: float
    halfwidth_rel: float
    target_rel: float
    level: float
    met: bool
    n_runs: int
    n_batches: int
    runs_needed: int | None       # projected total runs for the target (None: unknown)
    within_run_share: float       # share of the run-median variance due to batch noise
    ci_method: str
    note: str = ""
    heterogeneous: bool = False           # runs differ beyond their batch noise
    slow_run_fraction: float = math.nan   # share of runs in the slower group (NaN: no minority shows)
    runs_needed_heterogeneity: int = 0    # runs to include that minority with 95 % probability


def _within_run_share(rd: stats.RunData) -> float:
    """Fraction of Var(log run median) explained by batch-to-batch noise.

    Var(log median of n batches) ~ (pi/2) s_w^2 / n for near-normal log
    batches, with s_w a robust (MAD) within-run sd.  A large share means more
    batches per run would help; a small one means only more runs will.
    """
    if rd.n_runs < 2:
        return math.nan
    logs = [np.log(r) for r in rd.runs]
    v_w = np.mean([(math.pi / 2) * sps.median_abs_deviation(lr, scale="normal") ** 2 / lr.size
                   for lr in logs if lr.size > 1] or [math.nan])
    v_tot = float(np.var(rd.run_values("median"), ddof=1))
    if not (v_tot > 0):
        return 1.0 if v_w > 0 else math.nan
    return float(min(1.0, v_w / v_tot))


def _runs_needed(rd: stats.RunData, target: PrecisionTarget, cap: int = 10_000,
                 typical: bool = False) -> int | None:
    if rd.n_runs < 2:
        return None
    vals = rd.run_values(target.estimator)
    s = float(np.std(vals, ddof=1))
    if typical:
        # a median of R values has about sqrt(pi/2) the standard error of their mean (normal values)
        s *= math.sqrt(math.pi / 2)
    if target.estimator == "mean":
        s = s / float(np.mean(vals))     # relative sd of run means
    if s == 0:
        return max(rd.n_runs, target.min_runs)
    # half-width (relative) of a t-interval on n runs with this spread; on the
    # log scale the relative half-width is sinh(h) (the CI is asymmetric)
    n = np.arange(max(2, rd.n_runs), cap + 1)
    h = sps.t.ppf(0.5 + target.level / 2, n - 1) * s / np.sqrt(n)
    ok = np.nonzero(np.sinh(h) <= target.target_rel)[0]
    if ok.size == 0:
        return None
    return max(int(n[ok[0]]), target.min_runs)


def precision_status(samples, target_rel: float | PrecisionTarget = 0.01, level: float = 0.95, *,
                     min_runs: int = 5, estimator: str = "median",
                     ci_method: str = stats.DEFAULT_CI_METHOD, exclude_flagged: bool = False,
                     n_resamples: int = 2000, seed: int = stats.DEFAULT_SEED) -> PrecisionStatus:
    """Precision reached by ONE condition's samples so far.

    ``samples``: the rows (schema columns; at least run, warmup, elapsed_ns,
    iterations) of one probe/variant/placement, all runs so far.  Or pass a
    PrecisionTarget as ``target_rel`` to take level/min_runs/estimator/method
    from it.  ``met`` is True when the CI half-width relative to the estimate
    is <= target and at least ``min_runs`` runs are in.
    """
    if isinstance(target_rel, PrecisionTarget):
        t = target_rel
    else:
        t = PrecisionTarget(target_rel=target_rel, level=level, min_runs=min_runs,
                            max_runs=max(min_runs, 50), estimator=estimator, ci_method=ci_method)
    rd = stats._as_run_data(samples, exclude_flagged=exclude_flagged)
    est = stats.estimate_ci(rd, estimator=t.estimator, level=t.level, n_resamples=n_resamples,
                            ci_method=t.ci_method, rng=stats._rng(seed, "precision"))
    het = heterogeneity(rd)
    # the number the analysis quotes (stats.quote); a typical run below the level meets no target
    est, conf, typical = stats.quoted_estimate(rd, est, stats.typical_run(rd, t.level), het.heterogeneous,
                                               level=t.level, estimator=t.estimator)
    hw = math.inf if stats.below_level(conf, t.level) else est.halfwidth_rel
    enough_runs = rd.n_runs >= t.min_runs
    need_het = het.runs_needed if het.clear_split else 0
    met = bool(enough_runs and np.isfinite(hw) and hw <= t.target_rel and rd.n_runs >= need_het)
    note = est.note
    if not enough_runs:
        note = f"{rd.n_runs} of at least {t.min_runs} runs"
    elif rd.n_runs < need_het:
        note = (f"runs are not alike ({het.slow_run_fraction:.0%} of runs {het.slow_run_factor:.2f}x "
                f"slower): {need_het} runs needed to include such runs with 95% probability")
    proj = _runs_needed(rd, t, typical=typical)
    if need_het and proj is not None:
        proj = max(proj, need_het)
    return PrecisionStatus(est.estimate_ns, est.ci_low_ns, est.ci_high_ns, hw, t.target_rel, t.level,
                           met, rd.n_runs, rd.n_batches, proj, _within_run_share(rd),
                           est.ci_method, note, het.heterogeneous, het.slow_run_fraction, need_het)


@dataclass(frozen=True)
class StopDecision:
    """Whether to keep measuring a condition (or a campaign), and why."""

    stop: bool
    reason: str         # 'target_met' | 'budget_exhausted' | 'max_runs' | 'continue'
    next_action: str    # 'add_runs' | 'add_batches' | 'none'
    message: str


STOP_REASONS = ("target_met", "budget_exhausted", "max_runs", "continue")


def stop_decision(status: PrecisionStatus, target: PrecisionTarget, *, elapsed_s: float,
                  seconds_per_run: float | None = None) -> StopDecision:
    """Stop or continue one condition, given its status and the time spent.

    Stops when the target is met, when ``max_runs`` is reached, or when the
    budget is spent (or one more run, taking ``seconds_per_run``, would
    overrun it).  Otherwise suggests 'add_batches' when batch noise explains
    most of the run-median variance, else 'add_runs'.
    """
    if elapsed_s < 0:
        raise ValueError(f"elapsed_s must be >= 0 (got {elapsed_s})")
    if status.met:
        return StopDecision(True, "target_met", "none",
                            f"half-width {status.halfwidth_rel:.2%} <= target {status.target_rel:.2%} "
                            f"with {status.n_runs} runs")
    short_het = status.n_runs < status.runs_needed_heterogeneity
    het_msg = (f"; runs are not alike: {status.runs_needed_heterogeneity} runs needed to include the "
               f"minority of {'slower' if status.slow_run_fraction <= 0.5 else 'faster'} runs with 95% "
               "probability" if short_het else "")
    if status.n_runs >= target.max_runs:
        return StopDecision(True, "max_runs", "none",
                            f"{status.n_runs} runs (max_runs) reached at half-width "
                            f"{status.halfwidth_rel:.2%} (target {status.target_rel:.2%}){het_msg}")
    next_cost = seconds_per_run or 0.0
    if elapsed_s >= target.budget_s or elapsed_s + next_cost > target.budget_s:
        return StopDecision(True, "budget_exhausted", "none",
                            f"time budget {target.budget_s:.0f} s spent ({elapsed_s:.0f} s) at "
                            f"half-width {status.halfwidth_rel:.2%} (target {status.target_rel:.2%})"
                            f"{het_msg}")
    action = "add_batches" if (status.within_run_share > 0.5 and status.n_runs >= target.min_runs
                               and not short_het) else "add_runs"
    need = f"; about {status.runs_needed} runs needed" if status.runs_needed else ""
    return StopDecision(False, "continue", action,
                        f"half-width {status.halfwidth_rel:.2%} (target {status.target_rel:.2%}) "
                        f"after {status.n_runs} runs{need}{het_msg}")


@dataclass(frozen=True)
class CampaignPrecision:
    """Per-condition statuses and decisions, plus the campaign-level verdict."""

    target: PrecisionTarget
    conditions: pd.DataFrame     # CONDITION_KEYS + status fields + reason, next_action
    stop: bool
    reason: str                  # campaign-level: target_met | budget_exhausted | max_runs | continue
    elapsed_s: float

    def needs_more(self, probe: str, variant: str, placement: str) -> bool:
        """True if this condition should get another run."""
        c = self.conditions
        row = c[(c["probe"] == probe) & (c["variant"] == variant) & (c["placement"] == placement)]
        if row.empty:
            raise KeyError(f"no samples yet for condition ({probe!r}, {variant!r}, {placement!r})")
        return not bool(row["stop"].iloc[0])

    def to_manifest(self) -> dict:
        """JSON-ready record for the campaign manifest (achieved precision, stop reason)."""
        c = self.conditions
        return {
            "target": asdict(self.target),
            "stop_reason": self.reason,
            "elapsed_s": round(float(self.elapsed_s), 3),
            "achieved_halfwidth_rel_max": float(c["halfwidth_rel"].max()) if len(c) else None,
            "conditions_met": int(c["met"].sum()),
            "conditions_total": int(len(c)),
            "conditions": [
                {k: (None if isinstance(v, float) and not math.isfinite(v) else
                     (v.item() if isinstance(v, np.generic) else v))
                 for k, v in row.items()}
                for row in c[[*CONDITION_KEYS, "n_runs", "n_batches", "estimate_ns", "halfwidth_rel",
                              "met", "reason", "runs_needed", "heterogeneous",
                              "runs_needed_heterogeneity"]].to_dict("records")
            ],
        }


def campaign_precision(samples: pd.DataFrame, target: PrecisionTarget, *, elapsed_s: float,
                       seconds_per_round: float | None = None, exclude_flagged: bool = False
                       ) -> CampaignPrecision:
    """Judge every condition of a campaign in progress.

    ``samples``: all rows measured so far (schema columns, at least probe,
    variant, placement, run, warmup, elapsed_ns, iterations).
    ``seconds_per_round``: wall time of one more run of every open condition
    (used so that the last round does not overrun the budget).
    The campaign stops when every condition has stopped; its reason is
    'target_met' only if every condition met the target, otherwise the
    reason that stopped the last open ones.
    """
    missing = [k for k in (*CONDITION_KEYS, "run") if k not in samples.columns]
    if missing:
        raise ValueError(f"samples lack columns {missing}")
    rows = []
    for key, g in samples.groupby(list(CONDITION_KEYS), sort=True, dropna=False):
        st = precision_status(g, target, exclude_flagged=exclude_flagged)
        d = stop_decision(st, target, elapsed_s=elapsed_s, seconds_per_run=seconds_per_round)
        rows.append({**dict(zip(CONDITION_KEYS, key)), **asdict(st), "stop": d.stop, "reason": d.reason,
                     "next_action": d.next_action, "message": d.message})
    cond = pd.DataFrame(rows)
    if cond.empty:
        return CampaignPrecision(target, cond, False, "continue", elapsed_s)
    stop = bool(cond["stop"].all())
    if not stop:
        reason = "continue"
    elif bool(cond["met"].all()):
        reason = "target_met"
    elif (cond["reason"] == "budget_exhausted").any():
        reason = "budget_exhausted"
    else:
        reason = "max_runs"
    return CampaignPrecision(target, cond, stop, reason, elapsed_s)


__all__ = ["PrecisionTarget", "PROFILES", "PrecisionStatus", "precision_status", "StopDecision",
           "stop_decision", "CampaignPrecision", "campaign_precision"]
