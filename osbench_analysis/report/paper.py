"""Everything paper/ \\inputs is written here, from data through code: the
per-op table, the numbers quoted in the text (as macros), the methods
paragraph and the figures.  Nothing in paper/ is typed by hand."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.formatting import (campaign_stamp, ci_parts, format_time_ns, macro_name, sig3,  # noqa: F401
                                         tex_escape, time_unit, time_with_ci_tex)
from osbench_analysis.report import sections as paper_sections
# The published-results appendix lives in paper_published (re-exported for callers of the old names).
from osbench_analysis.report.hosts import identity_sentence
from osbench_analysis.report.published import reference_section_tex, write_reference_section  # noqa: F401
from osbench_analysis.errors import OsbenchError
from osbench_analysis.report.estimand import ESTIMAND, paper_estimates
from osbench_analysis.report import environment_versions as python_env
from osbench_analysis.paths import GENERATED_DIR as GENERATED, PAPER_DIR
from osbench_analysis.stats.quote import MIN_RUNS, below_level

def per_op_table_tex(estimates: pd.DataFrame, caption: str) -> str:
    """booktabs table: one row per condition with its estimate and CI."""
    lines = [r"\begin{table}[t]", r"\centering", r"\small", r"\begin{tabular}{lllrr}", r"\toprule",
             r"Probe & Variant & Placement & Per op [95\% CI] & Runs $\times$ batches \\", r"\midrule"]
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
    v, lo_s, hi_s = ci_parts(value / scale, lo / scale, hi / scale)
    return {base: v, base + "Low": lo_s, base + "High": hi_s, base + "Unit": unit}


def _ratio_macros(base: str, ratio: float, lo: float, hi: float) -> dict[str, str]:
    v, lo_s, hi_s = ci_parts(ratio, lo, hi)
    return {base: v, base + "Low": lo_s, base + "High": hi_s}


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
    # the paper prints the geometric mean over runs (paper_estimand); when runs are not alike the typical run
    # is what the statistics would quote, so it is given beside it
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
    host_name = next(c.host for c in result.campaigns if c.campaign_id == result.baseline_id)   # identity key
    primary = [c.campaign_id for c in result.campaigns if c.campaign_id in result.primary_ids and c.host == host_name]
    out = {
        "osbCampaignIds": tex_escape(", ".join(primary)),
        "osbCampaignRound": tex_escape(campaign_round_line(result, primary)),
        "osbBaselineCampaign": tex_escape(result.baseline_id),
        "osbRuns": str(cfg["runs"]), "osbBatches": str(cfg["batches"]),
        "osbMinBatchMs": f"{cfg['min_batch_ms']:g}",
        "osbMeasuringSeconds": f"{first.measuring_seconds:.0f}",
        "osbHostCpu": tex_escape(host["cpu_model"]), "osbHostCpus": str(host["cpu_count_logical"]),
        "osbHostKernel": tex_escape(host["kernel_release"]), "osbHostVirt": tex_escape(host["virtualization"]),
        "osbHostLabel": tex_escape(result.host_labels.get(host_name, host_name).replace(" · ", ", ")),
        "osbHostIdentity": identity_sentence(first.host_identity.parts)
        + (" (identity derived from an older manifest)" if first.host_identity.derived else ""),
        "osbLevelPercent": f"{result.settings.level * 100:g}", "osbResamples": str(result.settings.n_resamples),
        "osbEnvironmentCount": str(len(result.environments)),
    }
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


def _stamp_words(stamp: str) -> str:
    """A round's UTC start as a reader reads it: '20261126T160129Z' -> '2026-11-26 16:01 UTC' (never the id)."""
    import re

    m = re.fullmatch(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})\d{2}Z", stamp)
    return f"{m[1]}-{m[2]}-{m[3]} {m[4]}:{m[5]} UTC" if m else stamp


