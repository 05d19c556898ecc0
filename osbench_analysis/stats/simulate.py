"""Simulated campaigns drawn from known truths, for validating the statistics.

The tests and ``benchmarks/stats_coverage.py`` use these experiments to check
that the nominal 95 % intervals of :mod:`osbench_analysis.stats` cover the
true value about 95 % of the time.

Model (one condition = one probe in one environment)::

    per_op_ns[run i, batch j] = median_ns * R_i * W_ij / median(W)

* ``R_i = exp(u_i)`` is the run-level random effect (ASLR, CPU placement,
  page colouring: things fixed for a worker process's lifetime).  ``u`` has
  median 0 for every ``run_effect`` shape, so the median run is unaffected.
* ``W_ij`` is the batch-to-batch noise inside a run; its shape is the
  ``family`` (lognormal, heavy-tailed, contaminated, bimodal, ...).  It is
  divided by its exact median, so every run's *population* median per-op time
  is ``median_ns * R_i``.

Estimands (see docs/statistics.md).  Write M for a run's population median
per-op time (``median_ns * R * [far factor]``).

* ``"geomean_of_run_medians"``: exp(E[log M]), the target of the engine's
  default "median" estimator (t-interval on log run medians, and the
  hierarchical bootstrap).  Equal to ``median_ns`` for the symmetric run
  effects ("normal", "student_t3"); for "skewed" it is
  ``median_ns * exp(E[u])`` with E[u] known in closed form.
* ``"median_of_run_medians"``: median of M over runs, the target of the
  distribution-free ``runs-os`` method.  Equal to ``median_ns`` for every
  run-effect shape (u has median 0); a closed form for ``bimodal_runs``.
* ``"mean"``: E[per_op_ns], the target of the "mean" estimator, from closed
  forms (or one-dimensional quadrature).

None of them needs Monte-Carlo, so tests compare against exact truths.

The exact medians of the within-run distributions (needed for the
normalisation above) are found by root-finding on their exact CDFs and cached.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import integrate, optimize, stats

from osbench_analysis.store.schema import SAMPLE_COLUMNS

#: Within-run (batch-to-batch) distribution shapes.
#:  lognormal      - well-behaved timing noise
#:  heavy_tailed   - lognormal body times (1 + scale * Lomax(alpha)): Pareto tail
#:  contaminated   - a fraction of batches hit by interference spikes (x3 typical)
#:                   and marked with involuntary context switches / migrations
#:  bimodal        - each batch lands in a near mode or a far mode (x15): an
#:                   unpinned two-process probe that sometimes runs across CPUs
#:  bimodal_runs   - whole runs land in the near or the far mode (placement fixed
#:                   per worker); between-run bimodality
FAMILIES = ("lognormal", "heavy_tailed", "contaminated", "bimodal", "bimodal_runs")
UNIMODAL_FAMILIES = ("lognormal", "heavy_tailed", "contaminated")

#: Shapes of the run effect u (all with median 0).
RUN_EFFECTS = ("normal", "student_t3", "skewed")


@dataclass(frozen=True)
class Scenario:
    """One simulated condition: the truth and the experiment size."""

    family: str = "lognormal"
    median_ns: float = 1000.0     # the true estimand (median of run medians)
    run_sigma: float = 0.05       # scale of the log run effect u
    run_effect: str = "normal"
    batch_sigma: float = 0.03     # log-sd of the lognormal body within a run
    batch_ar1: float = 0.0        # lag-1 autocorrelation of the lognormal body (AR(1) batches)
    tail_alpha: float = 2.5       # heavy_tailed: Lomax shape (finite variance)
    tail_scale: float = 0.05      # heavy_tailed: size of the tail term
    contamination: float = 0.05   # contaminated: probability of a spike
    spike_factor: float = 3.0     # contaminated: median spike multiplier
    spike_sigma: float = 0.5      # contaminated: log-sd of the spike multiplier
    far_fraction: float = 0.3     # bimodal*: probability of the far mode
    far_factor: float = 15.0      # bimodal*: far mode / near mode
    n_runs: int = 10
    n_batches: int = 30           # measured batches per run (warm-ups extra)
    n_warmup: int = 2
    iterations: int = 10_000      # 10 ms batches at 1 us/op, like the quick profile
    campaign_id: str = "sim"
    environment: str = "simulated"
    probe: str = "sim_probe"
    variant: str = ""
    placement: str = "single"

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES} (got {self.family!r})")
        if self.run_effect not in RUN_EFFECTS:
            raise ValueError(f"run_effect must be one of {RUN_EFFECTS} (got {self.run_effect!r})")
        if self.n_runs < 1 or self.n_batches < 1:
            raise ValueError(f"need at least one run and one batch (got n_runs={self.n_runs}, "
                             f"n_batches={self.n_batches})")
        if self.median_ns <= 0:
            raise ValueError(f"median_ns must be > 0 (got {self.median_ns})")
        if not (-1 < self.batch_ar1 < 1):
            raise ValueError(f"batch_ar1 must be in (-1, 1) (got {self.batch_ar1})")

    def with_(self, **changes) -> "Scenario":
        return replace(self, **changes)


# ---------------------------------------------------------------- exact truths

def _within_cdf(sc: Scenario, w: float) -> float:
    """Exact CDF of the un-normalised within-run factor W at w > 0."""
    s = sc.batch_sigma
    lw = math.log(w)
    if sc.family in ("lognormal", "bimodal_runs"):
        # bimodal_runs: inside a run the noise is plain lognormal
        return float(stats.norm.cdf(lw / s))
    if sc.family == "contaminated":
        p = sc.contamination
        s_spike = math.hypot(s, sc.spike_sigma)
        return float((1 - p) * stats.norm.cdf(lw / s)
                     + p * stats.norm.cdf((lw - math.log(sc.spike_factor)) / s_spike))
    if sc.family == "bimodal":
        p = sc.far_fraction
        return float((1 - p) * stats.norm.cdf(lw / s)
                     + p * stats.norm.cdf((lw - math.log(sc.far_factor)) / s))
    if sc.family == "heavy_tailed":
        # W = B * (1 + c L), B ~ lognormal(0, s), L ~ Lomax(alpha):
        # F(w) = E_L[ Phi(log(w / (1 + c L)) / s) ]; integrate over v = L's CDF
        a, c = sc.tail_alpha, sc.tail_scale

        def integrand(v: float) -> float:
            lomax = (1.0 - v) ** (-1.0 / a) - 1.0  # Lomax quantile
            return float(stats.norm.cdf((lw - math.log1p(c * lomax)) / s))

        val, _ = integrate.quad(integrand, 0.0, 1.0, limit=200, epsabs=1e-12, epsrel=1e-10)
        return val
    raise AssertionError(sc.family)


@lru_cache(maxsize=256)
def _within_median_cached(key: Scenario) -> float:
    # Root of F(w) = 1/2; bracket wide enough for every family.
    return optimize.brentq(lambda w: _within_cdf(key, w) - 0.5, 1e-3, 1e3, xtol=1e-14, rtol=1e-13)


def within_run_median(sc: Scenario) -> float:
    """Exact median of the un-normalised within-run factor W (cached)."""
    # Only the within-run shape matters: strip the fields that don't, so the
    # cache is shared across experiment sizes and truths.
    key = Scenario(family=sc.family, batch_sigma=sc.batch_sigma, tail_alpha=sc.tail_alpha,
                   tail_scale=sc.tail_scale, contamination=sc.contamination,
                   spike_factor=sc.spike_factor, spike_sigma=sc.spike_sigma,
                   far_fraction=sc.far_fraction, far_factor=sc.far_factor)
    return _within_median_cached(key)


def _within_mean(sc: Scenario) -> float:
    s = sc.batch_sigma
    body = math.exp(s * s / 2)
    if sc.family in ("lognormal", "bimodal_runs"):
        return body
    if sc.family == "contaminated":
        spike = sc.spike_factor * math.exp(sc.spike_sigma ** 2 / 2)
        return body * (1 - sc.contamination + sc.contamination * spike)
    if sc.family == "bimodal":
        return body * (1 - sc.far_fraction + sc.far_fraction * sc.far_factor)
    if sc.family == "heavy_tailed":
        if sc.tail_alpha <= 1:
            return math.inf
        return body * (1 + sc.tail_scale / (sc.tail_alpha - 1))
    raise AssertionError(sc.family)


def _run_effect_mean(sc: Scenario) -> float:
    """E[exp(u)] for the run-effect shape (median of exp(u) is 1 for all)."""
    s = sc.run_sigma
    if s == 0:
        return 1.0
    if sc.run_effect == "normal":
        return math.exp(s * s / 2)
    if sc.run_effect == "skewed":
        # u = s * (E - ln 2), E ~ Exp(1): E[exp(sE)] = 1 / (1 - s) for s < 1
        return math.exp(-s * math.log(2)) / (1 - s) if s < 1 else math.inf
    # student_t3: E[exp(u)] is infinite in theory; integrate the truncated-free
    # version numerically is meaningless, so report it as such.
    return math.inf


ESTIMANDS = ("geomean_of_run_medians", "median_of_run_medians", "mean")


def true_value_ns(sc: Scenario, estimand: str = "geomean_of_run_medians") -> float:
    """Exact value of an estimand (see the module docstring) for a scenario."""
    if estimand == "geomean_of_run_medians":
        return true_geomean_of_run_medians_ns(sc)
    if estimand == "median_of_run_medians":
        return true_median_of_run_medians_ns(sc)
    if estimand == "mean":
        return true_mean_ns(sc)
    raise ValueError(f"estimand must be one of {ESTIMANDS} (got {estimand!r})")


def _run_effect_log_mean(sc: Scenario) -> float:
    """E[u] (0 for the symmetric shapes)."""
    if sc.run_effect == "skewed":
        return sc.run_sigma * (1.0 - math.log(2))
    return 0.0


def true_geomean_of_run_medians_ns(sc: Scenario) -> float:
    """exp(E[log M]): geometric mean over runs of the run's population median."""
    log_far = sc.far_fraction * math.log(sc.far_factor) if sc.family == "bimodal_runs" else 0.0
    return sc.median_ns * math.exp(_run_effect_log_mean(sc) + log_far)


