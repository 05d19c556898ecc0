"""Whole programs predicted from their system calls (issues #32 item 4, #42 item 5): the body's paragraph
(the crossing section's, after the workloads' slowdowns) and the appendix's table (apps_predicted_table.tex)
from analysis/syscall_mix.py's records: each workload's calls counted by name, each priced with the
primitive that makes it (or left unpriced and named), against its measured slowdown."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from osbench_analysis.catalog.families import print_name
from osbench_analysis.formatting import percent_tex, sig3, tex_escape


def _env(env: str) -> str:
    from osbench_analysis.plots.architectures import env_short

    return tex_escape(env_short(env))


def _calls(n: float) -> str:
    return str(int(round(n))) if abs(n - round(n)) < 0.05 else sig3(n)


def _probe_hash(mix: dict) -> str:
    return str(mix.get("probe_sources_sha256", ""))[:8]


def _counted_where(mix: dict) -> str:
    """'on this host with the probe code of its campaigns' or what differs, from the record's metadata."""
    paper = mix.get("paper_probe_sources", set())
    same = _probe_hash(mix) in {str(h)[:8] for h in paper}
    here = not mix.get("analysis_host") or mix.get("host") == mix.get("analysis_host")
    where = "on this host" if here else f"on another host ({tex_escape(str(mix.get('host_label', mix.get('host', ''))))})"
    return (where + (" with the probe code of its campaigns" if same else " with probe code other than its campaigns'")) + (
        f" ({tex_escape(str(mix.get('tool', '')).replace('-- ', ''))})" if mix.get("tool") else "")


def _agreement(mix: dict) -> str:
    """How the same programs' counts compare on the other machines that counted them ('' without any)."""
    from osbench_analysis.analysis import syscall_mix

    parts = []
    for other in mix.get("others", []):
        a = syscall_mix.mix_agreement(mix, other)
        if a.empty:
            continue
        worst = a.loc[(a["abs_diff"] / a["calls_a"]).idxmax()]
        kernel = str(mix.get("host_label", "")).rpartition(" · ")[2]
        same = kernel and kernel == str(other.get("host_label", "")).rpartition(" · ")[2]
        parts.append("counted again on another machine" + (f" with the same kernel build ({tex_escape(kernel)})"
                                                          if same else "") + ", the calls per run "
                     f"differ by at most {percent_tex(float(worst['abs_diff'] / worst['calls_a']))} of a workload's "
                     f"(summed over the calls; {print_name(worst['probe'])}: most in \\texttt{{{tex_escape(worst['largest'])}}}, "
                     f"{_calls(worst['largest_a'])} here against {_calls(worst['largest_b'])})")
    return "; ".join(parts)


def paragraph_tex(t: pd.DataFrame, mix: dict) -> str:
    """How far the calls, each priced by its own primitive, predict the measured slowdowns ('' without them)."""
    if t.empty:
        return ""
    share = t["unpriced_share"]
    none = t[t["predicted"].isna()]
    t = t[t["predicted"].notna()]
    within = t[(t["predicted_over_measured"] >= 0.8) & (t["predicted_over_measured"] <= 1.25)]
    over, under = t[t["predicted_over_measured"] > 1.25], t[t["predicted_over_measured"] < 0.8]
    total = {p: sum(w["per_run"].values()) for p, w in mix.get("workloads", {}).items()}
    calls = ", ".join(f"{_calls(n)} ({print_name(p)})" for p, n in total.items())
    agree = _agreement(mix)
    text = (f"\\paragraph{{Predicted from their calls.}} Counted by name with \\texttt{{strace -c -f}} "
            f"{_counted_where(mix)}, a run of each workload makes {calls} system calls"
            + (f"; {agree}" if agree else "") + ". "
            "Each call is priced by the primitive that makes it, environment less native in the same round; "
            "one no probe measured in the sandbox makes (a read, a write...) is left unpriced, not priced as "
            f"another call: {_share_range(share)} of a workload's calls"
            + _none_words(none) + (f". So priced, the calls predict {len(within)} of {len(t)} measured slowdowns "
                                   "within 25\\% (Table~\\ref{tab:apps-predicted} in the appendix)" if len(t) else
                                   ". No slowdown is predicted"))
    parts = []
    for part, word, why in ((under, "below", "unpriced calls and work no call's price covers"),
                            (over, "above", "calls served without the crossing a primitive pays")):
        if len(part):
            w = part.loc[(part["predicted_over_measured"] - 1).abs().idxmax()]
            parts.append(f"{len(part)} {word} ({why}; furthest {print_name(w['probe'])} under {_env(w['environment'])}, "
                         f"{sig3(w['predicted'])} against {sig3(w['measured'])})")
    return text + ("; " + "; ".join(parts) if parts else "") + "."


def _share_range(share: pd.Series) -> str:
    lo, hi = percent_tex(float(share.min())), percent_tex(float(share.max()))
    return lo if lo == hi else f"{lo}--{hi}"


def _none_words(none: pd.DataFrame) -> str:
    """'; none of the key-value session's 408 calls is priced in the sandboxes (not predicted)'."""
    out = []
    for probe, g in none.groupby("probe", sort=True):
        names = [n for n, _ in g.iloc[0]["unpriced"] if not n.startswith("(")][:2]
        envs = [_env(e) for e in g["environment"]]
        out.append(f"; none of the {_calls(float(g['calls'].iloc[0]))} calls of a {print_name(probe)} ("
                   + " and ".join(f"\\texttt{{{tex_escape(n)}}}" for n in names) + " above all) is priced under "
                   + (", ".join(envs[:-1]) + " or " + envs[-1] if len(envs) > 1 else envs[0])
                   + ": it is not predicted there")
    return "".join(out)


