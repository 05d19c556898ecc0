"""Campaigns as a level of replication: random-effects pooling of per-campaign
estimates (Kalibera & Jones: replicate at the level where the variance is, and
let the interval be over that level).

Each campaign gives one value ``y_i`` on the log scale (the mean log run
median, the engine's estimand) with its within-campaign standard error
``s_i`` (run-to-run spread / sqrt(R)).  Campaigns of one host differ by more
than their runs do (the host gets slower or faster between campaigns), so
``y_i = mu + u_i + e_i`` with ``u_i ~ N(0, tau^2)`` the campaign effect.

- Interval for mu (the campaign-population value): Student t with k-1 degrees
  of freedom on the k campaign values, equally weighted: the Hartung-Knapp
  interval with equal weights.  Why not inverse-variance weights: a campaign
  whose runs happened to miss the host's slow states has both a lower value
  and a smaller standard error, so weighting by 1/(s_i^2 + tau^2) pulls the
  pooled value down (with a 10 % minority of 2x slower runs, tau = 0 and 5
  campaigns, weighted DerSimonian-Laird + HK covered 13 % in a trial of
  section R's simulation, this one 94 %: benchmarks/stats_coverage.py section R).  Campaigns of one profile have
  similar run counts, so equal weights lose little.
- tau (``between_campaign_sd``): moment estimate, sqrt(max(0, var(y) -
  mean(s_i^2))): the spread of the campaign values beyond what their runs explain.
- Prediction interval for the next campaign's estimate: y_bar +/- t(k-1)
  sd(y) sqrt(1 + 1/k), the classic interval for a new draw (exact under
  normality; reproducibility.leave_one_campaign_out reports how it covers).

With 2 campaigns the interval is t(1): 12.7 x the standard error, wide by
construction; that is what two campaigns know.  Vectorised along the last
axis so that the coverage study runs this code.  With one campaign nothing is
pooled: the interval is the campaign's own, labelled ``WITHIN_ONE_CAMPAIGN``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from osbench_analysis.stats.params import DEFAULT_LEVEL, _check_level

WITHIN_ONE_CAMPAIGN = "within one campaign"
OVER_CAMPAIGNS = "over campaigns"
POOLING_METHOD = "t interval over the campaigns' estimates (k-1 df, equal weights), moment estimate of tau"


@dataclass(frozen=True)
class Pooled:
    """One condition pooled over k campaigns, on the scale the values were given (log for times)."""

    estimate: float
    ci_low: float
    ci_high: float
    tau: float                 # between-campaign SD (same scale as the values)
    n_campaigns: int
    pred_low: float            # where the next campaign's estimate should land
    pred_high: float
    interval_over: str         # OVER_CAMPAIGNS | WITHIN_ONE_CAMPAIGN
    note: str = ""


def between_campaign_tau(y: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Moment estimate of the between-campaign SD along the last axis (>= 0)."""
    y, se = np.asarray(y, float), np.asarray(se, float)
    return np.sqrt(np.maximum(0.0, y.var(-1, ddof=1) - (se ** 2).mean(-1)))


def random_effects_rows(y: np.ndarray, se: np.ndarray, level: float = DEFAULT_LEVEL):
    """Pooled mean, its t(k-1) interval, tau, the standard error of the mean and
    the prediction half-width for a new campaign's estimate, along the last axis (k >= 2).

    Returns (mu, low, high, tau, se_mu, pred_half)."""
    y, se = np.asarray(y, float), np.asarray(se, float)
    k = y.shape[-1]
    if k < 2:
        raise ValueError(f"pooling needs >= 2 campaigns (got {k})")
    mu = y.mean(-1)
    sd = y.std(-1, ddof=1)
    se_mu = sd / math.sqrt(k)
    t = float(sps.t.ppf(0.5 + level / 2, k - 1))
    return mu, mu - t * se_mu, mu + t * se_mu, between_campaign_tau(y, se), se_mu, t * sd * math.sqrt(1 + 1 / k)


def random_effects(y, se, level: float = DEFAULT_LEVEL) -> Pooled:
    """Pool one condition's per-campaign values ``y`` (log scale) with standard
    errors ``se``.  One campaign: nothing to pool; returns its value with a
    normal interval from ``se`` labelled ``WITHIN_ONE_CAMPAIGN`` (callers keep
    the campaign's own t interval) and tau NaN."""
    level = _check_level(level)
    y = np.asarray(y, float).ravel()
    se = np.asarray(se, float).ravel()
    if y.size != se.size or y.size == 0:
        raise ValueError(f"need one standard error per campaign value (got {y.size} values, {se.size} se)")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(se)) and np.all(se >= 0)):
        raise ValueError("campaign values and standard errors must be finite, se >= 0")
    if y.size == 1:
        z = float(sps.norm.ppf(0.5 + level / 2))
        m, s = float(y[0]), float(se[0])
        return Pooled(m, m - z * s, m + z * s, math.nan, 1, math.nan, math.nan, WITHIN_ONE_CAMPAIGN,
                      "one campaign: the interval knows nothing about campaign-to-campaign variation")
    mu, lo, hi, tau, se_mu, half = random_effects_rows(y, se, level)
    note = f"{y.size} campaigns, {POOLING_METHOD}"
    if y.size == 2:
        note += "; with 2 campaigns the interval is t(1), wide by construction"
    return Pooled(float(mu), float(lo), float(hi), float(tau), int(y.size), float(mu - half), float(mu + half),
                  OVER_CAMPAIGNS, note)
