"""Two modes in one condition's batches: a two-normal mixture on log per-op times against one normal
(BIC, Ashman's D), and whether the modes split between whole runs or within runs.  Used by the
quality table (quality.py), the heterogeneity verdicts and the coverage benchmark."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from osbench_analysis.formatting import time_plain
from osbench_analysis.stats.groups import group_medians



@dataclass(frozen=True)
class Multimodality:
    """Result of the two-mode test on one condition's measured batches."""

    multimodal: bool
    n_batches: int
    low_mode_ns: float          # geometric centre of the faster mode
    high_mode_ns: float         # geometric centre of the slower mode
    mode_ratio: float           # high / low
    high_mode_fraction: float   # share of batches in the slower mode
    separation: float           # Ashman's D on log per-op times (> 2: clean split)
    delta_bic: float            # BIC(1 normal) - BIC(2-component mixture), log scale
    split: str                  # 'between_runs' | 'within_runs' | '' (not multimodal)
    message: str


# Decision thresholds, documented in docs/statistics.md.
MIN_SEPARATION = 2.0        # Ashman's D: two normals with D > 2 are clearly bimodal
MIN_MODE_FRACTION = 0.10    # a smaller "mode" is interference, left to the outlier flags
MIN_DELTA_BIC = 10.0        # "very strong" evidence for two components (Kass & Raftery)
MIN_MODE_RATIO = 1.5        # closer "modes" are ordinary run-to-run spread (ASLR, page
                            # colouring: runs 20 % apart are common with few runs)


_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def _normal_pdf(x, mu, sd):
    """The normal density, as scipy.stats.norm.pdf, without its per-call
    argument machinery (the EM below calls it up to 200 times per fit)."""
    z = (x - mu) / sd
    return np.exp(-0.5 * z * z) * _INV_SQRT_2PI / sd


_LOG_SQRT_2PI = np.log(2 * np.pi) / 2


def _normal_logpdf(x, mu, sd):
    """scipy.stats.norm.logpdf(x, mu, sd) for finite x and sd > 0, computed as scipy computes it
    ((x - mu) / sd, then -z**2 / 2.0 - log(sqrt(2 pi)) - log(sd)), without its argument machinery."""
    z = (x - mu) / sd
    return -z ** 2 / 2.0 - _LOG_SQRT_2PI - np.log(np.asarray(sd, dtype=float))


def _fit_two_normals(x: np.ndarray, n_iter: int = 200) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """EM fit of a 2-component normal mixture in 1-D; returns w, mu, sd, loglik."""
    xs = np.sort(x)
    n = xs.size
    # Initialise at the widest gap between the 10th and 90th percentile
    # positions, a good start for well-separated modes; fall back to quartiles.
    lo, hi = max(1, int(0.1 * n)), min(n - 1, int(0.9 * n))
    if hi > lo:
        gaps = np.diff(xs)[lo - 1:hi]
        cut = lo - 1 + int(np.argmax(gaps)) + 1
    else:
        cut = n // 2
    a, b = xs[:cut], xs[cut:]
    spread = max(float(np.std(xs)), 1e-9)
    w = np.array([a.size / n, b.size / n])
    mu = np.array([a.mean(), b.mean()])
    sd = np.array([max(a.std(), 1e-3 * spread), max(b.std(), 1e-3 * spread)])
    floor = 1e-4 * spread + 1e-12
    ll_old = -np.inf
    for _ in range(n_iter):
        dens = w * _normal_pdf(x[:, None], mu, sd) + 1e-300
        tot = dens.sum(axis=1, keepdims=True)
        resp = dens / tot
        ll = float(np.log(tot).sum())
        nk = resp.sum(axis=0) + 1e-12
        w = nk / n
        mu = (resp * x[:, None]).sum(axis=0) / nk
        sd = np.sqrt((resp * (x[:, None] - mu) ** 2).sum(axis=0) / nk)
        sd = np.maximum(sd, floor)
        if ll - ll_old < 1e-8 * abs(ll):
            break
        ll_old = ll
    order = np.argsort(mu)
    return w[order], mu[order], sd[order], ll


