"""The simulator's truths are exact: checked against large Monte-Carlo draws."""
import math

import numpy as np
import pytest

from osbench_analysis.stats import simulate as sim
from osbench_analysis.store.schema import SAMPLE_COLUMNS


@pytest.mark.parametrize("family", sim.FAMILIES)
def test_within_run_median_matches_monte_carlo(family):
    sc = sim.Scenario(family=family, run_sigma=0.0, n_runs=1, n_batches=400_000)
    x, _ = sim.draw_per_op(sc, np.random.default_rng(1), 1)
    # W is normalised by its exact median, so the sample median must be median_ns
    assert np.median(x) == pytest.approx(sc.median_ns, rel=2e-3)


@pytest.mark.parametrize("family", ["lognormal", "heavy_tailed", "contaminated", "bimodal"])
def test_true_mean_matches_monte_carlo(family):
    sc = sim.Scenario(family=family, n_runs=4000, n_batches=100)
    x, _ = sim.draw_per_op(sc, np.random.default_rng(2), 1)
    se = x.std() / math.sqrt(x.size) + x[0].mean(axis=1).std() / math.sqrt(sc.n_runs)
    assert abs(x.mean() - sim.true_mean_ns(sc)) < 4 * se


@pytest.mark.parametrize("effect", sim.RUN_EFFECTS)
def test_run_level_truths(effect):
    sc = sim.Scenario(run_effect=effect, run_sigma=0.2, n_runs=200_000, n_batches=1, batch_sigma=1e-6)
    x, _ = sim.draw_per_op(sc, np.random.default_rng(3), 1)
    run_medians = x[0, :, 0]
    assert np.median(run_medians) == pytest.approx(sim.true_median_of_run_medians_ns(sc), rel=3e-3)
    assert math.exp(np.log(run_medians).mean()) == pytest.approx(
        sim.true_geomean_of_run_medians_ns(sc), rel=3e-3)


def test_bimodal_runs_truths():
    sc = sim.Scenario(family="bimodal_runs", n_runs=200_000, n_batches=1, batch_sigma=1e-6)
    x, _ = sim.draw_per_op(sc, np.random.default_rng(4), 1)
    m = x[0, :, 0]
    assert np.median(m) == pytest.approx(sim.true_median_of_run_medians_ns(sc), rel=3e-3)
    assert math.exp(np.log(m).mean()) == pytest.approx(sim.true_geomean_of_run_medians_ns(sc), rel=3e-3)


def test_simulated_samples_follow_the_schema():
    sc = sim.Scenario(family="contaminated", n_runs=4, n_batches=50, n_warmup=2)
    df = sim.simulate_samples(sc, seed=5)
    assert list(df.columns) == list(SAMPLE_COLUMNS)
    assert dict(df.dtypes.astype(str)) == {k: str(v) for k, v in df.astype(SAMPLE_COLUMNS).dtypes.items()}
    assert len(df) == 4 * 52
    first = df[df["batch"] < 2]
    assert first["warmup"].all() and not df[df["batch"] >= 2]["warmup"].any()
    np.testing.assert_allclose(df["per_op_ns"], df["elapsed_ns"] / df["iterations"])
    # spikes (x3 typical) carry the interference signal the quality module reads
    measured = df[~df["warmup"]]
    ratio = measured["per_op_ns"] / measured.groupby("run")["per_op_ns"].transform("median")
    assert (measured.loc[ratio > 1.8, "nivcsw"] > 0).mean() > 0.9
    assert (measured.loc[measured["nivcsw"] == 0, "cpu_start"]
            == measured.loc[measured["nivcsw"] == 0, "cpu_end"]).all()


def test_scenario_rejects_bad_input_with_actionable_message():
    with pytest.raises(ValueError, match="family must be one of"):
        sim.Scenario(family="gaussian")
    with pytest.raises(ValueError, match="at least one run"):
        sim.Scenario(n_runs=0)
    with pytest.raises(ValueError, match="estimand must be one of"):
        sim.true_value_ns(sim.Scenario(), "mode")


@pytest.mark.parametrize("frac,factor", [(0.2, 1.3), (0.1, 1.1), (0.3, 3.0)])
def test_median_of_run_medians_of_a_minority_mixture_is_exact(frac, factor):
    """Slow runs may overlap the fast ones (1.1x with run sd 0.05): the truth
    solves the mixture's median exactly rather than assuming they don't."""
    sc = sim.Scenario(family="bimodal_runs", far_fraction=frac, far_factor=factor, run_sigma=0.05,
                      n_runs=400_000, n_batches=1, batch_sigma=1e-6)
    x, _ = sim.draw_per_op(sc, np.random.default_rng(4), 1)
    mc = np.median(x)
    assert mc == pytest.approx(sim.true_value_ns(sc, "median_of_run_medians"), rel=1e-3)
    g = math.exp(np.mean(np.log(x)))
    assert g == pytest.approx(sim.true_value_ns(sc, "geomean_of_run_medians"), rel=1e-3)


def test_ar1_batches_keep_the_marginal_law():
    sc = sim.Scenario(run_sigma=0.0, n_runs=2000, n_batches=40, batch_ar1=0.6, batch_sigma=0.05)
    x, _ = sim.draw_per_op(sc, np.random.default_rng(5), 1)
    lx = np.log(x[0] / sc.median_ns)
    assert np.median(x) == pytest.approx(sc.median_ns, rel=2e-3)
    assert lx.std() == pytest.approx(0.05, rel=0.02)
    r = np.corrcoef(lx[:, 1:].ravel(), lx[:, :-1].ravel())[0, 1]
    assert r == pytest.approx(0.6, abs=0.02)
    with pytest.raises(ValueError, match="batch_ar1"):
        sim.Scenario(batch_ar1=1.0)
