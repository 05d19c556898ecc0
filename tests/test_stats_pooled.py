"""Campaigns as a level of replication: the pooled interval (stats.pooled) and
its simulated coverage of the campaign-population value."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from osbench_analysis.stats import simulate as sim
from osbench_analysis.stats import pooled


def test_pooled_interval_is_t_over_the_campaign_values():
    y = np.array([5.0, 5.2, 5.1, 5.4])
    se = np.array([0.01, 0.02, 0.01, 0.03])
    p = pooled.random_effects(y, se, 0.95)
    t = sps.t.ppf(0.975, 3)
    half = t * y.std(ddof=1) / 2
    assert p.estimate == pytest.approx(y.mean())
    assert (p.ci_low, p.ci_high) == pytest.approx((y.mean() - half, y.mean() + half))
    assert p.n_campaigns == 4 and p.interval_over == pooled.OVER_CAMPAIGNS
    # the next campaign's estimate: wider than the interval for the mean, by sqrt(1 + k)
    assert (p.pred_high - p.estimate) == pytest.approx(half * math.sqrt(1 + 4))


def test_tau_is_the_spread_beyond_what_the_runs_explain():
    y = np.array([5.0, 5.2, 5.1, 5.4])
    spread = pooled.random_effects(y, np.full(4, 0.01)).tau
    assert spread == pytest.approx(math.sqrt(y.var(ddof=1) - 0.01 ** 2))
    # campaigns that differ no more than their runs: no campaign effect
    assert pooled.random_effects(y, np.full(4, 0.5)).tau == 0.0


def test_one_campaign_is_labelled_within_one_campaign():
    p = pooled.random_effects([5.0], [0.1])
    assert p.interval_over == pooled.WITHIN_ONE_CAMPAIGN == "within one campaign"
    assert p.n_campaigns == 1 and math.isnan(p.tau) and p.ci_low < 5.0 < p.ci_high
    assert "campaign-to-campaign" in p.note


def test_pooling_refuses_mismatched_or_non_finite_input():
    with pytest.raises(ValueError, match="one standard error per campaign"):
        pooled.random_effects([1.0, 2.0], [0.1])
    with pytest.raises(ValueError, match="finite"):
        pooled.random_effects([1.0, np.nan], [0.1, 0.1])
    with pytest.raises(ValueError, match=">= 2 campaigns"):
        pooled.random_effects_rows(np.ones((3, 1)), np.ones((3, 1)))


def test_rows_match_the_scalar_version():
    rng = np.random.default_rng(1)
    y, se = rng.normal(size=(5, 3)), rng.uniform(0.01, 0.1, (5, 3))
    mu, lo, hi, tau, _, half = pooled.random_effects_rows(y, se)
    for i in range(5):
        p = pooled.random_effects(y[i], se[i])
        assert (p.estimate, p.ci_low, p.ci_high, p.tau) == pytest.approx((mu[i], lo[i], hi[i], tau[i]))
        assert p.pred_high == pytest.approx(mu[i] + half[i])


def test_draw_campaigns_shifts_whole_campaigns():
    sc = sim.Scenario(run_sigma=0.0, batch_sigma=0.001, n_runs=3, n_batches=5)
    x = sim.draw_campaigns(sc, 4, 0.3, np.random.default_rng(0), n_experiments=2)
    assert x.shape == (2, 4, 3, 5)
    logs = np.log(x)
    # inside a campaign every run sits at the same level; campaigns differ
    assert logs.std(axis=(2, 3)).max() < 0.01
    assert logs.mean(axis=(2, 3)).std() > 0.05
    with pytest.raises(ValueError):
        sim.draw_campaigns(sc, 0, 0.1, np.random.default_rng(0))


def test_pooled_interval_covers_the_campaign_population_value_a_single_campaign_does_not():
    sc = sim.Scenario(run_sigma=0.05, batch_sigma=0.03, n_runs=6, n_batches=10)
    over = sim.pooled_coverage_study(sc, 3, 0.2, n_experiments=1000, seed=3)
    one = sim.pooled_coverage_study(sc, 1, 0.2, n_experiments=1000, seed=3)
    assert 0.92 <= over["coverage"] <= 0.975 and over["interval_over"] == pooled.OVER_CAMPAIGNS
    # one campaign's interval is over runs only: it misses a host drift of 20 % most of the time, and says so
    assert one["coverage"] < 0.5 and one["interval_over"] == pooled.WITHIN_ONE_CAMPAIGN
