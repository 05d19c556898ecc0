"""The abstract (abstract.tex): every number from the analysis."""
from __future__ import annotations

import pandas as pd

from osbench_analysis.analysis.pipeline import without_fs
from osbench_analysis.formatting import percent_tex, sig3, tex_escape
from osbench_analysis.report.sections.common import _uses_files
from osbench_analysis.report.sections.crossing import _crossing_sentences
from osbench_analysis.report.sections.factors import SectionInputs
from osbench_analysis.report.sections.service import _service_sentence


def _slowdown_sentence(inp: SectionInputs) -> str:
    """Median and range of the factors per environment over the primitives whose interval excludes 1."""
    from osbench_analysis.plots.architectures import env_short

    m = inp.measured
    if not len(m):
        return ""
    parts = []
    for env in dict.fromkeys(m["environment"]):
        g = m[m["environment"] == env]
        clear = g[(g["ratio_low"] > 1) | (g["ratio_high"] < 1)]
        if clear.empty:
            continue
        what = "file primitives" if all(_uses_files(p) for p in g["probe"]) else "primitives"
        parts.append(f"{tex_escape(env_short(env))} {sig3(clear['ratio'].median())}$\\times$ "
                     f"({sig3(clear['ratio'].min())}--{sig3(clear['ratio'].max())}; {len(clear)} of {len(g)} {what})")
    if not parts:
        return ""
    return (" Over the primitives that differ measurably from native Linux (their interval excludes a factor of 1), "
            "the median factor and its range are: " + "; ".join(parts) + ".")


def _host_words(result) -> str:
    """The paper's host as the abstract names it: 'an AMD EPYC (AVX-512) virtual machine, 2 vCPU, Linux
    6.18.44-fc-v669' (its identity label)."""
    host = result.hosts[0] if getattr(result, "hosts", None) else None
    label = str(result.host_labels.get(host, host) if host else "")
    parts = label.split(" · ")
    if len(parts) == 3:
        article = "an" if parts[0][:1].upper() in "AEIOU" else "a"
        return tex_escape(f"{article} {parts[0]} virtual machine with {parts[1]}, host kernel {parts[2]}")
    return tex_escape(label)


def abstract_tex(inp: SectionInputs, micro: pd.DataFrame | None = None, four: pd.DataFrame | None = None) -> str:
    """The abstract, every number from the analysis; no count of comparisons.  `micro`: GNU Mach against Linux
    (microkernel.comparison), `four`: the four designs' matched table (kernels.matched); section (a) is the
    four designs when they were measured, else GNU Mach against Linux."""
    from osbench_analysis.report.sections.kernels import abstract_sentence
    from osbench_analysis.analysis import microkernel
    from osbench_analysis.plots.architectures import env_short

    result, m = inp.result, inp.measured
    est = result.primary_estimates
    native = est[est["environment"] == result.settings.baseline]
    n_probes = native["probe"].nunique()
    n_prims = len({(p, without_fs(v)) for p, v in zip(native["probe"], native["variant"])})
    envs = list(dict.fromkeys(m["environment"])) if len(m) else []
    n_arch = m["probe"].nunique() if len(m) else 0
    lvl = percent_tex(result.settings.level)
    text = ("How much does a primitive cost when the kernel service behind it runs outside the kernel? Published "
            "answers come from hardware of their time, without uncertainty, and often compare a hybrid kernel that "
            f"serves these calls in the kernel. On one Linux host ({_host_words(result)}) we measure {n_prims} "
            f"primitives ({n_probes} probes) "
            "natively"
            + (f", and the {n_arch} that the comparison rests on in {len(envs)} "
               f"environment{'s' if len(envs) != 1 else ''} where a user-space kernel, a hosted kernel or a "
               f"user-space file server serves them ({', '.join(tex_escape(env_short(e)) for e in envs)})"
               if envs else "")
            + f", each with a {lvl} confidence interval over repeated worker processes.")
    four_designs = abstract_sentence(four) if four is not None else ""
    if four_designs:
        text += four_designs
    elif microkernel.measured(micro):
        text += (" A real microkernel, GNU Mach, and Linux each run as a guest on the same emulated CPU, counted in "
                 "guest instructions." + microkernel.conclusion_sentence(micro))
    text += _crossing_sentences(inp)
    text += _service_sentence(inp)
    text += _slowdown_sentence(inp)
    return text + "\n"
