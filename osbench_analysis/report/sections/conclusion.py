"""The Conclusion (conclusion.tex, Section sec:conclusion): what each comparison answers and what it leaves
open, one paragraph each, from the same numbers as the abstract (its sentences on crossings, the service and
the four designs) and the factor table's null system call."""
from __future__ import annotations

import pandas as pd

from osbench_analysis.analysis.architectures import CROSSING_PROBE
from osbench_analysis.formatting import sig3
from osbench_analysis.report.sections.crossing import abstract_crossing_sentence
from osbench_analysis.report.sections.factors import SectionInputs
from osbench_analysis.report.sections.service import _ipc_range, _service_sentence, load_published_ipc


def _null_call_factors(inp: SectionInputs) -> str:
    """'81.0--118' (or one factor): the range over the environments of a null system call's time over native's,
    as the factor table prints them; '' unless measured."""
    m = inp.measured
    if m is None or m.empty or "probe" not in m:
        return ""
    r = m.loc[m["probe"] == CROSSING_PROBE, "ratio"].astype(float)
    if r.empty:
        return ""
    return sig3(r.min()) if len(r) == 1 or sig3(r.min()) == sig3(r.max()) else f"{sig3(r.min())}--{sig3(r.max())}"


def conclusion_tex(inp: SectionInputs, micro: pd.DataFrame | None = None, four: pd.DataFrame | None = None,
                   memory: str = "") -> str:
    """The Conclusion: what each comparison answers, with the abstract's numbers, and what none of them
    answers; `micro`: GNU Mach against Linux (microkernel.comparison), `four`: the four designs
    (kernels.matched), `memory`: the designs in memory terms (sections/memory.conclusion_sentence)."""
    from osbench_analysis.analysis import microkernel
    from osbench_analysis.report.sections.kernels import rtt_sentence

    paragraphs = []
    cross = abstract_crossing_sentence(inp).strip()
    if cross:
        factors = _null_call_factors(inp)
        paragraphs.append("A user-space or hosted kernel puts a toll on every call it intercepts. " + cross
                          + (f" A null system call then takes {factors} times as long as natively "
                             "(Table~\\ref{tab:factors})." if factors else ""))
    svc = _service_sentence(inp).strip()
    if svc:
        ipc = load_published_ipc()
        paragraphs.append("Building the microkernel pattern from Linux's own IPC pays Linux's scheduler and wake-up "
                          "path on every call. " + svc
                          + (f" Kernels built for IPC make the crossing itself cheap: {_ipc_range(ipc)}, on their own "
                             "hardware (Table~\\ref{tab:published-ipc}). The factor measured here is that of Linux's "
                             "IPC path; what a kernel built for IPC pays on this hardware is not measured."
                             if len(ipc) else ""))
    # with the memory model's sentence the round trip's ratios give way to its footprint (the body has both)
    rtt = rtt_sentence(four, short=bool(memory)) if four is not None and len(four) else ""
    if rtt:
        cost = ("The counts price every privileged instruction at one and every cache and TLB miss at nothing, "
                "and such misses dominated microkernel IPC in time in earlier work~\\citep{chen1993mach,liedtke1995}")
        paragraphs.append("Real microkernels, run on the same emulated CPU as Linux (Section~\\ref{sec:microkernel}), "
                          "answer the question in path length" + (" and in a model's memory events. " if memory else ". ")
                          + rtt + " " + cost
                          + ("; a cache and TLB model counts those misses. " + memory if memory else
                             ": the counts compare the lengths of the paths, not their times."))
    elif microkernel.measured(micro):
        paragraphs.append("A real microkernel, GNU Mach, run on the same emulated CPU as Linux "
                          "(Section~\\ref{sec:microkernel}), answers the question in path length."
                          + microkernel.conclusion_sentence(micro) + (" " + memory if memory else ""))
    paragraphs.append("The published factors most often quoted for `microkernels' come from xnu, a hybrid that "
                      "serves these calls in its kernel: they measure another design and cannot stand in for any of "
                      "these.")
    # the first sentence says what the comparisons amount to, not what was done
    lead = ("Each of the three comparisons answers a part of the question; none answers it in time for a real "
            "microkernel. ")
    return "\n\n".join([r"\section{Conclusion}\label{sec:conclusion}", lead + paragraphs[0], *paragraphs[1:]]) + "\n"
