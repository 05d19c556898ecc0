"""The one-pass paths of the analysis (issue 33) give the numbers of the straightforward
per-condition computations, exactly: stats.condition_tables (flags once, both estimates and the
quality table from grouped arrays) against flag_batches / run_data / estimate_ci / typical_run /
heterogeneity / condition_quality on each condition alone, and ratio_table against ratio_ci on
the two sides' own rows.  benchmarks/analysis_equality.py compares every table of analyze() with
the base commit's code."""
import math
import zlib

import numpy as np
import pandas as pd
import pytest

from osbench_analysis import stats
from osbench_analysis.stats import heterogeneity as het_mod
from osbench_analysis.stats import quality
from osbench_analysis.stats import simulate as sim
from osbench_analysis.stats.rundata import _rng
from osbench_analysis.store.schema import GROUP_KEYS

FAST = dict(n_resamples=1000)


def _campaign(campaign_id: str = "c1", environment: str = "native", scale: float = 1.0) -> pd.DataFrame:
    """Conditions with flagged batches, modes within and between runs, a minority of slow runs,
    one run only, and one condition whose every batch is a warm-up but one."""
    sc = [sim.Scenario(probe="getpid", n_runs=5, n_batches=10),
          sim.Scenario(family="contaminated", contamination=0.15, probe="open_close", n_runs=6, n_batches=20),
          sim.Scenario(family="bimodal", probe="pipe_pingpong", placement="unpinned", n_runs=5, n_batches=20),
          sim.Scenario(family="bimodal_runs", probe="pipe_pingpong", placement="cross_cpu", n_runs=8,
                       n_batches=10),
          sim.Scenario(family="bimodal_runs", far_fraction=0.25, far_factor=1.4, batch_sigma=0.01,
                       probe="fork_exit", n_runs=7, n_batches=12),
          sim.Scenario(probe="mmap", n_runs=1, n_batches=15),
          sim.Scenario(family="heavy_tailed", probe="thread_create", variant="n=2", n_runs=3, n_batches=8)]
    parts = []
    for i, s in enumerate(sc):
        df = sim.simulate_samples(s.with_(campaign_id=campaign_id, environment=environment), 10 + i)
        df["elapsed_ns"] = np.rint(df["elapsed_ns"] * scale).astype("int64")
        df["per_op_ns"] = df["elapsed_ns"] / df["iterations"]
        parts.append(df)
    return pd.concat(parts, ignore_index=True)


def _eq(a, b) -> bool:
    """Equal to the last bit (NaN equal to NaN, pd.NA to pd.NA)."""
    if a is pd.NA or b is pd.NA:
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


