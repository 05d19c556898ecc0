"""Figures of the statistics engine: forest plots of per-op times and ratios, sweeps.

Every function returns a matplotlib Figure built without pyplot's global
state (``matplotlib.figure.Figure``), so it works under the Agg backend, in
scripts, tests and notebooks alike (``display(fig)`` in Jupyter).  Save with
:func:`save_figure` and a name from :func:`figure_name`, so that file names
say what a figure shows.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import LogLocator, NullFormatter

from osbench_analysis import formatting
from osbench_analysis.plots import screen
from osbench_analysis.stats import SweepFit
from osbench_analysis.stats.quote import MEAN_OVER_RUNS

_PALETTE = sns.color_palette("colorblind")
_KEPT, _CLEAN, _SAME, _DIFF = _PALETTE[0], _PALETTE[1], _PALETTE[7], _PALETTE[3]
_SLOW_DASH = (0, (1.5, 1.0))


_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h", "8", "p", "p", "*")

#: Every registered environment's own colour and marker (environments/__init__.py's order), so an
#: environment looks the same in every figure of every notebook, whatever else is drawn beside it.
#: Colours from the colorblind palette: the host environments drawn together (the gVisor platforms,
#: UML, the FUSE pair) get clearly different hues; the emulated guests, only ever drawn with each other
#: (guest instructions, never ns), reuse strong ones with markers of their own (Linux without
#: mitigations a lighter blue than Linux); the pale grey, yellow and pink are left for other names.
KNOWN_ENVIRONMENTS = ("native", "gvisor", "gvisor-ptrace", "gvisor-gofer", "uml", "fuse", "fuse-nocache",
                      "mach", "linux-tcg", "linux-tcg-nomitig", "linux-tcg-pti", "sel4", "sel4-slowpath",
                      "xen-linux")
#: (seL4 with and without its fastpath: one marker, two hues; Linux on Xen: a star; Linux under PTI: Linux's
#: blue, an octagon)
_COLOUR_ORDER = (0, 3, 2, 4, 1, 5, 9, 2, 0, 9, 0, 3, 1, 4)
_SPARE_COLOURS = (7, 6, 8)


def environment_styles(environments) -> dict[str, tuple[tuple, str]]:
    """environment -> (colour, marker), distinct per environment: a registered
    environment always gets its own (KNOWN_ENVIRONMENTS), any other name (an
    environment with its campaign, when one has several) the next pair no name of
    this selection has, in the order given: first the spare colours no registered
    environment wears (grey, pink, yellow), so that it does not look like one."""
    envs = list(dict.fromkeys(str(e) for e in environments))
    palette = sns.color_palette("colorblind", 10)
    pairs = [(palette[c], m) for c, m in zip(_COLOUR_ORDER, _MARKERS)]
    fixed = {e: pairs[KNOWN_ENVIRONMENTS.index(e)] for e in envs if e in KNOWN_ENVIRONMENTS}
    taken = set(fixed.values())
    spare = [(palette[c], m) for c, m in zip(_SPARE_COLOURS, _MARKERS[3:])]
    free = [p for p in [*spare, *pairs] if p not in taken] or pairs
    # more names than pairs: colours and markers cycle with different periods, so pairs still differ
    free += [(palette[_COLOUR_ORDER[i % 10]], _MARKERS[(i + i // 10) % 10]) for i in range(len(envs))]
    others = iter(free)
    return {e: fixed[e] if e in fixed else next(others) for e in envs}


def _condition_label(row: pd.Series, with_env: bool) -> str:
    parts = [str(row.get("probe", ""))]
    if row.get("variant"):
        parts.append(f"[{row['variant']}]")
    if row.get("placement"):
        parts.append(str(row["placement"]))
    if with_env and row.get("environment"):
        parts.append(f"({row['environment']})")
    return " ".join(parts)


def _fig(n_rows: int, width: float = 6.5) -> tuple[Figure, object]:
    fig = Figure(figsize=(width, 0.34 * max(n_rows, 1) + 1.4), layout="constrained")
    return fig, fig.add_subplot()


def forest_plot(summary: pd.DataFrame, clean: pd.DataFrame | None = None, *,
                title: str | None = None) -> Figure:
    """Per-op time with CI, one row per condition, log x axis.

    ``summary``: output of ``stats.summarize`` (flagged batches kept), or of
    ``stats.flag_sensitivity`` (then the *_clean columns are used).
    ``clean``: optionally ``summarize(..., exclude_flagged=True)``; drawn as
    hollow diamonds just below each row so a reader sees whether excluding
    flagged batches moves anything.  Multimodal conditions get a warning mark.
    """
    if summary.empty:
        raise ValueError("forest_plot needs at least one condition (summary is empty)")
    s = summary.reset_index(drop=True)
    if clean is None and "estimate_clean_ns" in s.columns:
        clean = s.rename(columns={"estimate_clean_ns": "_e", "ci_low_clean_ns": "_l",
                                  "ci_high_clean_ns": "_h"})[["_e", "_l", "_h"]].set_axis(
            ["estimate_ns", "ci_low_ns", "ci_high_ns"], axis=1)
    elif clean is not None:
        keys = [k for k in ("campaign_id", "environment", "probe", "variant", "placement")
                if k in s.columns and k in clean.columns]
        clean = s[keys].merge(clean, on=keys, how="left")[["estimate_ns", "ci_low_ns", "ci_high_ns"]]
    with_env = "environment" in s.columns and s["environment"].nunique() > 1
    labels = [_condition_label(r, with_env) for _, r in s.iterrows()]
    fig, ax = _fig(len(s))
    y = np.arange(len(s))[::-1].astype(float)
    err = np.vstack([s["estimate_ns"] - s["ci_low_ns"], s["ci_high_ns"] - s["estimate_ns"]])
    ax.errorbar(s["estimate_ns"], y, xerr=np.clip(np.nan_to_num(err), 0, None), fmt="o", color=_KEPT,
                ms=5, capsize=2.5, lw=1.3, label="flagged batches kept")
    handles = [Line2D([], [], color=_KEPT, marker="o", lw=1.3, label="flagged batches kept")]
    if clean is not None:
        errc = np.vstack([clean["estimate_ns"] - clean["ci_low_ns"],
                          clean["ci_high_ns"] - clean["estimate_ns"]])
        ax.errorbar(clean["estimate_ns"], y - 0.28, xerr=np.clip(np.nan_to_num(errc), 0, None), fmt="D",
                    mfc="white", color=_CLEAN, ms=4, capsize=2, lw=1.0)
        handles.append(Line2D([], [], color=_CLEAN, marker="D", mfc="white", lw=1.0,
                              label="flagged batches excluded"))
    if "multimodal" in s.columns and s["multimodal"].fillna(False).astype(bool).any():
        mm = s["multimodal"].fillna(False).astype(bool).to_numpy()
        ax.scatter(s.loc[mm, "ci_high_ns"] * 1.15, y[mm], marker="$!$", s=60, color=_DIFF)
        handles.append(Line2D([], [], color=_DIFF, marker="$!$", lw=0, ms=8,
                              label="multimodal: pin, don't average"))
    if "warning" in s.columns and (s["warning"].fillna("").astype(str) != "").any():
        # a slow minority the runs cannot yet include, or too few runs: the mark says so on the row
        wr = (s["warning"].fillna("").astype(str) != "").to_numpy()
        labels = [f"{lab} \u2020" if w else lab for lab, w in zip(labels, wr)]
        handles.append(Line2D([], [], color="black", marker="$\u2020$", lw=0, ms=7,
                              label="\u2020 warning: runs needed, or too few runs"))
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10))
    ax.set_xlabel("time per operation (ns, log scale)")
    level = s["level"].iloc[0] if "level" in s.columns else math.nan
    methods = list(dict.fromkeys(s["ci_method"])) if "ci_method" in s.columns else []
    if "quoted" in s.columns and s["quoted"].nunique() > 1:
        # two estimands side by side: say which rows quote the mean over runs
        labels = [f"{lab} (m)" if q == MEAN_OVER_RUNS else lab for lab, q in zip(labels, s["quoted"])]
        handles.append(Line2D([], [], lw=0, label="(m): mean over runs; others: typical run"))
    ax.set_yticks(y, labels)
    ax.set_title(title or f"Per-operation time, {level:.0%} CI ({', '.join(methods)})", fontsize=10)
    ax.grid(axis="x", which="both", alpha=0.25)
    # below the axes, so it never hides a row
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 2), fontsize=9, frameon=False)
    ax.set_ylim(-0.8, len(s) - 0.4)
    return fig


def ratio_forest_plot(table: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Ratios to the baseline with CIs (``stats.ratio_table`` output), log scale.

    A vertical line marks 1 (no difference); ratios whose CI excludes 1 are
    coloured, the others grey.  Each tick is labelled like "1.9x".
    """
    t = table.dropna(subset=["ratio"]).reset_index(drop=True)
    if t.empty:
        raise ValueError("ratio_forest_plot needs at least one finite ratio")
    by = next((c for c in ("environment", "campaign_id") if c in t.columns), None)
    labels = [f"{_condition_label(r, False)}: {r[by]}" if by else _condition_label(r, False)
              for _, r in t.iterrows()]
    fig, ax = _fig(len(t))
    y = np.arange(len(t))[::-1].astype(float)
    diff = t["different"].astype(bool).to_numpy()
    for mask, color in ((diff, _DIFF), (~diff, _SAME)):
        if mask.any():
            err = np.vstack([t.loc[mask, "ratio"] - t.loc[mask, "ci_low"],
                             t.loc[mask, "ci_high"] - t.loc[mask, "ratio"]])
            ax.errorbar(t.loc[mask, "ratio"], y[mask], xerr=np.clip(err, 0, None), fmt="o", color=color,
                        ms=5, capsize=2.5, lw=1.3)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xscale("log")
    lo = float(min(t["ci_low"].min(), 1.0))
    hi = float(max(t["ci_high"].max(), 1.0))
    ax.set_xlim(lo / 1.3, hi * 1.3)
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:g}x")
    ax.set_yticks(y, labels)
    base = t["baseline"].iloc[0] if "baseline" in t.columns else "baseline"
    level = t["level"].iloc[0] if "level" in t.columns else math.nan
    ax.set_xlabel(f"per-op time relative to {base} (log scale; > 1 = slower)")
    ax.set_title(title or f"Ratio to {base}, {level:.0%} CI", fontsize=10)
    ax.grid(axis="x", which="both", alpha=0.25)
    fig.legend(handles=[Line2D([], [], color=_DIFF, marker="o", lw=1.3, label="CI excludes 1"),
                        Line2D([], [], color=_SAME, marker="o", lw=1.3, label="CI includes 1")],
               loc="outside lower center", ncol=2, fontsize=9, frameon=False)
    ax.set_ylim(-0.8, len(t) - 0.4)
    return fig


