"""Campaigns pooled as a level of replication (reproducibility.py), the
host-state canaries and the start-of-campaign idleness check."""
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from osbench_analysis import environments
from osbench_analysis.measure import config
from osbench_analysis.hosts import machine as host
from osbench_analysis.catalog import registry
from osbench_analysis.analysis import reproducibility as rp
from osbench_analysis.stats import simulate as sim
from osbench_analysis.stats.pooled import OVER_CAMPAIGNS, WITHIN_ONE_CAMPAIGN

SHIFTS = (0.0, 0.25, -0.15, 0.1)        # the host's state per round (log scale): campaigns drift together
RATIO = 80.0                            # gvisor / native, the same in every round


def _condition(cid, env, probe, median_ns, seed, run_sigma=0.02):
    sc = sim.Scenario(median_ns=median_ns, run_sigma=run_sigma, batch_sigma=0.01, n_runs=6, n_batches=10,
                      campaign_id=cid, environment=env, probe=probe, placement="same_cpu")
    return sim.simulate_samples(sc, seed).assign(host="h")


def _rounds(shifts=SHIFTS, canary_slow=None):
    parts, rounds = [], {}
    for r, c in enumerate(shifts):
        for env, base in (("native", 200.0), ("gvisor", 200.0 * RATIO)):
            cid = f"r{r}-{env}"
            rounds[cid] = f"r{r}"
            parts.append(_condition(cid, env, "null_syscall", base * math.exp(c), seed=10 * r + len(env)))
            slow = 1.2 if canary_slow == r else 1.0
            parts.append(_condition(cid, env, "canary_cpu", 2500.0 * slow, seed=100 + 10 * r + len(env)))
    return pd.concat(parts, ignore_index=True), rounds


def test_campaign_values_are_the_mean_log_run_medians_with_their_standard_error():
    s, _ = _rounds()
    v = rp.campaign_values(s)
    one = s[(s["campaign_id"] == "r1-native") & (s["probe"] == "null_syscall") & ~s["warmup"]]
    logs = np.log(one.groupby("run")["per_op_ns"].median())
    row = v[(v["campaign_id"] == "r1-native") & (v["probe"] == "null_syscall")].iloc[0]
    assert row["y"] == pytest.approx(logs.mean())
    assert row["se"] == pytest.approx(logs.std(ddof=1) / math.sqrt(6))
    assert row["n_runs"] == 6 and row["estimate_ns"] == pytest.approx(math.exp(logs.mean()))


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_absolute_times_carry_the_host_drift_ratios_paired_within_rounds_do_not():
    s, rounds = _rounds()
    v = rp.campaign_values(s)
    est = rp.pooled_estimates(v)
    native = est[(est["environment"] == "native") & (est["probe"] == "null_syscall")].iloc[0]
    assert native["n_campaigns"] == 4 and native["pooled"] and native["interval_over"] == OVER_CAMPAIGNS
    assert native["between_campaign_sd"] == pytest.approx(np.std(SHIFTS, ddof=1), rel=0.25)
    ratios = rp.pooled_ratios(rp.paired_values(v, rounds))
    r = ratios[ratios["probe"] == "null_syscall"].iloc[0]
    assert r["ci_low"] < RATIO < r["ci_high"] and r["ci_high"] / r["ci_low"] < 1.2
    assert r["between_campaign_sd"] < 0.03        # the drift cancels in the pair
    spread = rp.spread_table(est, ratios).set_index("environment")
    assert spread.loc["gvisor", "tau_ratio_median"] < spread.loc["gvisor", "tau_absolute_median"]
    pooling = rp.Pooling({"r3-gvisor": [f"r{i}-gvisor" for i in range(4)]}, rounds, v, est, ratios, pd.DataFrame(),
                         pd.DataFrame())
    tex = rp.spread_tex(pooling)
    assert tex.startswith("\\begin{tabular}") and "4 campaigns" in tex
    gvisor = next(line for line in tex.splitlines() if line.startswith("gVisor &"))
    assert gvisor.split(" & ")[1] == f"{spread.loc['gvisor', 'tau_absolute_median']:.3f}"
    assert rp.spread_tex(None) == ""


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_crossing_costs_pool_over_rounds_in_ns():
    s, rounds = _rounds()
    cc = rp.pooled_crossing_costs(rp.paired_values(rp.campaign_values(s), rounds))
    row = cc[cc["environment"] == "gvisor"].iloc[0]
    per_round = [200.0 * (RATIO - 1) * math.exp(c) for c in SHIFTS]
    assert row["probe"] == "null_syscall" and row["n_campaigns"] == 4
    assert row["cost_ns"] == pytest.approx(np.mean(per_round), rel=0.05)
    assert row["ci_low_ns"] < row["cost_ns"] < row["ci_high_ns"]


