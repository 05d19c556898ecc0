"""Reproducing (reproduce.tex, Table tab:campaigns): the sealed campaigns the paper is computed from, their
files' checksums, the code commit and the command."""
from __future__ import annotations

from osbench_analysis.formatting import tex_escape


#: What a campaign read beside the analysis' own is used for (the campaigns table's marks).
_USE_WORDS = {"pooled": "an earlier campaign pooled with the analysis' own",
              "guest": "a campaign of the microkernel comparison (Section~\\ref{sec:microkernel})",
              "sweeps": "a campaign measured for the scalability sweeps alone (Appendix~\\ref{sec:scalability})",
              "versions": "a campaign of Linux across its versions (Section~\\ref{sec:versions})"}


def reproduce_tex(result, other_campaigns: dict | None = None) -> str:
    """Campaign ids, their sealed files' checksums, the code commit and the command; other_campaigns:
    campaign id -> (Manifest, what it is used for) for the campaigns read beside the analysis' own
    (the earlier campaigns pooled with them, section (a)'s guest campaigns)."""
    rows = []
    own = [(cid, result.manifests[cid], "") for cid in result.campaign_ids]
    more = [(cid, mf, use) for cid, (mf, use) in sorted((other_campaigns or {}).items()) if cid not in result.manifests]
    for cid, mf, use in own + more:
        sums = "; ".join(f"{name} {v.get('sha256', '')[:16]}" for name, v in sorted(mf.files.items()))
        git = mf.host.get("git", {}) or {}
        commit = (git.get("commit") or "")[:10] + ("+dirty" if git.get("dirty") else "")
        # a long id (linux-tcg-5.10-nomitig's) may break after a hyphen rather than run into the next column
        breakable = tex_escape(cid).replace("-", "-\\allowbreak{}")
        rows.append(f"\\texttt{{{breakable}}} & {tex_escape(mf.environment)}"
                    + (f" ({tex_escape(use)})" if use else "") + f" & {tex_escape(commit)} & "
                    f"\\texttt{{{tex_escape(sums)}}} \\\\")
    caption = ("The sealed campaigns this paper is computed from"
               + "".join(f"; {use}: {_USE_WORDS[use]}" for use in dict.fromkeys(u for *_, u in more)
                         if use in _USE_WORDS) + ".")
    return ("Every number, table and figure of this paper is regenerated from the sealed campaigns below by "
            "\\texttt{make paper} (\\texttt{osbench paper}); a campaign's seal lists the SHA-256 of each of its "
            "files, checked on every load.\n" + seal_table_tex(rows, caption))


#: The seal table's columns: a campaign id, its environment and use, the commit, the files' checksums.
_SEAL_COLUMNS = r"@{}>{\raggedright}p{0.3\linewidth}>{\raggedright}p{0.17\linewidth}l>{\raggedright\arraybackslash}p{0.28\linewidth}@{}"


def seal_table_tex(rows: list[str], caption: str) -> str:
    """The campaigns' seals as a longtable: however many campaigns, it breaks across pages with its header
    repeated instead of running past the text block into the footer, and it keeps its caption."""
    head = (r"Campaign & Environment & Code commit & Sealed files (SHA-256, first 16 hex digits) \\")
    return "\n".join([r"{\scriptsize", r"\begin{longtable}{" + _SEAL_COLUMNS + "}",
                       f"\\caption{{{caption}}}\\label{{tab:campaigns}}\\\\", r"\toprule", head, r"\midrule",
                       r"\endfirsthead", r"\toprule", head, r"\midrule", r"\endhead",
                       r"\midrule\multicolumn{4}{r}{continued on the next page}\\", r"\endfoot", r"\bottomrule",
                       r"\endlastfoot", *rows, r"\end{longtable}}", ""])
