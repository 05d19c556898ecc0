"""Estimates, intervals, ratios and sweeps of osbench_analysis.stats."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from osbench_analysis import stats
from osbench_analysis.stats import simulate as sim
from osbench_analysis.store.schema import GROUP_KEYS

FAST = dict(n_resamples=1000)


def _sweep(slope_per_n: float, runs: int = 6, levels=(1, 2, 4, 8, 16), seed: int = 0) -> pd.DataFrame:
    parts = []
    for i, n in enumerate(levels):
        d = sim.simulate_samples(sim.Scenario(median_ns=1000 + slope_per_n * n, n_runs=runs, n_batches=10,
                                              run_sigma=0.02, variant=f"n={n}"), seed * 100 + i)
        d["params_json"] = f'{{"n": {n}}}'
        parts.append(d)
    return pd.concat(parts, ignore_index=True)


# --------------------------------------------------- exact within-run resampling

@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 10, 11, 30])
def test_exact_resampled_median_has_the_bootstrap_law(n):
    rng = np.random.default_rng(n)
    x = np.sort(rng.lognormal(size=n))
    rd = stats.RunData((x,), (0,))
    fast = stats.resampled_run_medians(rd, np.zeros(60_000, dtype=np.int64), rng)
    direct = np.median(x[rng.integers(0, n, (60_000, n))], axis=1)
    # same discrete law: compare the probability of every support value
    support = np.union1d(np.unique(fast), np.unique(direct))
    pf = np.array([np.mean(fast == v) for v in support])
    pd_ = np.array([np.mean(direct == v) for v in support])
    assert np.max(np.abs(pf - pd_)) < 0.012
    if n > 1:
        assert sps.ks_2samp(fast, direct).pvalue > 0.001


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_hierarchical_bootstrap_mean_matches_direct_two_stage():
    rng = np.random.default_rng(7)
    runs = [np.sort(rng.lognormal(mean=rng.normal(0, 0.1), sigma=0.2, size=k)) for k in (8, 12, 9, 15)]
    rd = stats.RunData(tuple(runs), (0, 1, 2, 3))
    boot = stats.hierarchical_bootstrap(rd, "mean", 20_000, np.random.default_rng(1))
    # direct two-stage resampling for reference
    r2 = np.random.default_rng(2)
    direct = []
    for _ in range(4000):
        pick = r2.integers(0, 4, 4)
        direct.append(np.mean([r2.choice(runs[i], runs[i].size).mean() for i in pick]))
    assert boot.mean() == pytest.approx(np.mean(direct), rel=5e-3)
    assert boot.std() == pytest.approx(np.std(direct), rel=0.08)


# -------------------------------------------------------------- estimates

def test_warmups_are_never_used_and_per_op_comes_from_elapsed():
    df = sim.simulate_samples(sim.Scenario(n_runs=6, n_batches=20), seed=1)
    est = stats.median_ci(df)
    poisoned = df.copy()
    w = poisoned["warmup"]
    poisoned.loc[w, "elapsed_ns"] *= 1000            # absurd warm-ups change nothing
    assert stats.median_ci(poisoned) == est
    no_warm = df[~w]
    assert stats.median_ci(no_warm).estimate_ns == pytest.approx(est.estimate_ns)
    # the estimate is the geometric mean of run medians of elapsed / iterations
    m = no_warm.assign(p=no_warm["elapsed_ns"] / no_warm["iterations"]).groupby("run")["p"].median()
    assert est.estimate_ns == pytest.approx(math.exp(np.log(m).mean()))
    assert est.n_runs == 6 and est.n_batches == 120


def test_default_interval_is_t_on_log_run_medians():
    df = sim.simulate_samples(sim.Scenario(n_runs=7, n_batches=15), seed=2)
    est = stats.median_ci(df, level=0.9)
    m = df[~df["warmup"]].groupby("run")["per_op_ns"].median()
    lo, hi = sps.t.interval(0.9, 6, loc=np.log(m).mean(), scale=np.log(m).std(ddof=1) / math.sqrt(7))
    assert (est.ci_low_ns, est.ci_high_ns) == pytest.approx((math.exp(lo), math.exp(hi)))
    assert est.ci_method == "runs-t" and est.level == 0.9
    assert est.ci_low_ns < est.estimate_ns < est.ci_high_ns


@pytest.mark.parametrize("method", ["hier-percentile", "hier-bca"])
def test_bootstrap_is_reproducible_and_seed_dependent(method):
    df = sim.simulate_samples(sim.Scenario(family="heavy_tailed", n_runs=8, n_batches=12), seed=3)
    a = stats.median_ci(df, ci_method=method, seed=11, **FAST)
    b = stats.median_ci(df, ci_method=method, seed=11, **FAST)
    c = stats.median_ci(df, ci_method=method, seed=12, **FAST)
    assert a == b
    assert (a.ci_low_ns, a.ci_high_ns) != (c.ci_low_ns, c.ci_high_ns)
    assert a.ci_low_ns < a.estimate_ns < a.ci_high_ns
    # same point estimate as the default method: same estimand
    assert a.estimate_ns == pytest.approx(stats.median_ci(df).estimate_ns)


def test_single_run_falls_back_to_order_statistic_and_says_so():
    df = sim.simulate_samples(sim.Scenario(n_runs=1, n_batches=30), seed=4)
    for method in ("runs-t", "hier-percentile", "hier-bca", "runs-os"):
        est = stats.median_ci(df, ci_method=method, **FAST)
        assert est.ci_method == "order-stat"
        assert "single run" in est.note and "order-statistic" in est.note
        x = np.sort(df.loc[~df["warmup"], "per_op_ns"].to_numpy())
        assert est.estimate_ns == pytest.approx(np.median(x))
        # 30 batches: [x_(10), x_(21)] is the 95 % binomial interval (confidence 95.7 %)
        assert (est.ci_low_ns, est.ci_high_ns) == (x[9], x[20])
    mean = stats.mean_ci(df)
    assert mean.ci_method == "batch-t" and "single run" in mean.note


def test_order_statistic_ci_confidence_is_exact():
    x = np.arange(1.0, 21.0)
    med, lo, hi, conf = stats.order_statistic_median_ci(x, 0.95)
    k = int(lo)
    assert conf == pytest.approx(1 - 2 * sps.binom.cdf(k - 1, 20, 0.5))
    assert conf >= 0.95 and 1 - 2 * sps.binom.cdf(k, 20, 0.5) < 0.95
    assert hi == 21 - k and med == 10.5
    _, lo_i, hi_i, conf_i = stats.order_statistic_median_ci(x, 0.95, interpolate=True)
    assert lo <= lo_i <= lo + 1 and hi - 1 <= hi_i <= hi and conf_i == 0.95
    # five values cannot reach 95 %: range and its 93.75 % confidence
    _, lo5, hi5, conf5 = stats.order_statistic_median_ci([3, 1, 2, 5, 4], 0.95)
    assert (lo5, hi5, conf5) == (1, 5, pytest.approx(0.9375))


def test_runs_os_targets_the_median_of_run_medians_and_warns_below_six_runs():
    df = sim.simulate_samples(sim.Scenario(n_runs=5, n_batches=10), seed=5)
    est = stats.median_ci(df, ci_method="runs-os")
    m = df[~df["warmup"]].groupby("run")["per_op_ns"].median()
    assert est.estimate_ns == pytest.approx(np.median(m))
    assert (est.ci_low_ns, est.ci_high_ns) == pytest.approx((m.min(), m.max()))
    assert "93.8% confidence" in est.note
    with pytest.raises(ValueError, match="median only"):
        stats.mean_ci(df, ci_method="runs-os")


def test_mean_estimator_is_mean_of_run_means():
    df = sim.simulate_samples(sim.Scenario(family="contaminated", n_runs=6, n_batches=20), seed=6)
    est = stats.mean_ci(df)
    means = df[~df["warmup"]].groupby("run")["per_op_ns"].mean()
    assert est.estimate_ns == pytest.approx(means.mean())
    assert est.estimator == "mean" and est.estimand == "mean"


def test_bad_arguments_raise_actionable_errors():
    df = sim.simulate_samples(sim.Scenario(n_runs=3, n_batches=5), seed=0)
    with pytest.raises(ValueError, match=r"level must be in \(0, 1\) \(got 1.5\)"):
        stats.summarize(df, level=1.5)
    with pytest.raises(ValueError, match="estimator must be one of"):
        stats.summarize(df, estimator="mode")
    with pytest.raises(ValueError, match="ci_method must be one of"):
        stats.summarize(df, ci_method="jackknife")
    with pytest.raises(ValueError, match="n_resamples must be an integer >= 100"):
        stats.summarize(df, n_resamples=10)
    with pytest.raises(ValueError, match="one condition"):
        two = pd.concat([df, df.assign(probe="other")])
        stats.median_ci(two)
    with pytest.raises(ValueError, match="finite and > 0"):
        stats.median_ci(np.array([1.0, -2.0, 3.0]))


# -------------------------------------------------------------- summarize

def _campaign() -> pd.DataFrame:
    parts = [
        sim.simulate_samples(sim.Scenario(probe="getpid", placement="single", n_runs=5, n_batches=10), 1),
        sim.simulate_samples(sim.Scenario(family="contaminated", probe="open_close", placement="single",
                                          median_ns=3000, n_runs=5, n_batches=20), 2),
        sim.simulate_samples(sim.Scenario(family="bimodal", probe="pipe_pingpong", placement="unpinned",
                                          n_runs=5, n_batches=20), 3),
    ]
    return pd.concat(parts, ignore_index=True)


def test_summarize_one_row_per_condition_with_flags_and_warnings():
    df = _campaign()
    s = stats.summarize(df, **FAST)
    assert len(s) == 3
    required = [*GROUP_KEYS, "estimate_ns", "ci_low_ns", "ci_high_ns", "level", "ci_method", "n_runs",
                "n_batches", "note"]
    assert list(s.columns[:len(required)]) == required
    row = s.set_index("probe")
    assert row.loc["getpid", "n_batches"] == 50 and row.loc["getpid", "n_runs"] == 5
    assert row.loc["open_close", "flagged_fraction"] > 0
    assert bool(row.loc["pipe_pingpong", "multimodal"])
    assert "MULTIMODAL" in row.loc["pipe_pingpong", "note"]
    assert "pin" in row.loc["pipe_pingpong", "warnings"]
    assert not bool(row.loc["getpid", "multimodal"])
    p = s.attrs["analysis_parameters"]
    assert p.n_resamples == 1000 and p.ci_method == "runs-t" and not p.exclude_flagged


def test_summarize_excluding_flagged_drops_exactly_the_flagged_batches():
    df = _campaign()
    kept = stats.summarize(df, **FAST).set_index("probe")
    clean = stats.summarize(df, exclude_flagged=True, **FAST).set_index("probe")
    for probe in kept.index:
        assert clean.loc[probe, "n_batches"] == kept.loc[probe, "n_batches"] - kept.loc[probe, "n_flagged"]
    assert clean["excluded_flagged"].all()


def test_flag_sensitivity_shows_when_a_conclusion_hinges_on_exclusion():
    # 20 % spikes x3: the median barely moves, the mean moves a lot
    sc = sim.Scenario(family="contaminated", contamination=0.2, n_runs=8, n_batches=30)
    df = sim.simulate_samples(sc, seed=8)
    med = stats.flag_sensitivity(df).iloc[0]
    mean = stats.flag_sensitivity(df, estimator="mean").iloc[0]
    assert not med["depends_on_flags"] and abs(med["shift_rel"]) < 0.05
    assert mean["depends_on_flags"] and mean["shift_rel"] < -0.2


# ------------------------------------------------------------------- ratios

def test_ratio_ci_welch_on_log_run_medians():
    a = sim.simulate_samples(sim.Scenario(median_ns=8600, n_runs=6, n_batches=10), 1)
    b = sim.simulate_samples(sim.Scenario(median_ns=1000, n_runs=9, n_batches=10), 2)
    r = stats.ratio_ci(a, b)
    assert r.ratio == pytest.approx(r.numerator.estimate_ns / r.denominator.estimate_ns)
    la = np.log(a[~a["warmup"]].groupby("run")["per_op_ns"].median())
    lb = np.log(b[~b["warmup"]].groupby("run")["per_op_ns"].median())
    t = sps.ttest_ind(la, lb, equal_var=False)
    lo, hi = t.confidence_interval(0.95)
    assert (r.ci_low, r.ci_high) == pytest.approx((math.exp(lo), math.exp(hi)))
    assert r.different and r.ci_low < 8.6 < r.ci_high


@pytest.mark.parametrize("method", ["runs-t", "hier-percentile", "hier-bca"])
def test_ratio_of_identical_systems_is_not_different(method):
    a = sim.simulate_samples(sim.Scenario(n_runs=8, n_batches=10), 3)
    b = sim.simulate_samples(sim.Scenario(n_runs=8, n_batches=10), 4)
    r = stats.ratio_ci(a, b, ci_method=method, **FAST)
    assert r.ci_low < 1 < r.ci_high and not r.different
    with pytest.raises(ValueError, match="runs-os"):
        stats.ratio_ci(a, b, ci_method="runs-os")


def test_ratio_table_every_condition_vs_baseline():
    native = _campaign().assign(environment="native", campaign_id="c1")
    slow = _campaign().assign(environment="gvisor", campaign_id="c2")
    slow["elapsed_ns"] *= 3
    slow["per_op_ns"] *= 3
    extra = sim.simulate_samples(sim.Scenario(probe="only_gvisor", environment="gvisor", campaign_id="c2",
                                              n_runs=3, n_batches=5), 9)
    t = stats.ratio_table(pd.concat([native, slow, extra]), baseline="native")
    assert set(t["environment"]) == {"gvisor"}
    assert len(t) == 4
    ok = t.dropna(subset=["ratio"])
    assert np.allclose(ok["ratio"], 3.0, rtol=1e-6)   # same runs, every time x3
    assert math.isnan(t.set_index("probe").loc["only_gvisor", "ratio"])
    assert "no native measurement" in t.set_index("probe").loc["only_gvisor", "note"]
    m = stats.ratio_matrix(t)
    assert m.loc[("getpid", "", "single"), "gvisor"].startswith("3.00 [")
    with pytest.raises(ValueError, match="baseline 'linux' not found"):
        stats.ratio_table(native, baseline="linux")


# ------------------------------------------------------------------- sweeps

def test_sweep_detects_linear_growth_and_covers_the_slope():
    fit = stats.sweep_fit(_sweep(50.0), "n", **FAST)
    assert fit.verdict == "linear growth"
    assert fit.slope_ci_low_ns < 50.0 < fit.slope_ci_high_ns
    assert fit.intercept_ci_low_ns < 1000.0 < fit.intercept_ci_high_ns
    assert fit.n_levels == 5 and fit.n_runs == 30


def test_sweep_calls_flat_cost_constant_only_when_the_interval_says_so():
    flat = stats.sweep_fit(_sweep(0.0, runs=8, seed=1), "n", tolerance_rel=0.05, **FAST)
    assert flat.verdict == "constant"
    assert -0.05 <= flat.growth_ci_low and flat.growth_ci_high <= 0.05
    tight = stats.sweep_fit(_sweep(0.0, runs=8, seed=1), "n", tolerance_rel=0.001, **FAST)
    assert tight.verdict == "inconclusive"


def test_sweep_rejects_single_level_and_mixed_probes():
    d = _sweep(0.0, levels=(4,))
    with pytest.raises(ValueError, match="at least two values"):
        stats.sweep_fit(d, "n")
    with pytest.raises(ValueError, match="neither a column nor a key"):
        stats.sweep_fit(_sweep(1.0), "threads")
    mixed = pd.concat([_sweep(1.0), _sweep(1.0).assign(probe="other")])
    with pytest.raises(ValueError, match="one probe"):
        stats.sweep_fit(mixed, "n")