def test_leave_one_campaign_out_shows_what_single_campaign_intervals_miss():
    s, rounds = _rounds(shifts=(0.0, 0.3, -0.2, 0.15, -0.1))
    v = rp.campaign_values(s)
    loo = rp.leave_one_campaign_out(v[v["probe"] == "null_syscall"])
    assert loo.conditions == 2 and loo.checks == 10 and loo.pairs == 40
    # runs 2 % apart, campaigns 20 % apart: one campaign's interval almost never covers another's estimate
    assert loo.single_interval_covers < 0.2
    assert loo.prediction_covers >= 0.8
    assert "Leave one campaign out" in loo.sentence()


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_slower_host_shows_in_its_canary():
    s, rounds = _rounds(canary_slow=2)
    table = rp.canary_table(rp.campaign_values(s), rounds)
    slow = table[(table["campaign_id"] == "r2-native")].iloc[0]
    assert slow["reference"] == "r0-native" and slow["ci_low"] < 1.2 < slow["ci_high"] and slow["ci_low"] > 1.05
    said = rp.host_state_sentences(table)
    assert any("1.2" in line and "r2-native" in line and "slower" in line for line in said)
    assert not any("r1-native" in line for line in said)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_estimate_rows_say_what_their_interval_covers():
    s, rounds = _rounds()
    v = rp.campaign_values(s)
    pooling = rp.Pooling({"r3-native": [f"r{i}-native" for i in range(4)]}, rounds, v, rp.pooled_estimates(v),
                         pd.DataFrame(), pd.DataFrame(), pd.DataFrame())
    est = v[v["campaign_id"] == "r3-native"][["campaign_id", *rp.CONDITION]].reset_index(drop=True)
    out = rp.annotate_estimates(est, pooling)
    assert (out["interval_over"] == WITHIN_ONE_CAMPAIGN).all() and (out["n_campaigns"] == 1).all()
    assert out["between_campaign_sd"].notna().all()       # the host's earlier campaigns' spread, beside
    rows = rp.pooled_rows(pooling)
    assert rows["pooled"].all() and (rows["n_campaigns"] == 4).all()
    assert rows["campaign_id"].str.startswith("pooled:").all()
    bare = rp.annotate_estimates(est, None)
    assert bare["between_campaign_sd"].isna().all() and not bare["pooled"].any()


def test_methods_sentence_says_within_one_campaign_without_pooling():
    assert "within one campaign" in rp.methods_sentence(None)


def test_comparable_campaigns_need_the_same_host_environment_and_probe_code():
    class M:
        def __init__(self, cid, env, sha, created, host_id="a"):
            self.campaign_id, self.environment, self.created_utc = cid, env, created
            self.host = {"host_id": host_id, "probes": {"source_sha256": sha}}
            self.hostname = "vm"
            self.config = {"campaign_set": [cid]}

    every = {m.campaign_id: m for m in [M("a", "native", "x", "1"), M("b", "native", "x", "2"),
                                        M("c", "native", "y", "3"), M("d", "gvisor", "x", "4"),
                                        M("e", "native", "x", "5", host_id="other")]}
    got = rp.comparable_campaigns({"b": every["b"]}, every)
    assert got == {"b": ["a", "b"]}
    assert rp.round_of(every["a"]) == "a"


def test_every_profile_campaign_measures_the_canaries_in_every_environment():
    assert set(registry.CANARY_PROBES) == set(rp.CANARY_PROBES)
    assert not set(registry.CANARY_PROBES) & set(registry.DEFAULT_PROBES)    # controls, not primitives
    for profile in ("quick", "full"):
        assert set(registry.CANARY_PROBES) <= {c.probe for c in config.validate(config.make_config(profile))}
    # probes named by hand: only when asked
    assert {c.probe for c in config.validate(config.make_config("quick", probes=["null_syscall"]))} == {"null_syscall"}
    cfg = config.make_config("quick", probes=["null_syscall"], canaries=True)
    measured = {c.probe for c in config.validate(cfg)}
    assert measured == {"null_syscall", *registry.CANARY_PROBES}
    fuse = environments.get("fuse")
    assert all(cfg.measures_in(fuse, p) for p in registry.CANARY_PROBES)
    assert not cfg.measures_in(fuse, "null_syscall")


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_start_of_campaign_check_warns_on_a_busy_host_only():
    info = host.collect_host_info()
    assert info.cpu_busy_at_start is None or 0 <= info.cpu_busy_at_start <= 100

    def at(load, busy):
        return dataclasses.replace(info, loadavg_at_start=[load, 0, 0], cpus_allowed=[0, 1], cpu_busy_at_start=busy)

    assert host.busy_warning(at(0.2, 3.0)) == ""
    assert "not idle" in host.busy_warning(at(3.5, 3.0))
    line = host.busy_warning(at(0.2, 85.0))
    assert "85% busy" in line and "\n" not in line