def true_median_of_run_medians_ns(sc: Scenario) -> float:
    """Median over runs of the run's population median."""
    if sc.family == "bimodal_runs":
        # Runs are near (prob 1-p) or far (prob p) with a continuous run effect:
        # the median of run medians is the q-quantile of the near runs, with
        # q = 0.5 / (1 - p) (requires p < 0.5).  Exact for the normal effect.
        p = sc.far_fraction
        if p >= 0.5:
            raise ValueError("bimodal_runs truth needs far_fraction < 0.5")
        L = math.log(sc.far_factor)
        if sc.run_sigma == 0:
            return sc.median_ns
        # exact: the median m of the mixture (1-p) G(u) + p G(u - L) of log run effects
        cdf = lambda u: (1 - p) * _run_effect_cdf(sc, u) + p * _run_effect_cdf(sc, u - L)  # noqa: E731
        hi = _run_effect_quantile(sc, 0.5 / (1 - p))        # far runs all above: upper bound
        lo = min(0.0, hi) - 1e-9
        if cdf(hi) - 0.5 <= 0:
            return sc.median_ns * math.exp(hi)
        return sc.median_ns * math.exp(optimize.brentq(lambda u: cdf(u) - 0.5, lo, hi, xtol=1e-14))
    return sc.median_ns


