"""The scalability sweeps (scalability.tex, the appendix sec:scalability): what was measured at each point
of every sweep, the measured change from its first point to its last, and the least-squares slope named as
a fit; the table, the figure, and the measured values for the PDF check (sweep_points.csv)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from osbench_analysis import stats
from osbench_analysis.catalog.families import print_name, print_sweep_axis
from osbench_analysis.formatting import percent_tex, sig3, tex_escape, time_with_ci_tex
from osbench_analysis.report.sections.common import MAIN_PLACEMENT, _table, placement_words


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
#: Sweeps whose operation is a round of the swept units (registry units: a round of `files` files, a lap of
#: `processes` context switches): their times are quoted per unit, what one file or one switch costs.
PER_UNIT_SWEEPS = {"files_in_folder": "file", "ctxsw_ring": "context switch"}
#: The file the PDF check reads the measured sweep values from (pdf_check.fitted_as_measured).
POINTS_FILE = "sweep_points.csv"


def _sweep_order(probe: str) -> tuple:
    return (MCGARRY_SWEEPS.index(probe) if probe in MCGARRY_SWEEPS else len(MCGARRY_SWEEPS), probe)


def _slope_ns(v: float) -> str:
    return sig3(v).replace("-", "$-$")


@dataclass(frozen=True)
class SweepChange:
    """A sweep's measured change from its first point to its last (stats.measured_change), per operation or
    (PER_UNIT_SWEEPS) per unit, and its verdict by the tolerance."""
    rel: float
    low: float
    high: float
    per: str            # '' per operation, else the unit
    verdict: str        # 'constant', 'grows', 'falls' or 'not settled'
    x0: float
    x1: float


def sweep_change(r, fit) -> SweepChange:
    """The measured change over the sweep's range (no line involved): constant when its interval lies within
    the fit's tolerance, grows or falls when it excludes zero, else not settled."""
    xs = sorted(fit.points["x"].unique())
    unit = PER_UNIT_SWEEPS.get(r.probe, "")
    rel, lo, hi = stats.measured_change(fit, per_unit=bool(unit))
    tol = fit.tolerance_rel
    verdict = ("constant" if -tol <= lo and hi <= tol else "grows" if lo > 0 else "falls" if hi < 0
               else "not settled")
    return SweepChange(rel, lo, hi, unit, verdict, float(xs[0]), float(xs[-1]))


def _growth(c: SweepChange) -> str:
    """The change with its interval in percent, '+49.6\\% [22.5, 76.7]', or from 100% on as a factor,
    '51.9$\\times$ [48.4, 55.3]'."""
    if c.rel >= 1:
        return f"{sig3(1 + c.rel)}$\\times$ [{sig3(1 + c.low)}, {sig3(1 + c.high)}]"
    return f"{100 * c.rel:+.1f}\\% [{100 * c.low:.1f}, {100 * c.high:.1f}]".replace("-", "$-$")


def _points(fit, per_unit: bool) -> pd.DataFrame:
    return stats.sweep_points(fit, per_unit=per_unit)


def _point_tex(p) -> str:
    return time_with_ci_tex(p.estimate_ns, p.ci_low_ns, p.ci_high_ns)


def _sweep_sentence(r, fit) -> str:
    """'Creating and reaping a process took 84.7 [80.1, 89.6] µs with 0 processes alive and ... with 1000: it
    grows, +20.5% [16.8, 24.2] measured; the least-squares slope is 24.6 ns per process' -- every time a
    measured one, the line named as a fit."""
    what, one, many = SWEEP_WORDS.get(r.probe, (print_name(r.probe), "unit", print_sweep_axis(r.x)))
    c = sweep_change(r, fit)
    pts = _points(fit, bool(c.per))
    at = [f"{_point_tex(p)} with {p.x:g}" + (f" {many}" if i == 0 else "") for i, p in enumerate(pts.itertuples())]
    listed = ", ".join(at[:-1]) + " and " + at[-1] if len(at) > 1 else at[0]
    verb = {"constant": "stays constant", "grows": "grows", "falls": "falls"}.get(
        c.verdict, "changes by an amount these runs cannot settle")
    head = what[0].upper() + what[1:]
    if c.per:
        return (f"{head} took, per {c.per}, {listed}: the time per {c.per} {verb} from the first point to the last, "
                f"{_growth(c)} measured")
    return (f"{head} took {listed}: it {verb}, {_growth(c)} measured from the first point to the last; the "
            f"least-squares slope fitted over every run is {_slope_ns(r.slope_ns)} ns per {one}")