@pytest.mark.parametrize("probe,n", [("canary_cpu", 200), ("canary_memcpy", 3), ("canary_syscall", 2000)])
def test_canaries_do_the_work_they_claim(probe, n):
    from osbench_analysis.worker.main import Batcher, WorkerRequest

    req = WorkerRequest(probe=probe, params={}, min_batch_ns=1, warmup=0, batches=1, max_iterations=10**6,
                        workdir=None, child_cpu=-1)
    with Batcher(req) as b:
        out = [b.run(n) for _ in range(2)]
    assert all(r["iterations"] == n and r["work_done"] == n and r["elapsed_ns"] > 0 for r in out)


@pytest.mark.slow
def test_analysis_pools_the_hosts_comparable_campaigns(tmp_path):
    from osbench_analysis.analysis import pipeline as analysis
    from osbench_analysis.store import synthetic

    base = synthetic.template()
    seeds = (0, 4, 6)          # log factors 0.126, -0.652, 1.053 times sigma
    for i, seed in enumerate(seeds):
        synthetic.write_synthetic(tmp_path, f"{base.id}-syn{i}", base=base, seed=seed, sigma=0.2)
    a = analysis.analyze(root=tmp_path, n_resamples=200)     # the claims are about pooling, not the bootstrap
    assert len(a.campaigns) == 1 and a.pooling.n_campaigns_max == 3
    table = a.table(full=True)
    single, pooled = table[~table["pooled"].astype(bool)], table[table["pooled"].astype(bool)]
    assert (single["interval_over"] == WITHIN_ONE_CAMPAIGN).all() and (single["n_campaigns"] == 1).all()
    assert (pooled["interval_over"] == OVER_CAMPAIGNS).all() and (pooled["n_campaigns"] == 3).all()
    assert len(pooled) == len(single)
    # each synthetic campaign is the template scaled by one factor: the spread is that factor's
    factors = [np.random.default_rng(seed).normal(0.0, 0.2) for seed in seeds]
    assert single["between_campaign_sd"].median() == pytest.approx(np.std(factors, ddof=1), rel=0.1)
    assert "over the campaigns" in a.methods_tex()
    macros = rp.paper_macros(a)
    assert macros["osbReproCampaigns"] == "3" and macros["osbReproIntervalOver"] == "over 3 campaigns"
    one = analysis.analyze(root=tmp_path, pool=False, n_resamples=200)
    assert one.pooling is None and "within one campaign" in one.methods_tex()
    assert rp.paper_macros(one)["osbReproIntervalOver"] == WITHIN_ONE_CAMPAIGN


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_reproducibility_figure_per_family_shows_every_campaign_and_the_pooled_value():
    import matplotlib

    matplotlib.use("Agg")
    from osbench_analysis.plots import reproducibility as plots_reproducibility

    s, rounds = _rounds()
    v = rp.campaign_values(s[s["probe"] != "canary_cpu"])
    pooling = rp.Pooling({"r3-native": list(rounds)}, rounds, v, rp.pooled_estimates(v), pd.DataFrame(),
                         pd.DataFrame(), pd.DataFrame())
    figs = plots_reproducibility.reproducibility_figures(pooling)
    assert list(figs) == ["reproducibility_kernel_entry"]
    ax = figs["reproducibility_kernel_entry"].axes[0]
    # per condition: 4 campaigns (interval + point each) and the pooled interval + diamond
    assert len(ax.lines) == 2 * (4 * 2 + 2)
    # each condition in printed names: 'gVisor: null system call, one CPU τ=...', never the identifiers
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert [t.split(":")[0] for t in labels] == ["native", "gVisor"]
    assert all("_" not in t for t in labels) and all(", one CPU" in t for t in labels)
    assert "over 4 campaigns" in ax.get_title()


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_campaigns_in_memory_are_pooled_from_one_pass_as_each_alone(tmp_path, monkeypatch):
    """pool_campaigns computes the values of the campaigns it was handed in one pass (issue 37): the same
    pooled tables, to the last bit, as each campaign loaded and computed alone, with the cache off and on."""
    from osbench_analysis.store import campaigns as store
    from osbench_analysis.store import synthetic

    base, root = synthetic.template(), tmp_path / "campaigns"
    ids = [f"syn-{i}" for i in range(4)]
    for i, cid in enumerate(ids):
        synthetic.write_synthetic(root, cid, base, seed=i, host={"cpu_model": f"CPU #{i % 2}"})
    loaded = {cid: store.load_campaign(cid, root) for cid in ids}
    primary = {cid: loaded[cid].manifest for cid in ids[2:]}
    for cache in ("off", str(tmp_path / "cache")):
        monkeypatch.setenv("OSBENCH_CACHE_DIR", cache)
        alone = rp.pool_campaigns(primary, root)
        together = rp.pool_campaigns(primary, root, loaded=loaded)
        assert len(alone.values) and alone.campaigns == together.campaigns
        for name in ("values", "estimates", "ratios", "canaries"):
            pd.testing.assert_frame_equal(getattr(alone, name), getattr(together, name), check_exact=True)
