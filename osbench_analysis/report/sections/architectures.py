"""The architectures comparison: the central figure (architectures_figure.tex), placed at the start of the
results, and the comparisons (c) and (b) of the argument (architectures.tex)."""
from __future__ import annotations

from osbench_analysis.formatting import percent_tex, tex_escape
from osbench_analysis.report.estimand import ESTIMAND_PLURAL
from osbench_analysis.report.sections.crossing import crossing_tex
from osbench_analysis.report.sections.factors import SectionInputs
from osbench_analysis.report.sections.service import service_tex


def architectures_figure_tex(inp: SectionInputs) -> str:
    """The central figure, placed at the start of the results."""
    lvl = percent_tex(inp.result.settings.level)
    base = inp.result.settings.baseline
    # drawn at the text's width (plots.architectures): included at that width it prints at 9 pt
    return "\n".join([r"\begin{figure}[tbp]", r"\centering",
                      r"\includegraphics[width=\linewidth,height=0.6\textheight,keepaspectratio]{generated/architectures}",
                      f"\\caption{{Each primitive's time in each kernel environment over {tex_escape(base)} Linux on the same "
                      f"host (filled markers, measured here: the ratio of the {ESTIMAND_PLURAL} with its "
                      f"{lvl} interval, both parties on one CPU), beside the published factors between hybrid or "
                      "microkernel systems and monolithic ones on their own hardware (hollow grey markers, no intervals)."
                      + (" Rows named as in Table~\\ref{tab:factors}." if len(inp.measured) else "")
                      + (" A published factor marked $^\\dagger$ in Table~\\ref{tab:factors} is put down by its study "
                         "to a feature one system lacks, not to its design." if _any_caveat(inp) else "") + "}",
                      r"\label{fig:architectures}", r"\end{figure}", ""])


def _any_caveat(inp: SectionInputs) -> bool:
    """Whether a published factor of a primitive measured here carries a design caveat (a missing feature)."""
    from osbench_analysis.report.sections.factors import _caveated

    pub = inp.published
    if pub is None or pub.empty or inp.measured.empty:
        return False
    return bool(_caveated(pub[pub["primitive"].isin(set(inp.measured["primitive"]))]).any())


def architectures_tex(inp: SectionInputs) -> str:
    """The comparisons (c) and (b) of the argument; (a), a microkernel on the same emulated CPU, is
    \\input by paper.tex when its generated file exists."""
    return crossing_tex(inp) + "\n" + service_tex(inp)