def sweep_points_table(result) -> pd.DataFrame:
    """Every measured point of every fitted sweep (stats.sweep_points), per operation and, for the sweeps whose
    operation is a round of units, per unit too: what the text may quote as measured."""
    rows = []
    for key, fit in sorted((getattr(result, "sweep_fits", None) or {}).items()):
        probe, env, placement = key[:3]
        for per_unit in ((False, True) if probe in PER_UNIT_SWEEPS else (False,)):
            p = _points(fit, per_unit).assign(probe=probe, environment=env, placement=placement, per_unit=per_unit)
            rows.append(p)
    cols = ["probe", "environment", "placement", "per_unit", "x", "n_runs", "estimate_ns", "ci_low_ns", "ci_high_ns"]
    return pd.concat(rows, ignore_index=True)[cols] if rows else pd.DataFrame(columns=cols)


def write_points(result, out: Path) -> Path:
    path = Path(out) / POINTS_FILE
    sweep_points_table(result).to_csv(path, index=False)
    return path


def _stack(value: str, interval: str) -> str:
    """A value above its interval in one narrow cell."""
    return f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{value}\\\\{{}}{interval}\\end{{tabular}}"


def _cell(p) -> str:
    """A measured point in one narrow cell: the time above its interval."""
    from osbench_analysis.formatting import ci_parts, time_unit

    scale, unit = time_unit(p.estimate_ns)
    v, lo, hi = ci_parts(p.estimate_ns / scale, p.ci_low_ns / scale, p.ci_high_ns / scale)
    return _stack(f"{v} {unit}", f"[{lo}, {hi}]")


def _growth_cell(c: SweepChange) -> str:
    text = _growth(c)
    head, _, rest = text.partition(" [")
    return _stack(head, "[" + rest)


def _slope_cell(r) -> str:
    return _stack(_slope_ns(r.slope_ns), f"[{_slope_ns(r.slope_ci_low_ns)}, {_slope_ns(r.slope_ci_high_ns)}]")


