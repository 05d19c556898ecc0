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
from osbench_analysis import paper_sections
from osbench_analysis import python_env
from osbench_analysis.paths import GENERATED_DIR as GENERATED, PAPER_DIR
from osbench_analysis.stats.quote import MIN_RUNS, TYPICAL_RUN, below_level

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


def warning_tex(row) -> str:
    """A short, visible form of an estimate's warning for prose and tables:
    ' (runs not alike: 14 runs needed, 5 measured)', ' (5 runs not alike: interval of 93.75\\% confidence)',
    ' (only 3 runs)'; with the typical run when the mean over runs is quoted; empty when there is none."""
    warning = str(row.get("warning") or "") if hasattr(row, "get") else ""
    if not warning or warning == "nan":
        return ""
    parts = []
    n_runs = int(row.get("n_runs", 0) or 0)
    needed = row.get("runs_needed")
    if needed is not None and pd.notna(needed) and int(needed) > n_runs:
        parts.append(f"{int(needed)} runs needed, {n_runs} measured")
    conf, level = row.get("confidence"), row.get("level")
    if conf is not None and level is not None and pd.notna(conf) and below_level(conf, level):
        parts.append(f"interval of {conf * 100:.4g}\\% confidence")
    if row.get("quoted") != TYPICAL_RUN:
        typical, lo, hi = (row.get(k) for k in ("typical_run", "typical_run_low", "typical_run_high"))
        if all(v is not None and pd.notna(v) for v in (typical, lo, hi)) and bool(row.get("heterogeneous")):
            parts.append(f"typical run {time_with_ci_tex(typical, lo, hi)}")
    if n_runs < MIN_RUNS:
        parts.insert(0, f"only {n_runs} run{'s' if n_runs != 1 else ''}")
    head = "runs not alike" if bool(row.get("heterogeneous")) else ""
    body = "; ".join(parts)
    if head and body:
        return f" ({head}: {body})"
    return f" ({head or body or 'see the warning'})"


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
        # the statistics' warning (e.g. heterogeneous runs and the runs needed), empty when there is none
        out[base + "Warning"] = warning_tex(r)
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
    written += paper_sections.write_sections(result, out)
    written.append(python_env.write_tex(out))
    return written


def paper_macros(result) -> dict[str, str]:
    """All macros of an analysis: per-condition estimates of the first host's
    primary campaigns, and the numbers the prose quotes."""
    first_host = result.manifests[result.baseline_id].hostname
    est = result.primary_estimates
    est = est[est["host"] == first_host] if "host" in est.columns else est
    return {**estimate_macros(est, result.settings.baseline), **text_macros(result)}


#: What paper.tex \\inputs; the PDF is not built without them.
REQUIRED_GENERATED = ("macros.tex", "methods.tex", "abstract.tex", "background_studies.tex", "results.tex",
                      "architectures.tex", "architectures_figure.tex", "environments.tex", "reproduce.tex", "validation.tex", "reference_section.tex")


def build_pdf(paper_dir: str | Path | None = None) -> str:
    """Build paper.pdf with latexmk (or pdflatex twice); say so plainly when TeX is missing."""
    d = Path(paper_dir) if paper_dir else PAPER_DIR
    missing = [n for n in REQUIRED_GENERATED if not (d / "generated" / n).is_file()]
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


#: How each verdict class is named in the paper, in the order it is discussed.
VERDICT_WORDS = {"holds": "holds under every reading", "fails": "fails under every reading",
                 "depends": "depends on the reading", "knife-edge": "knife-edge",
                 "circular": "circular", "not checkable": "not checkable"}


def _readings_cell(g: pd.DataFrame) -> str:
    """The factor under each reading, marked by whether the claim holds under it."""
    parts = []
    for r in g.itertuples():
        if r.factor != r.factor:    # NaN: no reading
            continue
        mark = r"\,$\checkmark$" if r.holds else r"\,$\times$"
        parts.append(sig3(r.factor) + mark)
    return "; ".join(parts) or "--"