def _assert_conditions_match(samples: pd.DataFrame, **kw):
    est, qual = stats.condition_tables(samples, **kw)
    seed = kw.get("seed", stats.DEFAULT_SEED)
    level = kw.get("level", stats.DEFAULT_LEVEL)
    keys = list(GROUP_KEYS)
    est, qual = est.set_index(keys), qual.set_index(keys)
    n = 0
    for key, g in samples.groupby(keys, sort=True):
        n += 1
        f = quality.flag_batches(g)
        kept_rd, clean_rd = stats.run_data(g), stats.run_data(f, exclude_flagged=True)
        row = est.loc[key]
        m = stats.estimate_ci(kept_rd, rng=_rng(seed, *key), **{k: v for k, v in kw.items() if k != "seed"})
        for col, v in (("mean_over_runs", m.estimate_ns), ("mean_over_runs_low", m.ci_low_ns),
                       ("mean_over_runs_high", m.ci_high_ns), ("n_batches", kept_rd.n_batches),
                       ("n_flagged", int(f.loc[~f["warmup"], "flagged"].sum()))):
            assert _eq(row[col], v), (key, col, row[col], v)
        for col, v in zip(("typical_run", "typical_run_low", "typical_run_high", "typical_run_confidence"),
                          stats.typical_run(kept_rd, level)):
            assert _eq(row[col], v), (key, col)
        h = het_mod.heterogeneity(kept_rd)
        assert row["heterogeneous"] == h.heterogeneous
        assert _eq(row["slow_run_factor"], h.slow_run_factor) and _eq(row["slow_run_fraction"], h.slow_run_fraction)
        # the clean estimate of the number the kept row quotes, from its own rows
        c = stats.estimate_ci(clean_rd, rng=_rng(seed, *key), **{k: v for k, v in kw.items() if k != "seed"})
        ct = stats.typical_run(clean_rd, level)
        want = ct[0] if row["quoted"] == "typical run" else c.estimate_ns
        assert _eq(row["estimate_clean_ns"], want), (key, row["estimate_clean_ns"], want)
        assert row["n_batches_clean"] == clean_rd.n_batches
        # the quality of the condition alone (its own mode test, pandas per condition)
        q = quality.condition_quality(f)
        qrow = qual.loc[key]
        for col, v in (("n_runs", q.n_runs), ("n_batches", q.n_batches), ("cv", q.cv), ("run_cv", q.run_cv),
                       ("max_over_median", q.max_over_median), ("flagged_fraction", q.flagged_fraction),
                       ("multimodal", q.multimodality.multimodal), ("warnings", "; ".join(q.warnings))):
            assert _eq(qrow[col], v), (key, col, qrow[col], v)
        assert row["warnings"].startswith("; ".join(q.warnings)) and row["multimodal"] == q.multimodality.multimodal
    assert n == len(est) == len(qual)
    return est, qual


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_condition_tables_equal_each_condition_computed_alone():
    samples = pd.concat([_campaign("c1"), _campaign("c2", "gvisor", 3.0)], ignore_index=True)
    est, qual = _assert_conditions_match(samples, **FAST)
    # what the data was made to show, so that the comparison covers each path
    assert (est["n_flagged"] > 0).sum() >= 2 and est["multimodal"].any() and (est["n_runs"] == 1).any()
    assert (est["quoted"] == "typical run").any() and (est["quoted"] != "typical run").any()


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_condition_tables_are_flag_sensitivity_and_quality_table():
    samples = _campaign()
    est, qual = stats.condition_tables(samples, **FAST)
    pd.testing.assert_frame_equal(est, stats.flag_sensitivity(samples, **FAST), check_exact=True)
    pd.testing.assert_frame_equal(qual, quality.quality_table(samples), check_exact=True)
    # a separate pass excluding flagged batches: the clean columns, every one recomputed from its rows
    clean = stats.summarize(samples, exclude_flagged=True, quality=False, **FAST)
    typ = est["quoted"].eq("typical run").to_numpy()
    want = np.where(typ, clean["typical_run"], clean["mean_over_runs"])
    assert np.array_equal(est["estimate_clean_ns"].to_numpy(), want, equal_nan=True)
    assert (clean["n_batches"] == est["n_batches_clean"]).all()
    assert est.attrs["analysis_parameters"].n_resamples == 1000


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
@pytest.mark.parametrize("ci_method", ["hier-bca", "runs-os"])
def test_condition_tables_equal_alone_with_other_ci_methods(ci_method):
    _assert_conditions_match(_campaign(), ci_method=ci_method, n_resamples=500, seed=7)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_condition_tables_equal_each_condition_alone_on_a_committed_campaign(committed_root):
    from osbench_analysis.store import campaigns as store

    cat = store.catalog(committed_root)
    cid = cat.sort_values("created_utc")["campaign_id"].iloc[-1]
    _assert_conditions_match(store.load_campaign(cid, committed_root).samples)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_flags_in_one_pass_equal_flags_of_each_condition_alone():
    samples = _campaign()
    flagged = quality.flag_batches(samples)
    alone = pd.concat([quality.flag_batches(g) for _, g in samples.groupby(list(GROUP_KEYS), sort=False)]) \
        .sort_index()
    pd.testing.assert_frame_equal(flagged, alone, check_exact=True)
    assert flagged["flagged"].any() and (flagged["outlier_class"] != "").any()


