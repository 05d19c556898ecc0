"""The paper's generated sections, written from an analysis.Analysis and the
published data: abstract, background (the five studies, cited), results by
family, the architectures comparison (the central figure first), the
environments and reproduction tables.  paper/paper.tex only \\inputs them;
every number in them comes from data through this code.

Each function returns TeX text; `write_sections` writes them with their
figures into paper/generated/.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.analysis import without_fs
from osbench_analysis.stats import runs_for_level
from osbench_analysis.stats.quote import MEAN_OVER_RUNS
from osbench_analysis.architectures import CROSSING_PROBE, CROSSING_PROBES, FILE_CROSSING_PROBE
from osbench_analysis.families import (FAMILIES, bytes_per_op, family_rank, file_system, primitive_family,
                                      print_name, print_variant, probe_family)
from osbench_analysis.formatting import (bytes_tex, format_time_ns, percent_tex, rate_with_ci_tex, ratio_with_ci,
                                         sig3, tex_escape, time_with_ci_tex, with_ci)
from osbench_analysis.paper_estimand import (ESTIMAND, ESTIMAND_PLURAL, environment_file_systems, environment_folders,
                                             paper_estimates)

#: Placement that stands for a probe in cross-environment tables (both parties
#: on one CPU: the only placement every environment supports).
MAIN_PLACEMENT = "same_cpu"


def _cost_tex(r) -> str:
    """A crossing cost (a difference, whose interval may reach below zero) with a minus sign, not a hyphen."""
    return time_with_ci_tex(r.cost_ns, r.ci_low_ns, r.ci_high_ns)


def _time(ns: float) -> str:
    value, unit = format_time_ns(ns)
    return f"{value} {unit}"


def _default_variant(probe: str, variant: str) -> bool:
    from osbench_analysis.reference_compare import _variant_params

    return _variant_params(probe, variant) == frozenset()


def _unit_of(probe: str) -> str:
    from osbench_analysis.registry import PROBES

    p = PROBES.get(probe)
    return p.unit if p is not None else ""


def _table(colspec: str, header: str, rows: list[str], caption: str, label: str, *, size: str = r"\small",
           placement: str = "tbp") -> str:
    # rows come from data: a table wider than the text (a long interval, a long variant) shrinks to fit
    # instead of running past the margin; one that fits keeps its size
    return "\n".join([f"\\begin{{table}}[{placement}]", r"\centering", size,
                      r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
                      f"\\begin{{tabular}}{{{colspec}}}",
                      r"\toprule", header + r" \\", r"\midrule", *rows, r"\bottomrule", r"\end{tabular}}",
                      f"\\caption{{{caption}}}", f"\\label{{{label}}}", r"\end{table}", ""])


# --------------------------------------------------------------------------- measured factors

def measured_factors(result) -> pd.DataFrame:
    """Each environment over the baseline per probe at the main placement and
    default parameters, with the primitive and family: the rows of the central
    figure and of the architectures table."""
    from osbench_analysis.reference_compare import environment_ratios

    env = environment_ratios(result)
    if env.empty:
        return env.assign(family=pd.Series(dtype=str))
    env = env[env["placement"] == MAIN_PLACEMENT]
    env = env[[_default_variant(p, v) for p, v in zip(env["probe"], env["variant"])]]
    host = result.hosts[0]
    env = env[env["host"] == host]
    # a user-space file server only serves file operations: its other rows are native Linux again
    env = env[[arch != FILE_SERVER or _uses_files(p) for arch, p in zip(env["arch_class"], env["probe"])]]
    order = {"user-space-kernel": 0, "hosted-kernel": 1, FILE_SERVER: 2}
    env = env.assign(family=[probe_family(p) for p in env["probe"]],
                     _o=[order.get(a, 3) for a in env["arch_class"]]).sort_values(["_o", "environment"], kind="stable")
    return env.drop(columns="_o").reset_index(drop=True)


FILE_SERVER = "user-space-server"


def _uses_files(probe: str) -> bool:
    from osbench_analysis.registry import PROBES

    p = PROBES.get(probe)
    return bool(p is not None and p.uses_workdir)


def published_factors(reference_root=None) -> pd.DataFrame:
    """Published microkernel/hybrid-over-monolithic factors per primitive, with the study's citation key
    (reference_compare.published_factors: one row per fair pair a study names x metric)."""
    from osbench_analysis.reference_compare import published_factors as factors

    return factors(root=reference_root)


def bibkey(source: dict, source_id: str) -> str:
    return source.get("bibkey") or source_id


# --------------------------------------------------------------------------- figures

@dataclass
class SectionInputs:
    """What the sections are written from: the analysis and the published factors."""
    result: object
    measured: pd.DataFrame
    published: pd.DataFrame
    sources: dict

    @classmethod
    def build(cls, result, reference_root=None) -> "SectionInputs":
        from osbench_analysis import reference

        return cls(result, measured_factors(result), published_factors(reference_root),
                   reference.load_sources(reference_root))


def figures(inp: SectionInputs) -> dict:
    """name -> Figure for every figure the generated sections include: the central figure only (a figure
    per family would repeat its table)."""
    from osbench_analysis import plots_architectures

    figs = {"architectures": plots_architectures.plot_architectures(inp.measured, inp.published,
                                                                    baseline=inp.result.settings.baseline)}
    if getattr(inp.result, "sweep_fits", None):
        from osbench_analysis import plots_sweeps

        figs["sweeps_paper"] = plots_sweeps.paper_sweeps_figure(inp.result.sweep_fits, first=MCGARRY_SWEEPS)
    return figs


def _slug(family: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in family.lower()).strip("_")


def _family_estimates(result) -> dict[str, pd.DataFrame]:
    """The baseline environment's primary estimates per family, each ordered by cost."""
    est = paper_estimates(result.primary_estimates)
    est = est[(est["environment"] == result.settings.baseline) & (est["host"] == result.hosts[0])]
    est = est.assign(family=[probe_family(p) for p in est["probe"]])
    out = {}
    for family in sorted(est["family"].unique(), key=family_rank):
        out[family] = est[est["family"] == family].sort_values("estimate_ns").reset_index(drop=True)
    return out


# --------------------------------------------------------------------------- sections

def _with_urls(text: str) -> str:
    """TeX-escaped text whose web addresses are typeset with \\url (they break at slashes, never past the margin)."""
    import re

    parts = re.split(r"(https?://[^\s,;)]+|\bgithub\.com/[^\s,;)]+)", str(text))
    return "".join(f"\\url{{{p.rstrip('.')}}}" + ("." if p.endswith(".") else "") if i % 2 else tex_escape(p)
                   for i, p in enumerate(parts))