def sweep_plot(fit: SweepFit, *, title: str | None = None, xlabel: str | None = None) -> Figure:
    """Run-level per-op times against the swept variable with the fitted line.

    Points are runs (one worker each), the line is time = a + b x, and the
    legend carries the slope CI and the verdict (constant / linear growth).
    """
    pts = fit.points
    fig = Figure(figsize=(6.0, 4.0), layout="constrained")
    ax = fig.add_subplot()
    levels = np.unique(pts["x"])
    step = (levels.max() - levels.min()) / max(len(levels) - 1, 1)
    rng = np.random.default_rng(0)   # jitter only, fixed so figures are reproducible
    jit = rng.uniform(-0.08, 0.08, len(pts)) * step
    ax.scatter(pts["x"] + jit, pts["run_value_ns"], s=14, alpha=0.6, color=_KEPT, label="runs")
    xs = np.linspace(levels.min(), levels.max(), 100)
    ax.plot(xs, fit.intercept_ns + fit.slope_ns * xs, color=_DIFF, lw=1.5,
            label=(f"fit: {formatting.sig3_rounded(fit.slope_ns)} ns per unit "
                   f"[{formatting.sig3_rounded(fit.slope_ci_low_ns)}, {formatting.sig3_rounded(fit.slope_ci_high_ns)}]"))
    ax.set_xlabel(xlabel or fit.x)
    ax.set_ylabel("time per operation (ns)")
    ax.set_title(title or (f"{fit.verdict}: {fit.growth_rel:+.1%} over the range "
                           f"[{fit.growth_ci_low:+.1%}, {fit.growth_ci_high:+.1%}], "
                           f"{fit.level:.0%} CI"), fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.25)
    ax.legend(fontsize=9, frameon=False)
    return fig


