"""Comparison (c), user-space and hosted kernels (Section sec:crossing): the added cost of one crossing,
pooled over campaigns where a condition pools, the guest kernel's own tmpfs, and every factor beside the
published ones; and the sentences on the crossing costs the abstract and the Conclusion quote."""
from __future__ import annotations

import pandas as pd

from osbench_analysis.analysis.architectures import CROSSING_PROBE, CROSSING_PROBES, FILE_CROSSING_PROBE
from osbench_analysis.catalog.families import family_rank, print_name
from osbench_analysis.formatting import percent_tex, sig3, tex_escape
from osbench_analysis.report.estimand import ESTIMAND_PLURAL, environment_file_systems
from osbench_analysis.report.sections.common import MAIN_PLACEMENT, _cost_tex, _table, _time
from osbench_analysis.report.sections.factors import (PUBLISHED_TOLERANCE, SectionInputs, _agreement_sentence,
                                                      _published_sources, _published_summary, agreement,
                                                      design_caveats_tex)


def crossing_tex(inp: SectionInputs) -> str:
    """(c) User-space and hosted kernels as what they are: the added cost of one crossing, and every factor."""
    from osbench_analysis.plots.architectures import env_short

    result, m, pub = inp.result, inp.measured, inp.published
    lvl = percent_tex(result.settings.level)
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
        out.append(_added_cost_sentences(cc, env_short, lvl, k))
        guest = guest_crossing_costs(result)
        if len(guest):
            out.append(guest_tmpfs_sentence(guest, cc, env_short))
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
    from osbench_analysis.report import mechanism as paper_mechanism

    out.append(paper_mechanism.mechanism_tex(result))
    out.append("Table~\\ref{tab:factors} in Appendix~\\ref{sec:factors} gives every factor of "
               "Figure~\\ref{fig:architectures} with its interval, beside the published factors for the same "
               "primitive as ranges by the kind of system they come from: a hybrid (xnu serves these calls in its "
               "BSD layer, in the kernel) or a microkernel (MINIX~3), and gVisor's and FUSE's published costs beside ours.")
    ag = agreement(m, pub)
    if len(ag):
        out.append(f"Reading each published range as uncertain by {PUBLISHED_TOLERANCE:.0%} either way (they carry "
                   "no intervals) and counting per environment, not per comparison (the three gVisor variants share "
                   "one kernel and are not independent), our interval lies " .replace("%", r"\%")
                   + _agreement_sentence(ag) + " primitives, and overlaps it for the rest. The hybrid factors measure a different design from the one measured "
                   "here; the microkernel factors are the comparison the question asks for.")
    out.append(paper_mechanism.applications_tex(result))
    from osbench_analysis.report.sections import programs

    out.append(programs.paragraph_tex(*programs.measured_and_predicted(result)))   # the workloads from their calls
    return "\n".join(out) + "\n"


#: a stat on the guest's own tmpfs within this factor of the same sandbox's intercepted null call costs 'about as much'
ABOUT = 1.25


def guest_tmpfs_sentence(guest: pd.DataFrame, cc: pd.DataFrame, env_short) -> str:
    """A stat served by the sandbox's own tmpfs, set against the same sandbox's intercepted null call (review
    W9: an argument, not the table's cells in a row): less than, about as much as, or more than one crossing,
    each class only where the data put a sandbox in it; a sandbox without a null-call crossing is named apart."""
    calls = {r.environment: r for r in cc.itertuples() if r.probe == CROSSING_PROBE}
    classes: dict[str, list[str]] = {"less": [], "about": [], "more": []}
    alone = []
    for r in guest.sort_values("cost_ns").itertuples():
        env = tex_escape(env_short(r.environment))
        call = calls.get(r.environment)
        if call is None:
            alone.append(f"{_cost_tex(r)} under {env}")
            continue
        ratio = r.cost_ns / call.cost_ns
        kind = "less" if ratio < 1 / ABOUT else "more" if ratio > ABOUT else "about"
        classes[kind].append(f"under {env} ({_time(r.cost_ns)} against {_time(call.cost_ns)})")
    first = {"less": "less than", "about": "about as much as", "more": "more than"}
    then = {"less": "less", "about": "about as much", "more": "more"}
    parts = [(first if not i else then)[k] + (" the same sandbox's intercepted \\texttt{getpid} " if not i else " ")
             + " and ".join(v) for i, (k, v) in enumerate((k, v) for k, v in classes.items() if v)]
    text = ("Served instead by the tmpfs the guest kernel keeps itself, without the host, one \\texttt{stat} costs "
            + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]) if parts else "")
    if alone:
        text += ("; under " if text else "Served by the guest kernel's own tmpfs, one \\texttt{stat} costs under ") \
            + " and ".join(a.split(" under ")[1] + " " + a.split(" under ")[0] for a in alone) + " more than natively"
    return text + "."