def background_tex(inp: SectionInputs) -> str:
    """One item per published study: who (cited), what systems, what was measured."""
    items = []
    for sid, src in inp.sources.items():
        systems = ", ".join(dict.fromkeys(s.get("label_as_published", s.get("system_id", "")) for s in src.get("systems", [])))
        tools = src.get("benchmark_tools", "")
        items.append(f"\\item \\citet{{{bibkey(src, sid)}}}: "
                     f"{tex_escape(systems)}; measured with {_with_urls(tools)}.")
    # \sloppy: the studies' system names (Linux-AMDx8, MacBookPro) cannot be hyphenated
    return "\n".join([r"{\sloppy\begin{itemize}", *items, r"\end{itemize}}", ""])


PLACEMENT_WORDS = {"same_cpu": "one CPU", "cross_cpu": "two CPUs", "unpinned": "unpinned"}


def placement_words(placement: str) -> str:
    return PLACEMENT_WORDS.get(str(placement), str(placement).replace("_", " "))


def value_cell(probe: str, variant: str, ns: float, lo: float, hi: float) -> str:
    """A condition's number as the paper prints it: a time per operation, or for a bandwidth probe the bytes
    moved per second (with the bytes one operation moves)."""
    n = bytes_per_op(probe, variant)
    if n:
        return f"{rate_with_ci_tex(n, ns, lo, hi)} ({bytes_tex(n)} per op)"
    return time_with_ci_tex(ns, lo, hi)


def results_tex(result) -> str:
    """The appendix of every condition measured natively: per family one table, ordered by cost."""
    from osbench_analysis.stats.pooled import WITHIN_ONE_CAMPAIGN

    lvl = percent_tex(result.settings.level)
    out = [r"\section{Every condition measured on native Linux}\label{sec:all-native}",
           f"Tables~\\ref{{tab:res-first}}--\\ref{{tab:res-last}} give, family by family, the {ESTIMAND} of every "
           f"condition measured on native Linux in the baseline campaign with its {lvl} interval "
           f"{WITHIN_ONE_CAMPAIGN}; bandwidth probes are given in bytes per "
           "second. The file system a file probe ran on is named in its own column."
           + (f" How far the host's {result.pooling.n_campaigns_max} comparable campaigns spread is in "
              "Table~\\ref{tab:spread} and Figure~\\ref{fig:reproducibility}."
              if getattr(result, "pooling", None) is not None and result.pooling.n_campaigns_max > 1 else ""), ""]
    fams = _family_estimates(result)
    names = list(fams)
    for i, (family, est) in enumerate(fams.items()):
        label = "tab:res-first" if i == 0 else ("tab:res-last" if i == len(names) - 1 else f"tab:res-{_slug(family)}")
        rows = []
        for _, r in est.iterrows():
            warned_row = _warned(r)
            needed = r.get("runs_needed")
            runs = f"{int(r['n_runs'])}"
            if warned_row and needed is not None and pd.notna(needed) and int(needed) > int(r["n_runs"]):
                runs += f" ({int(needed)} needed)"
            mark = r" $\dagger$" if warned_row else ""
            rows.append(f"{print_name(r['probe'])}{mark} & {tex_escape(print_variant(r['variant']))} & "
                        f"{tex_escape(file_system(r['variant']))} & {placement_words(r['placement'])} & "
                        f"{value_cell(r['probe'], r['variant'], r['estimate_ns'], r['ci_low_ns'], r['ci_high_ns'])} & "
                        f"{runs} \\\\")
        out.append(_table("lllllr", rf"Probe & Variant & File system & Placement & Per operation [{lvl} CI] & Runs",
                          rows, f"{tex_escape(family)} on native Linux: the {ESTIMAND} per operation with its {lvl} "
                          f"interval {WITHIN_ONE_CAMPAIGN}, ordered by cost ($\\dagger$: the runs are not alike or too few; the runs a slow "
                          "minority would need in brackets).", label, size=r"\scriptsize", placement="!htbp"))
    return "\n".join(out)


def _warned(row) -> bool:
    w = row.get("warning") if hasattr(row, "get") else None
    return isinstance(w, str) and w not in ("", "nan")


#: A published factor carries no interval; we read it as a range widened by this relative tolerance either way
#: (the studies' own 'about N' reading, rule 'about' of the claims file).
PUBLISHED_TOLERANCE = 0.2


def _published_summary(published: pd.DataFrame, primitive: str) -> str:
    """The published factors of a primitive as ranges by kind: 'hybrid 0.91--2.05 (2); microkernel 7.58--8.63 (3)'."""
    p = published[published["primitive"] == primitive]
    if p.empty:
        return "--"
    parts = []
    for kind, g in p.groupby("subject_arch", sort=True):
        f = g["slowdown_factor"]
        rng = sig3(f.iloc[0]) if len(g) == 1 else f"{sig3(f.min())}--{sig3(f.max())}"
        parts.append(f"{tex_escape(kind)} {rng}")
    return "; ".join(parts)


def _published_sources(published: pd.DataFrame, primitives) -> str:
    """'hybrid: \\citet{a}; microkernel: \\citet{b}' for the published factors of these primitives."""
    p = published[published["primitive"].isin(list(primitives))]
    return "; ".join(f"{tex_escape(kind)}, \\citet{{{','.join(dict.fromkeys(g['bibkey']))}}}"
                     for kind, g in p.groupby("subject_arch", sort=True))


def agreement(measured: pd.DataFrame, published: pd.DataFrame, tolerance: float = PUBLISHED_TOLERANCE) -> pd.DataFrame:
    """Per environment, primitive and kind of published system (hybrid, microkernel): where our interval lies
    against the published range widened by `tolerance` either way ('above', 'overlaps', 'below')."""
    rows = []
    for (env, prim), m in measured.groupby(["environment", "primitive"], sort=False):
        for kind, p in published[published["primitive"] == prim].groupby("subject_arch", sort=True):
            lo_p = float(p["slowdown_factor"].min()) * (1 - tolerance)
            hi_p = float(p["slowdown_factor"].max()) * (1 + tolerance)
            lo, hi = float(m["ratio_low"].min()), float(m["ratio_high"].max())
            where = "above" if lo > hi_p else ("below" if hi < lo_p else "overlaps")
            rows.append({"environment": env, "primitive": prim, "kind": kind, "published_low": lo_p,
                         "published_high": hi_p, "measured_low": lo, "measured_high": hi, "ours_is": where})
    return pd.DataFrame(rows, columns=["environment", "primitive", "kind", "published_low", "published_high",
                                       "measured_low", "measured_high", "ours_is"])


