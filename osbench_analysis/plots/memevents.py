"""The figure "the matched rows in memory terms" (analysis/memevents.py `matched`): per matched row and
kernel, left the footprint of one operation (distinct 64 B lines, with its 4 KiB pages written beside),
right the misses per operation (L1 + L2 + TLB) with the caches warm (filled marker) and emptied before the
operation (open marker), each on a logarithmic axis of its own.  From the guests' memory-system model:
counts of a stated geometry, not times."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from osbench_analysis.catalog.families import plain_name

#: one marker and grey per kernel column (print-safe)
STYLE = {"linux-tcg": ("s", "0.45"), "linux-tcg-nomitig": ("^", "0.65"), "linux-tcg-pti": ("v", "0.25"),
         "xen-linux": ("D", "0.55"), "mach": ("o", "0.0"), "sel4": ("P", "0.3"), "sel4-slowpath": ("X", "0.75")}


def _misses(tab: pd.DataFrame, mode: str) -> np.ndarray:
    cols = [f"{mode}:L1 misses", f"{mode}:L2 misses", f"{mode}:TLB misses"]
    if not all(c in tab for c in cols):
        return np.full(len(tab), np.nan)
    return tab[cols].astype("float64").sum(axis=1, min_count=3).to_numpy()


def plot_memory_matched(tab: pd.DataFrame) -> Figure:
    """`tab`: analysis.memevents.matched(); one line per (row, kernel entry)."""
    fig = Figure(figsize=(8.0, 0.32 * max(len(tab), 4) + 1.6))
    ax_f, ax_m = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(tab))[::-1]
    labels = [f"{t if len(t) <= 26 else t[:25] + '…'} · {lab}: {plain_name(p)}"
              for t, lab, p in zip(tab["title"], tab["label"], tab["probe"])]
    foot = tab["footprint lines"].astype("float64").to_numpy() if "footprint lines" in tab else np.full(len(tab), np.nan)
    pages = tab["footprint pages"].astype("float64").to_numpy() if "footprint pages" in tab else foot * np.nan
    warm, cold = _misses(tab, "warm"), _misses(tab, "polluted")
    seen = set()
    for i, env in enumerate(tab["environment"]):
        marker, grey = STYLE.get(env, ("o", "0.5"))
        label = None if env in seen else tab["label"].iloc[i]
        seen.add(env)
        if np.isfinite(foot[i]):
            ax_f.scatter(foot[i], y[i], marker=marker, color=grey, label=label)
            ax_f.annotate(f"{pages[i]:.0f} p", (foot[i], y[i]), xytext=(4, -3), textcoords="offset points", fontsize=6)
        if np.isfinite(warm[i]):
            ax_m.scatter(max(warm[i], 0.1), y[i], marker=marker, color=grey)
        if np.isfinite(cold[i]):
            ax_m.scatter(cold[i], y[i], marker=marker, facecolor="white", edgecolor=grey)
    for ax in (ax_f, ax_m):
        ax.set_xscale("log")
        ax.grid(axis="x", color="0.9", linewidth=0.5)
    ax_f.set_yticks(y, labels, fontsize=6)
    ax_f.set_xlabel("footprint: 64 B lines one operation touches (p: 4 KiB pages)", fontsize=7)
    ax_m.set_xlabel("misses per operation, L1 + L2 + TLB\n(filled: warm, 0 drawn at 0.1; open: caches emptied first)",
                    fontsize=7)
    ax_f.legend(fontsize=6, loc="lower right", frameon=False)
    fig.suptitle("The matched operations in memory terms (modelled: 32 KiB L1s, 1 MiB L2, 64-entry L1 TLBs; "
                 "no timing)", fontsize=8)
    fig.tight_layout()
    return fig


#: the events the round-trip figure draws: (matched() column suffix, marker, label); its L2 misses are the
#: footprint's lines emptied first and none warm, which the table prints
EVENTS = (("L1 misses", "o", "L1 (I + D)"), ("TLB misses", "^", "L1 TLBs (I + D)"))
#: the panels' titles
TITLES = {"null_entry": "null kernel entry", "rtt_spaces": "round trip, two address spaces",
          "rtt_threads": "round trip, one address space"}


def plot_round_trips(tab: pd.DataFrame) -> Figure:
    """`tab`: analysis.memevents.round_trips(); one panel per round trip (its row), one column of markers per
    kernel: L1 and TLB misses per operation, filled with the caches warm (below 0.1 drawn at 0.1), open with
    them emptied before the operation; a logarithmic axis."""
    rows = list(dict.fromkeys(tab["row"]))
    fig = Figure(figsize=(7.0, 1.6))
    axes = np.atleast_1d(fig.subplots(1, max(len(rows), 1), sharey=True))
    for ax, row in zip(axes, rows):
        part = tab[tab["row"] == row].reset_index(drop=True)
        x = np.arange(len(part))
        for k, (event, marker, label) in enumerate(EVENTS):
            dx = (k - 0.5) * 0.3
            for mode, filled in (("warm", True), ("polluted", False)):
                col = f"{mode}:{event}"
                if col not in part:
                    continue
                y = part[col].astype("float64").to_numpy()
                y = np.where(y < 0.1, 0.1, y) if filled else y
                ax.scatter(x + dx, y, marker=marker, s=16, color="0.15" if filled else "white", edgecolor="0.15",
                           linewidth=0.7, label=f"{label}, {'warm' if filled else 'emptied first'}")
        ax.set_xticks(x, [str(v).replace(", ", "\n").replace(" on ", "\non ").replace("GNU ", "GNU\n") for v in part["label"]], fontsize=6.5)
        ax.set_title(TITLES.get(row, row), fontsize=8)
        ax.set_yscale("log")
        ax.grid(axis="y", color="0.9", linewidth=0.5)
        ax.tick_params(axis="y", labelsize=7)
    axes[0].set_ylabel("misses / op.", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, 0.02), frameon=False)
    fig.tight_layout()
    return fig


def plot_counts_to_time(tab: pd.DataFrame) -> Figure:
    """`tab`: analysis.counts_to_time.table(); per primitive the native ns (x) against two predictions (y):
    the bare count at the median ns per instruction (open) and the stated cost model (filled), with the
    diagonal where a prediction is exact."""
    fig = Figure(figsize=(5.2, 4.4))
    ax = fig.subplots()
    x = tab["native_ns"].astype("float64").to_numpy()
    ax.scatter(x, tab["count_ns"], marker="o", facecolor="white", edgecolor="0.4",
               label="instructions x median ns per instruction")
    ax.scatter(x, tab["modelled_ns"], marker="s", color="0.1", label="cost model: instructions, misses, entries")
    for xi, yi, name in zip(x, tab["modelled_ns"], tab["probe"]):
        ax.annotate(name, (xi, yi), xytext=(3, 2), textcoords="offset points", fontsize=6)
    lo = float(np.nanmin([x.min(), tab["count_ns"].min(), tab["modelled_ns"].min()])) / 2
    hi = float(np.nanmax([x.max(), tab["count_ns"].max(), tab["modelled_ns"].max()])) * 2
    ax.plot([lo, hi], [lo, hi], color="0.7", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured natively on the host (ns per operation)", fontsize=8)
    ax.set_ylabel("predicted from linux-tcg's counts (ns per operation)", fontsize=8)
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    fig.tight_layout()
    return fig
