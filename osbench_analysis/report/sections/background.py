"""Background: the body's sentence naming the published studies (background_sentence.tex) and the appendix's
list, one item per study, cited, with its systems and its benchmark tools (background_studies.tex)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from osbench_analysis.formatting import tex_escape
from osbench_analysis.report.sections.common import bibkey
from osbench_analysis.report.sections.factors import SectionInputs


def _with_urls(text: str) -> str:
    """TeX-escaped text whose web addresses are typeset with \\url (they break at slashes, never past the margin)."""
    import re

    parts = re.split(r"(https?://[^\s,;)]+|\bgithub\.com/[^\s,;)]+)", str(text))
    return "".join(f"\\url{{{p.rstrip('.')}}}" + ("." if p.endswith(".") else "") if i % 2 else tex_escape(p)
                   for i, p in enumerate(parts))


def measured_systems(reference_root=None) -> dict[str, set[str]]:
    """Per study, the systems it measured itself: those with a value in one of its own tables (kind 'values'),
    not those it only quotes from earlier work in its text (L4, Mach, L3, MkLinux in the MINIX 3 study)."""
    from osbench_analysis.reference import studies as reference

    out: dict[str, set[str]] = {}
    for sid, spec in reference.load_table_specs(reference_root):
        if spec.get("kind") != "values":
            continue
        csv = Path(reference_root or reference.default_reference_dir()) / sid / f"{spec['table_id']}.csv"
        if csv.is_file():
            out.setdefault(sid, set()).update(pd.read_csv(csv, dtype=str)["system_id"])
    return out


def background_tex(inp: SectionInputs, reference_root=None) -> str:
    """One item per published study: who (cited), what systems it measured, with what; the results it only
    quotes from others are named as quoted (Table tab:cited), never as systems it measured."""
    measured = measured_systems(reference_root)
    items = []
    for sid, src in inp.sources.items():
        own = measured.get(sid)
        systems = [s for s in src.get("systems", []) if own is None or s.get("system_id") in own]
        names = ", ".join(dict.fromkeys(s.get("label_as_published", s.get("system_id", "")) for s in systems))
        quotes = own is not None and len(systems) < len(src.get("systems", []))
        tools = src.get("benchmark_tools", "")
        items.append(f"\\item \\citet{{{bibkey(src, sid)}}}: "
                     f"{tex_escape(names)}; measured with {_with_urls(tools)}"
                     + ("; it also quotes earlier results of other systems (Table~\\ref{tab:cited})" if quotes else "")
                     + ".")
    # \sloppy: the studies' system names (Linux-AMDx8, MacBookPro) cannot be hyphenated
    return "\n".join([r"{\sloppy\begin{itemize}", *items, r"\end{itemize}}", ""])


_COUNT_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def background_sentence_tex(inp: SectionInputs) -> str:
    """The Background's sentence: how many published studies the comparisons start from, cited, and where
    the appendix lists them and re-checks their claims ('' without any)."""
    keys = [bibkey(src, sid) for sid, src in inp.sources.items()]
    if not keys:
        return ""
    n = _COUNT_WORDS.get(len(keys), str(len(keys)))
    return (f"Our comparisons start from {n} published stud{'y' if len(keys) == 1 else 'ies'}~\\citep{{{','.join(keys)}}}: "
            "Appendix~\\ref{sec:studies} lists what each measured and with what, and Appendix~\\ref{sec:published} "
            "re-checks their claims against their own tables.\n")
