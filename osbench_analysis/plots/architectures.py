"""The paper's central figure: per primitive measured here, what each kernel
environment costs relative to native Linux (filled markers with their
confidence intervals, one colour and shape per environment), beside the
factors the published studies found between microkernel or hybrid systems and
monolithic ones for the same primitive (hollow grey markers, other hardware
and eras), on one logarithmic axis.

Only primitives measured here are rows (the published-only ones are in the
appendix tables); within a row our environments come first, the published
points below them.  Environments differ in colour (Okabe-Ito, safe for colour
blindness) and marker shape, so the figure also reads in greyscale.  Rows are
grouped by family (families.py) and ordered by cost.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from osbench_analysis.catalog.families import family_rank, primitive_family

#: How each environment is named in a legend (fallback: its registry name).
ENV_LABELS = {
    "gvisor": "gVisor, systrap (user-space kernel)",
    "gvisor-ptrace": "gVisor, ptrace (user-space kernel)",
    "gvisor-gofer": "gVisor with gofer file server",
    "uml": "User-mode Linux (hosted kernel)",
    "fuse": "FUSE passthrough (user-space file server)",
    "fuse-nocache": "FUSE passthrough, no cache",
}
#: Short names for prose and table headers.
ENV_SHORT = {"gvisor": "gVisor", "gvisor-ptrace": "gVisor (ptrace)", "gvisor-gofer": "gVisor (gofer)",
             "uml": "User-mode Linux", "fuse": "FUSE", "fuse-nocache": "FUSE (no cache)"}
_ENV_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">"]
#: Okabe-Ito colours, one per environment (distinguishable in colour-blind vision and at print size).
_ENV_COLOURS = ["#0072B2", "#56B4E9", "#009E73", "#D55E00", "#CC79A7", "#E69F00", "#000000", "#F0E442"]
_PUB_MARKERS = {"microkernel": "o", "hybrid": "^", "user-space-kernel": "s", "monolithic": "d"}
PUBLISHED_GREY = "0.45"


def env_label(name: str) -> str:
    return ENV_LABELS.get(name, name)


def env_short(name: str) -> str:
    return ENV_SHORT.get(name, name)


def _subjects(part: pd.DataFrame) -> str:
    names = sorted({str(p).split(" vs ")[0] for p in part["pair"]})
    return ", ".join(names)


def _row_order(measured: pd.DataFrame, published: pd.DataFrame) -> list[str]:
    """The rows: the primitives measured here (all published ones when nothing is measured)."""
    cost = {}
    if measured.empty:
        for prim, g in published.groupby("primitive"):
            cost[prim] = float(np.median(g["slowdown_factor"]))
    for prim, g in measured.groupby("primitive"):
        cost[prim] = max(cost.get(prim, 0.0), float(g["ratio"].max()))
    # top of the figure = first family, cheapest first within a family
    return sorted(cost, key=lambda p: (family_rank(primitive_family(p)), cost[p]))


def _row_label(primitive: str, measured: pd.DataFrame) -> str:
    """A row as the tables name it: the print name of the probe measured for the primitive ('fork + exit'),
    else the primitive's name without underscores."""
    from osbench_analysis.catalog.families import plain_name

    if "probe" in measured and len(measured):
        probes = measured.loc[measured["primitive"] == primitive, "probe"]
        if len(probes):
            return plain_name(str(probes.iloc[0]))
    return primitive.replace("_", " ")


#: The legend's words for a published kind of system (the figure's x axis names the monolithic side).
_PUB_WORDS = {"microkernel": "microkernel", "hybrid": "hybrid"}


def plot_architectures(measured: pd.DataFrame, published: pd.DataFrame, *, baseline: str = "native",
                       width: float = 6.5, row_in: float = 0.14) -> Figure:
    """measured: reference_compare.environment_ratios rows (one placement, default
    variants); published: reference_compare.architecture_ratios rows.  Drawn at the text's width, each
    row ``row_in`` inches tall, the legend in columns below the axis, so that it prints at 9 pt."""
    if measured.empty and published.empty:
        raise ValueError("plot_architectures needs measured environment ratios or published factors")
    rows = _row_order(measured, published)
    # one header line per family above its primitives; the first line is at the top
    lines: list[tuple[str, str]] = []
    for i, p in enumerate(rows):
        if i == 0 or primitive_family(rows[i - 1]) != primitive_family(p):
            lines.append(("family", primitive_family(p)))
        lines.append(("", p))
    y = {name: len(lines) - 1 - i for i, (kind, name) in enumerate(lines) if kind == ""}
    published = published[published["primitive"].isin(rows)]
    envs = list(dict.fromkeys(measured["environment"])) if len(measured) else []
    n_handles = len(envs) + published["subject_arch"].nunique()
    legend_rows = -(-n_handles // 3)
    fig = Figure(figsize=(width, row_in * len(lines) + 0.55 + 0.2 * legend_rows), layout="constrained")
    ax = fig.add_subplot()
    handles = []
    n_env = max(len(envs), 1)
    for i, env in enumerate(envs):
        part = measured[measured["environment"] == env]
        marker = _ENV_MARKERS[i % len(_ENV_MARKERS)]
        colour = _ENV_COLOURS[i % len(_ENV_COLOURS)]
        off = 0.42 - 0.5 * i / n_env          # our environments first (top of the row), in legend order
        ys = np.array([y[p] for p in part["primitive"]]) + off
        err = np.vstack([part["ratio"] - part["ratio_low"], part["ratio_high"] - part["ratio"]])
        ax.errorbar(part["ratio"], ys, xerr=np.nan_to_num(err.clip(min=0)), fmt=marker, color=colour,
                    ms=4.5, lw=1.1, capsize=1.5)
        handles.append(Line2D([], [], marker=marker, color=colour, ls="-", lw=1.1, ms=4.5,
                              label=env_short(env)))
    rng = np.random.default_rng(0)     # jitter only separates overlapping published points
    for arch, part in published.groupby("subject_arch", sort=True):
        marker = _PUB_MARKERS.get(arch, "d")
        ys = np.array([y[p] for p in part["primitive"]]) - 0.3 + rng.uniform(-0.06, 0.06, len(part))
        ax.scatter(part["slowdown_factor"], ys, marker=marker, facecolors="none", edgecolors=PUBLISHED_GREY,
                   s=18, lw=0.9)
        handles.append(Line2D([], [], marker=marker, ls="none", mfc="none", mec=PUBLISHED_GREY, ms=4.5,
                              label=f"published: {_PUB_WORDS.get(arch, arch)} ({_subjects(part)})"))
    ax.axvline(1.0, color="0.6", lw=0.8, ls="--")
    ax.set_xscale("log")
    ticks = [len(lines) - 1 - i for i in range(len(lines))]
    ax.set_yticks(ticks, [name if kind == "family" else _row_label(name, measured) for kind, name in lines],
                  fontsize=9)
    ax.grid(axis="x", which="major", color="0.9", lw=0.6)
    for label, (kind, _) in zip(ax.get_yticklabels(), lines):
        if kind == "family":
            label.set_fontweight("bold")
    ax.tick_params(axis="x", labelsize=9)
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(-0.6, len(lines) - 0.4)
    for i, (kind, _) in enumerate(lines):
        if kind == "family" and i:
            ax.axhline(len(lines) - 1 - i + 0.5, color="0.8", lw=0.6)
    ax.set_xlabel(f"time over {baseline} Linux, or over the monolithic system (×, log scale)", fontsize=9)
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=9, frameon=False,
               handletextpad=0.4, columnspacing=1.2)
    return fig