def campaign_round_line(result, primary: list[str] | None = None) -> str:
    """The title page's line: 'Measured 2026-11-26 11:30 UTC', or 'Measured in 3 campaign rounds, 2026-11-23 to
    2026-11-26', from the primary campaigns' rounds (reproducibility.round_of); a sweep campaign's round is added
    as '; scalability sweeps 2026-11-26 13:10 UTC'.  No campaign id: those are in the reproduction appendix."""
    from osbench_analysis.analysis.reproducibility import round_of

    primary = primary or result.primary_ids
    mfs = [result.manifests[c] for c in primary]
    rounds = list(dict.fromkeys(campaign_stamp(round_of(m)) for m in mfs))
    if len(rounds) == 1:
        line = f"Measured {_stamp_words(rounds[0])}"
    else:
        days = sorted({str(m.created_utc)[:10] for m in mfs})
        line = f"Measured in {len(rounds)} campaign rounds, {days[0]}" + (f" to {days[-1]}" if days[-1] != days[0] else "")
    sweeps = [campaign_stamp(round_of(m)) for m in (getattr(result, "sweep_manifests", None) or {}).values()]
    if sweeps:
        line += "; scalability sweeps " + ", ".join(_stamp_words(s) for s in dict.fromkeys(sweeps))
    return line


def macros_tex(macros: dict[str, str]) -> str:
    body = "".join(f"\\newcommand{{\\{k}}}{{{v}}}\n" for k, v in sorted(macros.items()))
    return "% Generated by osbench_analysis.report.paper; do not edit.\n" + body


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


class OutDirError(OsbenchError):
    """An out_dir that cannot take the generated files."""


def check_out_dir(out_dir: str | Path | None = None, make: bool = False) -> Path:
    """The folder the generated files go to: refused (OutDirError, one line) before any analysis runs when
    it is a file, lies below a file, or cannot be written (B95, B121); made only with ``make``."""
    import os

    out = Path(out_dir) if out_dir else GENERATED
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise OutDirError(f"out_dir {str(out)!r} is {'a file' if existing == out else 'below the file ' + str(existing)}"
                          ", not a folder: give a folder for the generated files")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutDirError(f"out_dir {str(out)!r} cannot be written ({existing} is not writable)")
    if make:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutDirError(f"cannot make out_dir {str(out)!r}: {e.strerror or e}") from None
    return out


def write_generated(result, out_dir: str | Path | None = None, campaigns_root: str | Path | None = None) -> list[Path]:
    """Write tables, macros, methods text and figures of an analysis.Analysis, the reproducibility
    table and figure, and section (a) from the mach / linux-tcg campaigns under campaigns_root.  The
    figures are drawn beside the tables (plots.forest.saving_aside): every file is written on return."""
    from osbench_analysis.plots import forest as plots

    with plots.saving_aside():
        return _write_generated(result, out_dir, campaigns_root)


def _write_generated(result, out_dir, campaigns_root) -> list[Path]:
    from osbench_analysis.analysis import kernels, microkernel
    from osbench_analysis.plots import forest as plots

    out = check_out_dir(out_dir, make=True)
    written = [
        write_text(out / "per_op_table.tex", per_op_table_tex(
            paper_estimates(result.primary_estimates), f"Per-operation time on this machine: the {ESTIMAND} with its "
            f"{result.settings.level:.0%} "
            f"confidence interval within one campaign ({tex_escape(', '.join(sorted(set(result.estimates['ci_method']))))}; "
            "see Methods), flagged batches kept.".replace("%", r"\%"))),
        write_text(out / "macros.tex", macros_tex(paper_macros(result))),
        write_text(out / "methods.tex", result.methods_tex(paper=True) + "\n"),
    ]
    result.estimates.to_csv(out / "per_op_estimates.csv", index=False)
    written.append(out / "per_op_estimates.csv")
    for name, fig in result.figures().items():
        written += plots.save_figure(fig, out, name)
        plots.close(fig)
    micro = microkernel.from_campaigns(root=campaigns_root)
    four = kernels.from_campaigns(root=campaigns_root)     # four designs, matched: section (a) when measured
    from osbench_analysis.report.sections import memory as memory_section

    memory = memory_section.load(campaigns_root)
    written += paper_sections.write_sections(result, out, microkernel_table=micro[0],
                                             other_campaigns=other_campaigns(result, campaigns_root),
                                             kernels_table=four[0], memory=memory)
    written += write_reproducibility(result, out)
    written += microkernel.write_section(out, loaded=micro)
    written += kernels.write_files(*four, out)
    from osbench_analysis.report.sections import kernels as kernels_section

    written += kernels_section.write_section(*four, out, memory_measured=memory is not None)
    from osbench_analysis.report.sections import versions as versions_section

    written += versions_section.write_section(out, root=campaigns_root)   # Linux across its versions
    from osbench_analysis.report.sections import machines

    written += machines.write_section(result, out, root=campaigns_root)
    from osbench_analysis.report.sections import programs

    written += programs.write_section(result, out)
    written.append(python_env.write_tex(out))
    return written


