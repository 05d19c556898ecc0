"""The paper's account of what one crossing is made of and what whole programs feel of it (issue #22,
section 4.1): the decomposition of each sandbox's crossing into its measured native pieces
(mechanism.from_analysis) and the application workloads beside each environment's crossing factor.
Every number comes from the analysis; a piece or workload not measured is said to be, never dropped."""
from __future__ import annotations

import math

import pandas as pd

from osbench_analysis.analysis import mechanism
from osbench_analysis.catalog import registry
from osbench_analysis.analysis.pipeline import without_fs
from osbench_analysis.analysis.architectures import CROSSING_PROBE, CROSSING_PROBES
from osbench_analysis.catalog.families import print_name
from osbench_analysis.formatting import percent_tex, ratio_with_ci, tex_escape, time_with_ci_tex
from osbench_analysis.report.estimand import ESTIMAND, paper_estimates

MAIN_PLACEMENT = "same_cpu"

#: How a piece is named in a recipe (short; the table's first block says which probe measured it).
PIECE_LABELS = {"seccomp_trap": "seccomp trap", "service_shm": "shm hand-off", "service_direct": "getppid",
                CROSSING_PROBE: "getpid", "ptrace_sysemu_stop": "SYSEMU stop", "pipe_pingpong": "pipe round trip"}


def _env(name: str) -> str:
    from osbench_analysis.plots.architectures import env_short

    return tex_escape(env_short(name))


def _t(v: float, lo: float, hi: float) -> str:
    """A time with its interval; a negative one (a rest) with a minus sign; '--' when not computed."""
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in (v, lo, hi)):
        return "--"
    return time_with_ci_tex(v, lo, hi)


def _label(probe: str, variant: str) -> str:
    return PIECE_LABELS.get(probe, print_name(probe)) + (f" ({tex_escape(variant)})" if variant else "")


