"""What makes a figure read on a notebook screen, applied to every figure the
notebooks draw: at least three labelled ticks on each numeric axis (a log axis
spanning less than a decade had one or none), and on a figure taller than a
screen shows at once, its x axis repeated along the top, so that the top rows
are read against a scale too."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FixedFormatter, FixedLocator, FuncFormatter, MaxNLocator, NullFormatter

#: the notebook's inline resolution (matplotlib's figure.dpi, which matplotlib-inline keeps) and the height a
#: figure may have before its top rows are read with the x axis off-screen (a 1,000 px window less JupyterLab's bars)
SCREEN_DPI = 100
MAX_SCREEN_PX = 900
MIN_TICKS = 3


def height_px(fig: Figure, dpi: float = SCREEN_DPI) -> float:
    return float(fig.get_size_inches()[1] * dpi)


def labelled_ticks(axis) -> list[str]:
    """The tick labels an axis shows within its view (major and minor, non-empty)."""
    lo, hi = sorted(axis.get_view_interval())
    span = (hi - lo) * 1e-9
    out = []
    for locator, formatter in ((axis.get_major_locator(), axis.get_major_formatter()),
                               (axis.get_minor_locator(), axis.get_minor_formatter())):
        locs = [v for v in locator() if lo - span <= v <= hi + span]
        formatter.set_locs(locs)
        out += [t for t in (formatter(v, i) for i, v in enumerate(locs)) if str(t).strip()]
    return out


def is_numeric(axis) -> bool:
    """False for an axis of named rows or columns: set_yticks(positions, labels) gives it a FixedFormatter,
    or (matplotlib >= 3.8 with a FixedLocator) a FuncFormatter reading the labels from a dict."""
    f = axis.get_major_formatter()
    inner = getattr(getattr(f, "func", None), "func", None)      # functools.partial(Axis._format_with_dict, ...)
    named = isinstance(f, FuncFormatter) and getattr(inner, "__name__", "") == "_format_with_dict"
    return not (isinstance(f, FixedFormatter) or named)


def shows_labels(axis) -> bool:
    """False for an axis whose labels a shared neighbour shows (sharey: only the first panel labels)."""
    ticks = axis.get_major_ticks()
    return bool(ticks) and any(t.label1.get_visible() or t.label2.get_visible() for t in ticks[:1])


def tick_values(lo: float, hi: float, log: bool) -> list[float]:
    """At least MIN_TICKS round values within [lo, hi]: on a log axis the decades, else 1-2-5 of each decade,
    else every integer multiple; failing those (or on a linear axis), MaxNLocator's round steps."""
    if log and lo > 0:
        decades = range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)
        for subs in ((1,), (1, 2, 5), tuple(range(1, 10))):
            vals = [m * 10.0 ** d for d in decades for m in subs if lo <= m * 10.0 ** d <= hi]
            if len(vals) >= MIN_TICKS:
                return vals
    for n in (4, 6, 9):
        vals = [v for v in MaxNLocator(nbins=n, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi) if lo <= v <= hi]
        if len(vals) >= MIN_TICKS:
            return vals
    return list(np.linspace(lo, hi, MIN_TICKS))


def ensure_ticks(axis) -> None:
    """Give a numeric axis at least MIN_TICKS labelled ticks, in its own formatter's words."""
    if not is_numeric(axis) or not shows_labels(axis) or len(labelled_ticks(axis)) >= MIN_TICKS:
        return
    lo, hi = sorted(axis.get_view_interval())
    formatter = axis.get_major_formatter()
    axis.set_major_locator(FixedLocator(tick_values(lo, hi, axis.get_scale() == "log")))
    axis.set_major_formatter(formatter)
    axis.set_minor_formatter(NullFormatter())


def for_screen(fig: Figure, *, dpi: float = SCREEN_DPI, max_px: float = MAX_SCREEN_PX) -> Figure:
    """Apply both rules to every visible axes of fig; returns fig."""
    tall = height_px(fig, dpi) > max_px
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        ensure_ticks(ax.xaxis)
        ensure_ticks(ax.yaxis)
        if tall and is_numeric(ax.xaxis):
            ax.tick_params(axis="x", which="both", top=True, labeltop=True)
    return fig
