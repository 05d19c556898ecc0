"""Adaptive precision: status of a condition, stop decisions, campaign verdict."""
import json
import math

import numpy as np
import pandas as pd
import pytest

from osbench_analysis.stats import precision as pr
from osbench_analysis.stats import simulate as sim
from osbench_analysis import stats


def _cond(runs, run_sd=0.02, batch_sd=0.03, batches=10, seed=0, **kw):
    return sim.simulate_samples(sim.Scenario(n_runs=runs, n_batches=batches, run_sigma=run_sd,
                                             batch_sigma=batch_sd, **kw), seed)


def test_status_reports_the_analysis_halfwidth():
    """The runner stops on the interval the analysis quotes (stats.quote)."""
    df = _cond(8)
    st = pr.precision_status(df, 0.05)
    row = stats.summarize(df, n_resamples=500).iloc[0]
    assert row["quoted"] == "typical run"         # 8 runs: the typical run's interval reaches 95 %
    assert st.halfwidth_rel == pytest.approx(row["halfwidth_rel"])
    assert st.halfwidth_rel == pytest.approx((row["ci_high_ns"] - row["ci_low_ns"]) / 2 / row["estimate_ns"])
    assert st.estimate_ns == pytest.approx(row["estimate_ns"]) and st.ci_method == row["ci_method"] == "runs-os"
    assert st.met == (st.halfwidth_rel <= 0.05)
    assert st.n_runs == 8
    # 5 alike runs: the mean over runs and its t interval
    calm = _cond(5, run_sd=0.0, batch_sd=0.03, seed=2)
    st5 = pr.precision_status(calm, 0.05)
    row5 = stats.summarize(calm, n_resamples=500).iloc[0]
    assert row5["quoted"] == "mean over runs" and st5.ci_method == "runs-t"
    assert st5.halfwidth_rel == pytest.approx(stats.median_ci(calm).halfwidth_rel)
    # 5 runs that differ: the typical run's [min, max] has 93.75 %, which meets no target
    differ = _cond(5, run_sd=0.2, batch_sd=0.01, seed=3)
    std = pr.precision_status(differ, 0.99)
    assert std.heterogeneous and not std.met and "93.75% confidence" in std.note


def test_target_needs_min_runs_even_when_narrow():
    df = _cond(3, run_sd=0.0, batch_sd=0.001)
    st = pr.precision_status(df, 0.5, min_runs=5)
    assert st.halfwidth_rel < 0.5 and not st.met
    assert "3 of at least 5 runs" in st.note
    assert pr.precision_status(df, 0.5, min_runs=3).met


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_runs_needed_projection_reaches_the_target():
    target = pr.PrecisionTarget(target_rel=0.01)
    st5 = pr.precision_status(_cond(5, run_sd=0.02, seed=1), target)
    assert not st5.met and st5.runs_needed > 5
    # measured with the projected number of runs, the half-width is near the target
    widths = [pr.precision_status(_cond(st5.runs_needed, run_sd=0.02, seed=s), target).halfwidth_rel
              for s in range(2, 12)]
    assert 0.5 * 0.01 < np.median(widths) < 2 * 0.01


def test_within_run_share_says_whether_batches_or_runs_help():
    batch_noise = pr.precision_status(_cond(8, run_sd=0.0, batch_sd=0.2, seed=3), 0.001)
    run_noise = pr.precision_status(_cond(8, run_sd=0.1, batch_sd=0.01, seed=4), 0.001)
    assert batch_noise.within_run_share > 0.5 > run_noise.within_run_share
    t = pr.PrecisionTarget(target_rel=0.001)
    assert pr.stop_decision(batch_noise, t, elapsed_s=1).next_action == "add_batches"
    assert pr.stop_decision(run_noise, t, elapsed_s=1).next_action == "add_runs"


