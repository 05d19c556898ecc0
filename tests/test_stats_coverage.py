"""Coverage of the engine's intervals on simulated experiments with exact truths.

A small, fast version of benchmarks/stats_coverage.py.  The band below is
wide enough for Monte-Carlo noise (2,000 experiments: standard error ~0.5
percentage points) yet a bootstrap that ignores runs falls far outside it.
"""
import pytest

from osbench_analysis.stats import simulate as sim

BAND = (0.92, 0.98)     # around the nominal 95 %, +-6 Monte-Carlo standard errors
N_EXP = 2000

UNIMODAL = [
    # (family, runs, batches, run_sd, batch_sd): the quick profile (5 x 10) and larger
    ("lognormal", 5, 10, 0.05, 0.03),
    ("heavy_tailed", 10, 30, 0.03, 0.05),
    ("contaminated", 20, 50, 0.05, 0.03),
    ("contaminated", 5, 10, 0.02, 0.05),
]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
@pytest.mark.parametrize("family,runs,batches,run_sd,batch_sd", UNIMODAL)
def test_default_median_ci_covers_the_truth(family, runs, batches, run_sd, batch_sd):
    sc = sim.Scenario(family=family, n_runs=runs, n_batches=batches, run_sigma=run_sd, batch_sigma=batch_sd)
    r = sim.coverage_study(sc, n_experiments=N_EXP, seed=1)
    assert BAND[0] <= r.coverage <= BAND[1], r
    # misses are balanced (neither tail systematically wrong)
    assert abs(r.miss_below - r.miss_above) < 0.03, r


@pytest.mark.parametrize("runs_a,runs_b", [(5, 5), (10, 20)])
def test_default_ratio_ci_covers_the_true_ratio(runs_a, runs_b):
    a = sim.Scenario(family="heavy_tailed", median_ns=8600, n_runs=runs_a, n_batches=10)
    b = sim.Scenario(family="contaminated", median_ns=1000, n_runs=runs_b, n_batches=30)
    r = sim.ratio_coverage_study(a, b, n_experiments=N_EXP, seed=2)
    assert r.truth == pytest.approx(8.6)
    assert BAND[0] <= r.coverage <= BAND[1], r


def test_naive_iid_bootstrap_fails_the_same_band():
    """Treating batches as independent ignores run-to-run variation: the same
    tolerance that the default passes rejects it clearly."""
    sc = sim.Scenario(family="lognormal", n_runs=10, n_batches=20, run_sigma=0.05, batch_sigma=0.03)
    naive = sim.coverage_study(sc, ci_method="iid-percentile", n_experiments=300, n_resamples=300, seed=3)
    default = sim.coverage_study(sc, n_experiments=N_EXP, seed=3)
    assert BAND[0] <= default.coverage <= BAND[1]
    assert naive.coverage < BAND[0] - 0.15, naive      # observed ~0.5
    assert naive.median_halfwidth_rel < default.median_halfwidth_rel / 2


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_naive_ratio_fails_too():
    a = sim.Scenario(median_ns=2000, n_runs=10, n_batches=20)
    b = sim.Scenario(median_ns=1000, n_runs=10, n_batches=20)
    naive = sim.ratio_coverage_study(a, b, ci_method="iid-percentile", n_experiments=200,
                                     n_resamples=300, seed=4)
    assert naive.coverage < BAND[0] - 0.15, naive


def test_mean_estimator_covers_the_population_mean():
    sc = sim.Scenario(family="contaminated", n_runs=10, n_batches=30)
    r = sim.coverage_study(sc, estimator="mean", n_experiments=N_EXP, seed=5)
    assert r.estimand == "mean"
    assert BAND[0] <= r.coverage <= BAND[1], r


def test_hierarchical_bootstrap_percentile_undercovers_with_five_runs():
    """Why it is not the default: with 5 runs a percentile interval is too
    narrow (no t correction), as the benchmark shows over the full grid."""
    sc = sim.Scenario(n_runs=5, n_batches=10)
    r = sim.coverage_study(sc, ci_method="hier-percentile", n_experiments=300, n_resamples=500, seed=6)
    assert r.coverage < BAND[0], r