def _agreement_sentence(ag: pd.DataFrame) -> str:
    """'against microkernel factors: gVisor 2 of 3, ...; against hybrid factors: ...' (above the widened range)."""
    from osbench_analysis.plots_architectures import env_short

    parts = []
    for kind, gk in ag.groupby("kind", sort=True):
        per_env = []
        for env, g in gk.groupby("environment", sort=False):
            c = g["ours_is"].value_counts()
            below = f", below for {int(c['below'])}" if c.get("below", 0) else ""
            per_env.append(f"{tex_escape(env_short(env))} {int(c.get('above', 0))} of {len(g)}{below}")
        parts.append(f"above the {tex_escape(kind)} range for " + ", ".join(per_env))
    return "; ".join(parts)


def architectures_figure_tex(inp: SectionInputs) -> str:
    """The central figure, placed at the start of the results."""
    lvl = percent_tex(inp.result.settings.level)
    base = inp.result.settings.baseline
    return "\n".join([r"\begin{figure}[tbp]", r"\centering",
                      r"\includegraphics[width=\linewidth,height=0.5\textheight,keepaspectratio]{generated/architectures}",
                      f"\\caption{{Each primitive's time in each kernel environment over {tex_escape(base)} Linux on the same "
                      f"host (filled markers, one colour and shape per environment, measured here: the ratio of the {ESTIMAND_PLURAL} with its "
                      f"{lvl} interval, both parties on one CPU), beside the factors the published studies report between "
                      "hybrid or microkernel systems and monolithic ones on their own hardware (hollow grey markers, no "
                      "intervals published). Log scale; rows grouped by family.}",
                      r"\label{fig:architectures}", r"\end{figure}", ""])


def crossing_tex(inp: SectionInputs) -> str:
    """(c) User-space and hosted kernels as what they are: the added cost of one crossing, and every factor."""
    from osbench_analysis.plots_architectures import env_short

    result, m, pub = inp.result, inp.measured, inp.published
    lvl = percent_tex(result.settings.level)
    base = result.settings.baseline
    envs = list(dict.fromkeys(m["environment"])) if len(m) else []
    out = [r"\subsection{User-space and hosted kernels: the cost of interposing on a system call}\label{sec:crossing}"]
    if not envs:
        out.append("Only the baseline environment has been measured in the selected campaigns.")
        return "\n".join(out) + "\n"
    fs = environment_file_systems(result.primary_estimates, guest=False)
    out.append("gVisor and User-mode Linux are not microkernels: they serve a program's system calls from an "
               "ordinary process, so what they add to a call is the cost of intercepting it and serving it elsewhere. "
               "FUSE moves one service, the file system, into a user-space server.")
    cc = result.crossing_costs
    if len(cc):
        cc = cc[(cc["host"] == result.hosts[0]) & (cc["placement"] == MAIN_PLACEMENT)]
        q = quoted_crossing_costs(result)
        q = q[(q["host"] == result.hosts[0]) & (q["placement"] == MAIN_PLACEMENT) & (q["n_campaigns"] > 1)]
        k = int(q["n_campaigns"].max()) if len(q) else 1
        pooled = {(r.environment, r.probe): _cost_tex(r) + ("" if int(r.n_campaigns) == k else f" ({int(r.n_campaigns)})")
                  for r in q.itertuples()}
        fewer = "" if q["n_campaigns"].astype(int).eq(k).all() else \
            "; a count in parentheses: pooled over that many comparable campaigns"
        parts = [f"{tex_escape(env_short(r.environment))} {_cost_tex(r)}"
                 + (" (one stat)" if r.probe != CROSSING_PROBE else "")
                 + (" (the interval includes zero: no measurable cost)" if r.ci_low_ns <= 0 <= r.ci_high_ns else "")
                 for r in cc.sort_values("cost_ns", ascending=False).itertuples()]
        out.append("One crossing (a \\texttt{getpid} system call; where only the file path changes, one "
                   "\\texttt{stat} on the served file system) costs, beyond its cost on native Linux: "
                   + "; ".join(parts) + f" ({lvl} intervals within one campaign; Table~\\ref{{tab:crossing}}"
                   + (f" gives them pooled over the host's {k} campaigns beside" if k > 1 else "") + ").")
        guest = guest_crossing_costs(result)
        if len(guest):
            out.append("Served by the guest kernel's own tmpfs instead of the host-backed volume, one \\texttt{stat} "
                       "costs " + "; ".join(f"{_cost_tex(r)} more under "
                                            f"{tex_escape(env_short(r.environment))}"
                                            for r in guest.sort_values("cost_ns", ascending=False).itertuples())
                       + ": a call intercepted and served by the sandbox's own file system, without the host.")
        rows_guest = [f"{tex_escape(env_short(r.environment))} & {print_name(r.probe)} & tmpfs (guest's own) & "
                      f"{_time(r.baseline_estimate_ns)} & {_time(r.estimate_ns)} & "
                      f"{_cost_tex(r)}" + (" & --" if k > 1 else "") + " \\\\"
                      for r in guest.itertuples()]
        # the design of each environment is in Table~\ref{tab:environments}; the pooled column needs its width
        rows = [f"{tex_escape(env_short(r.environment))} & "
                f"{print_name(r.probe)} & {tex_escape(fs.get(r.environment, '--') if r.probe != CROSSING_PROBE else '--')} & "
                f"{_time(r.baseline_estimate_ns)} & {_time(r.estimate_ns)} & "
                f"{_cost_tex(r)}"
                + (f" & {pooled.get((r.environment, r.probe), '--')}" if k > 1 else "") + " \\\\" for r in cc.itertuples()]
        rows += ([r"\midrule"] + rows_guest) if rows_guest else []
        out.append(_table("llllll" + ("l" if k > 1 else ""),
                          rf"Environment & Probe & File system & Native & Inside & Added [{lvl} CI]"
                          + (f" & Pooled, {k} campaigns" if k > 1 else ""),
                          rows, f"The cost of one crossing per environment: the difference of the {ESTIMAND_PLURAL} inside "
                          "the environment and natively (delta-method Welch interval) within one campaign, for a null "
                          "system call or, where only the file path changes, one stat on the served file system"
                          + (f"; last column: the same difference pooled over the host's {k} comparable campaigns, "
                             "each paired with native in its own round, with its interval over campaigns" + fewer
                             if k > 1 else "")
                          + ("; below the line, the same stat in a folder on the tmpfs the guest kernel serves "
                             "itself" if rows_guest else "") + ".",
                          "tab:crossing", size=r"\scriptsize"))
    from osbench_analysis import paper_mechanism

    out.append(paper_mechanism.mechanism_tex(result))
    probes = m.assign(rank=[family_rank(f) for f in m["family"]]).sort_values(["rank", "ratio"])
    order = list(dict.fromkeys(probes["probe"]))
    rows = [r"\emph{file system} & " + " & ".join(tex_escape(fs.get(e, "--")) for e in envs) + r" & \\"]
    for probe in order:
        g = m[m["probe"] == probe].set_index("environment")
        cells = [_stacked_ratio(g.loc[e, "ratio"], g.loc[e, "ratio_low"], g.loc[e, "ratio_high"]) if e in g.index
                 else "--" for e in envs]
        prim = g["primitive"].iloc[0]
        rows.append(f"{print_name(probe)} & " + " & ".join(cells) + f" & {_published_summary(pub, prim)} \\\\")
    head = ("Probe & " + " & ".join(r"\shortstack{" + tex_escape(env_short(e)).replace(" ", r"\\") + "}" for e in envs)
            + r" & Published (kind, range)")
    out.append(f"Table~\\ref{{tab:factors}} gives every factor of Figure~\\ref{{fig:architectures}} with its interval, "
               "beside the published factors for the same primitive as ranges by the kind of system they come from: "
               "a hybrid (xnu serves these calls in its BSD layer, in the kernel) or a microkernel (MINIX~3).")
    out.append(_table("p{0.11\\linewidth}" + "r" * len(envs) + "p{0.18\\linewidth}", head, rows,
                      f"Time per operation in each environment over {tex_escape(base)} Linux on the same host (\\(\\times\\), the ratio of the "
                      f"{ESTIMAND_PLURAL}, {lvl} interval; the first row names the file system the file probes used), beside "
                      "the published hybrid- or microkernel-over-monolithic factors for the same primitive ("
                      + _published_sources(pub, m["primitive"]) + ").",
                      "tab:factors", size=r"\tiny"))
    ag = agreement(m, pub)
    if len(ag):
        out.append(f"Reading each published range as uncertain by {PUBLISHED_TOLERANCE:.0%} either way (they carry "
                   "no intervals) and counting per environment, not per comparison (the three gVisor variants share "
                   "one kernel and are not independent), our interval lies " .replace("%", r"\%")
                   + _agreement_sentence(ag) + " primitives, and overlaps it for the rest. The hybrid factors measure a different design from the one measured "
                   "here; the microkernel factors are the comparison the question asks for.")
    out.append(paper_mechanism.applications_tex(result))
    return "\n".join(out) + "\n"