def reference_section_tex(readings: pd.DataFrame, counts: pd.DataFrame, capture: pd.DataFrame,
                          cited: pd.DataFrame | None = None) -> str:
    """'Published results revisited': what was captured from the five studies, and
    every comparison they state recomputed from their own tables under each
    defensible reading, with its verdict class.

    readings: reference_claims.claims_table (one row per claim x reading);
    counts: reference_claims.verdict_counts; capture: reference.capture_summary;
    cited: reference_compare.cited_results (numbers the studies quote from others)."""
    n_sources, n_tables = capture["source_id"].nunique(), len(capture[capture["kind"] == "values"])
    n_values = int(capture["n_values"].sum())
    c = counts.set_index("verdict_class")
    n_claims = int(c["n_claims"].sum())
    n_read = int(c["n_readings"].sum())
    cls = ", ".join(f"{int(c.loc[v, 'n_claims'])} {VERDICT_WORDS[v]}" for v in VERDICT_WORDS if v in c.index)
    checked = readings[readings["verdict_class"] != "not checkable"]
    order = {v: i for i, v in enumerate(VERDICT_WORDS)}
    rows = []
    for (_, cid), g in sorted(checked.groupby(["source_id", "claim_id"], sort=False),
                              key=lambda kv: (order.get(kv[1]["verdict_class"].iloc[0], 9), kv[0])):
        r0 = g.iloc[0]
        stated = "; ".join(dict.fromkeys(g["stated"].astype(str)))
        rows.append(f"{tex_escape(r0['statement'])}~\\citep{{{r0['bibkey']}}} & {tex_escape(stated)} & "
                    f"{_readings_cell(g)} & {tex_escape(r0['verdict_class'])} \\\\")
    out = [r"\section{Published results revisited}\label{sec:published}",
           f"The {n_sources} published studies hold {n_tables} tables with {n_values} published values, captured as "
           "data with their units and provenance and checked line by line against the source text. We recomputed "
           f"{n_claims} comparisons their texts state from their own tables. Where a sentence can be read in more than "
           "one defensible way (which columns, which machine, which aggregate, how an ambiguous cell splits), we "
           f"computed every reading ({n_read} in all) and classify the claim: {cls}. A claim is knife-edge when some "
           "reading lies within 5\\% of the sentence's threshold, and circular when the data's reading was itself "
           "chosen with the sentence. Table~\\ref{tab:claims} lists every checkable claim with its factor under each "
           "reading ($\\checkmark$: the sentence holds under that reading).", ""]
    if cited is not None and len(cited):
        crow = [f"{tex_escape(r.metric_as_published)} & {tex_escape(r.system_as_published)} & "
                f"{tex_escape(r.cell_as_published)} & \\citet{{{r.bibkey}}}"
                + (f", citing \\citet{{{r.cited_bibkey}}}" if isinstance(r.cited_bibkey, str) and r.cited_bibkey else "")
                + " \\\\" for r in cited.itertuples()]
        out += ["The studies also quote results of others that frame the microkernel question "
                "(Table~\\ref{tab:cited}).",
                r"\begin{table}[tbp]", r"\centering", r"\scriptsize",
                r"\begin{tabular}{p{0.34\linewidth}p{0.2\linewidth}p{0.12\linewidth}p{0.24\linewidth}}",
                r"\toprule", r"Result & System & As printed & Source \\", r"\midrule", *crow, r"\bottomrule",
                r"\end{tabular}", r"\caption{Results the studies cite from earlier work (as printed).}",
                r"\label{tab:cited}", r"\end{table}", ""]
    out += [r"{\scriptsize", r"\begin{longtable}{p{0.42\linewidth}p{0.14\linewidth}p{0.24\linewidth}l}",
            r"\caption{Comparisons the published studies state, recomputed from their own tables: the factor under "
            r"each defensible reading ($\checkmark$ the sentence holds, $\times$ it does not) and the verdict class.}"
            r"\label{tab:claims}\\",
            r"\toprule Statement & Stated & Factor per reading & Verdict \\ \midrule \endfirsthead",
            r"\toprule Statement & Stated & Factor per reading & Verdict \\ \midrule \endhead",
            *rows, r"\bottomrule", r"\end{longtable}}", ""]
    return "\n".join(out)


def write_reference_section(readings: pd.DataFrame, counts: pd.DataFrame, capture: pd.DataFrame,
                            cited: pd.DataFrame | None = None, out_dir: str | Path | None = None) -> Path:
    return write_text((Path(out_dir) if out_dir else GENERATED) / "reference_section.tex",
                      reference_section_tex(readings, counts, capture, cited))
