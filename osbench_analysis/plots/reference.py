"""Figures of the reference comparisons (matplotlib/seaborn; work headless under Agg and inline in notebooks)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

ARCH_COLOURS = {"monolithic": "#4c72b0", "microkernel": "#c44e52", "hybrid": "#dd8452", "user-space-kernel": "#8172b3"}

#: published series are hollow (our measurements are filled, edged in black), each in a deep colour and a
#: marker of its own: a series tells itself from the others by both, and from ours by the fill
#: hues our environments never wear first (black, grey, olive, brown), then seaborn's dark ones; markers
#: our native circle and gvisor square are not, first
_PUBLISHED_MARKERS = ("^", "v", "<", ">", "p", "h", "*", "d", "X", "P", "s", "o")
_PUBLISHED_HUES = (None, 7, 8, 5, 4, 3, 2, 1, 9, 0, 6)


def published_styles(names) -> dict:
    """name -> (colour, marker), distinct for every published series (up to 11 by colour and marker)."""
    dark = sns.color_palette("dark", 10)
    colours = [(0.1, 0.1, 0.1) if h is None else dark[h] for h in _PUBLISHED_HUES]
    return {n: (colours[i % len(colours)], _PUBLISHED_MARKERS[i % len(_PUBLISHED_MARKERS)])
            for i, n in enumerate(names)}


def plot_architecture_ratios(arch: pd.DataFrame, env: pd.DataFrame | None = None, *,
                             exclude_primitives: tuple[str, ...] = (),
                             distinct_environments: bool = False) -> Figure:
    """Slowdown of microkernel/hybrid systems over monolithic ones per primitive (log x), one colour per
    published pair; this machine's environment ratios on the same rows, as black diamonds (print-safe,
    the paper's) or, with ``distinct_environments``, each environment in its own colour and marker
    (plots.environment_styles), larger and edged in black so they stand out from the published dots."""
    arch = arch[~arch["primitive"].isin(exclude_primitives)]
    env = env if env is not None and not env.empty else None
    prims = list(arch.groupby("primitive")["slowdown_factor"].median().sort_values().index)
    if env is not None:
        prims += [p for p in env["primitive"].unique() if p not in prims]
    y = {p: i for i, p in enumerate(prims)}
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(prims) + 1.8))
    plt.close(fig)  # the caller shows or saves it; closing keeps pyplot from showing it twice or accumulating
    pairs = list(dict.fromkeys(arch["pair"]))  # first-seen order keeps sources together in the legend
    styles = published_styles(pairs)
    rng = np.random.default_rng(0)  # jitter only spreads overlapping markers
    for pair in pairs:
        part = arch[arch["pair"] == pair]
        colour, marker = styles[pair]
        ax.scatter(part["slowdown_factor"], [y[p] + rng.uniform(-0.18, 0.18) for p in part["primitive"]],
                   s=30, marker=marker, facecolors="none", edgecolors=colour, linewidths=1.3,
                   label=f"published: {pair}")
    if env is not None:
        from osbench_analysis.plots.forest import environment_styles

        styles = environment_styles(env["environment"])
        groups = list(env.groupby(["environment", "baseline_environment"]))
        for k, ((environment, base), part) in enumerate(groups):
            err = np.vstack([part["ratio"] - part["ratio_low"], part["ratio_high"] - part["ratio"]])
            colour, marker = styles[environment] if distinct_environments else ("black", "D")
            # on screen the environments are spread a little on their row, so that none hides another
            off = (k - (len(groups) - 1) / 2) * 0.5 / max(len(groups), 1) if distinct_environments else 0.0
            ax.errorbar(part["ratio"], [y[p] + off for p in part["primitive"]], xerr=np.nan_to_num(err.clip(min=0)),
                        fmt=marker, color=colour, mec="black" if distinct_environments else colour, ms=6 if distinct_environments else 5,
                        lw=1, label=f"this machine: {environment} vs {base}")
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yticks(range(len(prims)), prims)
    ax.set_xlabel("slowdown factor (subject cost / monolithic baseline cost; >1: subject slower)")
    ax.set_title("Microkernel/hybrid vs monolithic per primitive, pairs each source names as fair")
    return _finish(fig, ax, distinct_environments)


def plot_ours_vs_published(side: pd.DataFrame, *, distinct_environments: bool = False) -> Figure | None:
    """Published µs per operation for each mapped probe (colour = architecture class) with this machine's
    estimates (black, with interval) on the same log axis.  Different hardware and eras.  With
    ``distinct_environments`` (on screen) each of our environments has its own colour and marker
    (plots.environment_styles), edged in black and spread a little on its row, so that a row's seven
    environments are not seven identical diamonds."""
    if side.empty:
        return None
    probes = sorted(side["probe"].unique())
    y = {p: i for i, p in enumerate(probes)}
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(probes) + 1.8))
    plt.close(fig)
    pub = side.drop_duplicates(["source_id", "table_id", "metric_id", "system_id", "probe"])
    rng = np.random.default_rng(0)
    arch_styles = published_styles(sorted(pub["arch_class"].unique()))
    for arch, part in pub.groupby("arch_class"):
        colour, marker = arch_styles[arch]
        ax.scatter(part["published_us_per_op"] / part["our_ops_per_published_op"],
                   [y[p] + rng.uniform(-0.2, 0.2) for p in part["probe"]], s=30, marker=marker,
                   facecolors="none", edgecolors=colour, linewidths=1.3,
                   label=f"published ({arch}), per our operation")
    ours = side.dropna(subset=["our_us_per_published_op"]).drop_duplicates(["probe", "campaign_id", "variant", "placement"])
    if not ours.empty:
        per_op = ours["our_us_per_published_op"] / ours["our_ops_per_published_op"]
        lo = ours["our_ci_low_us"] / ours["our_ops_per_published_op"]
        hi = ours["our_ci_high_us"] / ours["our_ops_per_published_op"]
        err = np.nan_to_num(np.vstack([per_op - lo, hi - per_op]).clip(min=0))
        if not distinct_environments:
            ax.errorbar(per_op, [y[p] for p in ours["probe"]], xerr=err, fmt="D", color="black", ms=5, lw=1,
                        label="this machine (our estimates)")
        else:
            from osbench_analysis.plots.forest import KNOWN_ENVIRONMENTS, environment_styles

            styles = environment_styles(ours["environment"])
            envs = sorted(styles, key=lambda e: KNOWN_ENVIRONMENTS.index(e) if e in KNOWN_ENVIRONMENTS else 99)
            for k, env in enumerate(envs):
                m = (ours["environment"] == env).to_numpy()
                off = (k - (len(envs) - 1) / 2) * 0.6 / max(len(envs), 1)
                colour, marker = styles[env]
                ax.errorbar(per_op[m], [y[p] + off for p in ours["probe"][m]], xerr=err[:, m], fmt=marker,
                            color=colour, mec="black", ms=6, lw=1, label=f"this machine: {env}")
    ax.set_xscale("log")
    ax.set_yticks(range(len(probes)), probes)
    ax.set_xlabel("µs per operation of our probe (published values rescaled by our_ops_per_published_op)")
    ax.set_title("This machine beside published values: different hardware and eras, context only")
    return _finish(fig, ax, distinct_environments)


def _finish(fig: Figure, ax, on_screen: bool) -> Figure:
    """The legend beside the axes, the screen's ticks and repeated axis when on screen, a tight layout."""
    ax.legend(fontsize=8 if on_screen else 7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if on_screen:
        from osbench_analysis.plots import screen

        screen.for_screen(fig)
    fig.tight_layout()
    return fig
