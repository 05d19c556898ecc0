"""Everything paper/ \\inputs is written here, from data through code: the
per-op table, the numbers quoted in the text (as macros), the methods
paragraph and the figures.  Nothing in paper/ is typed by hand."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.formatting import (format_time_ns, macro_name, sig3, tex_escape,  # noqa: F401  (re-exported)
                                         time_unit, time_with_ci_tex)
from osbench_analysis.paths import GENERATED_DIR as GENERATED, PAPER_DIR

def per_op_table_tex(estimates: pd.DataFrame, caption: str) -> str:
    """booktabs table: one row per condition with its estimate and CI."""
    lines = [r"\begin{table}[t]", r"\centering", r"\small", r"\begin{tabular}{lllrr}", r"\toprule",
             r"Probe & Variant & Placement & Median per op [95\% CI] & Runs $\times$ batches \\", r"\midrule"]
    for _, r in estimates.sort_values(["probe", "variant", "placement"]).iterrows():
        lines.append(f"{tex_escape(r['probe'])} & {tex_escape(r['variant'] or '--')} & "
                     f"{tex_escape(r['placement'].replace('_', ' '))} & "
                     f"{time_with_ci_tex(r['estimate_ns'], r['ci_low_ns'], r['ci_high_ns'])} & "
                     f"{int(r['n_runs'])} $\\times$ {int(r['n_batches']) // max(int(r['n_runs']), 1)} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}", f"\\caption{{{caption}}}", r"\label{tab:per-op}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _env_part(environment: str, baseline: str) -> list[str]:
    """Macro-name prefix of an environment: none for the baseline (native keeps
    its stable names), the environment's name otherwise."""
    return [] if environment == baseline else [environment]


def _time_macros(base: str, value: float, lo: float, hi: float) -> dict[str, str]:
    scale, unit = time_unit(value)
    return {base: sig3(value / scale), base + "Low": sig3(lo / scale), base + "High": sig3(hi / scale),
            base + "Unit": unit}


def _ratio_macros(base: str, ratio: float, lo: float, hi: float) -> dict[str, str]:
    return {base: sig3(ratio), base + "Low": sig3(lo), base + "High": sig3(hi)}


def estimate_macros(estimates: pd.DataFrame, baseline: str = "native") -> dict[str, str]:
    """\\osb[<Env>]<Probe><Variant><Placement>{,Low,High,Unit} for every condition
    (one campaign per environment): the baseline environment's names carry no
    environment, so the paper's native numbers keep their names whatever else
    is measured."""
    out = {}
    for _, r in estimates.iterrows():
        base = macro_name(*_env_part(r["environment"], baseline), r["probe"], r["variant"], r["placement"])
        if base in out:
            raise ValueError(f"two conditions map to macro \\{base}: pass one campaign per environment")
        out.update(_time_macros(base, r["estimate_ns"], r["ci_low_ns"], r["ci_high_ns"]))
    return out


def text_macros(result) -> dict[str, str]:
    """Every number the paper's prose quotes, keyed explicitly: the baseline
    campaign's parameters and host, ratios to the baseline environment
    (\\osbRatio<Env><Probe>...), placement ratios, crossing costs
    (\\osbCrossing<Env><Placement>), each with its interval."""
    baseline = result.settings.baseline
    first = result.manifests[result.baseline_id]
    cfg, host = first.config, first.host
    primary = [cid for cid in result.primary_ids if result.manifests[cid].hostname == first.hostname]
    out = {
        "osbCampaignIds": tex_escape(", ".join(primary)),
        "osbBaselineCampaign": tex_escape(result.baseline_id),
        "osbRuns": str(cfg["runs"]), "osbBatches": str(cfg["batches"]),
        "osbMinBatchMs": f"{cfg['min_batch_ms']:g}",
        "osbMeasuringSeconds": f"{first.measuring_seconds:.0f}",
        "osbHostCpu": tex_escape(host["cpu_model"]), "osbHostCpus": str(host["cpu_count_logical"]),
        "osbHostKernel": tex_escape(host["kernel_release"]), "osbHostVirt": tex_escape(host["virtualization"]),
        "osbLevelPercent": f"{result.settings.level * 100:g}", "osbResamples": str(result.settings.n_resamples),
        "osbEnvironmentCount": str(len(result.environments)),
    }
    host_name = first.hostname
    pr = result.placement_ratios
    if len(pr):
        for _, r in pr[pr["campaign_id"].isin(primary)].iterrows():
            base = macro_name("ratio", *_env_part(r["environment"], baseline), r["probe"], r["variant"],
                              "cross over same")
            out.update(_ratio_macros(base, r["ratio"], r["ci_low"], r["ci_high"]))
    er = result.environment_ratios
    if len(er):
        for _, r in er[er["host"] == host_name].iterrows():
            base = macro_name("ratio", r["environment"], r["probe"], r["variant"], r["placement"])
            out.update(_ratio_macros(base, r["ratio"], r["ci_low"], r["ci_high"]))
    cc = result.crossing_costs
    if len(cc):
        for _, r in cc[cc["host"] == host_name].iterrows():
            out.update(_time_macros(macro_name("crossing", r["environment"], r["placement"]),
                                    r["cost_ns"], r["ci_low_ns"], r["ci_high_ns"]))
    return out