def decomposition(result) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, terms) of mechanism.from_analysis for the first host, both parties on one CPU (the rows
    that could not be decomposed, with their reason, kept)."""
    summary, terms = mechanism.from_analysis(result)
    host = result.hosts[0]
    if len(summary):
        summary = summary[(summary["host"] == host) & summary["placement"].isin([MAIN_PLACEMENT, ""])]
    if len(terms):
        terms = terms[(terms["host"] == host) & (terms["placement"] == MAIN_PLACEMENT)]
    return summary.reset_index(drop=True), terms.reset_index(drop=True)


def _recipe(terms: pd.DataFrame) -> str:
    parts = []
    for i, r in enumerate(terms.itertuples()):
        c = float(r.coefficient)
        sign = ("$-$" if c < 0 else ("" if i == 0 else "$+$"))
        mult = "" if abs(c) == 1 else f"{abs(c):g}$\\times$"
        parts.append(f"{sign}{mult}{_label(r.probe, r.variant)}")
    return " ".join(parts)


def _undecided(adds_up) -> bool:
    """A summary row without a breakdown (mechanism._undecomposed: adds_up None, NaN in a frame)."""
    return adds_up is None or (isinstance(adds_up, float) and math.isnan(adds_up))


def _sentence(r, level: float, said: set | None = None) -> str:
    env = _env(r.environment)
    if _undecided(r.adds_up):
        why = str(r.verdict).removeprefix("not decomposed: ")
        if why.startswith("no crossing"):
            return (f"{env} did not measure the {print_name(r.crossing_probe)}, so its crossing is not "
                    "decomposed.")
        return f"{env}'s crossing is not decomposed: {tex_escape(why)}."
    cx = _t(r.crossing_ns, r.crossing_low_ns, r.crossing_high_ns)
    ps = _t(r.pieces_ns, r.pieces_low_ns, r.pieces_high_ns)
    if bool(r.adds_up):
        return f"Under {env} the pieces, {ps}, add up to the crossing, {cx}, within their intervals."
    if r.unexplained_ns > 0:
        share = percent_tex(r.unexplained_ns / r.crossing_ns) if r.crossing_ns else "n/a"
        what = ("of the same kind" if said is not None and r.mechanism in said
                else f"is {tex_escape(r.unexplained_is)}")
        if said is not None:
            said.add(r.mechanism)
        return (f"Under {env} the rest, {_t(r.unexplained_ns, r.unexplained_low_ns, r.unexplained_high_ns)} "
                f"({share} of the crossing), {what}.")
    over = _t(-r.unexplained_ns, -r.unexplained_high_ns, -r.unexplained_low_ns)
    return (f"Under {env} the pieces, {ps}, exceed the {cx} crossing by {over}"
            + (f": {tex_escape(r.caveat)}" if r.caveat else "") + ".")


def mechanism_tex(result) -> str:
    """The paragraph and table taking one crossing apart (empty when no sandbox was measured)."""
    summary, terms = decomposition(result)
    if summary.empty:
        return ""
    level = float(summary["level"].iloc[0])
    lvl = percent_tex(level)
    done = summary[[not _undecided(a) for a in summary["adds_up"]]]
    said: set = set()
    sentences = [_sentence(r, level, said) for r in summary.itertuples()]
    text = ("\\paragraph{What one crossing is made of.} Table~\\ref{tab:mechanism} sets each sandbox's crossing "
            "beside the sum of the native pieces its mechanism is built from, each measured alone on this host "
            f"({lvl} intervals). " + " ".join(sentences))
    if len(done):
        n_up = int(done["adds_up"].astype(bool).sum())
        text += f" The pieces add up within their intervals in {n_up} of {len(done)} decomposed environments."
    pieces = terms.drop_duplicates(["probe", "variant"])
    rows = [f"{_label(p.probe, p.variant)} & {print_name(p.probe)} & {_t(p.estimate_ns, p.ci_low_ns, p.ci_high_ns)} "
            "& & & \\\\" for p in pieces.itertuples()]
    rows.append(r"\midrule")
    rows.append(rf"\emph{{Environment}} & \emph{{Crossing made of}} & \emph{{Crossing [{lvl} CI]}} & "
                r"\emph{Sum of pieces} & \emph{Rest (the sandbox's own)} & \emph{Adds up} \\")
    rows.append(r"\midrule")
    for r in summary.itertuples():
        mine = terms[terms["environment"] == r.environment]
        verdict = "--" if _undecided(r.adds_up) else ("yes" if bool(r.adds_up) else "no")
        recipe = _recipe(mine) if len(mine) else "not decomposed"
        rows.append(f"{_env(r.environment)} & {recipe} & {_t(r.crossing_ns, r.crossing_low_ns, r.crossing_high_ns)} & "
                    f"{_t(r.pieces_ns, r.pieces_low_ns, r.pieces_high_ns)} & "
                    f"{_t(r.unexplained_ns, r.unexplained_low_ns, r.unexplained_high_ns)} & {verdict} \\\\")
    table = "\n".join([
        r"\begin{table}[tbp]", r"\centering", r"\scriptsize",
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
        r"\begin{tabular}{l>{\raggedright\arraybackslash}p{0.27\linewidth}llll}", r"\toprule",
        rf"Native piece & Measured by & Per operation [{lvl} CI] & & & \\", r"\midrule", *rows,
        r"\bottomrule", r"\end{tabular}}",
        "\\caption{One crossing taken apart. Top: the native pieces, each measured alone on native Linux. "
        "Bottom: each sandbox's added cost of one call (a null system call; for FUSE one stat) minus native "
        "Linux's, the sum of the pieces its mechanism is made of, and the rest, each with its "
        f"{lvl} interval (delta method over run medians, Welch degrees of freedom); adds up: the rest's "
        "interval includes zero; `--': not decomposed (see the text).}", r"\label{tab:mechanism}", r"\end{table}"])
    return text + "\n" + table + "\n"


# ------------------------------------------------------------------ application workloads

def crossing_factors(result) -> pd.DataFrame:
    """Per environment: its crossing factor over the baseline (the null system call's ratio, for a file
    server its stat's; host-backed folder, both parties on one CPU), first host."""
    r = result.environment_ratios
    if r is None or r.empty:
        return pd.DataFrame(columns=["environment", "probe", "ratio", "ci_low", "ci_high"])
    r = r[(r["host"] == result.hosts[0]) & (r["placement"] == MAIN_PLACEMENT) & r["probe"].isin(CROSSING_PROBES)]
    r = r[r["variant"].fillna("").map(without_fs) == ""]
    r = r.assign(_rank=r["probe"].map(CROSSING_PROBES.index)).sort_values("_rank")
    return r.drop_duplicates("environment")[["environment", "probe", "ratio", "ci_low", "ci_high"]]


def applications(result) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(native, slowdowns): the workloads' native times (the paper's estimand, one CPU) and, per environment
    that measured one, its slowdown over native (mechanism.applications_table, host-backed folder)."""
    apps = registry.APPLICATION_PROBES
    est = paper_estimates(result.primary_estimates)
    native = est[(est["environment"] == result.settings.baseline) & (est["host"] == result.hosts[0])
                 & est["probe"].isin(apps) & (est["placement"] == MAIN_PLACEMENT)]
    slow = mechanism.applications_table(result.environment_ratios)
    if len(slow):
        slow = slow[(slow["host"] == result.hosts[0]) & (slow["placement"] == MAIN_PLACEMENT)
                    & ~slow["variant"].fillna("").str.contains(f"{registry.WORKDIR_FS}=", regex=False)]
    return native.reset_index(drop=True), slow.reset_index(drop=True)


def applications_tex(result) -> str:
    """The workloads' slowdown per environment beside its crossing factor, '--' where not measured."""
    native, slow = applications(result)
    if native.empty and slow.empty:
        return ""
    lvl = percent_tex(result.settings.level)
    apps = [a for a in registry.APPLICATION_PROBES if a in set(native["probe"]) | set(slow["probe"])]
    factors = crossing_factors(result)
    envs = [e for e in result.environments if e != result.settings.baseline and e in set(factors["environment"])]
    measured = [e for e in envs if e in set(slow["environment"])]
    rows = ["native Linux (time) & " + " & ".join(
        (lambda n: time_with_ci_tex(n.estimate_ns, n.ci_low_ns, n.ci_high_ns) if n is not None else "--")(
            next(native[native["probe"] == a].itertuples(), None)) for a in apps) + " & 1 \\\\", r"\midrule"]
    for e in envs:
        f = factors[factors["environment"] == e].iloc[0]
        cells = []
        for a in apps:
            s = slow[(slow["environment"] == e) & (slow["probe"] == a)]
            cells.append(ratio_with_ci(s["ratio"].iloc[0], s["ci_low"].iloc[0], s["ci_high"].iloc[0]) if len(s) else "--")
        cross = ratio_with_ci(f["ratio"], f["ci_low"], f["ci_high"]) + (" (stat)" if f["probe"] != CROSSING_PROBE else "")
        rows.append(f"{_env(e)} ($\\times$ native) & " + " & ".join(cells) + f" & {cross} \\\\")
    head = "Environment & " + " & ".join(print_name(a) for a in apps) + " & One crossing"
    colspec = "l" + ">{\\raggedleft\\arraybackslash}p{0.16\\linewidth}" * len(apps) + "l"
    table = "\n".join([
        r"\begin{table}[tbp]", r"\centering", r"\scriptsize",
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
        f"\\begin{{tabular}}{{{colspec}}}", r"\toprule", head + r" \\", r"\midrule", *rows, r"\bottomrule",
        r"\end{tabular}}",
        f"\\caption{{Whole programs beside one crossing: each workload's time on native Linux ({ESTIMAND}, {lvl} "
        "interval, one CPU) and its slowdown in each environment, beside that environment's factor for one "
        "crossing (null system call; for a file server one stat), each a ratio with its Welch interval. "
        "`--': not measured in that environment.}", r"\label{tab:apps}", r"\end{table}"])
    unmeasured = [e for e in envs if e not in measured]
    times = {r.probe: time_with_ci_tex(r.estimate_ns, r.ci_low_ns, r.ci_high_ns) for r in native.itertuples()}
    text = ("\\paragraph{Whole programs.} Three application workloads run real programs: "
            + ", ".join(f"a {print_name(a)}" + (f" ({times[a]} on native Linux)" if a in times and not measured else "")
                        for a in apps)
            + (" (Table~\\ref{tab:apps})." if measured else "."))
    for e in measured:
        f = factors[factors["environment"] == e].iloc[0]
        s = slow[slow["environment"] == e]
        text += (f" Under {_env(e)} they take "
                 + "; ".join(f"{ratio_with_ci(r.ratio, r.ci_low, r.ci_high)} times as long ({print_name(r.probe)})"
                             for r in s.itertuples())
                 + f", where one crossing costs {ratio_with_ci(f['ratio'], f['ci_low'], f['ci_high'])} times native's.")
    if unmeasured:
        text += (" In the campaigns analysed here they were not measured in "
                 + ", ".join(_env(e) for e in unmeasured)
                 + ("" if measured else " (only on native Linux)")
                 + ", so how much of " + ("those environments'" if measured else "an environment's")
                 + " crossing factor a whole program feels is not answered by these data"
                 + ("; the table marks them." if measured else "."))
    # a table of nothing but 'not measured' says less than the sentence above: only with a slowdown to show
    return text + "\n" + (table + "\n" if measured else "")
