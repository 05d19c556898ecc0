"""Whole programs predicted from their system calls (issue #32, item 4): the body's paragraph (the
crossing section's, after the workloads' slowdowns) and the appendix's table (apps_predicted_table.tex) from analysis/syscall_mix.py's
records: each workload's counted calls priced with the per-primitive costs against its measured slowdown."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from osbench_analysis.catalog.families import print_name
from osbench_analysis.formatting import sig3, tex_escape


def _env(env: str) -> str:
    from osbench_analysis.plots.architectures import env_short

    return tex_escape(env_short(env))


def paragraph_tex(t: pd.DataFrame, mix: dict) -> str:
    """How far the priced calls predict the measured slowdowns, counted from the table ('' without it)."""
    if t.empty:
        return ""
    within = t[(t["predicted_over_measured"] >= 0.8) & (t["predicted_over_measured"] <= 1.25)]
    over, under = t[t["predicted_over_measured"] > 1.25], t[t["predicted_over_measured"] < 0.8]
    total = {p: sum(w["per_run"].values()) for p, w in mix.get("workloads", {}).items()}
    calls = ", ".join(f"{sig3(n)} ({print_name(p)})" for p, n in total.items())
    text = (f"\\paragraph{{Predicted from their calls.}} Counted natively with \\texttt{{strace -c -f}}, a run of "
            f"each workload makes {calls} system calls. Priced with what one call of its kind costs each "
            "environment over native Linux, they predict "
            f"{len(within)} of {len(t)} measured slowdowns within 25\\% (Table~\\ref{{tab:apps-predicted}} in the "
            "appendix)")
    parts = []
    for part, word, why in ((under, "below", "work no call's price covers"),
                            (over, "above", "calls served without the crossing a primitive pays")):
        if len(part):
            w = part.loc[(part["predicted_over_measured"] - 1).abs().idxmax()]
            parts.append(f"{len(part)} {word} ({why}; furthest {print_name(w['probe'])} under {_env(w['environment'])}, "
                         f"{sig3(w['predicted'])} against {sig3(w['measured'])})")
    return text + ("; " + "; ".join(parts) if parts else "") + "."


def table_tex(t: pd.DataFrame, mix: dict) -> str:
    if t.empty:
        return ""
    rows = [f"{_env(r.environment)} & {print_name(r.probe)} & {sig3(r.measured)} [{sig3(r.measured_low)}, "
            f"{sig3(r.measured_high)}] & {sig3(r.predicted)} [{sig3(r.predicted_low)}, {sig3(r.predicted_high)}] & "
            f"{sig3(r.predicted_over_measured)} & {r.calls_unpriced:.0f} \\\\" for r in t.itertuples()]
    host = tex_escape(str(mix.get("host_label", "")).replace(" · ", ", "))
    return "\n".join([
        r"\begin{table}[ht]", r"\centering", r"\scriptsize",
        r"\begin{tabular}{llrrrr}", r"\toprule",
        r"environment & workload & measured & predicted & predicted/measured & calls unpriced \\", r"\midrule",
        *rows, r"\bottomrule", r"\end{tabular}",
        r"\caption{Each workload's slowdown over native Linux, measured (95\% interval " + tex_escape(
            mix.get("interval_over", "within one campaign")) + r") and predicted from its "
        r"system calls counted per run (on " + host + r") priced at the environment's per-primitive cost over "
        r"native: an \texttt{execve} as a fork + exec, an \texttt{openat} as an open + close, a "
        r"\texttt{stat}-like call as a stat, any other as a null system call, and under FUSE only file calls "
        r"(the range from the prices' intervals, not a confidence interval); calls unpriced: of a kind "
        r"whose primitive the environment did not measure.}",
        r"\label{tab:apps-predicted}", r"\end{table}", ""])


def measured_and_predicted(result) -> tuple[pd.DataFrame, dict]:
    """analysis.syscall_mix.from_result with the slowdowns the paper's workload table prints (pooled over the
    host's rounds that measured them, report.mechanism.applications), so that both tables agree."""
    from osbench_analysis.analysis import syscall_mix
    from osbench_analysis.report.mechanism import _over, applications

    _, slow = applications(result)
    t, mix = syscall_mix.from_result(result, ratios=slow if len(slow) else None)
    return t, {**mix, "interval_over": _over(slow) if len(slow) else "within one campaign"}


def write_section(result, out_dir) -> list[Path]:
    """apps_predicted_table.tex (its paragraph is the crossing section's)."""
    path = Path(out_dir) / "apps_predicted_table.tex"
    path.write_text(table_tex(*measured_and_predicted(result)) + "\n")
    return [path]
