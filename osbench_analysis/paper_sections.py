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
from osbench_analysis.families import FAMILIES, family_rank, primitive_family, probe_family
from osbench_analysis.formatting import (format_time_ns, percent_tex, ratio_with_ci, sig3, tex_escape,
                                         time_with_ci_tex)

#: Placement that stands for a probe in cross-environment tables (both parties
#: on one CPU: the only placement every environment supports).
MAIN_PLACEMENT = "same_cpu"


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
    return "\n".join([f"\\begin{{table}}[{placement}]", r"\centering", size, f"\\begin{{tabular}}{{{colspec}}}",
                      r"\toprule", header + r" \\", r"\midrule", *rows, r"\bottomrule", r"\end{tabular}",
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
    """name -> Figure for every figure the generated sections include."""
    from osbench_analysis import plots, plots_architectures

    figs = {"architectures": plots_architectures.plot_architectures(inp.measured, inp.published,
                                                                    baseline=inp.result.settings.baseline)}
    for family, est in _family_estimates(inp.result).items():
        figs[f"results_{_slug(family)}"] = plots.forest_plot(est, title=f"{family}: per-operation time, native")
    return figs


def _slug(family: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in family.lower()).strip("_")


def _family_estimates(result) -> dict[str, pd.DataFrame]:
    """The baseline environment's primary estimates per family, each ordered by cost."""
    est = result.primary_estimates
    est = est[(est["environment"] == result.settings.baseline) & (est["host"] == result.hosts[0])]
    est = est.assign(family=[probe_family(p) for p in est["probe"]])
    out = {}
    for family in sorted(est["family"].unique(), key=family_rank):
        out[family] = est[est["family"] == family].sort_values("estimate_ns").reset_index(drop=True)
    return out


# --------------------------------------------------------------------------- sections

def background_tex(inp: SectionInputs) -> str:
    """One paragraph per published study: who, what systems, what was measured, cited."""
    items = []
    for sid, src in inp.sources.items():
        systems = ", ".join(dict.fromkeys(s.get("label_as_published", s.get("system_id", "")) for s in src.get("systems", [])))
        tools = src.get("benchmark_tools", "")
        items.append(f"\\item {tex_escape(src.get('citation') or src.get('short_title', sid))}~\\citep{{{bibkey(src, sid)}}}: "
                     f"{tex_escape(systems)}; measured with {tex_escape(tools)}.")
    return "\n".join([r"\begin{itemize}", *items, r"\end{itemize}", ""])


def results_tex(result) -> str:
    """Results by family: for each, one sentence, a table ordered by cost and a figure."""
    lvl = percent_tex(result.settings.level)
    out = []
    fams = _family_estimates(result)
    for family, est in fams.items():
        slug = _slug(family)
        lo, hi = est.iloc[0], est.iloc[-1]
        text = (f"In this family the cheapest condition is {tex_escape(lo['probe'])} at "
                f"{time_with_ci_tex(lo['estimate_ns'], lo['ci_low_ns'], lo['ci_high_ns'])} per operation"
                + (f" and the most expensive {tex_escape(hi['probe'])} at "
                   f"{time_with_ci_tex(hi['estimate_ns'], hi['ci_low_ns'], hi['ci_high_ns'])}" if len(est) > 1 else "")
                + f" (Table~\\ref{{tab:res-{slug}}}, Figure~\\ref{{fig:res-{slug}}}).")
        warned = est[[_warned(r) for _, r in est.iterrows()]]
        if len(warned):
            text += (f" {len(warned)} estimate(s) carry a warning (marked $\\dagger$): a slow minority of "
                     "worker runs that their runs cannot yet include, or too few runs for a "
                     f"{lvl} interval.")
        rows = []
        for _, r in est.iterrows():
            warned_row = _warned(r)
            needed = r.get("runs_needed")
            runs = f"{int(r['n_runs'])}"
            if warned_row and needed is not None and pd.notna(needed) and int(needed) > int(r["n_runs"]):
                runs += f" ({int(needed)} needed)"
            mark = (r"$^{m}$" if r.get("quoted") == MEAN_OVER_RUNS else "") + (r" $\dagger$" if warned_row else "")
            rows.append(f"{tex_escape(r['probe'])}{mark} & {tex_escape(r['variant'] or '--')} & "
                        f"{tex_escape(str(r['placement']).replace('_', ' '))} & "
                        f"{time_with_ci_tex(r['estimate_ns'], r['ci_low_ns'], r['ci_high_ns'])} & "
                        f"{runs} \\\\")
        out += [f"\\subsection{{{tex_escape(family)}}}", text, "",
                _table("lllrr", rf"Probe & Variant & Placement & Time per operation [{lvl} CI] & Runs", rows,
                       f"{tex_escape(family)}: time per operation on native Linux, ordered by cost "
                       f"(the typical run, the median of the run medians, with its distribution-free {lvl} interval; "
                       f"$^{{m}}$: the geometric mean over runs, quoted when fewer than "
                       f"{runs_for_level(result.settings.level)} runs do not differ; "
                       "$\\dagger$: a warning, the runs a slow minority would need in brackets).",
                       f"tab:res-{slug}"),
                r"\begin{figure}[tbp]", r"\centering",
                f"\\includegraphics[width=\\linewidth]{{generated/results_{slug}}}",
                f"\\caption{{{tex_escape(family)}: time per operation on native Linux with its {lvl} interval "
                "(log scale).}", f"\\label{{fig:res-{slug}}}", r"\end{figure}", ""]
    out.append(scalability_tex(result, heading="Scalability" not in fams))
    return "\n".join(out)


def _warned(row) -> bool:
    w = row.get("warning") if hasattr(row, "get") else None
    return isinstance(w, str) and w not in ("", "nan")


def _published_summary(published: pd.DataFrame, primitive: str) -> str:
    p = published[published["primitive"] == primitive]
    if p.empty:
        return "--"
    keys = ",".join(dict.fromkeys(p["bibkey"]))
    f = p["slowdown_factor"]
    if len(p) == 1:
        return f"{sig3(f.iloc[0])}~\\citep{{{keys}}}"
    return f"{sig3(f.median())} ({sig3(f.min())}--{sig3(f.max())}, {len(p)})~\\citep{{{keys}}}"


def agreement(measured: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Per environment and primitive measured here and published: is the
    published median factor inside our interval, above or below it?"""
    rows = []
    for (env, prim), m in measured.groupby(["environment", "primitive"], sort=False):
        p = published[published["primitive"] == prim]
        if p.empty:
            continue
        med = float(p["slowdown_factor"].median())
        lo, hi = float(m["ratio_low"].min()), float(m["ratio_high"].max())
        where = "inside" if lo <= med <= hi else ("above" if med > hi else "below")
        rows.append({"environment": env, "primitive": prim, "published_median": med, "measured_low": lo,
                     "measured_high": hi, "published_is": where})
    return pd.DataFrame(rows, columns=["environment", "primitive", "published_median", "measured_low",
                                       "measured_high", "published_is"])


def _agreement_sentence(ag: pd.DataFrame) -> str:
    from osbench_analysis.plots_architectures import env_short

    parts = []
    for env, g in ag.groupby("environment", sort=False):
        c = g["published_is"].value_counts()
        parts.append(f"under {tex_escape(env_short(env))}, of {len(g)} primitives the published factor lies below "
                     f"our interval for {int(c.get('below', 0))}, inside it for {int(c.get('inside', 0))} and above "
                     f"it for {int(c.get('above', 0))}")
    return "; ".join(parts)


def architectures_figure_tex(inp: SectionInputs) -> str:
    """The central figure, placed at the start of the results."""
    lvl = percent_tex(inp.result.settings.level)
    base = inp.result.settings.baseline
    return "\n".join([r"\begin{figure}[p]", r"\centering",
                      r"\includegraphics[width=\linewidth,height=0.86\textheight,keepaspectratio]{generated/architectures}",
                      f"\\caption{{What each kernel design costs per primitive relative to a monolithic kernel. Filled black "
                      f"markers: measured here, each environment over {tex_escape(base)} Linux on the same host, with {lvl} "
                      "intervals (both parties on one CPU, default parameters). Hollow grey markers: the factors the "
                      "published studies report between microkernel or hybrid systems and monolithic ones on their own, "
                      "older hardware (no intervals published). Log scale; rows grouped by family, cheapest first.}",
                      r"\label{fig:architectures}", r"\end{figure}", ""])


def architectures_tex(inp: SectionInputs) -> str:
    """The central section: figure first, crossing costs, the factor table beside
    the published factors, microkernel-style IPC, and what agrees."""
    from osbench_analysis.plots_architectures import env_short

    result, m, pub = inp.result, inp.measured, inp.published
    lvl = percent_tex(result.settings.level)
    base = result.settings.baseline
    envs = list(dict.fromkeys(m["environment"])) if len(m) else []
    out = ["Figure~\\ref{fig:architectures} (Section~\\ref{sec:results}) shows the factors measured here beside the "
           "published ones; this section gives them with their intervals and says where they agree.", ""]
    if not envs:
        out.append("Only the baseline environment has been measured in the selected campaigns, so the figure shows "
                   "the published factors alone; measure the other environments with "
                   r"\texttt{osbench run --environment all}.")
        return "\n".join(out) + "\n"
    cc = result.crossing_costs
    if len(cc):
        cc = cc[(cc["host"] == result.hosts[0]) & (cc["placement"] == MAIN_PLACEMENT)]
        parts = [f"{tex_escape(env_short(r.environment))} {time_with_ci_tex(r.cost_ns, r.ci_low_ns, r.ci_high_ns)}"
                 + (" (one stat)" if r.probe != CROSSING_PROBE else "")
                 + (" (an interval including zero: no measurable cost)" if r.ci_low_ns <= 0 <= r.ci_high_ns else "")
                 for r in cc.sort_values("cost_ns", ascending=False).itertuples()]
        out.append("One crossing into what serves a call (a \\texttt{getpid} system call; where only the file path changes, one "
                   "\\texttt{stat} on the served file system) costs, beyond what it costs on native Linux: "
                   + "; ".join(parts) + f" ({lvl} intervals: difference of geometric means of run medians, "
                   "delta-method Welch interval; Table~\\ref{tab:crossing}).")
        rows = [f"{tex_escape(env_short(r.environment))} & {tex_escape(r.arch_class)} & "
                f"\\texttt{{{tex_escape(r.probe)}}} & "
                f"{_time(r.baseline_estimate_ns)} & {_time(r.estimate_ns)} & "
                f"{time_with_ci_tex(r.cost_ns, r.ci_low_ns, r.ci_high_ns)} \\\\" for r in cc.itertuples()]
        out.append(_table("lllrrr", rf"Environment & Design & Probe & native & in environment & added per crossing [{lvl} CI]",
                          rows, "The cost of one crossing per environment: a null system call, or where only the "
                          "file path changes (a file server, the gofer) one stat on the served file system.",
                          "tab:crossing"))
    # factor table: one row per probe, one column per environment, published factors beside
    probes = m.assign(rank=[family_rank(f) for f in m["family"]]).sort_values(["rank", "ratio"])
    order = list(dict.fromkeys(probes["probe"]))
    rows = []
    for probe in order:
        g = m[m["probe"] == probe].set_index("environment")
        cells = [ratio_with_ci(g.loc[e, "ratio"], g.loc[e, "ratio_low"], g.loc[e, "ratio_high"]) if e in g.index
                 else "--" for e in envs]
        prim = g["primitive"].iloc[0]
        rows.append(f"{tex_escape(probe)} & " + " & ".join(cells) + f" & {_published_summary(pub, prim)} \\\\")
    head = "Probe & " + " & ".join(tex_escape(env_short(e)) for e in envs) + r" & published (range, $n$)"
    out.append(f"Table~\\ref{{tab:factors}} gives every factor of Figure~\\ref{{fig:architectures}} with its interval.")
    out.append(_table("l" + "r" * len(envs) + "l", head, rows,
                      f"Time per operation in each environment over {tex_escape(base)} Linux on the same host "
                      f"(ratio of geometric means of run medians, {lvl} interval), beside the published "
                      "microkernel- or hybrid-over-monolithic factors for the same primitive (median, range and "
                      "number of published pairs).", "tab:factors", size=r"\scriptsize"))
    ag = agreement(m, pub)
    if len(ag):
        out.append("Comparing each environment's interval with the median of the published microkernel- or "
                   "hybrid-over-monolithic factors for the same primitive: " + _agreement_sentence(ag) + ".")
    svc = _service_rows(result)
    if svc:
        out.append(svc)
        minix = pub[(pub["primitive"] == "syscall_mix") & (pub["subject_arch"] == "microkernel")]
        if len(minix):
            out.append("For comparison, the published system-call loop on MINIX~3, whose servers are reached by "
                       f"messages, took {sig3(minix['slowdown_factor'].min())}--{sig3(minix['slowdown_factor'].max())} "
                       f"times as long as on Linux on the same PC~\\citep{{{minix['bibkey'].iloc[0]}}}.")
    return "\n".join(out) + "\n"


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
        rows.append(f"{service} & {tex_escape(r.transport)} & {tex_escape(str(r.placement).replace('_', ' '))} & "
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
                     "(ratio of geometric means of run medians with a Welch interval).", "tab:service"))


def scalability_tex(result, heading: bool = True) -> str:
    """The sweeps: slope per unit of the swept quantity with its interval, and the figure."""
    t = result.sweeps if result.sweep_fits else pd.DataFrame()
    lvl = percent_tex(result.settings.level)
    head = "\\subsection{Scalability}\n" if heading else ""
    if t.empty:
        return (head + "The campaigns analysed here measured every sweep at its first point only "
                "(profile \\texttt{quick}); \\texttt{osbench run --profile full} measures each sweep at every point "
                "and this section then shows each slope with its interval.\n")
    rows = [f"{tex_escape(r.probe)} & {tex_escape(r.x)} & {tex_escape(str(r.placement).replace('_', ' '))} & {int(r.points)} & "
            f"{sig3(r.slope_ns)} [{sig3(r.slope_ci_low_ns)}, {sig3(r.slope_ci_high_ns)}] & {tex_escape(r.verdict)} \\\\"
            for r in t.itertuples()]
    return head + "\n".join([
        "Each sweep measures one primitive while the number of processes, sockets, mappings or threads already "
        "present grows (McGarry's scalability tests); Table~\\ref{tab:sweeps} gives the slope of the time per "
        f"operation per unit of the swept quantity with its {lvl} interval, Figure~\\ref{{fig:sweeps}} every run.",
        _table("lllrrl", rf"Probe & Swept & Placement & Points & Slope, ns per unit [{lvl} CI] & Verdict", rows,
               "Scalability sweeps: ordinary least squares over run-level estimates, Welch interval on the slope.",
               "tab:sweeps", size=r"\scriptsize"),
        r"\begin{figure}[tbp]", r"\centering", r"\includegraphics[width=\linewidth]{generated/sweeps}",
        f"\\caption{{Scalability sweeps: per-operation time of every run against the swept quantity, the fitted line "
        f"and its slope with a {lvl} interval.}}", r"\label{fig:sweeps}", r"\end{figure}", ""])


def short_version(version: str) -> str:
    """A Go pseudo-version (runsc: v0.0.0-20260905035102-160fafc42237) as its
    date and commit, 'release 2026-09-05 (160fafc)'; anything else unchanged."""
    import re

    m = re.fullmatch(r"v0\.0\.0-(\d{4})(\d{2})(\d{2})\d{6}-([0-9a-f]{7})[0-9a-f]*", version)
    return f"release {m[1]}-{m[2]}-{m[3]} ({m[4]})" if m else version


def environments_tex(result) -> str:
    """The environments measured: design, kernel as seen inside, version, campaign."""
    from osbench_analysis.plots_architectures import env_label

    several_hosts = len(result.hosts) > 1
    rows = []
    for cid in result.primary_ids:
        mf = result.manifests[cid]
        facts = mf.environment_facts or {}
        kernel = facts.get("kernel_release") or mf.host.get("kernel_release", "")
        info = mf.environment_info or {}
        version = short_version(str(info.get("version") or info.get("runsc_version") or info.get("package_version")
                                    or info.get("libfuse_version") or "--"))
        if info.get("platform"):
            version = f"{version}, {info['platform']}"
        if info.get("cache"):
            version = f"{version}, cache={info['cache']}"
        rows.append(f"{tex_escape(env_label(mf.environment))} & {tex_escape(mf.arch_class)} & {tex_escape(str(kernel))} & "
                    f"{tex_escape(str(version))}" + (f" & {tex_escape(mf.hostname)}" if several_hosts else "") + " \\\\")
    head = "Environment & Design & Kernel seen by the probe & Version" + (" & Host" if several_hosts else "")
    return _table("lllll" if several_hosts else "llll", head, rows,
                  "Kernel environments measured (facts recorded inside each environment by the worker)"
                  + ("" if several_hosts else f" on host {tex_escape(result.manifests[result.primary_ids[0]].hostname)}")
                  + ".", "tab:environments", size=r"\scriptsize")


def reproduce_tex(result) -> str:
    """Campaign ids, their sealed files' checksums, the code commit and the command."""
    rows = []
    for cid in result.campaign_ids:
        mf = result.manifests[cid]
        sums = "; ".join(f"{name} {v.get('sha256', '')[:16]}" for name, v in sorted(mf.files.items()))
        git = mf.host.get("git", {}) or {}
        commit = (git.get("commit") or "")[:10] + ("+dirty" if git.get("dirty") else "")
        rows.append(f"\\texttt{{{tex_escape(cid)}}} & {tex_escape(mf.environment)} & {tex_escape(commit)} & "
                    f"\\texttt{{{tex_escape(sums)}}} \\\\")
    return ("Every number, table and figure of this paper is regenerated from the sealed campaigns below by "
            "\\texttt{make paper} (\\texttt{osbench paper}); a campaign's seal lists the SHA-256 of each of its "
            "files, checked on every load.\n"
            + _table("llll", "Campaign & Environment & Code commit & Sealed files (SHA-256, first 16 hex digits)",
                     rows, "The sealed campaigns this paper is computed from.", "tab:campaigns",
                     size=r"\scriptsize"))


def abstract_tex(inp: SectionInputs) -> str:
    """The abstract, every number from the analysis."""
    from osbench_analysis.plots_architectures import env_short

    result, m = inp.result, inp.measured
    est = result.primary_estimates
    native = est[est["environment"] == result.settings.baseline]
    n_probes = native["probe"].nunique()
    n_prims = len({(p, without_fs(v)) for p, v in zip(native["probe"], native["variant"])})
    envs = list(dict.fromkeys(m["environment"])) if len(m) else []
    n_arch = m["probe"].nunique() if len(m) else 0
    lvl = percent_tex(result.settings.level)
    text = ("Moving operating-system services out of the kernel has a cost per primitive that published studies "
            f"measured on hardware of their time and reported without uncertainty. On one Linux host we measure "
            f"{n_prims} primitives ({n_probes} probes) natively"
            + (f", and the {n_arch} that the architecture comparison rests on in {len(envs)} "
               f"environment{'s' if len(envs) != 1 else ''} where a user-space kernel, a hosted kernel or a "
               f"user-space file server serves them ({', '.join(tex_escape(env_short(e)) for e in envs)})"
               if envs else "")
            + f", each with a {lvl} confidence interval over repeated worker processes.")
    cc = result.crossing_costs
    if len(cc):
        cc = cc[(cc["host"] == result.hosts[0]) & (cc["placement"] == MAIN_PLACEMENT)]
        cc = cc.sort_values("cost_ns", ascending=False)
        sentences = []
        what_of = {CROSSING_PROBE: "One system call", FILE_CROSSING_PROBE: "One stat on the served file system"}
        for probe in CROSSING_PROBES:
            what = what_of[probe]
            rows_p = [r for r in cc.itertuples() if r.probe == probe]
            paid = [r for r in rows_p if r.ci_low_ns > 0]
            free = [r for r in rows_p if r.ci_low_ns <= 0 <= r.ci_high_ns]
            if paid:
                sentences.append(f" {what} costs " + "; ".join(
                    f"{time_with_ci_tex(r.cost_ns, r.ci_low_ns, r.ci_high_ns)} more under "
                    f"{tex_escape(env_short(r.environment))}" for r in paid) + " than natively"
                    + ("; under " + ", ".join(tex_escape(env_short(r.environment)) for r in free)
                       + " no added cost is measurable"
                       + f" ({'; '.join(time_with_ci_tex(r.cost_ns, r.ci_low_ns, r.ci_high_ns) for r in free)})"
                       if free else "") + ".")
        text += "".join(sentences)
    if envs:
        parts = []
        for env in envs:
            g = m[m["environment"] == env]
            what = "file primitives" if all(_uses_files(p) for p in g["probe"]) else "primitives"
            parts.append(f"{tex_escape(env_short(env))} {sig3(g['ratio'].median())}$\\times$ "
                         f"({sig3(g['ratio'].min())}--{sig3(g['ratio'].max())}, {len(g)} {what})")
        text += " Median slowdown over the primitives compared, with its range: " + "; ".join(parts) + "."
    ag = agreement(m, inp.published)
    if len(ag):
        c = ag["published_is"].value_counts()
        text += (f" The slowdowns measured here exceed the microkernel- and hybrid-over-monolithic factors published "
                 f"for the same primitives in {int(c.get('below', 0))} of {len(ag)} comparisons (environment and "
                 f"primitive), include them in {int(c.get('inside', 0))} and fall below them in "
                 f"{int(c.get('above', 0))} (Section~\\ref{{sec:architectures}}).")
    return text + "\n"


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
                   "cannot be seen. The number we quote covered "
                   f"{big['coverage_%'].min():.1f}--{big['coverage_%'].max():.1f}\\% with 10 or more runs; with "
                   f"{int(small['runs'].min())}--{int(small['runs'].max())} runs it carried a warning in at least "
                   f"{small['warn_%'].min():.0f}\\% of experiments, and "
                   f"{ok} of {len(j)} cells have coverage in the band or a warning in at least 90\\% of experiments.")
    q = cells[cells["section"] == "Q"]
    if len(q):
        cq = q["coverage_%"]
        ok_q = int((q["ok"] == "yes").sum())
        out.append(f"On normal, heavy-tailed (Student-$t_3$) and skewed run effects the quoted number covered "
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


def write_sections(result, out_dir: str | Path, reference_root=None) -> list[Path]:
    """Write every generated section and its figures into out_dir."""
    from osbench_analysis import plots

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    inp = SectionInputs.build(result, reference_root)
    texts = {"abstract": abstract_tex(inp), "background_studies": background_tex(inp),
             "results": results_tex(result), "architectures": architectures_tex(inp),
             "architectures_figure": architectures_figure_tex(inp),
             "environments": environments_tex(result), "reproduce": reproduce_tex(result),
             "validation": validation_tex(load_validation())}
    written = []
    for name, text in texts.items():
        (out / f"{name}.tex").write_text(text)
        written.append(out / f"{name}.tex")
    for name, fig in figures(inp).items():
        written += plots.save_figure(fig, out, name)
        plots.close(fig)
    return written


__all__ = ["FAMILIES", "SectionInputs", "measured_factors", "published_factors", "agreement", "write_sections",
           "abstract_tex", "background_tex", "results_tex", "architectures_tex", "environments_tex", "reproduce_tex",
           "primitive_family"]