def _run_effect_cdf(sc: Scenario, u: float) -> float:
    s = sc.run_sigma
    if sc.run_effect == "normal":
        return float(stats.norm.cdf(u / s))
    if sc.run_effect == "student_t3":
        return float(stats.t.cdf(u / s, 3))
    return float(stats.expon.cdf(u / s + math.log(2)))


def _run_effect_quantile(sc: Scenario, q: float) -> float:
    s = sc.run_sigma
    if sc.run_effect == "normal":
        return s * float(stats.norm.ppf(q))
    if sc.run_effect == "student_t3":
        return s * float(stats.t.ppf(q, 3))
    return s * (float(stats.expon.ppf(q)) - math.log(2))


def true_mean_ns(sc: Scenario) -> float:
    """The estimand of the "mean" estimator: population mean per-op time."""
    if sc.family == "bimodal_runs":
        p = sc.far_fraction
        run_part = _run_effect_mean(sc) * (1 - p + p * sc.far_factor)
        return sc.median_ns * run_part * _within_mean(sc) / within_run_median(sc)
    return sc.median_ns * _run_effect_mean(sc) * _within_mean(sc) / within_run_median(sc)


# ------------------------------------------------------------------ sampling

def _draw_run_effects(sc: Scenario, rng: np.random.Generator, size) -> np.ndarray:
    s = sc.run_sigma
    if sc.run_effect == "normal":
        return s * rng.standard_normal(size)
    if sc.run_effect == "student_t3":
        return s * rng.standard_t(3, size)
    return s * (rng.standard_exponential(size) - math.log(2))