#: Between-run modes: the run-level test is calibrated against unimodal
#: lognormal run effects with log-sd up to this value (false alarms <= 1 % there).
NULL_RUN_SIGMA = 0.4
BETWEEN_ALPHA = 0.01


@lru_cache(maxsize=128)
def _between_gap_critical(n_runs: int, alpha: float = BETWEEN_ALPHA, n_sim: int = 40_000) -> float:
    """(1 - alpha) quantile of the two-means group distance of n_runs standard normals."""
    from osbench_analysis.stats.heterogeneity import _split_stat
    rng = np.random.default_rng([20261124, n_runs])
    y = np.sort(rng.standard_normal((n_sim, n_runs)), axis=-1)
    _, _, d = _split_stat(y)
    return float(np.quantile(d, 1 - alpha))


def _between_runs_modes(x: np.ndarray, r: np.ndarray):
    """Run-level mode test on log per-op times x with run labels r.

    The log run medians are split in two groups (exact 1-D two-means).  Modes
    are accepted when (a) the distance between the group means exceeds the
    99 % point of that distance for R unimodal lognormal run effects of log-sd
    ``NULL_RUN_SIGMA`` (any smaller spread gives fewer false alarms: the
    distance scales with the sd), (b) with >= 4 runs, the scale-free split
    statistic also exceeds its 99 % point for normal run medians, and (c) the
    modes are at least ``MIN_MODE_RATIO`` apart.  Returns None or
    (low_ns, high_ns, ratio, high_batch_fraction, separation).
    """
    from osbench_analysis.stats.heterogeneity import MIN_RUNS_FOR_SPLIT, _split_stat, split_critical_value
    ids, inv, med = group_medians(x, r)
    R = ids.size
    if R < 2:
        return None
    order = np.argsort(med)
    ys = med[order]
    t, k, d = _split_stat(ys[None, :])
    t, k, d = float(t[0]), int(k[0]), float(d[0])
    if d <= _between_gap_critical(R) * NULL_RUN_SIGMA or math.exp(d) < MIN_MODE_RATIO:
        return None
    if R >= MIN_RUNS_FOR_SPLIT and not t > split_critical_value(R, BETWEEN_ALPHA):
        return None
    lo, hi = ys[:k], ys[k:]
    high_runs = set(order[k:].tolist())
    high_frac = float(np.mean([i in high_runs for i in inv]))
    sd = math.sqrt((np.var(lo) + np.var(hi)) / 2) if R > 2 else 0.0
    sep = math.sqrt(2) * d / sd if sd > 0 else math.inf
    return float(np.exp(lo.mean())), float(np.exp(hi.mean())), float(math.exp(d)), high_frac, sep