def scalability_tex(result, heading: bool = True) -> str:
    """The sweeps' appendix: a sentence per sweep quoting what was measured, the table (measured points,
    measured change, fitted slope) and the figure; '' when no sweep was measured at two or more points."""
    t = result.sweeps if result.sweep_fits else pd.DataFrame()
    if t.empty:
        return ""          # no sweep measured beyond its first point: the paper has no scalability appendix
    lvl = percent_tex(result.settings.level)
    # the appendix starts on a page of its own: no float of the appendix before lands inside its text
    head = "\\clearpage\n\\section{Scalability sweeps}\\label{sec:scalability}\n" if heading else ""
    fits = {k[:3]: f for k, f in result.sweep_fits.items()}
    t = t.assign(_o=[_sweep_order(p) for p in t["probe"]], _p=[p != MAIN_PLACEMENT for p in t["placement"]])
    t = t.sort_values(["_o", "environment", "_p", "placement"])
    refs = getattr(result, "sweep_campaigns", None) or []
    where = ("in a campaign measured for the sweeps alone (Table~\\ref{tab:campaigns})" if refs
             else "in the campaigns of the body")
    n_runs = sorted({int(f.n_runs / max(f.n_levels, 1)) for f in fits.values()})
    runs = f"{n_runs[0]}" if len(n_runs) == 1 else f"{n_runs[0]}--{n_runs[-1]}"
    mc = [p for p in MCGARRY_SWEEPS if p in set(t["probe"])]
    envs = sorted({e for e in t["environment"] if e})
    tol = percent_tex(next(iter(fits.values())).tolerance_rel)
    intro = ("These sweeps answer no question of the paper's body: they ask whether a primitive costs more while "
             "the system holds more of something"
             + (" (McGarry's scalability tests: " + ", ".join(SWEEP_WORDS[p][2] for p in mc) + ")" if mc else "")
             + (", measured on native Linux only" if envs == [result.settings.baseline] else "")
             + f", {where}, with about {runs} runs at each point. Every time quoted is measured: the {lvl} interval "
             "of each point is over its runs, and the change from the first point to the last is the ratio of the "
             "two points' values with its interval. The least-squares line through every run is a fit; its slope "
             "is given as one and never stands for a measured time. A sweep is called constant when the interval "
             f"of its measured change lies within $\\pm${tol}, growing or falling when it excludes zero.")
    main = t[t["placement"].isin([MAIN_PLACEMENT, ""])]
    main = pd.concat([main, t[~t["probe"].isin(main["probe"])]]).drop_duplicates(["probe", "environment"])
    main = main.assign(_o=[_sweep_order(p) for p in main["probe"]]).sort_values(["_o", "environment"])
    from osbench_analysis.plots.architectures import env_short

    sentences = [_sweep_sentence(r, fits[(r.probe, r.environment, r.placement)])
                 + (f" ({tex_escape(env_short(r.environment))})" if r.environment != result.settings.baseline else "")
                 for r in main.itertuples()]
    text = (intro + (" Sweeps of two processes are quoted with both on one CPU." if len(t) > len(main) else "") + " "
            + " ".join(f"{x}." for x in sentences))
    rows = []
    for r in t.itertuples():
        fit = fits[(r.probe, r.environment, r.placement)]
        c = sweep_change(r, fit)
        pts = _points(fit, bool(c.per)).itertuples()
        pts = list(pts)
        swept = tex_escape(SWEEP_WORDS.get(r.probe, ("", "", print_sweep_axis(r.x)))[2])
        rows.append(f"{print_name(r.probe)}" + (r"$^\dagger$" if c.per else "")
                    + f" ({placement_words(r.placement)}) & {swept}, {pts[0].x:g} to {pts[-1].x:g} & "
                    + " & ".join(_cell(p) for p in (pts[0], pts[-1]))
                    + f" & {_growth_cell(c)} & {c.verdict} & {_slope_cell(r)} \\\\[2pt]")
    per = sorted({PER_UNIT_SWEEPS[p] for p in t["probe"] if p in PER_UNIT_SWEEPS})
    caption = (f"Scalability sweeps on native Linux: the measured time at the first and the last point (the "
               f"geometric mean of the runs' medians, {lvl} interval over runs), the measured change between them "
               f"({lvl} interval; from 100\\% on, as a factor), and, as a fit, the least-squares slope over every "
               f"run in ns per unit of the swept quantity (Welch interval)"
               + (f"; $^\\dagger$: times per {' or per '.join(per)}, the probe's operation being a round of them"
                  if per else "") + ".")
    return head + "\n".join([
        text,
        _table(">{\\raggedright}p{0.2\\linewidth}>{\\raggedright}p{0.16\\linewidth}rrrlr",
               r"Probe & Swept, from -- to & First point & Last point & Change, measured & Verdict & "
               r"Fitted slope, ns per unit", rows,
               caption, "tab:sweeps", size=r"\footnotesize", placement="!htb"),
        r"\begin{figure}[tbp]", r"\centering", r"\includegraphics[width=\linewidth]{generated/sweeps_paper}",
        "\\caption{Scalability sweeps: the median time per operation of every run (points) against the swept "
        "quantity, and the least-squares line fitted through them, per placement.}", r"\label{fig:sweeps}",
        r"\end{figure}", ""])
