"""What a newcomer sees in the notebooks fits a screen (issue 30): the estimate table in a 1,200 px
column, figures no taller than about 900 px without their axis repeated along the top, at least three
labelled ticks on every numeric axis, published series distinct from ours and from each other.  The
figures are the ones the notebooks draw, from this checkout's campaigns."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from osbench_analysis import formatting
from osbench_analysis.plots import screen

#: characters a 1,200 px notebook column holds in a table row (JupyterLab's 13 px table font, about
#: 7.5 px a character, and about 1.5 characters of padding per column)
COLUMN_CHARS = 150


def row_chars(table: pd.DataFrame) -> int:
    """The widest a row of the table reads, in characters: each column as wide as its header or its widest
    cell, plus padding; a column formatting.show lets wrap counts at its wrapping width."""
    widths = []
    for c in table.columns:
        # a column formatting.show lets wrap reads as wide as its widest unbreakable piece
        wraps = c in formatting._NARROW_WRAP
        cells = max((max(map(len, v.split(" "))) if wraps else len(v) for v in map(str, table[c])), default=0)
        widths.append(max(len(str(c)), int(cells)))
    return sum(widths) + 2 * len(widths)


def numeric_axes(fig):
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if screen.is_numeric(axis) and screen.shows_labels(axis):
                yield ax, name, axis


def labelled(axis, draw: bool = True) -> list[str]:
    """The tick labels a reader sees on the axis (draw=False: its figure was drawn since it last changed)."""
    if draw:
        axis.figure.draw_without_rendering()
    lo, hi = sorted(axis.get_view_interval())
    out = []
    for which, locs in (("major", axis.get_majorticklocs()), ("minor", axis.get_minorticklocs())):
        for loc, label in zip(locs, axis.get_ticklabels(which=which)):
            if lo <= loc <= hi and label.get_visible() and label.get_text().strip():
                out.append(label.get_text())
    return out


def top_labels(ax, draw: bool = True) -> list[str]:
    """The x tick labels shown along the top of an axes."""
    if draw:
        ax.figure.draw_without_rendering()
    return [t.label2.get_text() for t in ax.xaxis.get_major_ticks() if t.label2.get_visible() and t.label2.get_text()]


def assert_reads_on_screen(name: str, fig) -> None:
    tall = screen.height_px(fig) > screen.MAX_SCREEN_PX
    fig.draw_without_rendering()     # once: reading the ticks changes nothing, every axis is read from this draw
    for ax, which, axis in numeric_axes(fig):
        shown = labelled(axis, draw=False)
        assert len(shown) >= 3, f"{name}: the {which} axis labels {shown}"
        if tall and which == "x":
            assert len(top_labels(ax, draw=False)) >= 3, f"{name}: {screen.height_px(fig):.0f} px tall, no x axis along its top"


def test_a_narrow_log_axis_gets_three_labelled_ticks():
    from osbench_analysis.plots import forest as plots

    t = pd.DataFrame(dict(environment=["native", "gvisor"], probe=["a", "a"], variant=["", ""],
                          placement=["same_cpu"] * 2, ratio=[1.21, 1.26], ci_low=[1.2, 1.22], ci_high=[1.24, 1.3]))
    fig = plots.environment_forest(t, value="ratio", low="ci_low", high="ci_high", xlabel="r", title="t")
    assert len(labelled(fig.axes[0].xaxis)) >= 3


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_tall_forest_repeats_its_axis_along_the_top_and_a_short_one_does_not():
    from osbench_analysis.plots import forest as plots

    def forest(n):
        return plots.environment_forest(pd.DataFrame(dict(
            environment=["native"] * n, probe=[f"p{i:02d}" for i in range(n)], variant=[""] * n,
            placement=["same_cpu"] * n, estimate_ns=np.geomspace(10, 1e6, n), ci_low_ns=np.geomspace(9, 9e5, n),
            ci_high_ns=np.geomspace(11, 1.1e6, n))), value="estimate_ns", low="ci_low_ns", high="ci_high_ns",
            xlabel="x", title="t")
    tall, short = forest(60), forest(5)
    assert screen.height_px(tall) > screen.MAX_SCREEN_PX and len(top_labels(tall.axes[0])) >= 3
    assert screen.height_px(short) < screen.MAX_SCREEN_PX and top_labels(short.axes[0]) == []


@pytest.fixture(scope="module")
def notebook_figures(committed_root):
    """name -> Figure: what analyze.ipynb, explore.ipynb and reference_comparisons.ipynb draw on the
    committed campaigns (a copy, the notebooks' default root)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OSBENCH_DATA_DIR", str(committed_root))
        return _notebook_figures()


def _notebook_figures():
    import matplotlib

    matplotlib.use("Agg")
    from osbench_analysis import analysis, explore
    from osbench_analysis.analysis import microkernel
    from osbench_analysis.plots import microkernel as plots_microkernel
    from osbench_analysis.report import reference_compare

    result = analysis.analyze(n_resamples=300)
    figs = dict(result.screen_figures())
    guests, _ = microkernel.from_campaigns()
    if len(guests):
        figs["microkernel"] = plots_microkernel.plot_microkernel(guests, screen=True)
    s = explore.samples("pipe_pingpong", placement="same_cpu", environments=["native", "gvisor"])
    figs["runs"] = explore.plot_runs(s)
    _, ref = reference_compare.reference_outputs(result, None, screen=True)
    figs.update({f"reference_{k}": v for k, v in ref.items() if v is not None})
    return figs, result


@pytest.mark.slow
def test_every_notebook_figure_reads_on_a_screen(notebook_figures):
    figs, _ = notebook_figures
    assert len(figs) >= 10
    for name, fig in figs.items():
        assert_reads_on_screen(name, fig)


@pytest.mark.slow
def test_published_series_are_hollow_distinct_and_ours_filled(notebook_figures):
    from matplotlib.collections import PathCollection
    from matplotlib.colors import to_rgba

    figs, _ = notebook_figures
    for name in ("reference_architecture_ratios", "reference_ours_vs_published"):
        ax = figs[name].axes[0]
        published = [c for c in ax.collections if isinstance(c, PathCollection) and c.get_label().startswith("published")]
        assert len(published) >= 2, name
        styles = set()
        for c in published:
            assert (c.get_facecolor()[:, 3] == 0).all() if len(c.get_facecolor()) else True, f"{name}: {c.get_label()} filled"
            edge = tuple(np.round(c.get_edgecolor()[0], 3))
            styles.add((edge, c.get_paths()[0].vertices.round(3).tobytes()))
        assert len(styles) == len(published), f"{name}: two published series look alike"
        ours = [c.lines[0] for c in ax.containers if c.get_label().startswith("this machine")]
        assert ours and all(to_rgba(line.get_markerfacecolor())[3] == 1 for line in ours), name
        ours_colours = {tuple(np.round(to_rgba(line.get_markerfacecolor()), 3)) for line in ours}
        assert not ours_colours & {e for e, _ in styles}, f"{name}: a published series wears one of our colours"


@pytest.mark.slow
def test_the_estimate_table_fits_a_notebook_column(notebook_figures):
    _, result = notebook_figures
    t = result.table()
    assert list(t.columns[:5]) == ["probe", "variant", "placement", "time", "interval"][:5] or \
        list(t.columns[:4]) == ["probe", "placement", "time", "interval"]
    assert row_chars(t) <= COLUMN_CHARS, {c: int(t[c].astype(str).str.len().max()) for c in t.columns}
    full = result.table(full=True)
    assert {"estimate_ns", "ci_low_ns", "ci_high_ns", "warning", "campaign_id"} <= set(full.columns)
