"""The scalability sweeps (scalability.tex, Section sec:scalability): a sentence per fitted sweep, the slope
table and the figure."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from osbench_analysis.catalog.families import print_name
from osbench_analysis.formatting import percent_tex, sig3, tex_escape
from osbench_analysis.report.sections.common import MAIN_PLACEMENT, _table, _time, placement_words


#: What each swept probe does and what grows, in words: (the operation, one unit, the units).
SWEEP_WORDS = {
    "fork_alive": ("creating and reaping a process", "process", "processes alive"),
    "mmap_window_maps": ("mapping and unmapping a 4~KiB window", "window", "windows mapped"),
    "socket_bind_open": ("opening, binding and closing a socket", "socket", "sockets open"),
    "thread_create_alive": ("creating and joining a thread", "thread", "threads alive"),
    "fork_exit": ("fork + exit", "MB", "MB touched in the parent"),
    "ctxsw_ring": ("a lap of a token ring", "process", "processes in the ring"),
    "files_in_folder": ("creating and removing a file", "file", "files in the folder"),
}
#: McGarry's scalability figures, in his order (the registry's probes that mirror them).
MCGARRY_SWEEPS = ("fork_alive", "mmap_window_maps", "socket_bind_open", "thread_create_alive")


def _sweep_order(probe: str) -> tuple:
    return (MCGARRY_SWEEPS.index(probe) if probe in MCGARRY_SWEEPS else len(MCGARRY_SWEEPS), probe)


def _slope_ns(v: float) -> str:
    return sig3(v).replace("-", "$-$")


#: Sweeps whose operation is a round of the swept units (registry units: a round of `files` files, a lap of
#: `processes` context switches): their change is quoted per unit, what one file or one switch costs.
PER_UNIT_SWEEPS = {"files_in_folder": "file", "ctxsw_ring": "context switch"}


@dataclass(frozen=True)
class SweepChange:
    """A sweep's fitted change from its first point to its last, per operation or (PER_UNIT_SWEEPS) per unit."""
    rel: float
    low: float
    high: float
    per: str            # '' per operation, else the unit
    verdict: str
    x0: float
    x1: float


def sweep_change(r, fit) -> SweepChange:
    """The fit's relative change over the range (sweeps.sweep_table row ``r``); for a probe whose operation is a
    round of x units, the change of the time per unit: (1 + g) x0 / x1 - 1, its interval the same transform of
    the growth's, and a verdict by the fit's tolerance."""
    xs = sorted(fit.points["x"].unique())
    x0, x1 = float(xs[0]), float(xs[-1])
    unit = PER_UNIT_SWEEPS.get(r.probe, "")
    if not unit or x0 <= 0:
        return SweepChange(r.growth_rel, r.growth_ci_low, r.growth_ci_high, "", r.verdict, x0, x1)
    f = x0 / x1
    rel, lo, hi = ((1 + g) * f - 1 for g in (r.growth_rel, r.growth_ci_low, r.growth_ci_high))
    tol = fit.tolerance_rel
    verdict = ("constant" if -tol <= lo and hi <= tol else "growth" if lo > 0 else "decreasing" if hi < 0
               else "inconclusive")
    return SweepChange(rel, lo, hi, unit, f"{verdict} per {unit}", x0, x1)


def _growth(c: SweepChange) -> str:
    """The change with its interval in percent, '+49.6 [22.5, 76.7]', or from 100% on as a factor,
    '51.9$\\times$ [48.4, 55.3]'."""
    if c.rel >= 1:
        return f"{sig3(1 + c.rel)}$\\times$ [{sig3(1 + c.low)}, {sig3(1 + c.high)}]"
    return f"{100 * c.rel:+.1f} [{100 * c.low:.1f}, {100 * c.high:.1f}]".replace("-", "$-$")


def _sweep_sentence(r, fit) -> str:
    """'Creating and reaping a process grows: 60.1 µs with 0 processes alive, +20.5% [16.8, 24.2] at 1000' from
    one fitted sweep (its slope is in the table); per file or per context switch where the operation is a round
    of them."""
    what, one, many = SWEEP_WORDS.get(r.probe, (print_name(r.probe), tex_escape(r.x), tex_escape(r.x)))
    c = sweep_change(r, fit)
    t0 = fit.intercept_ns + fit.slope_ns * c.x0
    change = _growth(c)
    change = change if c.rel >= 1 else change.replace(" [", "\\% [", 1)
    if c.per:
        verb = {"constant": "stays constant", "growth": "grows", "decreasing": "falls"}.get(
            c.verdict.split(" per ")[0], "changes by an amount these runs cannot settle")
        return (f"Per {c.per}, {what} ({_time(t0)} for {c.x0:g} {many}, {_time(t0 / c.x0)} per {c.per}) {verb}: "
                f"{change} at {c.x1:g}")
    verb = {"constant": "stays constant", "linear growth": "grows", "decreasing": "gets cheaper"}.get(
        r.verdict, "changes by an amount these runs cannot settle")
    return f"{what[0].upper() + what[1:]} {verb}: {_time(t0)} with {c.x0:g} {many}, {change} at {c.x1:g}"