def draw_per_op(sc: Scenario, rng: np.random.Generator, n_experiments: int = 1
                ) -> tuple[np.ndarray, np.ndarray]:
    """Measured (non-warm-up) per-op times, shape (n_experiments, n_runs, n_batches).

    Vectorised over experiments so that coverage studies do not pay pandas
    costs.  Also returns a boolean array marking the batches that were hit by
    an interference spike (contaminated family), for the flag columns.
    """
    shape = (n_experiments, sc.n_runs, sc.n_batches)
    u = _draw_run_effects(sc, rng, (n_experiments, sc.n_runs, 1))
    z = rng.standard_normal(shape)
    if sc.batch_ar1:
        # stationary AR(1) with unit variance: the marginal law (and so every
        # truth) is unchanged, only batches of a run are correlated
        c = math.sqrt(1 - sc.batch_ar1 ** 2)
        for j in range(1, sc.n_batches):
            z[..., j] = sc.batch_ar1 * z[..., j - 1] + c * z[..., j]
    log_w = sc.batch_sigma * z
    disturbed = np.zeros(shape, dtype=bool)
    if sc.family == "heavy_tailed":
        lomax = rng.pareto(sc.tail_alpha, shape)  # numpy's pareto is Lomax
        log_w += np.log1p(sc.tail_scale * lomax)
    elif sc.family == "contaminated":
        disturbed = rng.random(shape) < sc.contamination
        spikes = math.log(sc.spike_factor) + sc.spike_sigma * rng.standard_normal(shape)
        log_w += np.where(disturbed, spikes, 0.0)
    elif sc.family == "bimodal":
        far = rng.random(shape) < sc.far_fraction
        log_w += np.where(far, math.log(sc.far_factor), 0.0)
    elif sc.family == "bimodal_runs":
        far_run = rng.random((n_experiments, sc.n_runs, 1)) < sc.far_fraction
        u = u + np.where(far_run, math.log(sc.far_factor), 0.0)
    per_op = sc.median_ns / within_run_median(sc) * np.exp(u + log_w)
    return per_op, disturbed


