"""The figure "Linux across versions", in the manner of LEBench's (Ren et al., SOSP'19, Figure 1): one row
per primitive, one column per kernel version, each cell the primitive's count relative to the oldest
version (a diverging shade: darker red slower, blue faster, white unchanged, the ratio printed in the
cell); default mitigations on the left, mitigations=off on the right.  Counts are guest instructions
(QEMU TCG -icount), never time."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from osbench_analysis.catalog.guests import UNIT

PANELS = (("default", "default mitigations"), ("off", "mitigations=off"))


def _grid(hist: pd.DataFrame, mitigations: str, rows: list[str], cols: list[str]) -> np.ndarray:
    h = hist[hist["mitigations"] == mitigations]
    g = h.pivot_table(index="condition", columns="version", values="relative", aggfunc="first")
    return g.reindex(index=rows, columns=cols).to_numpy(float)


def plot_history(hist: pd.DataFrame, order: list[str] | None = None, compact: bool = False,
                 labels: dict[str, str] | None = None) -> Figure:
    """`hist`: analysis.versions.history; `order`: the versions, oldest first (default: as they come).
    `compact`: the paper's size (a text width, its fonts readable at print size: no digit in the cells);
    `labels`: condition -> its name on the axis (default the condition)."""
    cols = order or list(dict.fromkeys(hist["version"]))
    rows = sorted(set(hist["condition"]))
    grids = [_grid(hist, m, rows, cols) for m, _ in PANELS]
    finite = np.concatenate([g[np.isfinite(g)] for g in grids]) if rows else np.array([1.0])
    span = max(float(np.nanmax(np.abs(np.log2(finite)))) if finite.size else 0.1, 0.1)
    norm = TwoSlopeNorm(vmin=-span, vcenter=0.0, vmax=span)
    size = ((7.0, 0.15 * max(len(rows), 4) + 1.2) if compact else
            (2.2 + 1.1 * len(cols), 0.34 * max(len(rows), 4) + 1.6))
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    image = None
    for ax, (mit, title), g in zip(axes, PANELS, grids):
        image = ax.imshow(np.log2(g), cmap="RdBu_r", norm=norm, aspect="auto")
        for i in range(len(rows)):
            for j in range(len(cols)):
                if np.isfinite(g[i, j]) and not compact:
                    ax.text(j, i, f"{g[i, j]:.2f}", ha="center", va="center", fontsize=6.5,
                            color="white" if abs(np.log2(g[i, j])) > 0.6 * span else "black")
        ax.set_xticks(range(len(cols)), cols, rotation=90, fontsize=7)
        ax.set_yticks(range(len(rows)), [(labels or {}).get(r, r) for r in rows], fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("Linux version (Debian)", fontsize=8)
    if image is not None:
        bar = fig.colorbar(image, ax=list(axes), shrink=0.8)
        # whole powers of two where the span reaches them (0.5, 1, 2, ...), else its two ends
        ticks = (np.arange(-np.floor(span), np.floor(span) + 1) if span >= 1 else np.array([-span, 0.0, span]))
        bar.set_ticks(ticks, labels=[f"{2 ** t:.3g}" for t in ticks])
        bar.set_label(f"{UNIT} relative to {cols[0] if cols else 'the oldest'}", fontsize=8)
    return fig
