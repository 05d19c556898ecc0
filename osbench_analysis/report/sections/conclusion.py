"""The Conclusion (conclusion.tex, Section sec:conclusion): the findings, each with its interval, from the
same numbers as the abstract."""
from __future__ import annotations

import pandas as pd

from osbench_analysis.report.sections.crossing import _crossing_sentences
from osbench_analysis.report.sections.factors import SectionInputs
from osbench_analysis.report.sections.service import _ipc_range, _service_sentence, load_published_ipc


def conclusion_tex(inp: SectionInputs, micro: pd.DataFrame | None = None, four: pd.DataFrame | None = None,
                   memory: str = "") -> str:
    """The Conclusion: the findings, each with its interval, generated from the same numbers as the abstract;
    `micro`: GNU Mach against Linux (microkernel.comparison), `four`: the four designs (kernels.matched)."""
    from osbench_analysis.analysis import microkernel
    from osbench_analysis.report.sections.kernels import rtt_sentence

    out = [r"\section{Conclusion}\label{sec:conclusion}",
           "We measured what a service outside the kernel costs in three ways: interposing a user-space or hosted "
           "kernel on Linux, serving a call from a user-space server over Linux's own IPC, and counting the path "
           "of four kernel designs on one emulated CPU."]
    cross = _crossing_sentences(inp)
    if cross:
        out.append("First, user-space and hosted kernels pay for intercepting every call." + cross)
    svc = _service_sentence(inp)
    if svc:
        ipc = load_published_ipc()
        out.append("Second, the microkernel pattern built from Linux's own IPC pays for Linux's wake-up path." + svc
                   + (f" Microkernels built for IPC do better: {_ipc_range(ipc)} (Table~\\ref{{tab:published-ipc}}, on "
                      "their own hardware); the factor measured here is Linux's IPC path's, and what a kernel built "
                      "for IPC pays on this hardware is not measured." if len(ipc) else ""))
    out.append("Third, the published factors most often quoted for `microkernels' come from xnu, a hybrid that serves "
               "these calls in its kernel; they bound a different design and cannot be compared with ours as if they "
               "measured the same one. Real microkernels on the same emulated CPU as Linux "
               "(Section~\\ref{sec:microkernel}) answer the question in path length."
               + ((" " + rtt) if (rtt := (rtt_sentence(four) if four is not None and len(four) else ""))
                  else microkernel.conclusion_sentence(micro))
               + (" These are path lengths without caches or TLBs, not times." if rtt else "")
               + (" " + memory if memory else ""))   # memory: sections/memory.conclusion_sentence
    return "\n".join(out) + "\n"