def _unpriced_words(t: pd.DataFrame, k: int = 4) -> str:
    """Per workload, its most frequent unpriced calls per run (in the sandbox environment pricing the most)."""
    out = []
    for probe, g in t.groupby("probe", sort=True):
        s = g[g["calls_not_served"] == 0]
        s = s if len(s) else g
        r = s.loc[s["calls_unpriced"].idxmin()]
        top = [(n, c) for n, c in r["unpriced"] if not n.startswith("(")][:k]
        if top:
            out.append(f"{print_name(probe)}: " + ", ".join(f"\\texttt{{{tex_escape(n)}}} {_calls(c)}" for n, c in top))
    return "; ".join(out)


def table_tex(t: pd.DataFrame, mix: dict) -> str:
    if t.empty:
        return ""
    def pred(r) -> str:
        if r.predicted != r.predicted:   # NaN: nothing priced
            return "-- & --"
        return (f"{sig3(r.predicted)} [{sig3(r.predicted_low)}, {sig3(r.predicted_high)}] & "
                f"{sig3(r.predicted_over_measured)}")

    rows = [f"{_env(r.environment)} & {print_name(r.probe)} & {sig3(r.measured)} [{sig3(r.measured_low)}, "
            f"{sig3(r.measured_high)}] & {pred(r)} & {percent_tex(r.unpriced_share)} \\\\" for r in t.itertuples()]
    host = tex_escape(str(mix.get("host_label", "")).replace(" · ", ", "))
    over = "; ".join(sorted(set(t["measured_over"]) - {""})) or "within one campaign"
    k = sorted(set(int(n) for n in t["n_rounds"]))
    lacking = {}
    for r in t.itertuples():
        for n, _ in r.unpriced:
            if n.startswith("("):
                lacking.setdefault(r.environment, set()).add(print_name(n.strip("()")))
    return "\n".join([
        r"\begin{table}[ht]", r"\centering", r"\scriptsize",
        r"\begin{tabular}{llrrrr}", r"\toprule",
        r"environment & workload & measured & predicted & predicted/measured & calls unpriced \\", r"\midrule",
        *rows, r"\bottomrule", r"\end{tabular}",
        r"\caption{Each workload's slowdown over native Linux, measured (95\% interval " + tex_escape(over)
        + r") and predicted from its system calls counted by name per run (on " + host + r", "
        + ("the paper's probe code" if _probe_hash(mix) in {str(h)[:8] for h in mix.get("paper_probe_sources", set())}
           else "other probe code than the paper's")
        + r", " + tex_escape(str(mix.get("tool", "")).replace("-- ", "")) + r"), each "
        r"priced by the primitive that makes it, environment less native in the same round: an \texttt{openat} as "
        r"an open + close (its \texttt{close} inside), a \texttt{stat}, \texttt{access} or \texttt{readlink} as a "
        r"stat, a process created and executed as a fork + exec (its \texttt{wait4} inside; an \texttt{execve} "
        r"that created no process, a failed path lookup, as a stat), an \texttt{mmap} as mmap + touch + munmap, a "
        r"\texttt{getpid}-like call as a null system call; under FUSE only the calls on files reach the server "
        r"(the rest cost nothing extra there). The prediction's 95\% interval is over the host's "
        + "/".join(map(str, k)) + r" rounds that measured the primitives and the workload natively (delta method "
        r"within each round, t over rounds). Calls unpriced: the share of a run's calls no probe measured in "
        r"the environment makes, left out of the prediction, not priced as another call ("
        + _unpriced_words(t) + "".join(f"; {_env(e)} did not measure " + " or ".join(sorted(v)) + ": those calls "
                                       "unpriced there" for e, v in sorted(lacking.items()))
        + r"); `--': no call priced, no prediction.}",
        r"\label{tab:apps-predicted}", r"\end{table}", ""])


def measured_and_predicted(result) -> tuple[pd.DataFrame, dict]:
    """analysis.syscall_mix.from_result with the slowdowns the paper's workload table prints (pooled over the
    host's rounds that measured them, report.mechanism.applications), so that both tables agree; the mix
    record carries the probe code of the analysed campaigns and the other machines' counts of the same
    programs."""
    from osbench_analysis.analysis import syscall_mix
    from osbench_analysis.report.mechanism import applications

    _, slow = applications(result)
    t, mix = syscall_mix.from_result(result, ratios=slow if len(slow) else None)
    if not mix:
        return t, mix
    host = result.hosts[0] if getattr(result, "hosts", None) else None
    s = result.samples
    mine = set(s.loc[s["host"] == host, "campaign_id"]) if host is not None and "host" in s else set(result.manifests)
    probes = {str((m.host or {}).get("probes", {}).get("source_sha256", ""))[:8] for cid, m in result.manifests.items()
              if cid in mine and cid in set(result.primary_ids)}
    return t, {**mix, "paper_probe_sources": probes, "analysis_host": host,
               "others": syscall_mix.other_mixes(mix.get("host", host))}


def write_section(result, out_dir) -> list[Path]:
    """apps_predicted_table.tex (its paragraph is the crossing section's)."""
    path = Path(out_dir) / "apps_predicted_table.tex"
    path.write_text(table_tex(*measured_and_predicted(result)) + "\n")
    return [path]
