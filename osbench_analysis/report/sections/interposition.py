"""The published interposition costs beside ours (a paragraph of Appendix sec:factors, after Table tab:factors):
gVisor's developers' system-call figure and Vangoor et al.'s FUSE latency range, from
reference/interposition.py; every number from data/reference and the analysis, the setting of each published
figure from its setup.csv, so what differs is said next to the numbers."""
from __future__ import annotations

import pandas as pd

from osbench_analysis.formatting import ratio_with_ci, sig3, tex_escape
from osbench_analysis.reference import interposition as pub
from osbench_analysis.report.sections.common import _time

#: Young et al.: why no figure of theirs is compared (data/reference/young_gvisor/SOURCE.md)
YOUNG_NOT_COMPARED = ("The figures of \\citet{young2019gvisor} are not compared: the text of theirs available "
                      "to us holds their abstract and introduction, and none of their measured values.")
_PLATFORM = {"kvm": "KVM"}
_RELATION = {"above": "above it", "below": "below it", "overlaps": "overlapping it"}


def _ours(r, env_short) -> str:
    probe = "\\texttt{getpid}" if r.probe == pub.NULL_PROBE else "one \\texttt{stat}"
    return (f"{probe} under {tex_escape(env_short(r.environment))} takes {ratio_with_ci(r.ratio, r.ratio_low, r.ratio_high)}"
            f" times native Linux's ({_RELATION[r.relation]})")


def interposition_tex(measured: pd.DataFrame, reference_root=None) -> str:
    """The paragraph: for each published figure that one of our environments matches, their factor, ours with
    its interval, and what differs between the two measurements; Young et al.'s omission said once."""
    from osbench_analysis.plots.architectures import env_short

    cmp = pub.comparison(measured, reference_root)
    out = [r"\paragraph{Published interposition costs.}"]
    g = cmp[cmp["source"] == pub.GUIDE]
    if len(g):
        s, tab = pub.setup(pub.GUIDE, reference_root), pub.guide_syscall(reference_root)
        native = tab[tab["platform"] == "native"].iloc[0]
        theirs = "; ".join(f"under {_PLATFORM.get(r.platform, r.platform)} {sig3(r.factor)} times {tex_escape(s['native'])}'s "
                           f"({_time(r.value_ns)} against {_time(native.value_ns)})"
                           for r in tab[tab["platform"] != "native"].itertuples())
        out.append(f"gVisor's developers publish one system-call time per platform~\\citep{{{s['bibkey']}}}: "
                   f"{theirs}. Here " + "; ".join(_ours(r, env_short) for r in g.itertuples()) + ". "
                   f"Theirs: {tex_escape(s['call'])}; {tex_escape(s['hardware'])}, {tex_escape(s['software'])}; "
                   f"in a {tex_escape(s['native'])} container; {tex_escape(s['note'])}; {tex_escape(s['uncertainty'])}. "
                   "Ours: \\texttt{getpid} natively and under the gVisor of Table~\\ref{tab:environments}, on the host of "
                   "Section~\\ref{sec:setup}. Their figure has no systrap value, the platform of our default gVisor.")
    f = cmp[cmp["source"] == pub.FUSE]
    if len(f):
        s = pub.setup(pub.FUSE, reference_root)
        lo, hi = pub.fuse_latency_range(reference_root)
        out.append(f"\\citet{{{s['bibkey']}}} report {tex_escape(s['call'])} from {lo:g} to {hi:g} times "
                   f"{tex_escape(s['native'])}'s ({tex_escape(s['hardware'])}; {tex_escape(s['uncertainty'])}). Here "
                   + "; ".join(_ours(r, env_short) for r in f.itertuples())
                   + ": one metadata call against whole workloads on a disk, so only the order of magnitude "
                   "compares.")
    out.append(YOUNG_NOT_COMPARED)
    return " ".join(out) + "\n"