def _added_cost_sentences(cc: pd.DataFrame, env_short, lvl: str, k: int) -> str:
    """What one crossing adds, as an argument over Table tab:crossing's rows rather than a row of its cells
    (review W9): the cheapest and the dearest measurable crossing of each kind, the others between them, and how
    many times the one the other is; where an interval includes zero, no added cost is measurable."""
    def env(r) -> str:
        return tex_escape(env_short(r.environment))

    def span(subject: str, paid: list) -> str:
        paid = sorted(paid, key=lambda r: r.cost_ns)
        if len(paid) == 1:
            return f"{subject} adds {_cost_tex(paid[0])} under {env(paid[0])}"
        lo, hi, mid = paid[0], paid[-1], paid[1:-1]
        return (f"{subject} adds from {_cost_tex(lo)} under {env(lo)} to {_cost_tex(hi)} under {env(hi)}"
                + (" (" + "; ".join(f"{env(r)} {_time(r.cost_ns)}" for r in mid) + " between)" if mid else "")
                + f", the dearest {sig3(hi.cost_ns / lo.cost_ns)} times the cheapest")

    def free_words(free: list) -> str:
        return ("; under " + ", ".join(f"{env(r)} ({_cost_tex(r)})" for r in free) + " no added cost is measurable"
                if free else "")

    text = []
    for probe, subject in ((CROSSING_PROBE, "Intercepting a \\texttt{getpid}"),
                           (None, "Where only the file system is served elsewhere, one \\texttt{stat} on it")):
        rows = [r for r in cc.itertuples() if (r.probe == CROSSING_PROBE) == (probe == CROSSING_PROBE)]
        paid = [r for r in rows if not r.ci_low_ns <= 0 <= r.ci_high_ns]
        free = [r for r in rows if r.ci_low_ns <= 0 <= r.ci_high_ns]
        if paid:
            text.append(span(subject, paid) + free_words(free) + ".")
        elif free:
            text.append(f"{subject}: " + free_words(free)[2:] + ".")
    text.append(f"These are {lvl} intervals within one campaign; Table~\\ref{{tab:crossing}} gives them"
                + (f" beside the same differences pooled over the host's {k} campaigns" if k > 1 else "") + ".")
    return " ".join(text)


def _stacked_ratio(ratio: float, lo: float, hi: float) -> str:
    """A ratio over its interval in one narrow cell: '24.0' above '[20.7, 27.8]'."""
    from osbench_analysis.formatting import ci_parts

    v, lo_s, hi_s = ci_parts(ratio, lo, hi)
    return f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{v}\\\\{{}}[{lo_s}, {hi_s}]\\end{{tabular}}"


def guest_crossing_costs(result) -> pd.DataFrame:
    """One stat in a folder on the tmpfs a sandbox's own kernel serves (registry.WORKDIR_FS) minus native's, per
    environment that measured it, first host, both parties on one CPU (architectures.crossing_costs)."""
    from osbench_analysis.analysis import architectures
    from osbench_analysis.catalog.registry import FS_GUEST_TMPFS

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


#: lmbench's metric the null system call is paired with (data/reference/probe_mapping.csv says why)
LMBENCH_NULL_CALL = "simple_syscall"


