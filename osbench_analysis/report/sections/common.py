"""What every generated section shares: the placement that stands for a probe in cross-environment tables,
how a time, a crossing cost and a placement are printed, and the table every section's rows go in."""
from __future__ import annotations

from osbench_analysis.formatting import format_time_ns, time_with_ci_tex


#: Placement that stands for a probe in cross-environment tables (both parties
#: on one CPU: the only placement every environment supports).
MAIN_PLACEMENT = "same_cpu"

#: The design of a user-space file server (FUSE): it serves file operations only.
FILE_SERVER = "user-space-server"

#: A placement in the tables' words.
PLACEMENT_WORDS = {"same_cpu": "one CPU", "cross_cpu": "two CPUs", "unpinned": "unpinned"}


def placement_words(placement: str) -> str:
    return PLACEMENT_WORDS.get(str(placement), str(placement).replace("_", " "))


def _cost_tex(r) -> str:
    """A crossing cost (a difference, whose interval may reach below zero) with a minus sign, not a hyphen."""
    return time_with_ci_tex(r.cost_ns, r.ci_low_ns, r.ci_high_ns)


def _time(ns: float) -> str:
    value, unit = format_time_ns(ns)
    return f"{value} {unit}"


def _default_variant(probe: str, variant: str) -> bool:
    from osbench_analysis.report.reference_compare import _variant_params

    return _variant_params(probe, variant) == frozenset()


def _unit_of(probe: str) -> str:
    from osbench_analysis.catalog.registry import PROBES

    p = PROBES.get(probe)
    return p.unit if p is not None else ""


def _uses_files(probe: str) -> bool:
    from osbench_analysis.catalog.registry import PROBES

    p = PROBES.get(probe)
    return bool(p is not None and p.uses_workdir)


def _table(colspec: str, header: str, rows: list[str], caption: str, label: str, *, size: str = r"\small",
           placement: str = "tbp") -> str:
    # rows come from data: a table wider than the text (a long interval, a long variant) shrinks to fit
    # instead of running past the margin; one that fits keeps its size
    return "\n".join([f"\\begin{{table}}[{placement}]", r"\centering", size,
                      r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
                      f"\\begin{{tabular}}{{{colspec}}}",
                      r"\toprule", header + r" \\", r"\midrule", *rows, r"\bottomrule", r"\end{tabular}}",
                      f"\\caption{{{caption}}}", f"\\label{{{label}}}", r"\end{table}", ""])


def bibkey(source: dict, source_id: str) -> str:
    return source.get("bibkey") or source_id
