"""Related work's sentence with our numbers (related_crossings.tex): the crossing costs measured here that
paper.tex's hand-written Related work sets beside gVisor's performance guide, Young et al. and Vangoor et
al. (whose own numbers are not quoted); every number from the analysis' crossing costs."""
from __future__ import annotations

from osbench_analysis.analysis.architectures import CROSSING_PROBE, FILE_CROSSING_PROBE
from osbench_analysis.formatting import tex_escape
from osbench_analysis.report.sections.common import MAIN_PLACEMENT, _cost_tex
from osbench_analysis.report.sections.crossing import quoted_crossing_costs
from osbench_analysis.report.sections.factors import SectionInputs

#: (probe, environments in the order they are named, what one operation is): gVisor's two platforms beside
#: gVisor's own guide and Young et al.; the FUSE server without its cache beside Vangoor et al.
SET_BESIDE = ((CROSSING_PROBE, ("gvisor", "gvisor-ptrace"), "one system call"),
              (FILE_CROSSING_PROBE, ("fuse-nocache",), "one stat on the served file system"))


def related_crossings_tex(inp: SectionInputs) -> str:
    """'Beside them, here one system call costs X more under gVisor and Y under gVisor (ptrace), and one stat
    ... Z more than natively (Table tab:crossing).' ('' when none of them was measured)."""
    from osbench_analysis.plots.architectures import env_short

    result = inp.result
    cc = quoted_crossing_costs(result)
    if cc is None or not len(cc):
        return ""
    cc = cc[(cc["host"] == result.hosts[0]) & (cc["placement"] == MAIN_PLACEMENT)]
    parts = []
    for probe, envs, what in SET_BESIDE:
        rows = [r for env in envs for r in cc[(cc["probe"] == probe) & (cc["environment"] == env)].itertuples()]
        if rows:
            parts.append(f"{what} costs " + " and ".join(
                f"{_cost_tex(r)} more under {tex_escape(env_short(r.environment))}" for r in rows))
    if not parts:
        return ""
    return ("Beside them, here " + ", and ".join(parts) + " than natively (Table~\\ref{tab:crossing}, on this "
            "host, each interval as the table states it).\n")