def _stacked_ratio(ratio: float, lo: float, hi: float) -> str:
    """A ratio over its interval in one narrow cell: '24.0' above '[20.7, 27.8]'."""
    from osbench_analysis.formatting import ci_parts

    v, lo_s, hi_s = ci_parts(ratio, lo, hi)
    return f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{v}\\\\{{}}[{lo_s}, {hi_s}]\\end{{tabular}}"


def service_tex(inp: SectionInputs, reference_root=None) -> str:
    """(b) The same service reached directly and through a user-space server on Linux, beside the published
    microkernel figures (MINIX 3 from its study's tables; seL4, L4Re and L3 IPC with units and hardware)."""
    result, pub = inp.result, inp.published
    out = [r"\subsection{The same service in the kernel and behind a user-space server}\label{sec:service}"]
    svc = _service_rows(result)
    if svc:
        out.append(svc)
    minix = pub[(pub["primitive"] == "syscall_mix") & (pub["subject_arch"] == "microkernel")]
    rng = _service_range(result)
    if len(minix):
        text = ("MINIX~3 reaches its servers by messages: its published system-call loop took "
                f"{sig3(minix['slowdown_factor'].min())}--{sig3(minix['slowdown_factor'].max())} times as long as on "
                f"Linux on the same PC~\\citep{{{minix['bibkey'].iloc[0]}}}")
        if rng is not None:
            text += (f"; the direct-versus-server factors measured here with both processes on one CPU are "
                     f"{sig3(rng[0]['ratio'])}--{sig3(rng[1]['ratio'])}")
        out.append(text + ".")
    ipc = load_published_ipc(reference_root)
    if len(ipc):
        out.append(f"Microkernels built for IPC make the crossing itself cheap (Table~\\ref{{tab:published-ipc}} in "
                   f"Appendix~\\ref{{sec:published-microkernel}}): {_ipc_range(ipc)}, while the user-space servers "
                   "measured here pay for Linux's scheduler and wake-up path on every call.")
    return "\n".join(out) + "\n"


def published_ipc_tex(reference_root=None) -> str:
    """The appendix's table of microkernels' published IPC costs (service_tex cites it); '' without them."""
    ipc = load_published_ipc(reference_root)
    if not len(ipc):
        return ""
    rows = [f"{tex_escape(r.kernel)} & {tex_escape(r.operation)} & {tex_escape(r.hardware)} & "
            f"{int(r.value):,} {tex_escape(r.unit)}" + (f" ({sig3(r.time_ns)} ns)" if r.time_ns == r.time_ns else "")
            + f" & \\citet{{{r.bibkey}}} \\\\" for r in ipc.itertuples()]
    return _table("p{0.12\\linewidth}p{0.27\\linewidth}p{0.2\\linewidth}p{0.13\\linewidth}p{0.15\\linewidth}",
                  "Kernel & Operation & Hardware & Published cost & Source", rows,
                  "Published IPC costs of microkernels, in the units their authors report (cycles, or ticks "
                  "of the time-stamp counter), with the hardware they were measured on; no intervals published.",
                  "tab:published-ipc", size=r"\scriptsize", placement="!htbp")


def _ipc_range(ipc: pd.DataFrame) -> str:
    """'their published IPC costs are 250--934 cycles or time-stamp-counter ticks' from the table's rows."""
    units = " or ".join(dict.fromkeys("time-stamp-counter ticks" if "TSC" in u else u for u in ipc["unit"]))
    return f"their published IPC costs are {int(ipc['value'].min()):,}--{int(ipc['value'].max()):,} {units}"


