"""Interference flags, Tukey classes, stability warnings and the mode test,
checked on data with planted structure."""
import numpy as np
import pandas as pd
import pytest

from osbench_analysis.stats import quality as q
from osbench_analysis.stats import simulate as sim


def _measured(df):
    return df[~df["warmup"]]


def _scale(df, rows, factor):
    """Multiply the timing of some batches (keeps the schema's integer ns)."""
    df.loc[rows, "elapsed_ns"] = (df.loc[rows, "elapsed_ns"] * factor).round().astype("int64")
    df["per_op_ns"] = df["elapsed_ns"] / df["iterations"]


def test_flags_find_the_planted_interference_spikes():
    sc = sim.Scenario(family="contaminated", contamination=0.05, n_runs=10, n_batches=60)
    df, spike = sim.simulate_samples(sc, seed=1, with_truth=True)
    f = q.flag_batches(df)
    spike = pd.Series(spike, index=df.index)[~df["warmup"]]
    f = _measured(f)
    ratio = f["per_op_ns"] / f.groupby("run")["per_op_ns"].transform("median")
    assert spike.sum() > 10
    big = spike & (ratio > 2.5)                     # stole 15+ ms of a 10 ms batch
    assert big.sum() > 5 and f.loc[big, "flag_nivcsw"].all()
    assert f.loc[spike, "flagged"].mean() > 0.9
    # background preemptions (~1 per 10 ms batch) are tolerated
    assert (f.loc[~spike, "nivcsw"] > 0).mean() > 0.4
    assert f.loc[~spike, "flag_nivcsw"].mean() < 0.01
    assert f.loc[~spike, "flagged"].mean() < 0.02
    assert (f.loc[ratio > 2, "outlier_class"] == "severe").mean() > 0.9
    # migrations are reported where the CPU changed
    mig = f["cpu_start"] != f["cpu_end"]
    assert mig.any() and (f.loc[mig, "flag_migrated"]).all()


def test_counter_flags_are_relative_to_the_conditions_baseline():
    # a same-CPU ping-pong switches involuntarily once per iteration by design
    df = sim.simulate_samples(sim.Scenario(n_runs=4, n_batches=20, iterations=5000), seed=2)
    df["nivcsw"] = df["iterations"]
    df.loc[df.index[30], "nivcsw"] = 5000 + 400       # +400 over ~sqrt(5000)=71: flagged
    df.loc[df.index[31], "nivcsw"] = 5000 + 100       # within 3 Poisson sd: 3*70.7=212
    f = q.flag_batches(df)
    assert bool(f.loc[df.index[30], "flag_nivcsw"])
    assert not f["flag_nivcsw"].drop(index=df.index[30]).any()


def test_background_preemptions_are_tolerated_but_bursts_are_not():
    # a probe that never switches by itself, 10 ms batches
    df = sim.simulate_samples(sim.Scenario(n_runs=4, n_batches=20, iterations=10_000), seed=3)
    df["nivcsw"] = 0
    df.loc[df.index[5:8], "nivcsw"] = [1, 3, 4]          # background: expected 1, +3 sd = 4
    df.loc[df.index[8], "nivcsw"] = 6                    # a burst: flagged
    f = q.flag_batches(df)
    assert not f.loc[df.index[5:8], "flag_nivcsw"].any()
    assert bool(f.loc[df.index[8], "flag_nivcsw"])
    strict = q.flag_batches(df, q.FlagRule(background_nivcsw_per_10ms=0.0))
    assert strict.loc[df.index[5:9], "flag_nivcsw"].all()


def test_unknown_cpu_and_warmups_are_not_flagged():
    df = sim.simulate_samples(sim.Scenario(n_runs=2, n_batches=10), seed=3)
    df.loc[df.index[5], ["cpu_start", "cpu_end"]] = (-1, 1)
    df.loc[df["warmup"], "nivcsw"] = 50
    f = q.flag_batches(df)
    assert not f.loc[df.index[5], "flag_migrated"]
    assert not f.loc[df["warmup"], "flagged"].any()


