"""The figure "microkernel and monolithic kernel on one emulated CPU": per
GNU Mach primitive and its Linux counterpart, guest instructions per
operation for both kernels (left, one logarithmic axis of its own: never the
host environments' nanoseconds) and their ratio Linux / Mach (right).
Markers are the median over boots; bars the range of the boots' medians;
an exact (deterministic) count has no bar and a filled marker."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from osbench_analysis.catalog.guests import UNIT

KERNELS = (("mach", "GNU Mach (microkernel)", "o", "0.0"), ("linux", "Linux (monolithic)", "s", "0.45"),
           ("linux_nomitig", "Linux, mitigations=off", "^", "0.7"))


def plot_microkernel(tab: pd.DataFrame, *, screen: bool = False) -> Figure:
    """The paper's figure (print-safe: grey shades and markers); ``screen``: sized for
    a notebook, each kernel in the colour and marker its environment has in every
    other figure (plots.environment_styles), legible type."""
    if screen:
        return _plot_screen(tab)
    fig = Figure(figsize=(7.5, 0.45 * max(len(tab), 3) + 1.4))
    ax, ax_r = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 1.2]})
    y = np.arange(len(tab))[::-1]
    labels = _pair_labels(tab)
    for k, (prefix, label, marker, colour), med, lo, hi in _measured_kernels(tab):
        exact = tab[f"{prefix}_exact"].astype(bool).to_numpy()
        yy = y + (0.22 * (1 - k))
        err = np.vstack([med - lo, hi - med])
        err[:, exact] = 0
        ax.errorbar(med, yy, xerr=err, fmt="none", ecolor=colour, elinewidth=1, capsize=2)
        if exact.any():
            ax.scatter(med[exact], yy[exact], marker=marker, color=colour,
                       label=f"{label}: exact (every boot the same)")
        if (~exact & np.isfinite(med)).any():
            ax.scatter(med[~exact], yy[~exact], marker=marker, facecolor="white", edgecolor=colour,
                       label=f"{label}: median over boots [range]")
    ax.set_xscale("log")
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel(UNIT + "\n(QEMU TCG -icount shift=0; not time)", fontsize=8)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.6, -0.16), ncol=1, frameon=False)
    ratio = tab["ratio"].to_numpy(float)
    ok = np.isfinite(ratio)
    err = np.vstack([ratio - tab["ratio_lo"].to_numpy(float), tab["ratio_hi"].to_numpy(float) - ratio])
    ax_r.errorbar(ratio[ok], y[ok], xerr=err[:, ok], fmt="o", color="0.0", ms=4, capsize=2)
    ax_r.axvline(1.0, color="0.6", lw=0.8, ls="--")
    ax_r.set_xscale("log")
    ax_r.set_xlabel("Linux / Mach\n(instructions)", fontsize=8)
    fig.suptitle("Microkernel and monolithic kernel on one emulated CPU", fontsize=9)
    fig.tight_layout()
    return fig


def _pair_labels(tab: pd.DataFrame) -> list[str]:
    from osbench_analysis.catalog.families import plain_text, print_condition

    return [f"{plain_text(print_condition(m))}  vs  {plain_text(print_condition(lx))}"
            for m, lx in zip(tab["mach_probe"], tab["linux_probe"])]


def _measured_kernels(tab: pd.DataFrame):
    """(k, KERNELS[k], median, low, high) for each kernel the table has counts of."""
    for k, kernel in enumerate(KERNELS):
        med = tab[f"{kernel[0]}_median"].to_numpy(float)
        if np.isfinite(med).any():
            yield k, kernel, med, tab[f"{kernel[0]}_lo"].to_numpy(float), tab[f"{kernel[0]}_hi"].to_numpy(float)


def _plot_screen(tab: pd.DataFrame) -> Figure:
    from osbench_analysis.catalog.guests import LINUX, LINUX_NOMITIG, MACH
    from osbench_analysis.plots.forest import environment_styles

    env = {"mach": MACH, "linux": LINUX, "linux_nomitig": LINUX_NOMITIG}
    styles = environment_styles(env.values())
    fig = Figure(figsize=(11.0, 0.55 * max(len(tab), 3) + 1.8), layout="constrained")
    ax, ax_r = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 1.2]})
    y = np.arange(len(tab))[::-1].astype(float)
    labels = _pair_labels(tab)
    for k, (prefix, label, _, _), med, lo, hi in _measured_kernels(tab):
        colour, marker = styles[env[prefix]]
        ax.errorbar(med, y + 0.22 * (1 - k), xerr=np.nan_to_num(np.vstack([med - lo, hi - med]).clip(min=0)),
                    fmt=marker, color=colour, mec="white", mew=0.5, ms=7, capsize=2.5, lw=1.2,
                    label=f"{label} ({env[prefix]})")
    ax.set_xscale("log")
    ax.set_yticks(y, labels, fontsize=10)
    ax.set_xlabel(f"{UNIT}\n(log scale; QEMU TCG -icount: not time)")
    ax.grid(axis="x", which="both", alpha=0.25)
    ratio = tab["ratio"].to_numpy(float)
    ok = np.isfinite(ratio)
    err = np.vstack([ratio - tab["ratio_lo"].to_numpy(float), tab["ratio_hi"].to_numpy(float) - ratio])
    ax_r.errorbar(ratio[ok], y[ok], xerr=np.nan_to_num(err[:, ok]).clip(min=0), fmt="D", color="black", ms=6,
                  capsize=2.5)
    ax_r.axvline(1.0, color="0.5", lw=0.8, ls="--")
    ax_r.set_xscale("log")
    ax_r.xaxis.set_major_formatter(lambda v, _: f"{v:g}x")
    ax_r.set_xlabel("Linux / Mach instructions\n(> 1: Linux runs more)")
    ax_r.grid(axis="x", which="both", alpha=0.25)
    fig.legend(loc="outside lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle("GNU Mach (microkernel) and Linux (monolithic) on one emulated CPU: guest instructions per "
                 "operation, median over boots [range]", fontsize=11)
    from osbench_analysis.plots import screen

    return screen.for_screen(fig)


#: each kernel design's look in the matched figure (print-safe: grey shades and markers)
DESIGN_STYLE = {"linux": ("s", "0.45"), "xen": ("D", "0.25"), "mach": ("o", "0.0"), "sel4": ("^", "0.6")}


def plot_matched(tab: pd.DataFrame) -> Figure:
    """The four designs' matched primitives (analysis.kernels.matched): one line per row and entry, a marker
    per environment at its median count over boots (filled: exact; hollow with a bar: the boots' range),
    on one logarithmic axis of guest instructions; analogs are labelled so, absent cells left out."""
    from osbench_analysis.catalog.families import plain_name
    from osbench_analysis.catalog.matched import COLUMN_LABELS

    shown = tab[tab["absent"].eq("") & (tab["boots"].astype(float) > 0)]
    # a reader's names on the axis: the row, then the kernel's operation for it (never a probe identifier)
    shown = shown.assign(label=[plain_name(p) for p in shown["probe"]])
    # one heading line per matched row (its title), then one line per kernel's operation for it
    lines, pos_of = [], {}
    for (title,), part in shown.groupby(["title"], sort=False):
        lines.append(("head", title))
        for lab in dict.fromkeys(part["label"]):
            pos_of[(title, lab)] = len(lines)
            lines.append(("entry", lab))
    n = len(lines)
    fig = Figure(figsize=(7.0, 0.19 * max(n, 6) + 1.3))
    ax = fig.subplots()
    envs = list(dict.fromkeys(shown["environment"]))
    for k, env in enumerate(envs):
        part = shown[shown["environment"] == env]
        design = part["design"].iloc[0]
        marker, colour = DESIGN_STYLE.get(design, ("x", "0.3"))
        y = np.array([n - 1 - pos_of[(t, lab)] for t, lab in zip(part["title"], part["label"])], dtype=float)
        y += 0.5 * (k / max(len(envs) - 1, 1) - 0.5)
        med = part["median"].to_numpy(float)
        exact = part["exact"].astype(bool).to_numpy()
        err = np.vstack([med - part["lo"].to_numpy(float), part["hi"].to_numpy(float) - med]).clip(min=0)
        err[:, exact] = 0
        ax.errorbar(med, y, xerr=err, fmt="none", ecolor=colour, elinewidth=0.8, capsize=1.5)
        hollow = env.endswith(("nomitig", "slowpath"))
        ax.scatter(med, y, marker=marker, s=24, facecolor="white" if hollow else colour, edgecolor=colour,
                   label=COLUMN_LABELS.get(env, env))
    ticks = [n - 1 - i for i in range(n)]
    ax.set_yticks(ticks, [text for _, text in lines], fontsize=7)
    for tick, (kind, _) in zip(ax.get_yticklabels(), lines):
        if kind == "head":
            tick.set_fontweight("bold")
    for i, (kind, _) in enumerate(lines):
        if kind == "head" and i:
            ax.axhline(n - 1 - i + 0.5, color="0.8", lw=0.6)
    ax.set_xscale("log")
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xlabel(UNIT + " (QEMU TCG -icount shift=0; not time)", fontsize=8)
    ax.grid(axis="x", which="both", alpha=0.2)
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    ax.set_title("Four kernel designs on one emulated CPU: matched primitives", fontsize=9, pad=28)
    fig.tight_layout()
    return fig