def _run_medians(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Each value's run median (what pandas' groupby(r).transform("median") gives, without its
    per-call machinery: a millisecond for each of thousands of conditions)."""
    _, inv, med = group_medians(x, r)
    return med[inv]


def _mixture_test(x: np.ndarray):
    """EM two-normal test on values x: (accepted, w, mu, sd, delta_bic, separation, ratio)."""
    n = x.size
    sd1 = float(np.std(x))
    ll1 = float(_normal_logpdf(x, x.mean(), max(sd1, 1e-12)).sum())
    w, mu, sd, ll2 = _fit_two_normals(x)
    delta_bic = (-2 * ll1 + 2 * math.log(n)) - (-2 * ll2 + 5 * math.log(n))
    separation = float(math.sqrt(2) * abs(mu[1] - mu[0]) / math.sqrt(sd[0] ** 2 + sd[1] ** 2))
    ratio = float(math.exp(mu[1] - mu[0]))
    ok = (delta_bic > MIN_DELTA_BIC and separation > MIN_SEPARATION
          and float(min(w)) >= MIN_MODE_FRACTION and ratio >= MIN_MODE_RATIO)
    return ok, w, mu, sd, float(delta_bic), separation, ratio


def detect_multimodality(per_op: np.ndarray, run: np.ndarray | None = None) -> Multimodality:
    """Test one condition's per-op times for two well-separated modes.

    Works on log per-op time (modes of a two-process probe differ by a
    factor).  Two kinds of modes, tested separately when ``run`` labels are
    given:

    * 'within_runs' (batches alternate: the scheduler moves the processes):
      a 2-component normal mixture fitted by EM to the batches' log deviation
      from their own run's median, accepted when BIC improves by more than
      ``MIN_DELTA_BIC`` over one normal, Ashman's D > ``MIN_SEPARATION``, the
      smaller mode holds at least ``MIN_MODE_FRACTION`` of the batches and the
      modes differ by at least ``MIN_MODE_RATIO``.  Heavy tails and rare
      interference spikes fail the fraction or separation tests and are left
      to the outlier flags.  Runs that merely differ from each other leave
      these deviations unimodal.
    * 'between_runs' (whole runs land in one mode: placement fixed per
      worker): the run-level test of ``_between_runs_modes`` on the log run
      medians, calibrated against unimodal lognormal run effects (log-sd up to
      ``NULL_RUN_SIGMA``).  Ordinary run-to-run spread is not a mode; a
      minority of slower runs is reported by ``heterogeneity`` instead.

    Without run labels the EM test runs on the pooled log times and a
    detection is reported as 'within_runs'.
    """
    y = np.asarray(per_op, dtype=float)
    ok = np.isfinite(y) & (y > 0)
    y = y[ok]
    n = y.size
    if n < 10:
        return Multimodality(False, n, math.nan, math.nan, math.nan, math.nan, math.nan,
                             math.nan, "", "too few batches to test for modes")
    x = np.log(y)
    if np.ptp(x) == 0:
        v = float(y[0])
        return Multimodality(False, n, v, v, 1.0, 0.0, 0.0, 0.0, "", "")
    r = np.asarray(run)[ok] if run is not None else None
    raw_ok, w, mu, sd, delta_bic, separation, _ = _mixture_test(x)
    if r is not None:
        resid = x - _run_medians(x, r)
        within = bool(np.ptp(resid) > 0 and _mixture_test(resid)[0])
        if not within and raw_ok:
            # With few batches per run a run's median can sit in either mode and
            # the deviations are then no clean two-mode mixture: also accept the
            # pooled fit when most runs hold batches of both modes.
            d0 = w[0] * _normal_pdf(x, mu[0], sd[0])
            d1 = w[1] * _normal_pdf(x, mu[1], sd[1])
            frac = pd.Series(d1 > d0).groupby(r).mean()
            mixed = int(np.sum((frac > 0.1) & (frac < 0.9)))
            alternating = float(np.sum(np.minimum(frac, 1 - frac) * pd.Series(r).value_counts()
                                       .reindex(frac.index).to_numpy()) / n)
            within = mixed >= max(1, len(frac) / 2) and alternating >= MIN_MODE_FRACTION
    else:
        within = raw_ok
    low, high, ratio, high_frac = (float(math.exp(mu[0])), float(math.exp(mu[1])),
                                   float(math.exp(mu[1] - mu[0])), float(w[1]))
    between = None if (within or r is None) else _between_runs_modes(x, r)
    multimodal = bool(within or between is not None)
    split, message = "", ""
    if between is not None:
        low, high, ratio, high_frac, separation = between
        split = "between_runs"
    elif within:
        split = "within_runs"
    if multimodal:
        where = ("whole runs land in one mode (placement fixed per worker)"
                 if split == "between_runs" else "batches alternate between modes within runs")
        message = (f"two modes {ratio:.1f}x apart ({time_plain(low)} and "
                   f"{time_plain(high)} per op, {high_frac:.0%} in the slower); {where}. "
                   "Do not average them: pin the processes (placement same_cpu / cross_cpu) "
                   "and report each mode.")
    return Multimodality(multimodal, n, low, high, ratio, high_frac, separation, delta_bic, split,
                         message)