def simulate_samples(sc: Scenario, seed: int | np.random.Generator = 0, *,
                     with_truth: bool = False):
    """One simulated condition as a samples DataFrame in the schema's columns.

    Warm-up batches (``n_warmup`` per run, 1.5x slower: cold caches) come
    first in each run and are marked ``warmup=True``.  Every batch has a few
    harmless involuntary switches (Poisson, ~1 per 10 ms); spike batches of
    the contaminated family get one more per ~3 ms of stolen time and, one
    time in three, a CPU migration: the signals :mod:`quality` uses.
    ``with_truth=True`` also returns the boolean array of spike batches.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    per_op, disturbed = draw_per_op(sc, rng, 1)
    per_op, disturbed = per_op[0], disturbed[0]
    nr, nb, nw = sc.n_runs, sc.n_batches, sc.n_warmup
    if nw:
        warm = per_op[:, :1] * 1.5 * np.ones((1, nw))
        per_op = np.concatenate([warm, per_op], axis=1)
        disturbed = np.concatenate([np.zeros((nr, nw), bool), disturbed], axis=1)
    n_total = nb + nw
    runs = np.repeat(np.arange(nr, dtype=np.int32), n_total)
    batches = np.tile(np.arange(n_total, dtype=np.int32), nr)
    warmup = np.tile(np.arange(n_total) < nw, nr)
    iterations = np.full(nr * n_total, sc.iterations, dtype=np.int64)
    elapsed = np.maximum(1, np.rint(per_op.ravel() * sc.iterations)).astype(np.int64)
    dist = disturbed.ravel()
    cpu = np.repeat(rng.integers(0, 2, nr), n_total).astype(np.int32)
    migrated = dist & (rng.random(dist.size) < 1 / 3)
    cpu_end = np.where(migrated, 1 - cpu, cpu).astype(np.int32)
    # Involuntary switches: harmless background preemptions (~1 per 10 ms of
    # the run's typical, CPU-bound batch time, as measured on our VMs; a slow
    # mode that waits on another CPU does not collect more), plus, in a spike,
    # one per ~3 ms scheduler slice of stolen time.
    run_median_ns = np.repeat(np.median(per_op[:, nw:], axis=1), n_total) * sc.iterations
    stolen_ns = np.where(dist, np.clip(elapsed - run_median_ns, 0, None), 0.0)
    nivcsw = (rng.poisson(run_median_ns / 1e7)
              + np.where(dist, np.ceil(stolen_ns / 3e6) + rng.poisson(1.0, dist.size), 0)
              ).astype(np.int64)
    t0 = 1_700_000_000_000_000_000
    started = t0 + np.cumsum(elapsed) + runs.astype(np.int64) * 10_000_000
    df = pd.DataFrame({
        "campaign_id": sc.campaign_id,
        "environment": sc.environment,
        "arch_class": "monolithic",
        "probe": sc.probe,
        "variant": sc.variant,
        "params_json": "{}",
        "placement": sc.placement,
        "fs_type": "",
        "run": runs,
        "batch": batches,
        "warmup": warmup,
        "iterations": iterations,
        "elapsed_ns": elapsed,
        "work_done": iterations,
        "per_op_ns": elapsed / iterations,
        "cpu_start": cpu,
        "cpu_end": cpu_end,
        "nvcsw": np.zeros(nr * n_total, dtype=np.int64),
        "nivcsw": nivcsw,
        "minflt": np.zeros(nr * n_total, dtype=np.int64),
        "loadavg_1m": np.full(nr * n_total, 0.1),
        "worker_pid": (10_000 + runs).astype(np.int64),
        "started_unix_ns": started.astype(np.int64),
    })
    df = df.reindex(columns=list(SAMPLE_COLUMNS)).astype(SAMPLE_COLUMNS)   # the model's columns null
    if with_truth:
        return df, dist     # dist: True where the batch was hit by an interference spike
    return df


# ------------------------------------------------------------ coverage studies

@dataclass(frozen=True)
class CoverageResult:
    """How often nominal CIs covered the exact truth over simulated experiments."""

    label: str
    estimator: str
    ci_method: str
    estimand: str
    truth: float
    n_experiments: int
    level: float
    coverage: float          # fraction of experiments whose CI contained the truth
    mc_se: float             # Monte-Carlo standard error of ``coverage``
    miss_below: float        # fraction with CI entirely below the truth
    miss_above: float        # fraction with CI entirely above the truth
    median_halfwidth_rel: float
    family: str = ""
    n_runs: int = 0
    n_batches: int = 0

    @property
    def in_band(self) -> bool:
        """Within the project's 93-97 % acceptance band (for 95 % intervals)."""
        return 0.93 <= self.coverage <= 0.97