def lmbench_syscall_note(pub: pd.DataFrame, primitives) -> str:
    """The caption's word on the null system call's published comparator (review W7), when the table shows
    one from lmbench's 'Simple syscall': which call that is in lmbench's code, and where the write to
    /dev/null its study names is paired instead; '' otherwise."""
    p = pub[pub["primitive"].isin(list(primitives))] if len(pub) else pub
    if p.empty or "metric_id" not in p or not (p["metric_id"] == LMBENCH_NULL_CALL).any():
        return ""
    return (" The null system call's published range is lmbench's `simple syscall', a \\texttt{getppid} in "
            "lmbench's code; its study describes it as a write to /dev/null, which is lmbench's `simple write', "
            "paired with this paper's write to /dev/null.")


def abstract_crossing_sentence(inp: SectionInputs) -> str:
    """The abstract's one sentence on crossings (the body's _crossing_sentences in short): the cheapest and the
    dearest measurable crossing of one system call, and the dearest of one stat, with their intervals."""
    from osbench_analysis.plots.architectures import env_short

    result = inp.result
    cc = quoted_crossing_costs(result)
    if cc is None or not len(cc):
        return ""
    cc = cc[(cc["host"] == result.hosts[0]) & (cc["placement"] == MAIN_PLACEMENT) & (cc["ci_low_ns"] > 0)]
    call = cc[cc["probe"] == CROSSING_PROBE].sort_values("cost_ns")
    stat = cc[cc["probe"] == FILE_CROSSING_PROBE].sort_values("cost_ns")
    def named(env: str) -> str:   # "(gVisor, ptrace)", not "(gVisor (ptrace))"
        short = env_short(env)
        return "(" + tex_escape(short[:-1].replace(" (", ", ") if short.endswith(")") else short) + ")"

    parts = []
    if len(call):
        lo, hi = call.iloc[0], call.iloc[-1]
        parts.append(f"{_cost_tex(lo)} {named(lo.environment)}"
                     + (f" to {_cost_tex(hi)} {named(hi.environment)}" if len(call) > 1 else "")
                     + " to one system call")
    if len(stat):
        hi = stat.iloc[-1]
        parts.append(f"up to {_cost_tex(hi)} {named(hi.environment)} to one stat")
    if not parts:
        return ""
    k = int(cc["n_campaigns"].max()) if "n_campaigns" in cc else 1
    return (" Interposing adds " + " and ".join(parts)
            + (f", pooled over {k} campaigns." if k > 1 else ", within one campaign."))


def _crossing_sentences(inp: SectionInputs) -> str:
    """' One system call costs X more under A; ... than natively. One stat ... .' from the crossing costs."""
    from osbench_analysis.plots.architectures import env_short

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


def factors_table_tex(inp: SectionInputs) -> str:
    """Every factor of the central figure with its interval beside the published factors (Table tab:factors),
    an appendix of its own: the body points to it, Figure fig:architectures shows the same values."""
    from osbench_analysis.plots.architectures import env_short

    result, m, pub = inp.result, inp.measured, inp.published
    envs = list(dict.fromkeys(m["environment"])) if len(m) else []
    if not envs:
        return ""
    lvl = percent_tex(result.settings.level)
    base = result.settings.baseline
    fs = environment_file_systems(result.primary_estimates, guest=False)
    out = [r"\section{Every factor beside the published ones}\label{sec:factors}"]
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
    out.append(_table(">{\\raggedright}p{0.15\\linewidth}" + "r" * len(envs) + "p{0.18\\linewidth}", head, rows,
                      f"Time per operation in each environment over {tex_escape(base)} Linux on the same host (\\(\\times\\), the ratio of the "
                      f"{ESTIMAND_PLURAL}, {lvl} interval; the first row names the file system the file probes used), beside "
                      "the published hybrid- or microkernel-over-monolithic factors for the same primitive ("
                      + _published_sources(pub, m["primitive"]) + ")."
                      + (" " + caveats + " It is not counted in Section~\\ref{sec:crossing}." if (caveats := design_caveats_tex(pub, m["primitive"]))
                         else "") + lmbench_syscall_note(pub, m["primitive"]),
                      "tab:factors", size=r"\tiny"))
    from osbench_analysis.report.sections.interposition import interposition_tex

    out.append(interposition_tex(m, inp.reference_root))
    return "\n".join(out) + "\n"