def test_tukey_classes_on_planted_outliers_and_a_slow_run():
    df = sim.simulate_samples(sim.Scenario(n_runs=6, n_batches=40, run_sigma=0.0, batch_sigma=0.02), 4)
    m = df.index[~df["warmup"]]
    _scale(df, df["run"] == 2, 1.5)                 # a whole slow run: not outliers
    severe_idx, mild_idx = m[[3, 50, 170]], m[[90]]
    _scale(df, severe_idx, 2.0)                      # far beyond 3 IQR
    # mild: between 1.5 and 3 IQR above Q3 (IQR of a N(0, 0.02) log is ~0.027)
    _scale(df, mild_idx, np.exp(0.0135 + 2.2 * 0.027))
    cls = pd.Series(q.tukey_classes(df), index=df.index)
    assert (cls[severe_idx] == "severe").all()
    assert cls[mild_idx].iloc[0] == "mild"
    assert (cls[df["run"] == 2].drop(index=severe_idx.intersection(df.index[df["run"] == 2]),
                                     errors="ignore") != "severe").all()
    others = cls.drop(index=severe_idx.union(mild_idx))
    assert (others == "severe").sum() == 0
    assert (others == "mild").mean() < 0.03


def test_rule_choices_change_what_counts_as_flagged():
    df = sim.simulate_samples(sim.Scenario(family="contaminated", n_runs=5, n_batches=40), 5)
    df["nivcsw"] = 0                                   # hide the counter signal
    df["cpu_end"] = df["cpu_start"]
    only_interference = q.flag_batches(df, q.FlagRule(tukey_exclude=None))
    severe = q.flag_batches(df, q.FlagRule(tukey_exclude="severe"))
    mild = q.flag_batches(df, q.FlagRule(tukey_exclude="mild"))
    assert only_interference["flagged"].sum() == 0
    assert 0 < severe["flagged"].sum() <= mild["flagged"].sum()
    with pytest.raises(ValueError, match="tukey_exclude must be"):
        q.FlagRule(tukey_exclude="extreme")
    assert "involuntary context switches" in q.FlagRule().describe()


def test_flag_summary_reports_fractions_per_condition():
    df = pd.concat([
        sim.simulate_samples(sim.Scenario(probe="a", family="contaminated", n_runs=5, n_batches=40), 6),
        sim.simulate_samples(sim.Scenario(probe="b", n_runs=5, n_batches=40), 7)])
    s = q.flag_summary(df).set_index("probe")
    assert s.loc["a", "flagged_fraction"] == pytest.approx(
        _measured(q.flag_batches(df)).query("probe == 'a'")["flagged"].mean())
    assert s.loc["a", "nivcsw_fraction"] > 0.01
    assert s.loc["b", "nivcsw_fraction"] == 0
    assert s.loc["a", "n_batches"] == 200


# ----------------------------------------------------------------- modes

def test_mode_test_finds_within_run_bimodality():
    df = sim.simulate_samples(sim.Scenario(family="bimodal", far_fraction=0.3, far_factor=15,
                                           n_runs=5, n_batches=20), 8)
    m = _measured(df)
    res = q.detect_multimodality(m["per_op_ns"].to_numpy(), m["run"].to_numpy())
    assert res.multimodal and res.split == "within_runs"
    assert res.mode_ratio == pytest.approx(15, rel=0.1)
    assert res.high_mode_fraction == pytest.approx(0.3, abs=0.1)
    assert "pin" in res.message


def test_mode_test_finds_between_run_bimodality():
    df = sim.simulate_samples(sim.Scenario(family="bimodal_runs", far_fraction=0.4, far_factor=12,
                                           n_runs=10, n_batches=20), 9)
    m = _measured(df)
    res = q.detect_multimodality(m["per_op_ns"].to_numpy(), m["run"].to_numpy())
    assert res.multimodal and res.split == "between_runs"
    assert res.mode_ratio == pytest.approx(12, rel=0.15)