def _result(label, estimator, method, estimand, truth, lo, hi, est, level, sc) -> CoverageResult:
    lo, hi, est = (np.asarray(v, dtype=float) for v in (lo, hi, est))
    covered = (lo <= truth) & (truth <= hi)
    n = covered.size
    p = float(covered.mean())
    return CoverageResult(label, estimator, method, estimand, float(truth), n, level, p,
                          math.sqrt(max(p * (1 - p), 1e-12) / n), float(np.mean(hi < truth)),
                          float(np.mean(lo > truth)), float(np.median((hi - lo) / 2 / est)),
                          sc.family, sc.n_runs, sc.n_batches)


def _as_run_data(x: np.ndarray):
    from osbench_analysis.stats import RunData
    return RunData(tuple(np.sort(row) for row in x), tuple(range(x.shape[0])))


def coverage_study(sc: Scenario, *, estimator: str = "median", ci_method: str = "runs-t",
                   n_experiments: int = 1000, n_resamples: int = 2000, level: float = 0.95,
                   seed: int = 0, label: str = "") -> CoverageResult:
    """Coverage of the engine's CI for one scenario over simulated experiments.

    Uses :mod:`osbench_analysis.stats` itself (vectorised for ``runs-t``).
    The truth is the exact estimand of (estimator, ci_method), from
    ``stats.ESTIMAND``; the naive ``iid-percentile`` is scored against the
    same truth as the default method, because that is what it claims to cover.
    """
    from osbench_analysis import stats

    estimand = stats.ESTIMAND[(estimator, ci_method)]
    if estimand == "pooled_median":
        estimand = "geomean_of_run_medians"
    truth = true_value_ns(sc, estimand)
    rng = np.random.default_rng(seed)
    X, _ = draw_per_op(sc, rng, n_experiments)
    if ci_method == "runs-t" and sc.n_runs > 1:
        vals = stats.run_level_values(X, estimator)
        m, lo, hi = stats.t_interval(vals, level)
        if estimator == "median":
            m, lo, hi = np.exp(m), np.exp(lo), np.exp(hi)
    else:
        res = [stats.estimate_ci(_as_run_data(X[e]), estimator=estimator, level=level,
                                 n_resamples=n_resamples, ci_method=ci_method, rng=rng)
               for e in range(n_experiments)]
        m = [r.estimate_ns for r in res]
        lo = [r.ci_low_ns for r in res]
        hi = [r.ci_high_ns for r in res]
    return _result(label or _label(sc), estimator, ci_method, estimand, truth, lo, hi, m, level, sc)


def ratio_coverage_study(sc_a: Scenario, sc_b: Scenario, *, estimator: str = "median",
                         ci_method: str = "runs-t", n_experiments: int = 1000,
                         n_resamples: int = 2000, level: float = 0.95, seed: int = 0,
                         label: str = "") -> CoverageResult:
    """Coverage of ``stats.ratio_ci`` for A/B against the exact ratio of truths."""
    from osbench_analysis import stats

    estimand = stats.ESTIMAND[(estimator, ci_method)]
    if estimand == "pooled_median":
        estimand = "geomean_of_run_medians"
    truth = true_value_ns(sc_a, estimand) / true_value_ns(sc_b, estimand)
    rng = np.random.default_rng(seed)
    XA, _ = draw_per_op(sc_a, rng, n_experiments)
    XB, _ = draw_per_op(sc_b, rng, n_experiments)
    if ci_method == "runs-t" and min(sc_a.n_runs, sc_b.n_runs) > 1:
        va, vb = stats.run_level_values(XA, estimator), stats.run_level_values(XB, estimator)
        d, lo, hi = stats.welch_interval(va, vb, level, log_of_means=(estimator == "mean"))
        r, lo, hi = np.exp(d), np.exp(lo), np.exp(hi)
    else:
        seeds = rng.integers(0, 2**31, n_experiments)
        res = [stats.ratio_ci(_as_run_data(XA[e]), _as_run_data(XB[e]), estimator=estimator,
                              level=level, n_resamples=n_resamples, ci_method=ci_method,
                              seed=int(seeds[e])) for e in range(n_experiments)]
        r = [x.ratio for x in res]
        lo = [x.ci_low for x in res]
        hi = [x.ci_high for x in res]
    return _result(label or f"{_label(sc_a)} / {_label(sc_b)}", estimator, ci_method,
                   f"ratio of {estimand}", truth, lo, hi, r, level, sc_a)