def series_labels(t: pd.DataFrame) -> pd.Series:
    """What a point's colour stands for: the environment, with its campaign when an
    environment has several (two campaigns of one environment must not look alike)."""
    if "campaign_id" in t and (t.groupby("environment")["campaign_id"].nunique() > 1).any():
        return t["environment"].astype(str) + " " + t["campaign_id"].astype(str)
    return t["environment"].astype(str)


def _time_tick(ns: float, _pos=None) -> str:
    """An axis tick as a time, no trailing zeros: '100 ns', '1 µs', '10 ms'."""
    scale, unit = formatting.time_unit(ns)
    return f"{ns / scale:g} {'µs' if 'mu' in unit else unit}"


def environment_forest(table: pd.DataFrame, *, value: str, low: str, high: str, xlabel: str, title: str,
                       reference: float | None = None, styles: dict | None = None) -> Figure:
    """A forest sized for a screen: one row per condition (probe, variant, placement),
    one point with its interval per environment on that row, each environment in
    its own colour and marker (environment_styles), log x axis.  A row is as tall
    as the environments on it need (one line each), so seven environments on a row
    never overlap and a row of one stays compact.  ``reference``: a vertical line
    (1 for ratios).  ``styles``: environment_styles of the whole selection, so that
    an environment looks the same in every figure of it.  Times (``value`` in ns)
    read as times on the axis ("1 µs"), ratios as "10x"."""
    t = table.dropna(subset=[value]).reset_index(drop=True)
    if t.empty:
        raise ValueError(f"environment_forest needs at least one finite {value}")
    t = t.assign(_series=series_labels(t), _row=[_condition_label(r, False) for _, r in t.iterrows()])
    rows = list(dict.fromkeys(t.sort_values(["probe", "variant", "placement"], kind="stable")["_row"]))
    known = styles or {}
    styles = {**environment_styles([*known, *t["_series"]]), **known}
    order = {name: i for i, name in enumerate(styles)}
    series = sorted(dict.fromkeys(t["_series"]), key=order.get)   # the selection's order on every row and legend
    # y from the top: each row gets one line per environment on it, plus half a line above and below
    on_row = {r: [n for n in series if ((t["_row"] == r) & (t["_series"] == n)).any()] for r in rows}
    heights = [len(on_row[r]) + 1.0 for r in rows]
    total = float(sum(heights))
    tops = total - np.concatenate([[0.0], np.cumsum(heights)[:-1]])
    centre = {r: top - h / 2 for r, top, h in zip(rows, tops, heights)}
    line = 0.15   # inches per line: a marker and its interval with air around them
    fig = Figure(figsize=(10.0, line * total + 1.7), layout="constrained")
    ax = fig.add_subplot()
    for name in series:
        part = t[t["_series"] == name]
        y = np.array([centre[r] + (len(on_row[r]) - 1) / 2 - on_row[r].index(name) for r in part["_row"]],
                     dtype=float)
        err = np.vstack([part[value] - part[low], part[high] - part[value]])
        colour, marker = styles[name]
        ax.errorbar(part[value], y, xerr=np.clip(np.nan_to_num(err), 0, None), fmt=marker, color=colour, ms=6.5,
                    mec="white", mew=0.5, capsize=2.5, lw=1.3, label=name)
    if reference is not None:
        ax.axvline(reference, color="black", lw=0.8)
    for top in tops[1:]:    # separate the rows, so each point reads against its own label
        ax.axhline(top, color="0.8", lw=0.7)
    ax.set_xscale("log")
    tick = _time_tick if value.endswith("_ns") else (lambda v, _=None: f"{v:g}x")
    if value.endswith("_ns"):   # the ticks carry the unit now ("1 µs"), so the label need not say ns
        xlabel = xlabel.replace("(ns, log scale)", "(log scale)")
    ax.xaxis.set_major_formatter(tick)
    # within about a decade matplotlib labels the minor ticks too, in its own notation ('3x10^3'): over up to
    # about two decades they are labelled in ours (2, 3, 5 of each), over a wider range not at all (crowded)
    span = np.nanmax(t[high].to_numpy(dtype=float)) / np.nanmin(t[low].clip(lower=1e-12).to_numpy(dtype=float))

    def minor(v, _=None):   # 2, 3 and 5 of each decade: enough to read a value, never crowded
        return tick(v) if round(v / 10 ** np.floor(np.log10(v))) in (2, 3, 5) else ""
    ax.xaxis.set_minor_formatter(minor if np.isfinite(span) and span < 200 else NullFormatter())
    ax.set_yticks([centre[r] for r in rows], rows)
    ax.set_ylim(0, total)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=12)
    ax.grid(axis="x", which="major", alpha=0.35)
    ax.grid(axis="x", which="minor", alpha=0.12)
    ax.tick_params(axis="y", length=0)
    fig.legend(loc="outside right upper", fontsize=9, frameon=False, title="environment", markerscale=1.1)
    return screen.for_screen(fig)