@pytest.mark.slow  # integration: writes every figure / regenerates from all data (> 1 s)
@pytest.mark.parametrize("family", ["lognormal", "heavy_tailed", "contaminated"])
def test_mode_test_is_quiet_on_unimodal_data(family):
    hits = 0
    for seed in range(20):
        df = sim.simulate_samples(sim.Scenario(family=family, n_runs=10, n_batches=30), seed)
        cq = q.condition_quality(df)      # interference-flagged batches are left out of the test
        hits += cq.multimodality.multimodal
    assert hits == 0


def test_multimodal_conditions_get_no_tukey_outliers():
    df = sim.simulate_samples(sim.Scenario(family="bimodal", far_fraction=0.2, n_runs=5, n_batches=40), 10)
    f = q.flag_batches(df)
    assert (f["outlier_class"] == "").all()
    assert f["flagged"].mean() < 0.02        # only the rare background-count false alarm


def test_too_few_batches_for_a_mode_test():
    res = q.detect_multimodality(np.array([1.0, 2.0, 3.0]))
    assert not res.multimodal and "too few" in res.message


# ------------------------------------------------------- stability warnings

@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_stability_warnings_on_planted_problems():
    ok = q.condition_quality(sim.simulate_samples(sim.Scenario(run_sigma=0.01, n_runs=8, n_batches=30,
                                                               iterations=1000), 11))
    assert ok.warnings == ()
    few = q.condition_quality(sim.simulate_samples(sim.Scenario(n_runs=2, n_batches=30), 12))
    assert any("only 2 run(s)" in w for w in few.warnings)
    noisy = q.condition_quality(sim.simulate_samples(sim.Scenario(batch_sigma=0.3, n_runs=6), 13))
    assert any(w.startswith("unstable") for w in noisy.warnings)
    assert any("slowest batch" in w for w in noisy.warnings)
    short = q.condition_quality(sim.simulate_samples(sim.Scenario(n_runs=6, iterations=10), 14))
    assert any("batches as short as" in w for w in short.warnings)
    runs = q.condition_quality(sim.simulate_samples(sim.Scenario(run_sigma=0.2, n_runs=8), 15))
    assert any("runs differ systematically" in w for w in runs.warnings)


def test_drift_warning():
    df = sim.simulate_samples(sim.Scenario(n_runs=4, n_batches=40, run_sigma=0.0, batch_sigma=0.005), 16)
    grow = 1 + 0.1 * df["batch"] / df["batch"].max()        # +10 % from first to last batch
    _scale(df, df.index, grow)
    cq = q.condition_quality(df)
    assert any(w.startswith("drift: per-op time changes by +") for w in cq.warnings)


def test_quality_table_one_row_per_condition():
    df = pd.concat([
        sim.simulate_samples(sim.Scenario(probe="a", family="bimodal", n_runs=5, n_batches=20), 17),
        sim.simulate_samples(sim.Scenario(probe="b", n_runs=5, n_batches=20), 18)])
    t = q.quality_table(df).set_index("probe")
    assert bool(t.loc["a", "multimodal"]) and not bool(t.loc["b", "multimodal"])
    assert t.loc["a", "mode_ratio"] == pytest.approx(15, rel=0.15)
    assert "multimodal" in t.loc["a", "warnings"]


def test_runs_differ_warning_sees_a_minority_of_slow_runs():
    """Issue 12: a MAD-based spread of run medians is ~0 when most runs agree."""
    df = sim.simulate_samples(sim.Scenario(n_runs=5, n_batches=10, run_sigma=0.002, batch_sigma=0.01), 3)
    _scale(df, df.index[df["run"] == 4], 1.3)
    cq = q.condition_quality(df)
    assert any("runs differ systematically" in w for w in cq.warnings), cq.warnings
    assert cq.run_cv > 0.1
    # the same spread of medians made by batch noise alone is not "systematic"
    noisy = sim.simulate_samples(sim.Scenario(n_runs=5, n_batches=10, run_sigma=0.0, batch_sigma=0.3), 4)
    cqn = q.condition_quality(noisy)
    assert cqn.run_cv > 0.05
    assert not any("runs differ systematically" in w for w in cqn.warnings), cqn.warnings
