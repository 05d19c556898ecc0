"""Statistics engine: per-condition estimates with run-aware confidence intervals.

A probe's measurement has two levels: worker processes (runs) and timed
batches inside a run.  Runs differ systematically (ASLR, CPU placement, page
colouring), so an interval that treats all batches as independent is far too
narrow (see ``ci_method="iid-percentile"``, kept only to show that).  Every
method here treats the run as the independent unit.

Estimand of the default ``estimator="median"``
    theta = exp(E_runs[log M]), where M is a run's (population) median per-op
    time: the geometric mean over the population of runs of the run's median.
    The median inside a run makes it robust to interference spikes; the
    geometric mean across runs makes ratios between systems behave (log of a
    ratio = difference of means).  When run effects are log-symmetric (the
    usual model, and what we simulate) theta is also the median run's median.
    Point estimate: exp(mean over runs of log run medians).

Estimand of ``estimator="mean"``
    the population mean per-op time E[per_op_ns]; point estimate: mean of the
    run means (each run weighs the same).

CI methods (``ci_method``)
    ``runs-t`` (default)   t-interval with R-1 degrees of freedom on the
                           run-level values (log run medians, or run means).
    ``hier-percentile``    hierarchical bootstrap: resample runs with
                           replacement, then batches within each chosen run;
                           percentile interval of the same statistic.
    ``hier-bca``           same resamples, bias-corrected and accelerated
                           (acceleration from the leave-one-run-out jackknife).
    ``runs-os``            distribution-free order-statistic interval for the
                           *median of run medians* (Hettmansperger-Sheather
                           interpolation); point estimate = median of run
                           medians.  Robust to skewed run effects and a
                           single odd run; cannot reach 95 % with < 6 runs.
    ``iid-percentile``     naive bootstrap of pooled batches ignoring runs.
                           Wrong on purpose: the tests show it under-covers.
    With a single run every method falls back to an order-statistic interval
    for that run's median (``order-stat``; t over batches for the mean) and
    says so in ``note``: such an interval knows nothing about run-to-run
    variation.

Why ``runs-t`` is the default: over 36 simulated settings (5-20 runs,
10-50 batches; lognormal, heavy-tailed and contaminated batches; run- or
batch-dominated variance; 1,000 experiments each) it covered the truth in
93.2-96.2 % of experiments, including at 5 runs where any distribution-free
interval is capped at 93.75 %.  The hierarchical bootstrap percentile and BCa
intervals covered 83-99 %: too narrow with 5-10 runs (no small-sample
correction), too wide when batch noise dominates (the within-run noise is
already in the spread of the run medians and resampling batches adds it a
second time).  Known limits of ``runs-t``: continuously skewed run effects
(exponential) bring it to 88.7-95.4 %; ``runs-os`` stays at 91.8-96.7 %
there.  A minority of slower runs (5-30 % of runs 1.1-3x slower, tight
batches) brings it to 24-97 % with 3-30 runs, because few runs often contain
none of the slow ones.  ``summarize`` therefore *quotes* the typical run
(median of run medians, order-statistic interval, which keeps its stated
coverage there: :mod:`stats.quote`), keeps the mean over runs beside it
(``mean_over_runs*``, what ratios compare), and reports the heterogeneity
columns and ``warning`` of :mod:`heterogeneity`.
Tables: docs/statistics.md, benchmarks/stats_coverage.py (sections E, J, Q).

Every interval above is over the runs of ONE campaign.  Campaigns of one host
drift by more than runs differ (docs/statistics.md, campaigns as a level):
:mod:`stats.pooled` pools a condition's campaign values into an interval over
campaigns (t, k-1 df; not a registered CI method: its unit is the campaign, not
the run), which reproducibility.py applies and section R validates.
"""
from __future__ import annotations

from osbench_analysis.stats.params import (DEFAULT_CI_METHOD, DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, ESTIMATORS, _check_level)  # noqa: F401
from osbench_analysis.stats.ci_methods import (CI_METHODS, ESTIMAND, CIMethod, REGISTRY as CI_METHOD_REGISTRY, get as ci_method, register as register_ci_method)  # noqa: F401
from osbench_analysis.stats.rundata import (RunData, run_data, _as_run_data, _rng)  # noqa: F401
from osbench_analysis.stats.bootstrap import (hierarchical_bootstrap, resampled_run_medians)  # noqa: F401
from osbench_analysis.stats.intervals import (order_statistic_median_ci, order_statistic_median_ci_rows, run_level_values, t_interval, welch_interval)  # noqa: F401
from osbench_analysis.stats.estimates import (Estimate, estimate_ci, mean_ci, median_ci)  # noqa: F401
from osbench_analysis.stats.summary import (AnalysisParameters, SUMMARY_COLUMNS, condition_tables, flag_sensitivity, quoted_estimate, summarize, typical_run)  # noqa: F401
from osbench_analysis.stats.quote import (DEFAULT_QUOTE, QUOTES, below_level, quote_warns, quotes_typical_run, runs_for_level)  # noqa: F401
from osbench_analysis.stats.ratios import (MissingRunLabels, RATIO_MATCH, RatioEstimate, ratio_ci, ratio_matrix, ratio_table)  # noqa: F401
from osbench_analysis.stats.sweeps import (SWEEP_CI_METHODS, SweepFit, measured_change, sweep_fit,  # noqa: F401
                                           sweep_points)
from osbench_analysis.stats import pooled  # noqa: F401  (campaigns as a level of replication)
from osbench_analysis.stats.pooled import (OVER_CAMPAIGNS, POOLING_METHOD, Pooled, WITHIN_ONE_CAMPAIGN, random_effects)  # noqa: F401