def scalability_tex(result, heading: bool = True) -> str:
    """The sweeps (sweeps.fit_sweeps): a sentence per sweep from its fit, the slope table and the figure; ''
    when no sweep was measured at two or more points."""
    t = result.sweeps if result.sweep_fits else pd.DataFrame()
    if t.empty:
        return ""          # no sweep measured beyond its first point: the paper has no scalability section
    lvl = percent_tex(result.settings.level)
    head = "\\subsection{Scalability}\\label{sec:scalability}\n" if heading else ""
    fits = {k[:3]: f for k, f in result.sweep_fits.items()}
    t = t.assign(_o=[_sweep_order(p) for p in t["probe"]], _p=[p != MAIN_PLACEMENT for p in t["placement"]])
    t = t.sort_values(["_o", "environment", "_p", "placement"])
    refs = getattr(result, "sweep_campaigns", None) or []
    if refs:
        where = ("from " + ("campaign " if len(refs) == 1 else "campaigns ")
                 + ", ".join(tex_escape(r.campaign_id) for r in refs)
                 + ", measured for the sweeps alone")
    else:
        where = "from the campaigns above"
    n_runs = sorted({int(f.n_runs / max(f.n_levels, 1)) for f in fits.values()})
    runs = f"{n_runs[0]}" if len(n_runs) == 1 else f"{n_runs[0]}--{n_runs[-1]}"
    mc = [p for p in MCGARRY_SWEEPS if p in set(t["probe"])]
    intro = ("Each sweep measures one primitive while the system holds more of something"
             + (" (McGarry's scalability tests: " + ", ".join(SWEEP_WORDS[p][2] for p in mc) + ")" if mc else "")
             + f", {where}, with about {runs} runs at each point; Table~\\ref{{tab:sweeps}} gives the least-squares "
             f"slope of the time per operation with its {lvl} interval and the fitted change over the swept range, "
             "Figure~\\ref{fig:sweeps} every run. A sweep is called constant when the interval of that change lies "
             "within $\\pm$" + percent_tex(next(iter(fits.values())).tolerance_rel) + ", growing when the slope's "
             "interval excludes zero.")
    main = t[t["placement"].isin([MAIN_PLACEMENT, ""])]
    main = pd.concat([main, t[~t["probe"].isin(main["probe"])]]).drop_duplicates(["probe", "environment"])
    main = main.assign(_o=[_sweep_order(p) for p in main["probe"]]).sort_values(["_o", "environment"])
    sentences = [_sweep_sentence(r, fits[(r.probe, r.environment, r.placement)])
                 + (f" ({tex_escape(r.environment)})" if r.environment != result.settings.baseline else "")
                 for r in main.itertuples()]
    text = (intro + (" Sweeps of two processes are quoted with both on one CPU." if len(t) > len(main) else "") + " "
            + " ".join(f"{x}." for x in sentences))
    rows = [f"{print_name(r.probe)} & {tex_escape(SWEEP_WORDS.get(r.probe, ('', '', r.x))[2])} & "
            f"{placement_words(r.placement)} & "
            f"{', '.join(f'{x:g}' for x in sorted(fits[(r.probe, r.environment, r.placement)].points['x'].unique()))} & "
            f"{_slope_ns(r.slope_ns)} [{_slope_ns(r.slope_ci_low_ns)}, {_slope_ns(r.slope_ci_high_ns)}] & "
            + (lambda c: _growth(c) + (r"$^\dagger$" if c.per else "") + f" & {tex_escape(c.verdict)} \\\\")(
                sweep_change(r, fits[(r.probe, r.environment, r.placement)])) for r in t.itertuples()]
    return head + "\n".join([
        # a campaign id breaks only at its hyphens: the paragraph stretches its spaces instead of overrunning
        "\\begin{sloppypar}" + text + "\\end{sloppypar}",
        _table("lllrrrl", rf"Probe & Swept & Placement & Points & Slope, ns per unit [{lvl} CI] & Change over the "
               rf"range, \% [{lvl} CI] & Verdict", rows,
               "Scalability sweeps: ordinary least squares over the runs' median times, Welch interval on the slope "
               "and, by the delta method, on the fitted relative change from the first point to the last (from "
               "100\\% on, as a factor)"
               + ("; $^\\dagger$: per " + " or per ".join(sorted({PER_UNIT_SWEEPS[p] for p in t["probe"]
                                                                   if p in PER_UNIT_SWEEPS}))
                  + ", the probe's operation being a round of them" if t["probe"].isin(list(PER_UNIT_SWEEPS)).any()
                  else "") + ".",
               "tab:sweeps", size=r"\scriptsize"),
        r"\begin{figure}[tbp]", r"\centering", r"\includegraphics[width=\linewidth]{generated/sweeps_paper}",
        f"\\caption{{Scalability sweeps: the median time per operation of every run against the swept quantity "
        f"and the least-squares line, per placement.}}", r"\label{fig:sweeps}", r"\end{figure}", ""])
