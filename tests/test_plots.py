"""Figures: what they draw, on which scale, and what their files are called."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from osbench_analysis import stats
from osbench_analysis.plots import forest as plots  # noqa: E402
from osbench_analysis.stats import simulate as sim  # noqa: E402

FAST = dict(n_resamples=500)


@pytest.fixture(scope="module")
def campaign():
    parts = []
    for env, factor in (("native", 1.0), ("gvisor", 8.6)):
        for probe, fam in (("getpid", "lognormal"), ("pipe_pingpong", "bimodal")):
            parts.append(sim.simulate_samples(sim.Scenario(
                family=fam, probe=probe, environment=env, campaign_id=f"c-{env}", median_ns=500 * factor,
                n_runs=5, n_batches=12), len(parts)))
    return pd.concat(parts, ignore_index=True)


def test_forest_plot_rows_scale_and_clean_overlay(campaign):
    s = stats.flag_sensitivity(campaign, **FAST)
    fig = plots.forest_plot(s)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    # one point per condition, at its estimate, with its interval as the error bar
    xs = ax.containers[0].lines[0].get_xdata()
    assert np.allclose(np.asarray(xs, dtype=float), s["estimate_ns"].to_numpy())
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == len(s) == 4
    assert any("(gvisor)" in lab for lab in labels)
    # kept and excluded estimates are both drawn (two errorbar containers)
    assert len(ax.containers) == 2
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "flagged batches excluded" in legend
    assert any("multimodal" in t for t in legend)
    kept_x = np.asarray(ax.containers[0].lines[0].get_xdata(), dtype=float)
    np.testing.assert_allclose(np.sort(kept_x), np.sort(s["estimate_ns"]))
    plots.close(fig)


def test_forest_plot_with_separate_clean_summary(campaign):
    kept = stats.summarize(campaign, **FAST)
    clean = stats.summarize(campaign, exclude_flagged=True, **FAST)
    fig = plots.forest_plot(kept, clean)
    assert len(fig.axes[0].containers) == 2
    only = plots.forest_plot(kept)
    assert len(only.axes[0].containers) == 1
    with pytest.raises(ValueError, match="at least one condition"):
        plots.forest_plot(kept.iloc[0:0])


def test_ratio_forest_plot_log_scale_and_line_at_one(campaign):
    t = stats.ratio_table(campaign, baseline="native", **FAST)
    fig = plots.ratio_forest_plot(t)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    vlines = [ln for ln in ax.get_lines() if np.allclose(ln.get_xdata(), 1.0)]
    assert vlines, "no vertical line at ratio 1"
    lo, hi = ax.get_xlim()
    assert lo < 1 < hi and hi > t["ci_high"].max()
    assert "native" in ax.get_xlabel()


def test_sweep_plot_draws_runs_and_fit():
    parts = []
    for i, n in enumerate((1, 2, 4, 8)):
        d = sim.simulate_samples(sim.Scenario(median_ns=1000 + 40 * n, n_runs=4, n_batches=8), i)
        d["params_json"] = f'{{"nprocs": {n}}}'
        parts.append(d)
    fit = stats.sweep_fit(pd.concat(parts), "nprocs", **FAST)
    fig = plots.sweep_plot(fit)
    ax = fig.axes[0]
    assert ax.collections[0].get_offsets().shape[0] == 16        # one point per run
    line = ax.get_lines()[0]
    assert line.get_ydata()[0] == pytest.approx(fit.intercept_ns + fit.slope_ns * 1)
    assert fit.verdict in ax.get_title()


@pytest.mark.slow  # integration: writes every figure / regenerates from all data (> 1 s)
def test_saved_figures_are_named_by_the_analysis_and_show_something(tmp_path, campaign):
    from osbench_analysis.report.pdf_check import figure_is_blank

    fig = plots.forest_plot(stats.flag_sensitivity(campaign, **FAST))
    paths = plots.save_figure(fig, tmp_path / "out", "per_op_forest")
    assert [p.name for p in paths] == ["per_op_forest.pdf", "per_op_forest.png"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert not figure_is_blank(paths[1])
    empty = Figure()
    empty.add_subplot().set_axis_off()
    assert figure_is_blank(plots.save_figure(empty, tmp_path / "out", "empty", formats=("png",))[0])


def test_one_primitive_across_hosts_shows_each_host_with_its_interval():
    from osbench_analysis.plots import hosts as plots_hosts

    parts = []
    for i, (host, median) in enumerate((("lab1", 500.0), ("lab2", 1500.0), ("lab3", 900.0))):
        s = sim.simulate_samples(sim.Scenario(family="lognormal", probe="null_syscall", environment="native",
                                              campaign_id=f"c-{host}", median_ns=median, n_runs=5,
                                              n_batches=12), i)
        parts.append(stats.summarize(s, **FAST).assign(host=host))
    est = pd.concat(parts, ignore_index=True)
    fig = plots_hosts.primitive_across_hosts(est, "null_syscall", "", est["placement"].iloc[0])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert sorted(labels) == ["lab1", "lab2", "lab3"]   # one environment: the host alone names a row
    xs = np.concatenate([np.asarray(c.lines[0].get_xdata(), dtype=float) for c in ax.containers])
    assert np.allclose(sorted(xs), sorted(est["estimate_ns"]))
    # the slow host is drawn where its estimate is: about 3x the first
    assert 2.0 < xs.max() / xs.min() < 4.5
    with pytest.raises(ValueError, match="no estimate of 'fork_exit'.*null_syscall"):
        plots_hosts.primitive_across_hosts(est, "fork_exit")


@pytest.mark.slow  # over 0.4 s (three figures drawn, two processes forked): the full suite runs it
def test_figures_saved_aside_are_the_bytes_saved_in_place_and_a_failed_one_is_said(tmp_path):
    import os

    from matplotlib.lines import Line2D

    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.plot([1, 2, 3], [3, 1, 2], marker="o", label="runs")
    ax.set_yscale("log")
    ax.legend()
    here = plots.save_figure(fig, tmp_path / "here", "f")
    with plots.saving_aside():
        aside = plots.save_figure(fig, tmp_path / "aside", "f")
        if len(os.sched_getaffinity(0)) > 1:
            assert plots._ASIDE["children"], "with a spare CPU the figure is drawn by a forked process"
    assert [p.read_bytes() for p in aside] == [p.read_bytes() for p in here]
    assert not plots._ASIDE["children"] and not plots._ASIDE["on"]

    class Broken(Line2D):
        def draw(self, renderer):
            raise ValueError("cannot draw this line")

    ax.add_line(Broken([0, 1], [1, 2]))
    if len(os.sched_getaffinity(0)) > 1:
        with pytest.raises(RuntimeError, match="a figure could not be written"):
            with plots.saving_aside():
                plots.save_figure(fig, tmp_path / "broken", "f", formats=("png",))
    assert not plots._ASIDE["children"] and not plots._ASIDE["on"]