def test_group_quantiles_are_numpys_nanquantile_per_group():
    rng = np.random.default_rng(3)
    sizes = [0, 1, 2, 3, 4, 5, 7, 10, 11, 60]
    gid = np.concatenate([np.full(s + 2, i) for i, s in enumerate(sizes)])
    values = rng.standard_normal(gid.size)
    values[np.concatenate([[True, True] + [False] * s for s in sizes])] = np.nan   # two NaN per group
    rng.shuffle(perm := np.arange(gid.size))
    gid, values = gid[perm] * 3 + 5, values[perm]          # groups numbered with gaps, rows interleaved
    q1, q3 = quality._group_nanquantiles(values, gid, (0.25, 0.75))
    s = pd.Series(values).groupby(gid)
    for q, got in ((0.25, q1), (0.75, q3)):
        want = s.transform(lambda v: np.nanquantile(v, q) if v.notna().any() else np.nan).to_numpy()
        assert np.array_equal(got, want, equal_nan=True)


def test_heterogeneity_remembered_is_heterogeneity_computed():
    rd = stats.run_data(sim.simulate_samples(sim.Scenario(family="bimodal_runs", far_fraction=0.3, far_factor=1.4,
                                                         batch_sigma=0.01, n_runs=9, n_batches=10), 5))
    h = het_mod.heterogeneity(rd)
    again = het_mod.heterogeneity([r.copy() for r in rd.runs])
    fresh = het_mod._heterogeneity_of.__wrapped__(tuple(r.size for r in rd.runs),
                                                  b"".join(r.tobytes() for r in rd.runs), het_mod.ALPHA)
    assert h == again == fresh and h.clear_split
    assert het_mod.heterogeneity(rd.runs[:1]).n_runs == 1


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_ratio_table_equals_ratio_ci_on_each_pair_of_conditions():
    native = _campaign("c1")
    gvisor = _campaign("c2", "gvisor", 2.5)
    gvisor = gvisor[gvisor["probe"] != "mmap"]                 # a condition the baseline has alone
    extra = sim.simulate_samples(sim.Scenario(probe="only_gvisor", environment="gvisor", campaign_id="c2",
                                              n_runs=3, n_batches=5), 9)
    samples = pd.concat([native, gvisor, extra], ignore_index=True)
    t = stats.ratio_table(samples, baseline="native", **FAST)
    assert len(t) == samples.groupby(["probe", "variant", "placement"]).ngroups - 1
    for r in t.itertuples():
        cond = samples[(samples["probe"] == r.probe) & (samples["variant"] == r.variant)
                       & (samples["placement"] == r.placement)]
        sub, base = cond[cond["environment"] == "gvisor"], cond[cond["environment"] == "native"]
        if base.empty:
            assert math.isnan(r.ratio) and "no native" in r.note
            continue
        key = (r.probe, r.variant, r.placement)
        want = stats.ratio_ci(sub, base, seed=zlib.crc32(f"{stats.DEFAULT_SEED}|{key}|gvisor".encode()), **FAST)
        assert (r.ratio, r.ci_low, r.ci_high, r.different) == (want.ratio, want.ci_low, want.ci_high, want.different)
        assert (r.estimate_ns, r.n_runs, r.note) == (want.numerator.estimate_ns, want.numerator.n_runs, want.note)
        hs = [h for h in (het_mod.heterogeneity(stats.run_data(sub)), het_mod.heterogeneity(stats.run_data(base)))
              if h.warning]
        assert _eq(r.runs_needed, max((h.runs_needed for h in hs), default=pd.NA))
        assert (r.warning != "") == bool(hs)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_ratio_table_still_refuses_sides_it_cannot_pair():
    a, b = _campaign("c1"), _campaign("c2", "gvisor", 2.0)
    with pytest.raises(stats.MissingRunLabels, match="no 'run' column"):
        stats.ratio_table(pd.concat([a, b]).drop(columns="run"), baseline="native", **FAST)
    # two campaigns of one environment on one side: one condition per side is what a ratio compares
    twice = pd.concat([a, b, _campaign("c3", "gvisor", 2.0)], ignore_index=True)
    with pytest.raises(ValueError, match="expected the samples of one condition, got 2 conditions"):
        stats.ratio_table(twice, baseline="native", **FAST)
