"""Architecture ratios from the published pairs; our estimates beside published values; output files."""
import numpy as np
import pandas as pd
import pytest

from osbench_analysis.plots import reference as plots_reference
from osbench_analysis.reference import studies as reference
from osbench_analysis.report import reference_compare as rcmp


@pytest.fixture(scope="module")
def ref():
    return reference.load_reference()


@pytest.fixture(scope="module")
def mapping():
    return reference.load_probe_mapping()


def _estimates(rows):
    """Rows shaped like stats.summarize output: (campaign, environment, probe, variant, placement, estimate_ns)."""
    out = []
    for campaign, env, probe, variant, placement, ns in rows:
        out.append({"campaign_id": campaign, "environment": env, "probe": probe, "variant": variant,
                    "placement": placement, "estimate_ns": ns, "ci_low_ns": ns * 0.9, "ci_high_ns": ns * 1.1,
                    "level": 0.95, "ci_method": "test", "n_runs": 3, "n_batches": 30, "note": ""})
    return pd.DataFrame(out)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_architecture_ratios_use_only_the_named_pairs(ref):
    arch = rcmp.architecture_ratios(ref)
    assert set(arch["subject_arch"]) <= {"microkernel", "hybrid"}
    assert set(arch["baseline_arch"]) == {"monolithic"}
    row = arch[(arch["metric_id"] == "process_creation") & (arch["subject_system"] == "minix3")].iloc[0]
    assert row["slowdown_factor"] == pytest.approx(4479 / 24.6)
    lm = arch[(arch["metric_id"] == "process_fork_exit") & (arch["baseline_system"] == "freebsd_imac")].iloc[0]
    assert lm["slowdown_factor"] == pytest.approx(262.9545 / 95.1455)
    # the NA'd AF_UNIX cells of Mac OS and FreeBSD never make a ratio
    assert not ((arch["metric_id"] == "af_unix_bandwidth") & (arch["baseline_system"] == "freebsd_imac")).any()
    # undirected counters never enter (no pair in that source anyway) and every factor is positive
    assert (arch["slowdown_factor"] > 0).all()


def test_ours_beside_published_scales_to_one_published_operation(ref, mapping):
    est = _estimates([
        ("c1", "native", "fork_exit", "", "unpinned", 100_000.0),           # 100 µs
        ("c1", "native", "pipe_pingpong", "", "same_cpu", 4_000.0),         # 4 µs per round trip
        ("c1", "native", "fork_exec", "linkage=static", "unpinned", 300_000.0),
        ("c1", "native", "stat", "fs=tmpfs", "single", 500.0),
    ])
    side = rcmp.ours_beside_published(est, ref, mapping)
    row = side[(side["metric_id"] == "process_fork_exit") & (side["system_id"] == "linux_hppc")].iloc[0]
    assert row["our_us_per_published_op"] == pytest.approx(100.0)
    assert row["published_over_ours"] == pytest.approx(81.5161 / 100.0)
    # McGarry reports one context switch; our round trip is two: 4 µs -> 2 µs per published switch
    cs = side[(side["metric_id"] == "context_switch") & (side["system_id"] == "netbsd_2_0")].iloc[0]
    assert cs["our_us_per_published_op"] == pytest.approx(2.0)
    assert cs["our_ci_low_us"] == pytest.approx(1.8) and cs["our_ci_high_us"] == pytest.approx(2.2)
    # the static variant pairs with static program load only; the default (dynamic) rows stay empty
    static = side[side["metric_id"] == "program_load_static"]
    dynamic = side[side["metric_id"] == "program_load_dynamic"]
    assert static["our_us_per_published_op"].notna().all() and dynamic["our_us_per_published_op"].isna().all()
    # file probes carry the file system in their variant and still match
    assert side.loc[side["metric_id"] == "simple_stat", "our_us_per_published_op"].notna().all()
    assert (side["caveat"] == rcmp.HARDWARE_CAVEAT).all()


def test_no_estimates_still_lists_the_published_values(ref, mapping):
    side = rcmp.ours_beside_published(pd.DataFrame(columns=rcmp.ESTIMATE_COLUMNS), ref, mapping)
    assert len(side) > 0 and side["our_us_per_published_op"].isna().all()
    assert side["published_us_per_op"].notna().all()