def test_stop_decision_reasons():
    t = pr.PrecisionTarget(target_rel=0.02, min_runs=5, max_runs=8, budget_s=100)
    met = pr.precision_status(_cond(6, run_sd=0.001, batch_sd=0.001), t)
    wide = pr.precision_status(_cond(6, run_sd=0.2, seed=5), t)
    at_max = pr.precision_status(_cond(8, run_sd=0.2, seed=6), t)
    assert pr.stop_decision(met, t, elapsed_s=10).reason == "target_met"
    assert pr.stop_decision(at_max, t, elapsed_s=10).reason == "max_runs"
    assert pr.stop_decision(wide, t, elapsed_s=100).reason == "budget_exhausted"
    # one more run would overrun the budget: stop now rather than overshoot
    assert pr.stop_decision(wide, t, elapsed_s=90, seconds_per_run=15).reason == "budget_exhausted"
    go = pr.stop_decision(wide, t, elapsed_s=90, seconds_per_run=5)
    assert not go.stop and go.reason == "continue" and "runs needed" in go.message
    with pytest.raises(ValueError, match="elapsed_s must be >= 0"):
        pr.stop_decision(wide, t, elapsed_s=-1)


def test_campaign_precision_and_manifest_record():
    quiet = _cond(5, run_sd=0.002, batch_sd=0.002, seed=7, probe="getpid")
    noisy = _cond(5, run_sd=0.1, seed=8, probe="fork_exit", placement="same_cpu")
    samples = pd.concat([quiet, noisy], ignore_index=True)
    t = pr.PrecisionTarget(target_rel=0.02, budget_s=60)
    rep = pr.campaign_precision(samples, t, elapsed_s=10, seconds_per_round=5)
    assert not rep.stop and rep.reason == "continue"
    assert not rep.needs_more("getpid", "", "single")
    assert rep.needs_more("fork_exit", "", "same_cpu")
    with pytest.raises(KeyError, match="no samples yet"):
        rep.needs_more("open_close", "", "single")
    record = json.loads(json.dumps(rep.to_manifest()))      # JSON-ready
    assert record["stop_reason"] == "continue"
    assert record["conditions_met"] == 1 and record["conditions_total"] == 2
    assert record["achieved_halfwidth_rel_max"] == pytest.approx(rep.conditions["halfwidth_rel"].max())
    assert record["target"]["target_rel"] == 0.02
    done = pr.campaign_precision(samples, t, elapsed_s=58, seconds_per_round=5)
    assert done.stop and done.reason == "budget_exhausted"
    only_quiet = pr.campaign_precision(quiet, t, elapsed_s=1)
    assert only_quiet.stop and only_quiet.reason == "target_met"


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_quick_profile_target_is_met_by_a_typical_quick_condition():
    # quick campaign shape (6 runs x 10 batches) with ~2 % run-to-run spread
    assert pr.PROFILES["quick"].min_runs == stats.runs_for_level(pr.PROFILES["quick"].level) == 6
    met = [pr.precision_status(_cond(6, run_sd=0.02, seed=s), pr.PROFILES["quick"]).met for s in range(20)]
    assert np.mean(met) >= 0.9
    # 5 runs are not enough, however narrow
    assert not any(pr.precision_status(_cond(5, run_sd=0.02, seed=s), pr.PROFILES["quick"]).met for s in range(5))


def test_target_validation_messages():
    with pytest.raises(ValueError, match=r"target_rel must be in \(0, 1\) \(got 1.5\)"):
        pr.PrecisionTarget(target_rel=1.5)
    with pytest.raises(ValueError, match="min_runs must be >= 2"):
        pr.PrecisionTarget(min_runs=1)
    with pytest.raises(ValueError, match="max_runs"):
        pr.PrecisionTarget(min_runs=10, max_runs=5)
    with pytest.raises(ValueError, match="budget_s must be > 0"):
        pr.PrecisionTarget(budget_s=0)


def test_sequential_stopping_keeps_coverage():
    """Adding runs until the half-width is small must not make the intervals lie."""
    t = pr.PrecisionTarget(target_rel=0.02, min_runs=5, max_runs=20)
    sc = sim.Scenario(n_runs=t.max_runs, n_batches=10, run_sigma=0.04, batch_sigma=0.03)
    x, _ = sim.draw_per_op(sc, np.random.default_rng(9), 400)
    vals = stats.run_level_values(x, "median")
    covered = []
    for e in range(vals.shape[0]):
        for r in range(t.min_runs, t.max_runs + 1):
            m, lo, hi = stats.t_interval(vals[e, :r], t.level)
            if math.sinh((hi - lo) / 2) <= t.target_rel or r == t.max_runs:
                covered.append(lo <= math.log(sim.true_value_ns(sc)) <= hi)
                break
    assert 0.91 <= np.mean(covered) <= 0.99
