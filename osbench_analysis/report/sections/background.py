"""Background: one item per published study, cited, with its systems and its benchmark tools
(background_studies.tex)."""
from __future__ import annotations

from osbench_analysis.formatting import tex_escape
from osbench_analysis.report.sections.common import bibkey
from osbench_analysis.report.sections.factors import SectionInputs


def _with_urls(text: str) -> str:
    """TeX-escaped text whose web addresses are typeset with \\url (they break at slashes, never past the margin)."""
    import re

    parts = re.split(r"(https?://[^\s,;)]+|\bgithub\.com/[^\s,;)]+)", str(text))
    return "".join(f"\\url{{{p.rstrip('.')}}}" + ("." if p.endswith(".") else "") if i % 2 else tex_escape(p)
                   for i, p in enumerate(parts))


def background_tex(inp: SectionInputs) -> str:
    """One item per published study: who (cited), what systems, what was measured."""
    items = []
    for sid, src in inp.sources.items():
        systems = ", ".join(dict.fromkeys(s.get("label_as_published", s.get("system_id", "")) for s in src.get("systems", [])))
        tools = src.get("benchmark_tools", "")
        items.append(f"\\item \\citet{{{bibkey(src, sid)}}}: "
                     f"{tex_escape(systems)}; measured with {_with_urls(tools)}.")
    # \sloppy: the studies' system names (Linux-AMDx8, MacBookPro) cannot be hyphenated
    return "\n".join([r"{\sloppy\begin{itemize}", *items, r"\end{itemize}}", ""])
