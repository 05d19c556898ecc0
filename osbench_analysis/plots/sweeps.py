"""Figures of the catalog's scalability sweeps (sweeps.fit_sweeps): one panel
per fitted sweep, runs as points and the fitted line with its slope CI.
Built without pyplot's global state, like plots.py; a single sweep's figure
is plots.sweep_plot."""
from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from osbench_analysis import formatting
from osbench_analysis.catalog import registry
from osbench_analysis.catalog.families import print_sweep_axis
from osbench_analysis.plots.architectures import env_short
from osbench_analysis.plots.forest import _DIFF, _KEPT
from osbench_analysis.stats import SweepFit


def sweeps_figure(fits: dict[tuple[str, str, str], SweepFit], *, columns: int = 2) -> Figure:
    """All sweeps side by side: per-op time of each run against the swept
    variable, the fitted line, and the slope with its CI in each title."""
    if not fits:
        raise ValueError("no sweep to plot: fit_sweeps found no probe measured at two or more sweep points")
    keys = sorted(fits)
    cols = min(columns, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[len(keys):]:
        ax.set_visible(False)
    for ax, key in zip(axes.flat, keys):
        probe, env, placement = key
        fit = fits[key]
        pts = fit.points
        ax.scatter(pts["x"], pts["run_value_ns"] / 1e3, s=12, alpha=0.6, color=_KEPT, label="runs")
        xs = np.linspace(pts["x"].min(), pts["x"].max(), 50)
        ax.plot(xs, (fit.intercept_ns + fit.slope_ns * xs) / 1e3, color=_DIFF, lw=1.4, label="OLS fit")
        unit = registry.PROBES[probe].unit if probe in registry.PROBES else probe
        ax.set_title(f"{probe} ({placement}{', ' + env if env else ''})\n"
                     f"slope {formatting.sig3_rounded(fit.slope_ns)} ns/{fit.x} [{formatting.sig3_rounded(fit.slope_ci_low_ns)}, "
                     f"{formatting.sig3_rounded(fit.slope_ci_high_ns)}], {fit.level:.0%} CI; {fit.verdict}", fontsize=8)
        ax.set_xlabel(print_sweep_axis(fit.x))
        ax.set_ylabel("µs per operation")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.25)
        ax.annotate(unit[:60], (0.01, 0.01), xycoords="axes fraction", fontsize=6, color="0.4")
    axes.flat[0].legend(fontsize=7, frameon=False)
    return fig


def paper_sweeps_figure(fits: dict[tuple, SweepFit], *, columns: int = 4, width_in: float = 6.3,
                        first: tuple[str, ...] = ()) -> Figure:
    """The paper's sweeps figure: one small panel per probe (and environment), every placement in it with its
    own colour and marker, each run a point and each fit a line; titles name the probe and the swept
    quantity (the slopes with their intervals are in the paper's table).  Sized for the text width."""
    from osbench_analysis.catalog.families import PRINT_NAMES
    from osbench_analysis.plots.forest import _PALETTE

    if not fits:
        raise ValueError("no sweep to plot: fit_sweeps found no probe measured at two or more sweep points")
    panels: dict[tuple, list] = {}
    for key in sorted(fits):
        probe, env, placement = key[:3]
        panels.setdefault((probe, env, *key[3:]), []).append((placement, fits[key]))
    # the probes named in `first` lead, in that order; the rest by name
    keys = sorted(panels, key=lambda k: (first.index(k[0]) if k[0] in first else len(first), k))
    cols = min(columns, len(keys))
    rows = math.ceil(len(keys) / cols)
    fig = Figure(figsize=(width_in, 1.45 * rows + 0.3), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[len(keys):]:
        ax.set_visible(False)
    style = {"same_cpu": (_PALETTE[0], "o", "one CPU"), "cross_cpu": (_PALETTE[3], "s", "two CPUs"),
             "unpinned": (_PALETTE[2], "^", "unpinned")}
    seen = {}
    for ax, key in zip(axes.flat, keys):
        probe = key[0]
        # each panel in the unit that suits its largest run (a round of 65534 files takes ms, a socket µs)
        top = max(float(fit.points["run_value_ns"].max()) for _, fit in panels[key])
        scale, unit = (1e6, "ms") if top >= 1e6 else (1e3, "µs")
        for placement, fit in panels[key]:
            colour, marker, label = style.get(placement, ("0.3", "D", placement))
            pts = fit.points
            ax.scatter(pts["x"], pts["run_value_ns"] / scale, s=7, alpha=0.55, color=colour, marker=marker, lw=0)
            xs = np.linspace(pts["x"].min(), pts["x"].max(), 50)
            line, = ax.plot(xs, (fit.intercept_ns + fit.slope_ns * xs) / scale, color=colour, lw=1.1, label=label)
            seen.setdefault(label, line)
        ax.set_ylabel(f"{unit} per op", fontsize=8)
        name = PRINT_NAMES.get(probe, probe).replace("\\_", "_")
        ax.set_title(name if len(key) < 2 or not key[1] or key[1] == "native" else f"{name} ({env_short(key[1])})",
                     fontsize=8)
        ax.set_xlabel(print_sweep_axis(panels[key][0][1].x), fontsize=8)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.25)
    if len(seen) > 1:
        fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=len(seen), fontsize=8,
                   frameon=False)
    return fig