def other_campaigns(result, root=None) -> dict:
    """campaign id -> (Manifest, use) of the campaigns the paper reads beside the analysis' own: the
    earlier campaigns pooled with them and section (a)'s guest campaigns (for the reproduction table)."""
    from osbench_analysis.analysis import microkernel
    from osbench_analysis.analysis import reproducibility

    every = reproducibility.catalog_manifests(root)
    p = getattr(result, "pooling", None)
    pooled = {c for ids in (p.campaigns.values() if p is not None else []) for c in ids}
    out = {cid: (every[cid], "pooled") for cid in pooled if cid in every}
    from osbench_analysis.analysis.versions import parse_environment

    out.update({cid: (mf, "versions" if parse_environment(mf.environment) else "guest") for cid, mf in every.items()
                if mf.environment in microkernel.GUEST_ENVIRONMENTS})
    out.update({cid: (mf, "sweeps") for cid, mf in (getattr(result, "sweep_manifests", None) or {}).items()})
    return out


def reproducibility_tex(result) -> str:
    """The spread table and the body's one reproducibility figure (when campaigns pool), and the
    appendix of per-family figures; '' with one campaign (every interval then says 'within one campaign')."""
    from osbench_analysis.analysis import reproducibility

    p = getattr(result, "pooling", None)
    table = reproducibility.spread_tex(p)
    if not table:
        return ""
    k = _campaigns_words(p)
    return "\n".join([
        r"\begin{table}[!htbp]", r"\centering", r"\small", table,       # after its appendix heading
        f"\\caption{{Campaign-to-campaign spread on this host, each condition over its {k} campaigns: per environment the median over its "
        r"conditions of $\tau$ (the between-campaign standard deviation beyond what the runs explain) and of the "
        r"plain SD of the campaigns' values, log scale (0.05 is about 5\%), for absolute times and for ratios to "
        r"native measured in the same round.}", r"\label{tab:spread}", r"\end{table}",
        r"\begin{figure}[!htbp]", r"\centering", r"\includegraphics[width=0.85\linewidth]{generated/reproducibility_overview}",
        f"\\caption{{Every pooled condition's campaign values divided by its value pooled over its {k} campaigns "
        r"(one dot per campaign and condition; colour: campaign, oldest darkest), per environment: absolute "
        r"times (left) and ratios to native measured in the same round (right); " + _drift_words(p)
        + r" The analysis notebook draws each family's campaigns with their intervals.}",
        r"\label{fig:reproducibility}", r"\end{figure}", ""])


def _campaigns_words(p) -> str:
    """How many campaigns the pooled conditions pool over: '2' or '2 to 4' (conditions differ: an
    environment measured in fewer rounds pools fewer)."""
    n = p.estimates.loc[p.estimates["n_campaigns"] > 1, "n_campaigns"]
    lo, hi = (int(n.min()), int(n.max())) if len(n) else (p.n_campaigns_max, p.n_campaigns_max)
    return f"{lo}" if lo == hi else f"{lo} to {hi}"


def _drift_words(p) -> str:
    """Which panel of the reproducibility figure drifts more, from the data (reproducibility.drift_summary)."""
    import math

    from osbench_analysis.stats.heterogeneity import median_abs_log_deviation as mald

    keys = list(p.condition)
    a = mald(p.values, p.estimates, keys, "estimate_ns")
    r = mald(p.paired(), p.ratios, keys, "ratio") if len(p.ratios) else math.nan
    if math.isnan(a) or math.isnan(r):
        return ""
    pa, pr = math.expm1(a) * 100, math.expm1(r) * 100
    how = ("more than" if pa > 1.1 * pr else "less than" if pr > 1.1 * pa else "about as much as")
    return (f"a campaign's absolute time lies {pa:.2g}\\% from the pooled value in the median, {how} a ratio "
            f"({pr:.2g}\\%).")


def _family_of(figure_name: str) -> str:
    """The family a per-family reproducibility figure is of (its name is reproducibility_<slug>[_<part>])."""
    from osbench_analysis.catalog import families
    from osbench_analysis.plots.reproducibility import _slug

    slug = figure_name.removeprefix("reproducibility_")
    return next((f for f in families.FAMILIES if slug == _slug(f) or slug.startswith(_slug(f) + "_")),
                slug.replace("_", " "))