def load_published_ipc(reference_root=None) -> pd.DataFrame:
    """data/reference/published_ipc.csv: microkernel IPC costs as their authors publish them."""
    from osbench_analysis import reference

    path = Path(reference_root or reference.default_reference_dir()) / "published_ipc.csv"
    return pd.read_csv(path) if path.is_file() else pd.DataFrame()


def architectures_tex(inp: SectionInputs) -> str:
    """The comparisons (c) and (b) of the argument; (a), a microkernel on the same emulated CPU, is
    \\input by paper.tex when its generated file exists."""
    return crossing_tex(inp) + "\n" + service_tex(inp)


def _service_rows(result) -> str:
    """Microkernel-style IPC on the baseline environment: the same small service
    done directly as a system call and via a user-space server, per transport and
    placement, with the per-call time and the ratio to the direct call (each with
    its interval; analysis.Analysis.service_ipc)."""
    t = result.service_ipc
    if t is None or t.empty:
        return ""
    t = t[(t["environment"] == result.settings.baseline) & (t["host"] == result.hosts[0])]
    if t.empty:
        return ""
    lvl = percent_tex(result.settings.level)
    rows = []
    for r in t.sort_values(["bytes", "placement", "ratio"]).itertuples():
        service = r"\texttt{getppid}" if r.bytes == 0 else f"read of {int(r.bytes)}~B"
        ratio = "1" if r.transport == "direct" else ratio_with_ci(r.ratio, r.ratio_low, r.ratio_high)
        rows.append(f"{service} & {tex_escape(r.transport)} & {placement_words(r.placement)} & "
                    f"{time_with_ci_tex(r.estimate_ns, r.ci_low_ns, r.ci_high_ns)} & {ratio} \\\\")
    same = t[(t["transport"] != "direct") & (t["placement"] == "same_cpu")]
    text = ("The same small service done directly as a system call and as a request to a user-space server process "
            "that performs it and replies, on this monolithic kernel (Table~\\ref{tab:service}), measures what moving "
            "a service out of the kernel costs per call on one host")
    if len(same):
        best = same.sort_values("ratio").iloc[0]
        text += (f": with both processes on one CPU the fastest transport, {tex_escape(best['transport'])}, makes a call "
                 f"{ratio_with_ci(best['ratio'], best['ratio_low'], best['ratio_high'])} times as long as the direct one")
    return (text + ".\n"
            + _table("llllr", rf"Service & Transport & Placement & Time per call [{lvl} CI] & $\times$ direct [{lvl} CI]",
                     rows, "Microkernel-style IPC on native Linux: a service done directly and via a user-space server "
                     f"(the {ESTIMAND} per call, and the ratio of the two with a Welch interval).", "tab:service",
                     size=r"\scriptsize"))



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


def short_version(version: str) -> str:
    """A Go pseudo-version (runsc: v0.0.0-20260905035102-160fafc42237) as its
    date and commit, 'release 2026-09-05 (160fafc)'; anything else unchanged."""
    import re

    m = re.fullmatch(r"v0\.0\.0-(\d{4})(\d{2})(\d{2})\d{6}-([0-9a-f]{7})[0-9a-f]*", version)
    return f"release {m[1]}-{m[2]}-{m[3]} ({m[4]})" if m else version


def environments_tex(result) -> str:
    """The environments measured: design, kernel as seen inside, the file system the file probes used,
    version, and a sentence on every environment whose kernel release differs from the host's."""
    from osbench_analysis.plots_architectures import env_label, env_short

    several_hosts = len(result.hosts) > 1
    fs = environment_folders(result.primary_estimates)
    rows, kernels = [], {}
    for cid in result.primary_ids:
        mf = result.manifests[cid]
        facts = mf.environment_facts or {}
        kernel = facts.get("kernel_release") or mf.host.get("kernel_release", "")
        kernels[mf.environment] = (str(kernel), str(mf.host.get("kernel_release", "")), mf.arch_class)
        info = mf.environment_info or {}
        version = short_version(str(info.get("version") or info.get("runsc_version") or info.get("package_version")
                                    or info.get("libfuse_version") or "--"))
        if info.get("platform"):
            version = f"{version}, {info['platform']}"
        if info.get("cache"):
            version = f"{version}, cache={info['cache']}"
        rows.append(f"{tex_escape(env_short(mf.environment))} & {tex_escape(mf.arch_class)} & {tex_escape(str(kernel))} & "
                    f"{tex_escape(fs.get(mf.environment, '--'))} & {tex_escape(str(version))}"
                    + (f" & {tex_escape(mf.hostname)}" if several_hosts else "") + " \\\\")
    head = "Environment & Design & Kernel inside & File probes' folder & Version" + (" & Host" if several_hosts else "")
    # names and kernel releases never break; the folder and the version wrap in their own widths
    table = _table("lll>{\\raggedright\\arraybackslash}p{0.2\\linewidth}>{\\raggedright\\arraybackslash}p{0.21\\linewidth}"
                   + ("l" if several_hosts else ""), head, rows,
                   "Kernel environments measured (facts recorded inside each environment by the worker; the "
                   "folder column names the file system of the file probes' folder, and for a sandbox measured "
                   "on two, which is the host-backed volume and which the guest kernel's own tmpfs)"
                   + ("" if several_hosts else f" on host {tex_escape(result.manifests[result.primary_ids[0]].hostname)}")
                   + ".", "tab:environments", size=r"\scriptsize")
    hosted = [(env, k) for env, k in kernels.items() if k[2] == "hosted-kernel" and k[0] and k[0] != k[1]]
    text = _same_binaries_sentence(result) + _two_folders_sentence(result)
    if hosted:
        text += ("A hosted kernel brings its own release: "
                + "; ".join(f"{tex_escape(env_label(env))} serves its probes with Linux {tex_escape(k[0])} on a "
                            f"{tex_escape(k[1])} host" for env, k in hosted)
                + ". Its factors therefore measure the hosted design together with an older kernel's implementation "
                "of each primitive; LEBench~\\citep{ren2019lebench} shows that a primitive's cost can change between "
                "Linux releases by itself, so a factor near the others' is not evidence that the design costs nothing.\n")
    return table + text