def runs_plot(samples: pd.DataFrame, runs: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Every measured batch of one probe, one column per worker run and one panel
    per condition (environment / campaign / placement), log y axis.

    ``samples``: explore.samples(); ``runs``: explore.run_summary() of it.  Each
    run's median is a bar; a run of a clearly slower group has a dashed bar and
    "slow" under its number, flagged batches are hollow, so "do the runs agree?"
    can be seen as well as read.  Each environment has its colour and marker
    (environment_styles), as in every other figure.
    """
    keys = ["campaign_id", "environment", "variant", "placement"]
    conds = samples[keys].drop_duplicates().reset_index(drop=True)
    styles = environment_styles(conds["environment"])
    n = len(conds)
    ncol = min(n, 3)
    nrow = math.ceil(n / ncol)
    fig = Figure(figsize=(4.8 * ncol + 0.6, 3.4 * nrow + 0.9), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False)
    for ax, (_, c) in zip(axes.flat, conds.iterrows()):
        sel = (samples[keys] == c.to_numpy()).all(axis=1)
        g = samples[sel]
        rs = runs[(runs[keys] == c.to_numpy()).all(axis=1)].set_index("run")
        colour, marker = styles[c["environment"]]
        rng = np.random.default_rng(0)   # jitter only, fixed so the figure is reproducible
        x = g["run"].to_numpy() + rng.uniform(-0.18, 0.18, len(g))
        flagged = g["flagged"].to_numpy(dtype=bool) if "flagged" in g else np.zeros(len(g), bool)
        ax.scatter(x[~flagged], g["per_op_ns"].to_numpy()[~flagged], s=12, alpha=0.7, color=colour,
                   marker=marker, lw=0)
        ax.scatter(x[flagged], g["per_op_ns"].to_numpy()[flagged], s=14, facecolors="none", edgecolors=colour,
                   marker=marker, lw=0.8)
        # a slow run's bar is dashed and its axis label says "slow": every environment has a colour of its
        # own (environment_styles), so a colour could not mark slow runs without looking like one of them
        for run, r in rs.iterrows():
            ax.hlines(r["median_ns"], run - 0.36, run + 0.36, color="black", lw=2.4,
                      linestyles=_SLOW_DASH if r["slow"] else "solid")
        ax.set_yscale("log")
        # ticks read as times ("6.85 µs"), minor ones too: a run's spread is often within one decade
        ax.yaxis.set_major_formatter(lambda v, _: formatting.time_plain(v))
        ax.yaxis.set_minor_formatter(lambda v, _: formatting.time_plain(v))
        ax.tick_params(axis="y", which="minor", labelsize=7)
        ax.set_xticks(sorted(rs.index), [f"{run}\nslow" if rs.loc[run, "slow"] else str(run)
                                         for run in sorted(rs.index)])
        ax.set_xlabel("worker run")
        variant = f" [{c['variant']}]" if c["variant"] else ""
        ax.set_title(f"{c['environment']} {c['placement']}{variant}\n{c['campaign_id']}", fontsize=9)
        ax.grid(axis="y", which="both", alpha=0.25)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("time per operation (log scale)")
    fig.legend(handles=[Line2D([], [], color="black", lw=2, label="run median"),
                        Line2D([], [], color="black", lw=2.4, ls=_SLOW_DASH,
                               label="median of a run in a clearly slower group (\"slow\")"),
                        Line2D([], [], color="grey", marker="o", mfc="none", lw=0, label="flagged batch")],
               loc="outside lower center", ncol=3, fontsize=9, frameon=False)
    probe = samples["probe"].iloc[0] if len(samples) else ""
    fig.suptitle(title or f"{probe}: every measured batch, per worker run", fontsize=11)
    return screen.for_screen(fig)


# ------------------------------------------------------------------- files

def save_figure(fig: Figure, directory: str | Path, name: str, formats=("pdf", "png")) -> list[Path]:
    """Write fig as directory/name.<fmt> for each format (the one place figures
    are saved: the name is the file name Analysis.figures() gives); returns the paths.
    Inside :func:`saving_aside` the files are written by a forked copy of this process while this one
    goes on (they exist when the ``with`` block ends)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = [d / f"{name}.{fmt}" for fmt in formats]
    if _ASIDE["on"]:
        _aside(lambda: _write(fig, out))
    else:
        _write(fig, out)
    return out


def _write(fig: Figure, paths: list[Path]) -> None:
    for p in paths:
        # no creation date: the same data make the same bytes on any machine, any day (issue 37)
        fig.savefig(p, bbox_inches="tight", dpi=150, metadata={"CreationDate": None} if p.suffix == ".pdf" else None)


#: saving_aside's state: whether it is on, its children (pid -> what they write), how many at once
_ASIDE: dict = {"on": False, "children": {}, "at_once": 1}


def _aside(write) -> None:
    import os

    while len(_ASIDE["children"]) >= _ASIDE["at_once"]:
        _reap(block=True)
    pid = os.fork()
    if pid == 0:    # the child: draw, write, leave without running the parent's exit handlers
        code = 1
        try:
            import sys

            # a notebook kernel's streams go through threads a fork does not copy: the child writes to the fds
            sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
            write()
            code = 0
        except BaseException:   # noqa: BLE001 - the parent raises; the reason goes to stderr here
            import traceback

            os.write(2, traceback.format_exc().encode())
        finally:
            os._exit(code)
    _ASIDE["children"][pid] = write


def _reap(block: bool) -> None:
    """Wait for the oldest child (block), or collect those done; raise when one failed.  Only this
    module's own children are waited for (a waitpid(-1) would take subprocess.run's)."""
    import os

    failed = []
    for pid in list(_ASIDE["children"]):
        done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        if done:
            del _ASIDE["children"][pid]
            if os.waitstatus_to_exitcode(status) != 0:
                failed.append(pid)
        if block:
            break
    if failed:
        raise RuntimeError(f"a figure could not be written (process {failed[0]}: its error is above)")


class saving_aside:
    """``with saving_aside(): ...``: save_figure hands each figure to a forked copy of this process (one per
    spare CPU at a time) and returns at once, so that drawing the figures (half of `make paper`'s analysis)
    runs beside the next tables; the block ends when every file is written, and raises when one was not.
    The bytes are those of a plain save_figure: the child draws the very figure.  Without fork (not
    POSIX) or with one CPU, figures are saved in place."""

    def __enter__(self):
        import os

        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        self._was = _ASIDE["on"]
        _ASIDE["on"] = self._was or (hasattr(os, "fork") and cpus > 1)
        _ASIDE["at_once"] = max(1, cpus - 1)
        return self

    def __exit__(self, *exc):
        if not self._was:
            _ASIDE["on"] = False
            failed = None
            while _ASIDE["children"]:
                try:
                    _reap(block=True)
                except RuntimeError as e:
                    failed = failed or e
            if failed and exc[0] is None:
                raise failed
        return False


def close(fig: Figure) -> None:
    """Release a figure (works whether or not pyplot created it)."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    fig.clear()
