"""The paper's generated sections, written from an analysis.Analysis and the
published data: abstract, background (the five studies, cited), results by
family, the architectures comparison (the central figure first), the
environments and reproduction tables.  paper/paper.tex only \\inputs them;
every number in them comes from data through this code.

Each function returns TeX text; `write_sections` writes them with their
figures into paper/generated/.  One module per section: abstract, background,
results (the appendix of native conditions), architectures (the central figure,
and crossing (c) with service (b)), scalability, environments, reproduce,
validation, conclusion and kernels (section (a): the four kernel designs on one emulated CPU); factors holds the measured and published factors and
SectionInputs, common the helpers every section shares, write `write_sections`.
"""
from __future__ import annotations

from osbench_analysis.catalog.families import FAMILIES, primitive_family  # noqa: F401
from osbench_analysis.report.sections.abstract import abstract_tex  # noqa: F401
from osbench_analysis.report.sections.architectures import architectures_figure_tex, architectures_tex  # noqa: F401
from osbench_analysis.report.sections.background import background_tex  # noqa: F401
from osbench_analysis.report.sections.common import (FILE_SERVER, MAIN_PLACEMENT, PLACEMENT_WORDS, _time, bibkey,  # noqa: F401
                                                     placement_words)
from osbench_analysis.report.sections.conclusion import conclusion_tex  # noqa: F401
from osbench_analysis.report.sections.crossing import crossing_tex, guest_crossing_costs, quoted_crossing_costs  # noqa: F401
from osbench_analysis.report.sections.environments import environments_tex, short_version  # noqa: F401
from osbench_analysis.report.sections.factors import (PUBLISHED_TOLERANCE, SectionInputs, _published_sources,  # noqa: F401
                                                      _published_summary, agreement, measured_factors,
                                                      published_factors)
from osbench_analysis.report.sections.reproduce import reproduce_tex  # noqa: F401
from osbench_analysis.report.sections.results import results_tex, value_cell  # noqa: F401
from osbench_analysis.report.sections.scalability import (MCGARRY_SWEEPS, PER_UNIT_SWEEPS, POINTS_FILE,  # noqa: F401
                                                          SWEEP_WORDS, SweepChange, _sweep_sentence, scalability_tex,
                                                          sweep_change, sweep_points_table)
from osbench_analysis.report.sections.service import load_published_ipc, published_ipc_tex, service_tex  # noqa: F401
from osbench_analysis.report.sections.validation import load_validation, validation_tex  # noqa: F401
from osbench_analysis.report.sections.write import figures, write_sections  # noqa: F401

__all__ = ["FAMILIES", "SectionInputs", "measured_factors", "published_factors", "agreement", "write_sections",
           "abstract_tex", "conclusion_tex", "crossing_tex", "service_tex", "background_tex", "results_tex", "architectures_tex", "environments_tex", "reproduce_tex",
           "primitive_family"]
