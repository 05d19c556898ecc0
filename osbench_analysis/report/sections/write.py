"""Writing the generated sections and their figures into paper/generated/ (write_sections)."""
from __future__ import annotations

from pathlib import Path

from osbench_analysis.report.sections.abstract import abstract_tex
from osbench_analysis.report.sections.architectures import architectures_figure_tex, architectures_tex
from osbench_analysis.report.sections.background import background_sentence_tex, background_tex
from osbench_analysis.report.sections.conclusion import conclusion_tex
from osbench_analysis.report.sections.crossing import factors_table_tex
from osbench_analysis.report.sections.environments import environments_tex, setup_detail_tex
from osbench_analysis.report.sections.factors import SectionInputs
from osbench_analysis.report.sections.reproduce import reproduce_tex
from osbench_analysis.report.sections.results import results_tex
from osbench_analysis.report.sections.scalability import MCGARRY_SWEEPS, scalability_tex, write_points
from osbench_analysis.report.sections.service import published_ipc_tex
from osbench_analysis.report.sections.validation import load_validation, validation_tex


def figures(inp: SectionInputs) -> dict:
    """name -> Figure for every figure the generated sections include: the central figure only (a figure
    per family would repeat its table)."""
    from osbench_analysis.plots import architectures as plots_architectures

    figs = {"architectures": plots_architectures.plot_architectures(inp.measured, inp.published,
                                                                    baseline=inp.result.settings.baseline)}
    if getattr(inp.result, "sweep_fits", None):
        from osbench_analysis.plots import sweeps as plots_sweeps

        figs["sweeps_paper"] = plots_sweeps.paper_sweeps_figure(inp.result.sweep_fits, first=MCGARRY_SWEEPS)
    return figs


def write_sections(result, out_dir: str | Path, reference_root=None, microkernel_table=None,
                   other_campaigns: dict | None = None, kernels_table=None, memory: dict | None = None) -> list[Path]:
    """Write every generated section and its figures into out_dir (microkernel_table: GNU Mach against Linux,
    kernels_table: the four designs' matched table (analysis.kernels.matched), section (a)'s findings for the
    abstract and the Conclusion; other_campaigns: for the reproduction table, see reproduce_tex; memory: the
    matched rows in memory terms, sections/memory.load, for memory.tex, its appendix and the Conclusion)."""
    from osbench_analysis.report.sections import memory as memory_section

    from osbench_analysis.plots import forest as plots

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    inp = SectionInputs.build(result, reference_root)
    cal = memory_section.calibration(result, memory)
    from osbench_analysis.report.sections.kernels import rtt_counts

    kernels_rtt = rtt_counts(kernels_table) if kernels_table is not None else {}
    texts = {"abstract": abstract_tex(inp, microkernel_table, kernels_table,
                                      memory_section.abstract_sentence(memory, cal, kernels_rtt)),
             "background_studies": background_tex(inp, reference_root),
             "background_sentence": background_sentence_tex(inp), "setup_detail": setup_detail_tex(result),
             "results": results_tex(result), "architectures": architectures_tex(inp),
             "factors_table": factors_table_tex(inp),
             "scalability": scalability_tex(result), "conclusion": conclusion_tex(inp, microkernel_table, kernels_table,
                                         memory_section.conclusion_sentence(memory, cal)),
             "architectures_figure": architectures_figure_tex(inp),
             "environments": environments_tex(result), "reproduce": reproduce_tex(result, other_campaigns),
             "validation": validation_tex(load_validation()), "published_ipc_table": published_ipc_tex(reference_root)}
    written = []
    for name, text in texts.items():
        (out / f"{name}.tex").write_text(text)
        written.append(out / f"{name}.tex")
    written.append(write_points(result, out))          # the measured sweep values, for the PDF check
    written += memory_section.write_section(result, out, memory)   # section (a) in memory terms, or no stale file
    for name, fig in figures(inp).items():
        written += plots.save_figure(fig, out, name)
        plots.close(fig)
    return written