def _two_folders_sentence(result) -> str:
    """Which sandboxes ran their file probes in two folders (registry.WORKDIR_FS), from the conditions measured."""
    from osbench_analysis.plots_architectures import env_short
    from osbench_analysis.registry import WORKDIR_FS

    est = result.primary_estimates
    both = [e for e in dict.fromkeys(est["environment"])
            if est.loc[est["environment"] == e, "variant"].fillna("").str.contains(f"{WORKDIR_FS}=", regex=False).any()]
    if not both:
        return ""
    host = environment_file_systems(est, guest=False)
    base = host.get(result.settings.baseline)
    return (f"Inside {', '.join(tex_escape(env_short(e)) for e in both)} every file probe ran in two folders: on the "
            "host-backed volume (" + ", ".join(dict.fromkeys(tex_escape(host[e]) for e in both if e in host))
            + "), the crossing to the host that the tables compare with native Linux"
            + (f"'s {tex_escape(base)}" if base else "") + ", and on a tmpfs the guest kernel serves itself, which "
            "leaves the host out (Table~\\ref{tab:environments}).\n")


def _same_binaries_sentence(result) -> str:
    """How every environment runs the same probe binaries and C library: the root and work folder each
    sandbox mounts, as its manifest records them (environment_info)."""
    from osbench_analysis.plots_architectures import env_short

    mounts: dict[tuple[str, str], list[str]] = {}
    for cid in result.primary_ids:
        mf = result.manifests[cid]
        info = mf.environment_info or {}
        if info.get("root_mount"):
            mounts.setdefault((str(info["root_mount"]), str(info.get("workdir_mount", ""))), []).append(
                env_short(mf.environment))
    if not mounts:
        return ""
    parts = [f"{', '.join(tex_escape(e) for e in envs)}: root {tex_escape(root)}"
             + (f"; probes' folder: {tex_escape(work)}" if work else "") for (root, work), envs in mounts.items()]
    return ("The probes, the worker and the C library are the host's own files in every environment, because each "
            "sandbox mounts the host's root file system read-only (" + ". ".join(parts) + "); the FUSE environments "
            "run natively with only the probes' folder served by the FUSE server.\n")


#: What a campaign read beside the analysis' own is used for (the campaigns table's marks).
_USE_WORDS = {"pooled": "an earlier campaign pooled with the analysis' own",
              "guest": "a campaign of the microkernel comparison (Section~\\ref{sec:microkernel})",
              "sweeps": "a campaign measured for the scalability sweeps alone (Section~\\ref{sec:scalability})"}


def reproduce_tex(result, other_campaigns: dict | None = None) -> str:
    """Campaign ids, their sealed files' checksums, the code commit and the command; other_campaigns:
    campaign id -> (Manifest, what it is used for) for the campaigns read beside the analysis' own
    (the earlier campaigns pooled with them, section (a)'s guest campaigns)."""
    rows = []
    own = [(cid, result.manifests[cid], "") for cid in result.campaign_ids]
    more = [(cid, mf, use) for cid, (mf, use) in sorted((other_campaigns or {}).items()) if cid not in result.manifests]
    for cid, mf, use in own + more:
        sums = "; ".join(f"{name} {v.get('sha256', '')[:16]}" for name, v in sorted(mf.files.items()))
        git = mf.host.get("git", {}) or {}
        commit = (git.get("commit") or "")[:10] + ("+dirty" if git.get("dirty") else "")
        rows.append(f"\\texttt{{{tex_escape(cid)}}} & {tex_escape(mf.environment)}"
                    + (f" ({tex_escape(use)})" if use else "") + f" & {tex_escape(commit)} & "
                    f"\\texttt{{{tex_escape(sums)}}} \\\\")
    return ("Every number, table and figure of this paper is regenerated from the sealed campaigns below by "
            "\\texttt{make paper} (\\texttt{osbench paper}); a campaign's seal lists the SHA-256 of each of its "
            "files, checked on every load.\n"
            + _table("lllp{3.2cm}", "Campaign & Environment & Code commit & Sealed files (SHA-256, first 16 hex digits)",
                     rows, "The sealed campaigns this paper is computed from"
                     + "".join(f"; {use}: {_USE_WORDS[use]}" for use in dict.fromkeys(u for *_, u in more)
                               if use in _USE_WORDS) + ".", "tab:campaigns",
                     size=r"\scriptsize", placement="!ht"))


def _crossing_sentences(inp: SectionInputs) -> str:
    """' One system call costs X more under A; ... than natively. One stat ... .' from the crossing costs."""
    from osbench_analysis.plots_architectures import env_short

    result = inp.result
    cc = quoted_crossing_costs(result)
    if cc is None or not len(cc):
        return ""
    cc = cc[(cc["host"] == result.hosts[0]) & (cc["placement"] == MAIN_PLACEMENT)].sort_values("cost_ns", ascending=False)
    sentences = []
    what_of = {CROSSING_PROBE: "One system call", FILE_CROSSING_PROBE: "One stat on the served file system"}
    for probe in CROSSING_PROBES:
        rows_p = [r for r in cc.itertuples() if r.probe == probe]
        paid = [r for r in rows_p if r.ci_low_ns > 0]
        free = [r for r in rows_p if r.ci_low_ns <= 0 <= r.ci_high_ns]
        if paid:
            sentences.append(f" {what_of[probe]} costs " + "; ".join(
                f"{_cost_tex(r)} more under "
                f"{tex_escape(env_short(r.environment))}" for r in paid) + " than natively"
                + ("; under " + ", ".join(tex_escape(env_short(r.environment)) for r in free)
                   + " no added cost is measurable"
                   + f" ({'; '.join(_cost_tex(r) for r in free)})"
                   if free else "") + ".")
    if sentences:
        ks = cc["n_campaigns"].astype(int) if "n_campaigns" in cc else pd.Series([1] * len(cc))
        k = int(ks.max())
        fewer = sorted({f"{tex_escape(env_short(e))} over {n}" for e, n in zip(cc["environment"], ks) if 1 < n < k})
        alone = sorted({tex_escape(env_short(e)) for e, n in zip(cc["environment"], ks) if n == 1})
        if k > 1:
            sentences.append(f" These crossing costs are pooled over the host's {k} comparable campaigns"
                             + (f" ({'; '.join(fewer)})" if fewer else "")
                             + (f" ({' and '.join(alone)}: one campaign, its interval within it)" if alone else "")
                             + ", their intervals over campaigns.")
        else:
            sentences.append(" These intervals are within one campaign.")
    return "".join(sentences)