def macros_tex(macros: dict[str, str]) -> str:
    body = "".join(f"\\newcommand{{\\{k}}}{{{v}}}\n" for k, v in sorted(macros.items()))
    return "% Generated by osbench_analysis.paper; do not edit.\n" + body


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_generated(result, out_dir: str | Path | None = None) -> list[Path]:
    """Write tables, macros, methods text and figures of an analysis.Analysis."""
    from osbench_analysis import plots

    out = Path(out_dir) if out_dir else GENERATED
    out.mkdir(parents=True, exist_ok=True)
    written = [
        write_text(out / "per_op_table.tex", per_op_table_tex(
            result.primary_estimates, f"Per-operation time on this machine: median with its {result.settings.level:.0%} "
            f"confidence interval ({tex_escape(', '.join(sorted(set(result.estimates['ci_method']))))}; "
            "see Methods), flagged batches kept.".replace("%", r"\%"))),
        write_text(out / "macros.tex", macros_tex(paper_macros(result))),
        write_text(out / "methods.tex", result.methods_tex() + "\n"),
    ]
    result.estimates.to_csv(out / "per_op_estimates.csv", index=False)
    written.append(out / "per_op_estimates.csv")
    for name, fig in result.figures().items():
        written += plots.save_figure(fig, out, name)
        plots.close(fig)
    return written


def paper_macros(result) -> dict[str, str]:
    """All macros of an analysis: per-condition estimates of the first host's
    primary campaigns, and the numbers the prose quotes."""
    first_host = result.manifests[result.baseline_id].hostname
    est = result.primary_estimates
    est = est[est["host"] == first_host] if "host" in est.columns else est
    return {**estimate_macros(est, result.settings.baseline), **text_macros(result)}


def build_pdf(paper_dir: str | Path | None = None) -> str:
    """Build paper.pdf with latexmk (or pdflatex twice); say so plainly when TeX is missing."""
    d = Path(paper_dir) if paper_dir else PAPER_DIR
    missing = [n for n in ("macros.tex", "per_op_table.tex", "methods.tex") if not (d / "generated" / n).is_file()]
    if missing:
        return f"paper not built: generated files missing ({', '.join(missing)}); run `osbench paper` first"
    if shutil.which("latexmk"):
        cmds = [["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"]]
    elif shutil.which("pdflatex"):
        cmds = [["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"]] * 2
    else:
        return "paper not built: no latexmk/pdflatex on this machine (generated tables and figures are up to date)"
    for cmd in cmds:
        r = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
        if r.returncode != 0:
            tail = "\n".join(r.stdout.splitlines()[-25:])
            raise RuntimeError(f"{' '.join(cmd)} failed in {d}:\n{tail}")
    return f"built {d / 'paper.pdf'}"


def reference_section_tex(claims: pd.DataFrame, capture: pd.DataFrame) -> str:
    """The paper's section on the seed papers' own numbers: what was captured,
    and each headline claim recomputed from the published tables."""
    n_sources, n_tables = capture["source_id"].nunique(), len(capture[capture["kind"] == "values"])
    n_values = int(capture["n_values"].sum())
    checked = claims[claims["verdict"] != "not checkable"]
    n_ok = int((checked["verdict"] == "supported").sum())
    verdict = {True: "yes", False: r"\textbf{no}"}
    rows = "\n".join(
        f"{tex_escape(r.statement)} & {tex_escape(r.stated)} & {sig3(r.factor_from_data)} & "
        f"{verdict[r.verdict == 'supported']} \\\\"
        for r in checked.itertuples())
    return "\n".join([
        r"\section{Published results}",
        f"The {n_sources} published studies hold {n_tables} tables with {n_values} published values, "
        "captured as data with their units and provenance and checked line by line against the source text. "
        f"Table~\\ref{{tab:claims}} recomputes {len(checked)} comparisons the papers state from their own tables; "
        f"{n_ok} are supported by the published numbers and {len(checked) - n_ok} are not "
        "(fixed tolerances: \\textquotedblleft about $N\\times$\\textquotedblright{} within 20\\%, "
        "a paper's own arithmetic within 2\\%, \\textquotedblleft slightly\\textquotedblright{} at most $1.2\\times$).",
        "",
        r"\begin{figure}[t]", r"\centering",
        r"\includegraphics[width=\linewidth]{generated/reference_architecture_ratios}",
        r"\caption{Microkernel and hybrid systems relative to monolithic ones in the published studies, per primitive "
        r"(log scale; published values, other hardware and eras).}", r"\label{fig:reference}", r"\end{figure}",
        "",
        r"{\small", r"\begin{longtable}{p{0.46\linewidth}p{0.24\linewidth}rc}",
        r"\caption{Headline comparisons of the published studies recomputed from their tables.}\label{tab:claims}\\",
        r"\toprule Statement & Stated & From data & Supported \\ \midrule \endfirsthead",
        r"\toprule Statement & Stated & From data & Supported \\ \midrule \endhead",
        rows, r"\bottomrule", r"\end{longtable}}", ""])


def write_reference_section(claims: pd.DataFrame, capture: pd.DataFrame, out_dir: str | Path | None = None) -> Path:
    return write_text((Path(out_dir) if out_dir else GENERATED) / "reference_section.tex",
                      reference_section_tex(claims, capture))