def _label(sc: Scenario) -> str:
    eff = "" if sc.run_effect == "normal" else f" {sc.run_effect}"
    return (f"{sc.family}{eff} runs={sc.n_runs} batches={sc.n_batches} "
            f"run_sd={sc.run_sigma:g} batch_sd={sc.batch_sigma:g}")


# ---------------------------------------------------------------- campaigns as a level

def draw_campaigns(sc: Scenario, n_campaigns: int, tau: float, rng: np.random.Generator,
                   n_experiments: int = 1) -> np.ndarray:
    """Per-op times of ``n_campaigns`` campaigns of one condition, shape
    (n_experiments, n_campaigns, n_runs, n_batches): each campaign is a
    ``draw_per_op`` experiment scaled by its own host state exp(c), c ~ N(0, tau^2).
    The campaign-population value is the scenario's truth (c has mean and median 0)."""
    if n_campaigns < 1 or tau < 0:
        raise ValueError(f"need n_campaigns >= 1 and tau >= 0 (got {n_campaigns}, {tau})")
    x, _ = draw_per_op(sc, rng, n_experiments * n_campaigns)
    x = x.reshape(n_experiments, n_campaigns, sc.n_runs, sc.n_batches)
    c = tau * rng.standard_normal((n_experiments, n_campaigns, 1, 1))
    return x * np.exp(c)


def pooled_coverage_study(sc: Scenario, n_campaigns: int, tau: float, *, n_experiments: int = 2000,
                          level: float = 0.95, seed: int = 0) -> dict:
    """Coverage of the campaign-population value (geometric mean of run medians)
    by the interval the analysis gives: the random-effects pooled interval over
    campaigns (stats.pooled, Hartung-Knapp) with >= 2 campaigns, the
    within-one-campaign t interval with one (labelled so: its warning)."""
    from osbench_analysis.stats import pooled, run_level_values, t_interval

    rng = np.random.default_rng(seed)
    x = draw_campaigns(sc, n_campaigns, tau, rng, n_experiments)
    vals = run_level_values(x, "median")                        # (experiments, campaigns, runs)
    truth = math.log(true_value_ns(sc, "geomean_of_run_medians"))
    if n_campaigns == 1:
        m, lo, hi = t_interval(vals[:, 0, :], level)
        tau_hat = np.full(n_experiments, np.nan)
    else:
        y = vals.mean(-1)
        se = vals.std(-1, ddof=1) / math.sqrt(sc.n_runs)
        m, lo, hi, tau_hat, _, _ = pooled.random_effects_rows(y, se, level)
    cov = float(np.mean((lo <= truth) & (truth <= hi)))
    from osbench_analysis.stats.heterogeneity import heterogeneity_arrays

    # the pooled row carries a warning when any campaign's condition warns (a minority of slow runs
    # that its runs may have missed: heterogeneity.py)
    warn = heterogeneity_arrays(x)["warn"].any(axis=-1)
    return {"coverage": cov, "warn": float(np.mean(warn)), "mc_se": math.sqrt(max(cov * (1 - cov), 1e-12) / n_experiments),
            "miss_below": float(np.mean(hi < truth)), "miss_above": float(np.mean(lo > truth)),
            "halfwidth_rel": float(np.median(np.expm1((hi - lo) / 2))),
            "tau_hat_median": float(np.nanmedian(tau_hat)) if n_campaigns > 1 else math.nan,
            "interval_over": pooled.OVER_CAMPAIGNS if n_campaigns > 1 else pooled.WITHIN_ONE_CAMPAIGN}
