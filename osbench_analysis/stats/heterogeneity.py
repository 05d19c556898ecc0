"""Are the runs of a condition alike?  Between-run heterogeneity and minority-slow runs.

The default estimate of a condition is the geometric mean of its run medians
(``stats``).  Its t interval assumes the run medians are a fair sample of the
population of runs.  When a *minority* of worker processes is slower (some
land on a slower placement: on our VMs about one in three), a campaign with
few runs often contains none of them, and its interval is then confidently
wrong on one side: with 20 % of runs 1.3x slower and tight batches, coverage
falls to 50-88 % at 3-10 runs (benchmarks/stats_coverage.py, section J).

This module answers three questions per condition, on log per-op times:

1. Do the runs differ by more than their batch noise explains?
   (``heterogeneous``: a one-way random-effects F test.)  The numerator is the
   sample variance of the log run medians.  The denominator is what the
   batch noise alone would give them: the variance of the median of n
   batches, ``(pi/2) s_w^2 / n`` inflated for lag-1 autocorrelation
   (AR(1): ``1 + 2 sum_k (1 - k/n) rho^k``), with ``s_w`` a pooled robust
   (MAD) within-run scale and ``rho`` the pooled, bias-corrected lag-1
   autocorrelation of the within-run residuals.  Reference distribution
   F(R-1, df_w) with the effective within-run degrees of freedom.  Measured
   false-alarm rate on homogeneous runs (lognormal, heavy-tailed,
   contaminated, AR(1) rho = 0.5 batches): see tests/test_stats_heterogeneity.py
   and docs/statistics.md.

2. Is there a minority of slow (or fast) runs?  The log run medians are split
   in two groups at the cut that minimises the within-group sum of squares
   (1-D two-means, exact).  The split is *clear* when its two-sample
   statistic ``T = (mean_hi - mean_lo) / (s_pooled sqrt(1/k + 1/(R-k)))``
   exceeds the 95 % point of the same statistic for R normal run medians
   (computed by simulation, cached per R; s_pooled is floored at the batch
   noise of a median).  With fewer than 4 runs no split can be judged, and
   heterogeneous runs are treated as possibly hiding a mode.
   ``slow_run_fraction`` = share of runs in the slower group,
   ``slow_run_factor`` = ratio of the groups' geometric means.

3. How many runs would a campaign need to contain such runs?  For a minority
   of frequency f (the smaller group's share), ``runs_needed`` is the
   smallest R with 1 - (1 - f)^R >= 0.95 (14 for f = 0.2, 8 for f = 1/3).
   A campaign with fewer runs gets a ``warning``: the mean over runs may miss
   (or over-weight) that minority; the typical run (median of run medians,
   distribution-free interval) is the number that does not depend on it.

No test on the data can warn when the sample contains no slow run at all
(probability (1 - f)^R): then the runs look homogeneous.  That is why the
runner's stopping rule asks for ``runs_needed`` runs as soon as a minority
shows, and why docs/statistics.md reports, per scenario, both the coverage
and how often the engine warned.

Everything works on a NaN-padded array of per-op times of shape
(..., runs, batches), so the coverage study runs this very code on thousands
of simulated experiments at once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import stats as sps

#: Significance level of the heterogeneity F test and of the split test.
ALPHA = 0.05
#: Probability with which a campaign should contain a minority mode.
SEE_PROBABILITY = 0.95
#: Below this many runs no split is judged (T has too few degrees of freedom).
MIN_RUNS_FOR_SPLIT = 4
#: Asymptotic efficiency of the MAD relative to the sd for normal data.
_MAD_EFFICIENCY = 0.37
#: Cap on the autocorrelation used, 0.5 with 10 batches per run, up to 0.9 with 50
#: (cap = max(0.5, 1 - 5/n)).  Over 10 batches a strong apparent correlation is,
#: in our campaigns, a slow episode at the end of a run, which the median ignores;
#: a real AR(1) rho = 0.8 with 10 batches is the documented limit of the test.
_MAX_RHO = 0.5
_MIN_SCALE = 1e-4           # floor on the within-run log scale (0.01 %): timer quantisation


def runs_to_see(fraction: float, probability: float = SEE_PROBABILITY) -> int:
    """Smallest R with 1 - (1 - fraction)^R >= probability (14 for 0.2 at 95 %)."""
    if not (0 < fraction < 1):
        raise ValueError(f"fraction must be in (0, 1) (got {fraction})")
    if not (0 < probability < 1):
        raise ValueError(f"probability must be in (0, 1) (got {probability})")
    r = math.ceil(math.log(1 - probability) / math.log(1 - fraction) - 1e-12)
    return max(1, r)


def _median_var_factor(n: np.ndarray, rho: np.ndarray, nmax: int) -> np.ndarray:
    """Var(median of n AR(1) values) / s^2: (pi/2)/n times the finite-n AR(1) inflation."""
    n = np.asarray(n, dtype=float)
    rho = np.asarray(rho, dtype=float)
    k = np.arange(1, max(nmax, 2), dtype=float)
    shape = np.broadcast_shapes(n.shape, rho.shape)
    nn = np.broadcast_to(n, shape)[..., None]
    rr = np.broadcast_to(rho, shape)[..., None]
    w = np.clip(1 - k / np.maximum(nn, 1), 0, None)
    infl = 1 + 2 * np.sum(w * rr ** k, axis=-1)
    return (math.pi / 2) / np.maximum(n, 1) * infl


def _nan_quantiles(a: np.ndarray, qs) -> list[np.ndarray]:
    """Linear-interpolation quantiles along the last axis ignoring NaN (np.nanquantile's
    definition) without its per-row Python loop."""
    srt = np.sort(a, axis=-1)                      # NaN sort last
    cnt = np.sum(~np.isnan(a), axis=-1)
    out = []
    for q in qs:
        pos = np.maximum(cnt - 1, 0) * q
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, np.maximum(cnt - 1, 0))
        frac = pos - lo
        vlo = np.take_along_axis(srt, lo[..., None], axis=-1)[..., 0]
        vhi = np.take_along_axis(srt, hi[..., None], axis=-1)[..., 0]
        out.append(np.where(cnt > 0, vlo + frac * (vhi - vlo), np.nan))
    return out


def _split_stat(y: np.ndarray, floor_var: np.ndarray | float = 0.0):
    """Best two-group split of sorted values along the last axis.

    Returns (T, k, d): the two-sample statistic of the split that minimises
    the within-group sum of squares, the size of the lower group, and the
    difference of group means.  ``y`` must be sorted and without NaN.
    """
    R = y.shape[-1]
    cs = np.cumsum(y, axis=-1)
    cs2 = np.cumsum(y * y, axis=-1)
    tot, tot2 = cs[..., -1:], cs2[..., -1:]
    k = np.arange(1, R, dtype=float)
    s_lo, s2_lo = cs[..., :-1], cs2[..., :-1]
    s_hi, s2_hi = tot - s_lo, tot2 - s2_lo
    ss = (s2_lo - s_lo ** 2 / k) + (s2_hi - s_hi ** 2 / (R - k))
    best = np.argmin(ss, axis=-1)
    take = lambda a: np.take_along_axis(a, best[..., None], axis=-1)[..., 0]   # noqa: E731
    kb = k[best]
    d = take(s_hi) / (R - kb) - take(s_lo) / kb
    s2 = np.maximum(take(ss), 0.0) / max(R - 2, 1)
    s2 = np.maximum(s2, floor_var)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = d / np.sqrt(s2 * (1 / kb + 1 / (R - kb)))
    t = np.where(s2 > 0, t, np.where(d > 0, np.inf, 0.0))
    return t, kb.astype(int), d


@lru_cache(maxsize=128)
def split_critical_value(n_runs: int, alpha: float = ALPHA, n_sim: int = 40_000) -> float:
    """(1 - alpha) quantile of the split statistic T for n_runs iid normal run medians.

    Scale-free, so one simulation per R (fixed seed, cached) serves every condition.
    """
    if n_runs < 3:
        return math.inf
    rng = np.random.default_rng([20261123, n_runs])
    y = np.sort(rng.standard_normal((n_sim, n_runs)), axis=-1)
    t, _, _ = _split_stat(y)
    return float(np.quantile(t, 1 - alpha))


def heterogeneity_arrays(x: np.ndarray, *, alpha: float = ALPHA) -> dict[str, np.ndarray]:
    """The test on per-op times of shape (..., runs, batches), NaN-padded for ragged runs.

    Returns arrays over the leading axes: n_runs, p_value, heterogeneous,
    clear_split, slow_run_fraction, slow_run_factor, minority_fraction,
    runs_needed (0 when no minority shows), warn (runs_needed > n_runs),
    within_sd (log scale), rho (lag-1 autocorrelation used).
    """
    x = np.asarray(x, dtype=float)
    lx = np.log(x)
    valid = np.isfinite(lx)
    n = valid.sum(axis=-1)                                  # (..., R)
    has = n > 0
    R = has.sum(axis=-1)                                    # (...)
    if not np.all(R == R.reshape(-1)[0] if R.size else True):
        raise ValueError("heterogeneity_arrays needs the same number of runs in every experiment")
    Rn = int(R.reshape(-1)[0]) if R.size else 0
    nmax = x.shape[-1]
    with np.errstate(all="ignore"):
        y = np.nanmedian(np.where(valid, lx, np.nan), axis=-1)     # log run medians
        e = lx - y[..., None]
        # pooled MAD of the residuals around each run's median
        mad0 = 1.4826 * np.nanmedian(np.where(valid, np.abs(e), np.nan).reshape(*e.shape[:-2], -1), axis=-1)
        mad0 = np.maximum(np.nan_to_num(mad0, nan=0.0), _MIN_SCALE)
        # Lag-1 autocorrelation, pooled over runs.  Two estimates, the larger
        # is used: Pearson on winsorised residuals,
        # and one from the signs of the residuals around the run median (the
        # median depends on the centre of the distribution, where iid spikes
        # and tails do not dilute the correlation; Gaussian relation
        # rho = sin(pi/2 E[sign x sign])).  Both get Kendall's small-sample
        # bias correction (1 + 3 rho) / n.
        nbar = np.maximum(np.nanmean(np.where(has, n, np.nan), axis=-1), 2)
        ec = np.clip(e, -3 * mad0[..., None, None], 3 * mad0[..., None, None])
        ec = np.where(valid, ec, np.nan)
        ec = ec - np.nanmean(ec, axis=-1, keepdims=True)
        ec0 = np.nan_to_num(ec)
        num = np.sum(ec0[..., 1:] * ec0[..., :-1], axis=(-1, -2))
        den = np.sum(ec0 * ec0, axis=(-1, -2))
        r_p = np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)
        r_p = r_p + (1 + 3 * r_p) / nbar
        sg = np.where(valid, np.sign(e), 0.0)
        pair = valid[..., 1:] & valid[..., :-1]
        num = np.sum(sg[..., 1:] * sg[..., :-1], axis=(-1, -2))
        den = np.sum(pair & (sg[..., 1:] != 0) & (sg[..., :-1] != 0), axis=(-1, -2))
        r_s = np.where(den > 0, num / np.maximum(den, 1), 0.0)
        r_s = np.sin(math.pi / 2 * np.clip(r_s + (1 + 3 * r_s) / nbar, -1, 1))
        rho = np.maximum(r_p, r_s)
        rho = np.clip(rho, 0.0, np.maximum(_MAX_RHO, 1 - 5 / nbar))
        # Within-run scale of log per-op time: the larger of a MAD and an
        # IQR-based sparsity estimate (the variance of a median is set by the
        # density at the median, 1 / (4 n f(m)^2); (Q3 - Q1) / 0.5 estimates
        # 1 / f(m) for any shape, slightly conservatively for the normal).
        # Residuals around a run's own median are shrunk by fitting it: by
        # (1 - infl / n) in variance, infl the AR(1) inflation of a mean.
        flat = np.where(valid, e, np.nan).reshape(*e.shape[:-2], -1)
        q1, q3 = _nan_quantiles(flat, (0.25, 0.75))
        sparsity = np.sqrt(2 / math.pi) * (q3 - q1) / 0.5 / 2   # = sd for the normal x 1.08
        s_w = np.maximum(np.nan_to_num(mad0), np.nan_to_num(sparsity))
        infl = _median_var_factor(nbar, rho, nmax) * nbar / (math.pi / 2)
        shrink = np.clip(1 - infl / nbar, 0.2, 1)
        s_w = np.maximum(s_w / np.sqrt(shrink), _MIN_SCALE)
        v = (s_w ** 2)[..., None] * _median_var_factor(n, rho[..., None], nmax)   # (..., R)
        vbar = np.nanmean(np.where(has, v, np.nan), axis=-1)
        yv = np.where(has, y, np.nan)
        s2 = np.nanvar(yv, axis=-1, ddof=1) if Rn >= 2 else np.zeros(yv.shape[:-1])
        F = s2 / vbar
        raw_df = np.sum(np.where(has, np.maximum(n - 1, 0), 0), axis=-1)
        df_w = np.maximum(_MAD_EFFICIENCY * raw_df * (1 - rho) / (1 + rho), 1.0)
    if Rn >= 2:
        p = sps.f.sf(F, Rn - 1, df_w)
        # without repeated batches inside runs there is no batch noise to compare with
        p = np.where(raw_df >= 2 * Rn, p, np.nan)
    else:
        p = np.full(F.shape, np.nan)
    with np.errstate(invalid="ignore"):
        het = p < alpha
    # two-group split of the log run medians
    out_shape = F.shape
    frac = np.full(out_shape, np.nan)
    factor = np.full(out_shape, np.nan)
    minority = np.full(out_shape, np.nan)
    clear = np.zeros(out_shape, dtype=bool)
    if Rn >= 2:
        ys = np.sort(np.where(has, y, np.inf), axis=-1)[..., :Rn]
        t, k, d = _split_stat(ys, vbar)
        crit = split_critical_value(Rn, alpha)
        clear = het & ((Rn < MIN_RUNS_FOR_SPLIT) | (t > crit))
        frac = np.where(clear, (Rn - k) / Rn, np.nan)
        factor = np.where(clear, np.exp(d), np.nan)
        minority = np.where(clear, np.minimum(k, Rn - k) / Rn, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(clear, np.ceil(np.log(1 - SEE_PROBABILITY) / np.log1p(-minority) - 1e-12), 0)
    need = np.nan_to_num(need, nan=0.0).astype(int)
    return {"n_runs": np.broadcast_to(Rn, out_shape), "p_value": p, "heterogeneous": het,
            "clear_split": clear, "slow_run_fraction": frac, "slow_run_factor": factor,
            "minority_fraction": minority, "runs_needed": need, "warn": need > Rn,
            "within_sd": s_w, "rho": rho, "F": F}


@dataclass(frozen=True)
class Heterogeneity:
    """Between-run heterogeneity of one condition (see the module docstring)."""

    n_runs: int
    heterogeneous: bool          # runs differ beyond their batch noise (F test)
    p_value: float
    variance_ratio: float        # F: variance of log run medians / what batch noise gives
    within_sd: float             # pooled robust within-run sd of log per-op time
    rho: float                   # lag-1 autocorrelation of batches used for the noise
    clear_split: bool            # a minority group of runs shows
    slow_run_fraction: float     # share of runs in the slower group (NaN: no split)
    slow_run_factor: float       # slower group / faster group (geometric means)
    runs_needed: int             # runs to contain the minority with 95 % probability (0: none shows)
    warning: str

    @property
    def warn(self) -> bool:
        return bool(self.warning)


def _pad(runs) -> np.ndarray:
    nmax = max((r.size for r in runs), default=0)
    pad = np.full((len(runs), max(nmax, 1)), np.nan)
    for i, r in enumerate(runs):
        pad[i, :r.size] = r
    return pad


def _key(runs, alpha: float) -> tuple:
    runs = getattr(runs, "runs", runs)
    runs = [np.asarray(r, dtype=float) for r in runs if np.asarray(r).size]
    return tuple(r.size for r in runs), b"".join(r.tobytes() for r in runs), float(alpha)


def heterogeneity(runs, *, alpha: float = ALPHA) -> Heterogeneity:
    """Test one condition; ``runs``: a stats.RunData or a sequence of per-run arrays of per-op ns."""
    # the same per-op times give the same answer: an analysis asks again for each ratio a condition is in
    return _heterogeneity_of(*_key(runs, alpha))


#: results computed ahead by `prime`, taken (once) by _heterogeneity_of, which then keeps them
_primed: dict[tuple, "Heterogeneity"] = {}


def prime(conditions, *, alpha: float = ALPHA) -> None:
    """Compute the test of many conditions at once (each as `heterogeneity` takes it): those of one shape
    (runs, batches of the longest run) in one call of heterogeneity_arrays, whose every step works per
    experiment along its last axes, so each result is the one a call of its own gives, to the last bits
    of a float (a sum over a stack may round its last bit otherwise: 2 of 4,500 conditions of 100
    campaigns; tests/test_stats_heterogeneity.py).  `heterogeneity` then finds them; an analysis of 100
    campaigns asks for some 4,500, one numpy call each took a quarter of its time."""
    _primed.clear()
    by_shape: dict[tuple, list] = {}
    for runs in conditions:
        key = _key(runs, alpha)
        if len(key[0]) >= 2 and key not in _primed:
            _primed[key] = None
            by_shape.setdefault((len(key[0]), max(key[0])), []).append(key)
    for keys in by_shape.values():
        stack = np.stack([_pad(_split(k[0], k[1])) for k in keys])
        try:
            h = heterogeneity_arrays(stack, alpha=alpha)
        except ValueError:   # a run without one valid time in some condition: each asks for its own later
            for k in keys:
                _primed.pop(k)
            continue
        for i, k in enumerate(keys):
            _primed[k] = _result(k[0], {name: v[i] for name, v in h.items()})


def _split(sizes: tuple[int, ...], data: bytes) -> list[np.ndarray]:
    flat = np.frombuffer(data, dtype=float)
    return np.split(flat, np.cumsum(sizes)[:-1]) if sizes else []


@lru_cache(maxsize=1 << 15)
def _heterogeneity_of(sizes: tuple[int, ...], data: bytes, alpha: float) -> Heterogeneity:
    ahead = _primed.pop((sizes, data, alpha), None)
    if ahead is not None:
        return ahead
    runs = _split(sizes, data)
    R = len(runs)
    if R < 2:
        return Heterogeneity(R, False, math.nan, math.nan, math.nan, math.nan, False, math.nan,
                             math.nan, 0, "")
    return _result(sizes, heterogeneity_arrays(_pad(runs), alpha=alpha))


def _result(sizes: tuple[int, ...], h: dict) -> Heterogeneity:
    """One condition's Heterogeneity from its heterogeneity_arrays values (0-d arrays or numbers)."""
    R = len(sizes)
    g = {k: (np.asarray(v).item() if np.ndim(v) == 0 else v) for k, v in h.items()}
    need = int(g["runs_needed"])
    warning = ""
    if g["clear_split"] and need > R:
        frac, fac = g["slow_run_fraction"], g["slow_run_factor"]
        n_slow = int(round(frac * R))
        verb = lambda k: "is" if k == 1 else "are"   # noqa: E731
        if n_slow <= R - n_slow:
            what = f"{n_slow} of {R} runs {verb(n_slow)} {fac:.2f}x slower than the others"
        else:
            n_fast = R - n_slow
            what = f"{n_fast} of {R} runs {verb(n_fast)} faster: the others take {fac:.2f}x their time"
        # no ';' inside: summarize appends it to the '; '-joined warnings
        warning = (f"runs are not alike: {what} (beyond batch noise, p={g['p_value']:.1g}), {need} runs "
                   f"are needed to include such runs with 95% probability (have {R}), so the mean over "
                   f"runs may be off and typical_run is the median run")
    return Heterogeneity(R, bool(g["heterogeneous"]), float(g["p_value"]), float(g["F"]),
                         float(g["within_sd"]), float(g["rho"]), bool(g["clear_split"]),
                         float(g["slow_run_fraction"]), float(g["slow_run_factor"]), need, warning)


__all__ = ["Heterogeneity", "heterogeneity", "heterogeneity_arrays", "runs_to_see",
           "split_critical_value", "ALPHA", "SEE_PROBABILITY"]


def median_abs_log_deviation(values: pd.DataFrame, pooled: pd.DataFrame, keys: list[str], column: str) -> float:
    """The median over conditions pooled from two campaigns or more, and over their campaigns, of
    |log(campaign value / pooled value)|: ``values`` with each campaign's log value ``y`` per condition
    (``keys``), ``pooled`` with the pooled value in ``column`` and ``n_campaigns``; NaN when none pooled."""
    if values.empty or pooled.empty:
        return float("nan")
    p = pooled[pooled["n_campaigns"] > 1]
    m = values.merge(p[[*keys, column]].rename(columns={column: "_pooled"}), on=keys)
    return float(np.median(np.abs(m["y"] - np.log(m["_pooled"])))) if len(m) else float("nan")
