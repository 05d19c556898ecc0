"""The abstract (abstract.tex): every number from the analysis."""
from __future__ import annotations

import pandas as pd

from osbench_analysis.analysis.pipeline import without_fs
from osbench_analysis.formatting import percent_tex, tex_escape
from osbench_analysis.report.sections.crossing import abstract_crossing_sentence
from osbench_analysis.report.sections.factors import SectionInputs
from osbench_analysis.report.sections.service import _service_sentence


def _host_words(result) -> str:
    """The paper's host as the abstract names it: 'an AMD EPYC (AVX-512) virtual machine' (its identity
    label's CPU; the rest of the label is the Method's)."""
    host = result.hosts[0] if getattr(result, "hosts", None) else None
    label = str(result.host_labels.get(host, host) if host else "")
    parts = label.split(" · ")
    if len(parts) == 3:
        article = "an" if parts[0][:1].upper() in "AEIOU" else "a"
        return tex_escape(f"{article} {parts[0]} virtual machine")
    return tex_escape(label)


def abstract_tex(inp: SectionInputs, micro: pd.DataFrame | None = None, four: pd.DataFrame | None = None,
                 memory: str = "") -> str:
    """The abstract, every number from the analysis; no count of comparisons.  `micro`: GNU Mach against Linux
    (microkernel.comparison), `four`: the four designs' matched table (kernels.matched); section (a) is the
    four designs when they were measured, else GNU Mach against Linux; `memory`: the four designs' round trip in
    the memory model's terms (sections/memory.abstract_sentence), '' without its campaigns."""
    from osbench_analysis.report.sections.kernels import abstract_sentence
    from osbench_analysis.analysis import microkernel
    result, m = inp.result, inp.measured
    est = result.primary_estimates
    native = est[est["environment"] == result.settings.baseline]
    n_prims = len({(p, without_fs(v)) for p, v in zip(native["probe"], native["variant"])})
    envs = list(dict.fromkeys(m["environment"])) if len(m) else []
    n_arch = m["probe"].nunique() if len(m) else 0
    lvl = percent_tex(result.settings.level)
    text = ("What does a primitive cost when the kernel service behind it runs outside the kernel? On "
            f"{_host_words(result)} we measure {n_prims} primitives natively"
            + (f" and {n_arch} of them under {len(envs)} user-space or hosted kernels and file servers" if envs else "")
            + f", with {lvl} confidence intervals.")
    four_designs = abstract_sentence(four, memory) if four is not None else ""
    if four_designs:
        text += four_designs
    elif microkernel.measured(micro):
        text += (" A real microkernel, GNU Mach, and Linux each run as a guest on the same emulated CPU, counted in "
                 "guest instructions." + microkernel.conclusion_sentence(micro))
    text += abstract_crossing_sentence(inp)
    text += _service_sentence(inp)
    return text + "\n"
