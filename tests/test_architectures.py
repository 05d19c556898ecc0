"""The crossing cost: a difference of two estimates whose interval covers the
true difference as often as it claims (simulated truths), and the table the
paper reads, computed from real-shaped samples."""
import numpy as np
import pandas as pd
import pytest

from osbench_analysis import stats
from osbench_analysis.analysis import architectures
from osbench_analysis.stats import simulate


def _sides(rng, runs, sigma):
    env = simulate.Scenario(median_ns=21_000.0, run_sigma=sigma, n_runs=runs, n_batches=10, environment="gvisor",
                            probe="null_syscall", placement="same_cpu")
    nat = env.with_(median_ns=150.0, environment="native")
    return env, nat, simulate.simulate_samples(env, rng), simulate.simulate_samples(nat, rng)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
@pytest.mark.parametrize("runs,sigma", [(5, 0.1), (12, 0.15)])
def test_difference_interval_covers_the_true_difference(runs, sigma):
    rng = np.random.default_rng(7)
    env = simulate.Scenario(median_ns=21_000.0, run_sigma=sigma, n_runs=runs, n_batches=10)
    nat = env.with_(median_ns=150.0)
    truth = (simulate.true_value_ns(env, "geomean_of_run_medians")
             - simulate.true_value_ns(nat, "geomean_of_run_medians"))
    n = 600
    per_env, _ = simulate.draw_per_op(env, rng, n)     # (experiments, runs, batches)
    per_nat, _ = simulate.draw_per_op(nat, rng, n)
    run = np.repeat(np.arange(runs), per_env.shape[-1])
    hits = 0
    for a, b in zip(per_env, per_nat):
        d = architectures.geomean_difference_ci(stats.RunData.from_arrays(a.ravel(), run),
                                                stats.RunData.from_arrays(b.ravel(), run), 0.95)
        hits += d.ci_low <= truth <= d.ci_high
    # 600 experiments: a 95 % interval lands in [92.5 %, 97.5 %] with ~99 % probability
    assert 0.925 <= hits / n <= 0.975, hits / n


def test_one_run_a_side_is_refused():
    rd = stats.RunData.from_arrays(np.array([1.0, 1.1]), np.array([0, 0]))
    with pytest.raises(ValueError, match=">= 2 runs on each side"):
        architectures.geomean_difference_ci(rd, rd)


def test_crossing_costs_per_environment_and_placement():
    rng = np.random.default_rng(3)
    env, nat, a, b = _sides(rng, 6, 0.05)
    a["arch_class"], b["arch_class"] = "user-space-kernel", "monolithic"
    other = a.assign(probe="stat")            # not the crossing probe: ignored
    t = architectures.crossing_costs(pd.concat([a, b, other]), baseline="native")
    assert list(t["environment"]) == ["gvisor"] and list(t["placement"]) == ["same_cpu"]
    row = t.iloc[0]
    assert row["ci_low_ns"] < row["cost_ns"] < row["ci_high_ns"]
    assert row["cost_ns"] == pytest.approx(row["estimate_ns"] - row["baseline_estimate_ns"])
    assert 19_000 < row["cost_ns"] < 23_000     # the simulated truth is 21 us - 150 ns
    assert row["n_runs"] == 6 and row["arch_class"] == "user-space-kernel"


def test_a_file_server_crosses_with_one_stat():
    # an environment with no null system call (a file server serves only file
    # probes) is measured by one stat: one request to the server
    rng = np.random.default_rng(4)
    env, nat, a, b = _sides(rng, 6, 0.05)
    a["arch_class"], b["arch_class"] = "user-space-kernel", "monolithic"
    fuse = a.assign(environment="fuse", arch_class="user-space-server", probe="stat",
                    per_op_ns=a["per_op_ns"] / 5, elapsed_ns=a["elapsed_ns"] // 5)
    nat_stat = b.assign(probe="stat", per_op_ns=b["per_op_ns"] * 8, elapsed_ns=b["elapsed_ns"] * 8)
    t = architectures.crossing_costs(pd.concat([a, b, fuse, nat_stat]), baseline="native").set_index("environment")
    assert t.loc["gvisor", "probe"] == "null_syscall" and t.loc["fuse", "probe"] == "stat"
    f = t.loc["fuse"]
    assert f["baseline_estimate_ns"] == pytest.approx(8 * t.loc["gvisor", "baseline_estimate_ns"], rel=1e-6)
    assert f["cost_ns"] == pytest.approx(f["estimate_ns"] - f["baseline_estimate_ns"])
    # an explicit probe applies to every environment
    only = architectures.crossing_costs(pd.concat([a, b, fuse, nat_stat]), baseline="native", probe="stat")
    assert list(only["environment"]) == ["fuse"]
