"""Which number a condition quotes: the mean over runs or the typical run.

A condition has two candidate estimands (docs/statistics.md, "Estimand"):

* the **mean over runs**, the geometric mean of the run medians, with the
  chosen ``ci_method`` (default: t on the log run medians).  Efficient, and
  what ratios between systems compare; but when a minority of worker runs is
  slower, a campaign with few runs often holds none of them and its interval
  is then narrow and wrong on one side (coverage 24-97 % in section J of
  benchmarks/stats_coverage.py).  No test on the data can see a minority
  that is not in the sample.
* the **typical run**, the median of the run medians, with a
  distribution-free order-statistic interval.  It does not move when a
  minority of runs is slower, so its coverage holds whatever the runs'
  distribution, but it needs 6 runs to reach 95 %.

The rule (``quote="auto"``, the default): the typical run, except when the
condition has fewer runs than its interval needs to reach the level
(``runs_for_level``: 6 at 95 %) and its runs do not differ beyond batch
noise (``heterogeneity``'s F test): then the mean over runs, whose t interval
is valid for alike runs.  The estimate table names the estimand of every
row; both numbers stay in it.

Warnings that go with the quoted number (``quote_warnings``):

* fewer than ``MIN_RUNS`` runs: a minority of slower runs may be missing
  entirely, whichever number is quoted;
* a quoted typical run whose interval cannot reach the level (fewer than
  ``runs_for_level(level)`` runs: [min, max] of 5 runs has 93.75 %).

The rule and the warnings are functions of arrays so that the coverage study
(benchmarks/stats_coverage.py, sections J and Q) runs this very code.
"""
from __future__ import annotations

import math

import numpy as np

from osbench_analysis.stats.quality import DEFAULT_THRESHOLDS, few_runs_warning

#: quote="auto": the rule above; the other two force one estimand for every condition.
QUOTES = ("auto", "mean-over-runs", "typical-run")
DEFAULT_QUOTE = "auto"
#: Fewer runs than this cannot show a minority of slower runs (quality's min_runs).
MIN_RUNS = DEFAULT_THRESHOLDS.min_runs
MEAN_OVER_RUNS = "mean over runs"
TYPICAL_RUN = "typical run"


def check_quote(quote: str) -> str:
    if quote not in QUOTES:
        raise ValueError(f"quote must be one of {QUOTES} (got {quote!r})")
    return quote


def runs_for_level(level: float) -> int:
    """Fewest runs whose order-statistic interval for the median reaches ``level``
    (the confidence of [min, max] of n values is 1 - 2^(1-n): 6 runs at 95 %)."""
    if not (0 < level < 1):
        raise ValueError(f"level must be in (0, 1) (got {level})")
    return max(2, math.ceil(1 - math.log2(1 - level) - 1e-12))


def quotes_typical_run(heterogeneous, n_runs=None, *, level: float = 0.95, quote: str = DEFAULT_QUOTE,
                       estimator: str = "median"):
    """True where the typical run is quoted (array or bool, like ``heterogeneous``).

    ``auto``: the runs differ beyond batch noise, or there are enough runs
    (``runs_for_level``) for the typical run's interval to reach ``level``.
    The mean estimator (population mean per-op time) has no typical-run
    counterpart and always quotes itself.
    """
    check_quote(quote)
    het = np.asarray(heterogeneous, dtype=bool)
    if estimator != "median" or quote == "mean-over-runs":
        out = np.zeros(het.shape, dtype=bool)
    elif quote == "typical-run":
        out = np.ones(het.shape, dtype=bool)
    else:
        enough = np.zeros(het.shape, dtype=bool) if n_runs is None else \
            np.broadcast_to(np.asarray(n_runs) >= runs_for_level(level), het.shape)
        out = het | enough
    return out if out.shape else bool(out)


def below_level(confidence, level: float):
    """True where an interval's confidence falls short of ``level`` (array or float)."""
    return np.asarray(confidence) < level - 1e-9


def _few_runs(n_runs):
    return np.asarray(n_runs) < MIN_RUNS


def quote_warns(n_runs, typical_quoted, typical_confidence, level: float):
    """True where the quoted number carries a warning (the two cases in the module docstring)."""
    out = _few_runs(n_runs) | (np.asarray(typical_quoted, dtype=bool) & below_level(typical_confidence, level))
    return out if out.shape else bool(out)


def quote_warnings(n_runs: int, typical_quoted: bool, typical_confidence: float, level: float,
                   p_value: float = math.nan) -> list[str]:
    """The texts of those warnings for one condition (no ';' inside: they are '; '-joined)."""
    out = []
    if _few_runs(n_runs):
        out.append(few_runs_warning(n_runs, MIN_RUNS))
    if typical_quoted and below_level(typical_confidence, level) and n_runs >= 2:
        p = f", p={p_value:.1g}" if p_value == p_value else ""
        out.append(f"the {n_runs} runs differ beyond batch noise{p}, so the typical run is quoted, "
                   f"and its interval [min, max] of {n_runs} runs has {100 * typical_confidence:.4g}% "
                   f"confidence ({runs_for_level(level)} runs give {100 * level:g}%)")
    return out


__all__ = ["QUOTES", "DEFAULT_QUOTE", "MIN_RUNS", "MEAN_OVER_RUNS", "TYPICAL_RUN", "check_quote",
           "runs_for_level", "quotes_typical_run", "below_level", "quote_warns", "quote_warnings"]