def _family_rank(figure_name: str) -> int:
    from osbench_analysis.catalog import families

    fam = _family_of(figure_name)
    return list(families.FAMILIES).index(fam) if fam in families.FAMILIES else len(families.FAMILIES)


def write_reproducibility(result, out: Path) -> list[Path]:
    from osbench_analysis.plots import forest as plots
    from osbench_analysis.plots import reproducibility as plots_reproducibility

    p = getattr(result, "pooling", None)
    # the spread table and figure go to the appendix (issue 42 item 7: the body toward 10 pages); the body's
    # threats paragraph (macro osbReproThreats) states the spread and points to them
    floats = reproducibility_tex(result)
    written = [write_text(out / "reproducibility.tex", "")]
    if p is not None and p.n_campaigns_max > 1:
        fig = plots_reproducibility.spread_overview(p)
        written += plots.save_figure(fig, out, "reproducibility_overview")
        plots.close(fig)
        # the per-family figures Analysis.figures() named (written above by write_generated), in the families' order
        names = sorted((f.stem for f in out.glob("reproducibility_*.pdf") if f.stem != "reproducibility_overview"),
                       key=lambda n: (_family_rank(n), n))
    else:
        names = []
    # the nine pages of per-family figures (one per family, each campaign's interval) are not printed: one summary
    # figure stands for them (the figures stay in result.figures() and paper/generated)
    body = [r"\section{Campaign to campaign}\label{sec:reproducibility}", floats] if floats else []
    if names:
        fig = plots_reproducibility.spread_summary(p)
        written += plots.save_figure(fig, out, "reproducibility_summary")
        plots.close(fig)
        body = [r"\section{Campaign to campaign}\label{sec:reproducibility}", floats,
                r"\begin{figure}[p]\centering\includegraphics[width=\linewidth,height=0.9\textheight,keepaspectratio]"
                r"{generated/reproducibility_summary}\caption{Campaign to campaign, per primitive: how far apart "
                f"the host's campaigns put each primitive in each environment (its {_campaigns_words(p)} campaigns of "
                "one host, one CPU): the largest campaign estimate over the smallest; 1: they agree.}"
                r"\end{figure}"]
    written.append(write_text(out / "reproducibility_appendix.tex", "\n".join(body) + "\n"))
    return written


def paper_macros(result) -> dict[str, str]:
    """All macros of an analysis: per-condition estimates of the first host's
    primary campaigns, and the numbers the prose quotes."""
    first_host = next(c.host for c in result.campaigns if c.campaign_id == result.baseline_id)
    est = paper_estimates(result.primary_estimates)
    est = est[est["host"] == first_host] if "host" in est.columns else est
    from osbench_analysis.analysis import reproducibility

    return {**estimate_macros(est, result.settings.baseline), **text_macros(result),
            **reproducibility.paper_macros(result)}


#: What paper.tex \\inputs; the PDF is not built without them.
REQUIRED_GENERATED = ("macros.tex", "methods.tex", "abstract.tex", "background_studies.tex", "background_sentence.tex",
                      "setup_detail.tex", "results.tex",
                      "architectures.tex", "architectures_figure.tex", "environments.tex", "reproduce.tex", "validation.tex",
                      "reference_section.tex", "scalability.tex", "conclusion.tex", "published_ipc_table.tex")


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
        r = subprocess.run(cmd, cwd=d, capture_output=True, text=True, errors="replace")  # TeX logs are not UTF-8
        if r.returncode != 0:
            tail = "\n".join(r.stdout.splitlines()[-25:])
            raise RuntimeError(f"{' '.join(cmd)} failed in {d}:\n{tail}")
    from osbench_analysis.report.pdf_check import check_paper

    check = check_paper(d / "paper.pdf", figures_dir=d / "generated")
    if not check.ok:
        raise PaperCheckError(f"{d / 'paper.pdf'} built but fails its check: " + "; ".join(check.problems))
    return (f"built {d / 'paper.pdf'}: {check.pages} pages, the body {check.body_pages} "
            f"(pages as PNG in {d / 'paper-pages'})")


class PaperCheckError(OsbenchError):
    """The built PDF fails the reader's check (overfull boxes, a body too long, '??', a blank figure)."""