def test_estimates_without_required_columns_are_refused(ref, mapping):
    with pytest.raises(ValueError, match="estimate_ns"):
        rcmp.ours_beside_published(pd.DataFrame({"probe": ["fork_exit"]}), ref, mapping)


@pytest.fixture(scope="module")
def two_environments(tiny_campaign, tmp_path_factory):
    """The real campaign, plus a copy as environment 'gvisor' exactly 2.5x slower, analysed."""
    from osbench_analysis.analysis import pipeline as analysis
    from conftest import relabel

    root = tmp_path_factory.mktemp("two-envs")
    native = relabel(tiny_campaign, root, "n", "native", minutes=0)
    gv = relabel(tiny_campaign, root, "g", "gvisor", slower=2.5)
    return analysis.analyze([native.id, gv.id], root=root, n_resamples=200)


def test_environment_ratios_come_from_the_analysis(two_environments, tiny_campaign):
    env = rcmp.environment_ratios(two_environments)
    measured = tiny_campaign.samples[~tiny_campaign.samples.warmup]
    assert len(env) == measured.groupby(["probe", "variant", "placement"]).ngroups
    assert (env["ratio"].sub(2.5).abs() < 0.01).all()
    assert ((env["ratio_low"] < env["ratio"]) & (env["ratio"] < env["ratio_high"])).all()
    # with 2 runs a side the interval may well include 1: "different" must say exactly that
    assert (env["different"] == ((env["ratio_low"] > 1) | (env["ratio_high"] < 1))).all()
    assert set(env["arch_class"]) == {"user-space-kernel"}
    assert rcmp.environment_ratios(None).empty   # no analysis: nothing of ours to compare


def test_a_real_campaign_lands_beside_the_published_values(two_environments, ref, mapping):
    est = rcmp.our_estimates(two_environments)
    assert {"fork_exit", "null_syscall", "pipe_pingpong"} <= set(est["probe"])
    assert set(est["arch_class"]) == {"monolithic", "user-space-kernel"}
    side = rcmp.ours_beside_published(est, ref, mapping)
    ours = side.dropna(subset=["our_us_per_published_op"])
    assert {"fork_exit", "null_syscall", "pipe_pingpong"} <= set(ours["probe"])
    assert (ours["our_us_per_published_op"] > 0).all()


@pytest.mark.slow  # integration: writes every figure / regenerates from all data (> 1 s)
def test_figures_and_tables_are_written(tmp_path, ref, mapping):
    arch = rcmp.architecture_ratios(ref)
    env = pd.DataFrame({"primitive": ["fork_exit"], "environment": ["gvisor"], "baseline_environment": ["native"],
                        "ratio": [2.5], "ratio_low": [2.2], "ratio_high": [2.8]})
    fig = plots_reference.plot_architecture_ratios(arch, env)
    assert fig.axes[0].get_xscale() == "log"
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(label.startswith("this machine: gvisor vs native") for label in labels)
    side = rcmp.ours_beside_published(pd.DataFrame(columns=rcmp.ESTIMATE_COLUMNS), ref, mapping)
    fig2 = plots_reference.plot_ours_vs_published(side)
    assert plots_reference.plot_ours_vs_published(side.iloc[0:0]) is None
    written = rcmp.write_outputs({"architecture_ratios": arch}, {"architecture_ratios": fig, "side": fig2}, tmp_path)
    names = sorted(p.name for p in written)
    assert names == ["reference_architecture_ratios.csv", "reference_architecture_ratios.pdf",
                     "reference_architecture_ratios.png", "reference_architecture_ratios.tex",
                     "reference_side.pdf", "reference_side.png"]
    assert pd.read_csv(tmp_path / "reference_architecture_ratios.csv").shape[0] == len(arch)




# --------------------------------------------------------------------------- published factors for the central figure