def guest_crossing_costs(result) -> pd.DataFrame:
    """One stat in a folder on the tmpfs a sandbox's own kernel serves (registry.WORKDIR_FS) minus native's, per
    environment that measured it, first host, both parties on one CPU (architectures.crossing_costs)."""
    from osbench_analysis import architectures
    from osbench_analysis.registry import FS_GUEST_TMPFS

    s = result.samples
    s = s[s["campaign_id"].isin(result.primary_ids) & (s["host"] == result.hosts[0])
          & (s["probe"] == FILE_CROSSING_PROBE) & (s["placement"] == MAIN_PLACEMENT)]
    if s.empty:
        return pd.DataFrame()
    return architectures.crossing_costs(s, baseline=result.settings.baseline, probe=FILE_CROSSING_PROBE,
                                        level=result.settings.level, workdir_fs=FS_GUEST_TMPFS)


def quoted_crossing_costs(result) -> pd.DataFrame | None:
    """The crossing costs the prose quotes: pooled over the host's comparable campaigns where a condition
    pools (the same estimand, the geometric mean of run medians, combined over campaigns, with its interval
    over campaigns), else the one campaign's; ``n_campaigns`` says which."""
    cc = result.crossing_costs
    if cc is None or not len(cc):
        return cc
    cc = cc.assign(n_campaigns=1)
    p = getattr(result, "pooling", None)
    pc = p.crossing_costs if p is not None else None
    if pc is None or not len(pc):
        return cc
    pc = pc[pc["n_campaigns"] > 1]
    keys = ["host", "environment", "probe", "placement"]
    cols = ["cost_ns", "ci_low_ns", "ci_high_ns", "n_campaigns"]
    m = cc.drop(columns=cols[1:] + ["cost_ns"]).merge(pc[[*keys, *cols]], on=keys, how="left")
    same = cc.reset_index(drop=True)
    for c in cols:
        m[c] = m[c].where(m[c].notna(), same[c])
    return m


def _service_range(result):
    """(lowest, highest) row of the direct-versus-server table with both processes on one CPU, or None."""
    t = result.service_ipc
    if t is None or t.empty:
        return None
    t = t[(t["environment"] == result.settings.baseline) & (t["host"] == result.hosts[0])
          & (t["transport"] != "direct") & (t["placement"] == MAIN_PLACEMENT)]
    if t.empty:
        return None
    t = t.sort_values("ratio")
    return t.iloc[0], t.iloc[-1]


def _service_sentence(inp: SectionInputs) -> str:
    rng = _service_range(inp.result)
    if rng is None:
        return ""
    lo, hi = rng
    text = (f" On Linux itself, the same small service reached through a user-space server instead of a system call "
            f"takes {ratio_with_ci(lo['ratio'], lo['ratio_low'], lo['ratio_high'])} ({tex_escape(lo['transport'])}) to "
            f"{ratio_with_ci(hi['ratio'], hi['ratio_low'], hi['ratio_high'])} ({tex_escape(hi['transport'])}) times as "
            "long with both processes on one CPU")
    minix = inp.published[(inp.published["primitive"] == "syscall_mix") & (inp.published["subject_arch"] == "microkernel")]
    if len(minix):
        text += (f", against the {sig3(minix['slowdown_factor'].min())}--{sig3(minix['slowdown_factor'].max())} "
                 "published for MINIX~3's system-call loop")
    return text + "."


def _slowdown_sentence(inp: SectionInputs) -> str:
    """Median and range of the factors per environment over the primitives whose interval excludes 1."""
    from osbench_analysis.plots_architectures import env_short

    m = inp.measured
    if not len(m):
        return ""
    parts = []
    for env in dict.fromkeys(m["environment"]):
        g = m[m["environment"] == env]
        clear = g[(g["ratio_low"] > 1) | (g["ratio_high"] < 1)]
        if clear.empty:
            continue
        what = "file primitives" if all(_uses_files(p) for p in g["probe"]) else "primitives"
        parts.append(f"{tex_escape(env_short(env))} {sig3(clear['ratio'].median())}$\\times$ "
                     f"({sig3(clear['ratio'].min())}--{sig3(clear['ratio'].max())}; {len(clear)} of {len(g)} {what})")
    if not parts:
        return ""
    return (" Median factor over native Linux, with its range, over the primitives whose interval excludes no "
            "change: " + "; ".join(parts) + ".")


def abstract_tex(inp: SectionInputs, micro: pd.DataFrame | None = None) -> str:
    """The abstract, every number from the analysis; no count of comparisons.  `micro`: section (a)'s
    comparison (microkernel.comparison), when measured."""
    from osbench_analysis import microkernel
    from osbench_analysis.plots_architectures import env_short

    result, m = inp.result, inp.measured
    est = result.primary_estimates
    native = est[est["environment"] == result.settings.baseline]
    n_probes = native["probe"].nunique()
    n_prims = len({(p, without_fs(v)) for p, v in zip(native["probe"], native["variant"])})
    envs = list(dict.fromkeys(m["environment"])) if len(m) else []
    n_arch = m["probe"].nunique() if len(m) else 0
    lvl = percent_tex(result.settings.level)
    text = ("How much does a primitive cost when the kernel service behind it runs outside the kernel? Published "
            "answers come from hardware of their time, without uncertainty, and often compare a hybrid kernel that "
            f"serves these calls in the kernel. On one Linux host we measure {n_prims} primitives ({n_probes} probes) "
            "natively"
            + (f", and the {n_arch} that the comparison rests on in {len(envs)} "
               f"environment{'s' if len(envs) != 1 else ''} where a user-space kernel, a hosted kernel or a "
               f"user-space file server serves them ({', '.join(tex_escape(env_short(e)) for e in envs)})"
               if envs else "")
            + f", each with a {lvl} confidence interval over repeated worker processes.")
    if microkernel.measured(micro):
        text += (" A real microkernel, GNU Mach, runs beside Linux on the same emulated CPU, counted in guest "
                 "instructions." + microkernel.conclusion_sentence(micro))
    text += _crossing_sentences(inp)
    text += _service_sentence(inp)
    text += _slowdown_sentence(inp)
    return text + "\n"


