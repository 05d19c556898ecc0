"""Intervals: distribution-free order statistics, Student t and Welch on run-level values."""
from __future__ import annotations

import math
from functools import lru_cache
import numpy as np
from scipy import stats as sps
from osbench_analysis.stats.params import DEFAULT_LEVEL, _check_level


def order_statistic_median_ci(values: np.ndarray, level: float = DEFAULT_LEVEL, *,
                              interpolate: bool = False) -> tuple[float, float, float, float]:
    """Distribution-free CI for the median of iid values.

    Returns (median, low, high, confidence).  Without interpolation the
    interval is [x_(k), x_(n-k+1)] with the largest k whose exact binomial
    confidence 1 - 2 P(Bin(n, 1/2) <= k-1) is >= level (conservative for any
    continuous distribution).  With ``interpolate`` the ends are interpolated
    between adjacent order statistics to reach the level
    (Hettmansperger & Sheather 1986).  When even [min, max] has confidence
    below ``level`` (n < 6 at 95 %), [min, max] and its confidence are returned.
    """
    level = _check_level(level)
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan, math.nan
    med = float(np.median(x))
    if n == 1:
        return med, float(x[0]), float(x[0]), 0.0
    _, lo, hi, c = order_statistic_median_ci_rows(x[None, :], level, interpolate=interpolate)
    return med, float(lo[0]), float(hi[0]), c


@lru_cache(maxsize=1024)
def _os_plan(n: int, level: float, interpolate: bool) -> tuple[int, float, float]:
    """(k, lambda, confidence) of the order-statistic median CI for n values."""
    k = np.arange(1, n // 2 + 1)
    conf = 1 - 2 * sps.binom.cdf(k - 1, n, 0.5)
    ok = np.nonzero(conf >= level - 1e-12)[0]
    if ok.size == 0:
        return 1, 0.0, float(conf[0])
    i = int(ok[-1])
    kk = int(k[i])
    if interpolate and i + 1 < k.size and conf[i] > level:
        g1, g2 = conf[i], conf[i + 1]
        frac = (g1 - level) / (g1 - g2)
        return kk, float((n - kk) * frac / (kk + (n - 2 * kk) * frac)), float(level)
    return kk, 0.0, float(conf[i])


def order_statistic_median_ci_rows(values: np.ndarray, level: float = DEFAULT_LEVEL, *,
                                   interpolate: bool = False):
    """``order_statistic_median_ci`` along the last axis of a (..., n) array, n >= 2.

    Returns (median, low, high) arrays and the confidence (one float: it
    depends on n only).  Vectorised so that coverage studies run this code.
    """
    x = np.sort(np.asarray(values, dtype=float), axis=-1)
    n = x.shape[-1]
    kk, lam, c = _os_plan(n, float(level), bool(interpolate))
    lo = (1 - lam) * x[..., kk - 1] + lam * x[..., min(kk, n - 1)]
    hi = (1 - lam) * x[..., n - kk] + lam * x[..., max(n - kk - 1, 0)]
    return np.median(x, axis=-1), lo, hi, c


def t_interval(vals: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and t-interval (n-1 df) along the last axis; vectorised so that the
    coverage studies run the very code the engine uses."""
    vals = np.asarray(vals, dtype=float)
    n = vals.shape[-1]
    m = vals.mean(axis=-1)
    se = vals.std(axis=-1, ddof=1) / math.sqrt(n)
    t = _t_quantile(0.5 + level / 2, n - 1)
    return m, m - t * se, m + t * se


@lru_cache(maxsize=4096)
def _t_quantile(q: float, df: float) -> float:
    """Student t quantile (scipy's), remembered: a whole analysis asks for a few degrees of freedom."""
    return float(sps.t.ppf(q, df))


def welch_interval(va: np.ndarray, vb: np.ndarray, level: float, *, log_of_means: bool = False
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Difference of means A - B along the last axis with a Welch t-interval.

    With ``log_of_means`` the difference is log(mean A) - log(mean B) and the
    variances come from the delta method (ratio of means).  Vectorised.
    """
    va = np.asarray(va, dtype=float)
    vb = np.asarray(vb, dtype=float)
    na, nb = va.shape[-1], vb.shape[-1]
    ma, mb = va.mean(axis=-1), vb.mean(axis=-1)
    ca = va.var(axis=-1, ddof=1) / na
    cb = vb.var(axis=-1, ddof=1) / nb
    if log_of_means:
        d = np.log(ma) - np.log(mb)
        ca, cb = ca / ma ** 2, cb / mb ** 2
    else:
        d = ma - mb
    se = np.sqrt(ca + cb)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (ca + cb) ** 2 / (ca ** 2 / (na - 1) + cb ** 2 / (nb - 1))
    df = np.where(np.isfinite(df), df, float(na + nb - 2))
    t = sps.t.ppf(0.5 + level / 2, df)
    return d, d - t * se, d + t * se


def run_level_values(x: np.ndarray, estimator: str) -> np.ndarray:
    """Run-level values from an (..., runs, batches) array of per-op times:
    log run medians (median estimator) or run means (mean estimator)."""
    x = np.asarray(x, dtype=float)
    if estimator == "median":
        return np.log(np.median(x, axis=-1))
    return x.mean(axis=-1)


def _t_interval(vals: np.ndarray, level: float) -> tuple[float, float, float]:
    m, lo, hi = t_interval(vals, level)
    return float(m), float(lo), float(hi)