@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_published_factors_recompute_from_the_cells_and_name_their_study(ref):
    sources = reference.load_sources()
    f = rcmp.published_factors(ref)
    assert len(f) == len(rcmp.architecture_ratios(ref, sources)) and list(f.columns) == rcmp.PUBLISHED_FACTOR_COLUMNS
    cell = ref.set_index(["source_id", "table_id", "metric_id", "system_id"])
    for r in f.itertuples():
        s = cell.loc[(r.source_id, r.table_id, r.metric_id, r.subject_system)]
        b = cell.loc[(r.source_id, r.table_id, r.metric_id, r.baseline_system)]
        expected = b["value"] / s["value"] if s["higher_is_better"] else s["value"] / b["value"]
        assert r.slowdown_factor == pytest.approx(expected)
        assert r.bibkey == reference.bibkey(r.source_id)
        assert r.comparison == f"{r.subject_arch} over {r.baseline_arch}"
    # MINIX 3 over Linux at process creation: 4479 / 24.6 lps on the same PC
    row = f[(f["subject_system"] == "minix3") & (f["metric_id"] == "process_creation")].iloc[0]
    assert row["slowdown_factor"] == pytest.approx(4479 / 24.6) and row["same_hardware"] and not row["cited"]
    assert row["probes"] == "fork_exit" and row["best_match"] == "exact"
    # the cited AIM comparisons are marked as cited, and only named pairs appear
    assert f.loc[f["subject_system"] == "l4linux", "cited"].all()
    named = {(sid, p["subject"], p["baseline"]) for sid, src in sources.items() for p in src.get("comparison_pairs", [])}
    assert set(zip(f["source_id"], f["subject_system"], f["baseline_system"])) <= named


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_published_factors_by_primitive_summarise_each_pair(ref):
    f = rcmp.published_factors(ref)
    b = rcmp.published_factors_by_primitive(f)
    assert b["n_metrics"].sum() == len(f)
    assert ((b["factor_min"] <= b["factor_geomean"] + 1e-12) & (b["factor_geomean"] <= b["factor_max"] + 1e-12)).all()
    one = b[(b["primitive"] == "syscall_mix") & (b["subject_label"] == "Minix 3.1.2a")].iloc[0]
    parts = f[(f["primitive"] == "syscall_mix") & (f["subject_system"] == "minix3")]["slowdown_factor"]
    assert one["factor_geomean"] == pytest.approx(float(np.exp(np.log(parts).mean()))) and one["n_metrics"] == len(parts)
    # mmap_touch is not lmbench's file-backed page fault: no published page-fault factor lists it
    assert not f.loc[f["primitive"] == "page_fault", "probes"].str.contains("mmap_touch").any()


def test_cited_results_are_the_background_numbers_with_their_sentences(ref):
    import re

    from pathlib import Path

    c = rcmp.cited_results(ref)
    assert list(c.columns) == rcmp.CITED_RESULT_COLUMNS and len(c) > 0
    for r in c.itertuples():
        assert r.cell_as_published in r.quote                 # each number stands in its sentence
        assert r.bibkey == reference.bibkey(r.source_id)
    bib = (Path(reference.default_reference_dir()).parent.parent / "paper" / "references.bib").read_text(encoding="utf-8")
    keys = set(re.findall(r"@\w+\{([^,\s]+),", bib))
    assert set(c["cited_bibkey"]) - {""} <= keys
    assert (c.loc[c["cited_bibkey"] == "", "cited_note"] != "").all()   # an unattributed number says why
    msg = c[c["metric_id"] == "message_cost"].set_index("system_id")["value"]
    assert msg["mach"] / msg["l3"] == pytest.approx(114 / 10)
    assert set(c.loc[c["unit"] == "percent", "value"]) >= {66.0, 75.0, 8.3, 6.8}


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_on_screen_our_environments_beside_the_published_values_are_told_apart(ref, mapping):
    est = pd.DataFrame([dict(campaign_id=f"c-{e}", environment=e, probe="null_syscall", variant="",
                             placement="same_cpu", estimate_ns=ns, ci_low_ns=ns * 0.9, ci_high_ns=ns * 1.1)
                        for e, ns in (("native", 100.0), ("gvisor", 2500.0), ("uml", 7000.0))])
    side = rcmp.ours_beside_published(est, ref, mapping)

    def legend(fig):
        return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]

    printed = legend(plots_reference.plot_ours_vs_published(side))
    assert "this machine (our estimates)" in printed and not any(": native" in x for x in printed)  # the paper's
    screen = legend(plots_reference.plot_ours_vs_published(side, distinct_environments=True))
    assert {"this machine: native", "this machine: gvisor", "this machine: uml"} <= set(screen)