def conclusion_tex(inp: SectionInputs, micro: pd.DataFrame | None = None) -> str:
    """The Conclusion: the findings, each with its interval, generated from the same numbers as the abstract;
    `micro`: section (a)'s comparison (microkernel.comparison), when measured."""
    from osbench_analysis import microkernel

    out = [r"\section{Conclusion}\label{sec:conclusion}",
           "Moving a kernel service out of the kernel costs, on present hardware, what the crossing to the server "
           "costs, and the crossing is what the designs differ in."]
    cross = _crossing_sentences(inp)
    if cross:
        out.append("First, user-space and hosted kernels pay for intercepting every call." + cross)
    svc = _service_sentence(inp)
    if svc:
        ipc = load_published_ipc()
        out.append("Second, the microkernel pattern built from Linux's own IPC pays for Linux's wake-up path." + svc
                   + (f" Microkernels built for IPC do better: {_ipc_range(ipc)} (Table~\\ref{{tab:published-ipc}}), so "
                      "the factor measured here is that of Linux's IPC path, not of the design." if len(ipc) else ""))
    out.append("Third, the published factors most often quoted for `microkernels' come from xnu, a hybrid that serves "
               "these calls in its kernel; they bound a different design and cannot be compared with ours as if they "
               "measured the same one. A real microkernel on the same emulated CPU as Linux "
               "(Section~\\ref{sec:microkernel}) is the comparison that answers the question directly."
               + microkernel.conclusion_sentence(micro))
    return "\n".join(out) + "\n"


def load_validation(path: str | Path | None = None) -> pd.DataFrame:
    """The cells of the statistics' simulation study (benchmarks/stats_coverage.py --save)."""
    import json

    from osbench_analysis.paths import VALIDATION_DIR

    p = Path(path) if path else VALIDATION_DIR / "stats_coverage.jsonl"
    if not p.is_file():
        return pd.DataFrame()
    return pd.DataFrame([json.loads(line) for line in p.read_text().splitlines() if line.strip()])


def validation_tex(cells: pd.DataFrame) -> str:
    """The Method's statement of validated coverage, from the simulation study's cells."""
    if cells.empty or "coverage_%" not in cells.columns:
        return ("The intervals' coverage has not been validated on this checkout: run "
                "\\texttt{benchmarks/stats\\_coverage.py --save data/validation/stats\\_coverage.jsonl}.\n")
    meta = cells[cells["section"] == "meta"].iloc[0]
    lo_band, hi_band = (100 * b for b in meta["band"])
    out = [f"We validated the intervals on simulated experiments with known truths ({int(meta['experiments']):,} "
           "experiments per cell, \\texttt{benchmarks/stats\\_coverage.py}; the cells are committed in "
           "\\texttt{data/validation})."]
    a = cells[cells["section"] == "A"]
    if len(a):
        c = a["coverage_%"]
        inband = int(((c >= lo_band) & (c <= hi_band)).sum())
        out.append(f"For unimodal run effects (lognormal, heavy-tailed and contaminated batches; 5--20 runs of 10--50 "
                   f"batches) the $t$ interval for the mean over runs covered {c.min():.1f}--{c.max():.1f}\\% of truths "
                   f"({inband} of {len(a)} cells within {lo_band:.0f}--{hi_band:.0f}\\%, Monte-Carlo standard error "
                   f"{a['mc_se_%'].max():.1f} points).")
    j = cells[(cells["section"] == "J") & (cells.get("slow_frac", pd.Series(0, index=cells.index)) > 0)]
    if len(j) and "mean_over_runs_cov_%" in j.columns:
        ok = int((j["ok"] == "yes").sum())
        big, small = j[j["runs"] >= 10], j[j["runs"] < 10]
        out.append(f"When a minority of whole runs (5--30\\%) is 1.1--3$\\times$ slower, the interval for the mean "
                   f"over runs covered only {j['mean_over_runs_cov_%'].min():.1f}--"
                   f"{j['mean_over_runs_cov_%'].max():.1f}\\%: in samples that hold no slow run the minority "
                   "cannot be seen. The typical run the package quotes covered "
                   f"{big['coverage_%'].min():.1f}--{big['coverage_%'].max():.1f}\\% with 10 or more runs; with "
                   f"{int(small['runs'].min())}--{int(small['runs'].max())} runs it carried a warning in at least "
                   f"{small['warn_%'].min():.0f}\\% of experiments, and "
                   f"{ok} of {len(j)} cells have coverage in the band or a warning in at least 90\\% of experiments.")
    q = cells[cells["section"] == "Q"]
    if len(q):
        cq = q["coverage_%"]
        ok_q = int((q["ok"] == "yes").sum())
        out.append(f"On normal, heavy-tailed (Student-$t_3$) and skewed run effects the typical run covered "
                   f"{cq.min():.1f}--{cq.max():.1f}\\% ({ok_q} of {len(q)} cells in the band or warned).")
    k = cells[cells["section"] == "K2"]
    if len(k) and "what" in k.columns:
        pct = [c for c in k.columns if c.startswith("R=") and c.endswith("%")]
        fa = k[k["what"].astype(str).str.contains("false")][pct].stack()
        pw = k[k["what"].astype(str).str.contains("power")][pct].stack()
        if len(fa) and len(pw):
            out.append(f"The test for two modes raised a false alarm in at most {fa.max():.1f}\\% of experiments with "
                       "unimodal lognormal run effects (log-sd up to 0.4, 2--30 runs) and found both modes of a "
                       f"10$\\times$ bimodal condition in at least {pw.min():.1f}\\% of experiments whose sample held both.")
    return " ".join(out) + "\n"


def write_sections(result, out_dir: str | Path, reference_root=None, microkernel_table=None,
                   other_campaigns: dict | None = None) -> list[Path]:
    """Write every generated section and its figures into out_dir (microkernel_table: section (a)'s
    comparison, for the Conclusion; other_campaigns: for the reproduction table, see reproduce_tex)."""
    from osbench_analysis import plots

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    inp = SectionInputs.build(result, reference_root)
    texts = {"abstract": abstract_tex(inp, microkernel_table), "background_studies": background_tex(inp),
             "results": results_tex(result), "architectures": architectures_tex(inp),
             "scalability": scalability_tex(result), "conclusion": conclusion_tex(inp, microkernel_table),
             "architectures_figure": architectures_figure_tex(inp),
             "environments": environments_tex(result), "reproduce": reproduce_tex(result, other_campaigns),
             "validation": validation_tex(load_validation()), "published_ipc_table": published_ipc_tex(reference_root)}
    written = []
    for name, text in texts.items():
        (out / f"{name}.tex").write_text(text)
        written.append(out / f"{name}.tex")
    for name, fig in figures(inp).items():
        written += plots.save_figure(fig, out, name)
        plots.close(fig)
    return written


__all__ = ["FAMILIES", "SectionInputs", "measured_factors", "published_factors", "agreement", "write_sections",
           "abstract_tex", "conclusion_tex", "crossing_tex", "service_tex", "background_tex", "results_tex", "architectures_tex", "environments_tex", "reproduce_tex",
           "primitive_family"]
