"""The appendix of every condition measured on native Linux (results.tex, Section sec:all-native): one
table per family, ordered by cost."""
from __future__ import annotations

import pandas as pd

from osbench_analysis.catalog.families import (bytes_per_op, family_rank, file_system, print_name, print_variant,
                                               probe_family)
from osbench_analysis.formatting import bytes_tex, percent_tex, rate_with_ci_tex, tex_escape, time_with_ci_tex
from osbench_analysis.report.estimand import ESTIMAND, paper_estimates
from osbench_analysis.report.sections.common import _table, placement_words


def _slug(family: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in family.lower()).strip("_")


def _family_estimates(result) -> dict[str, pd.DataFrame]:
    """The baseline environment's primary estimates per family, each ordered by cost."""
    est = paper_estimates(result.primary_estimates)
    est = est[(est["environment"] == result.settings.baseline) & (est["host"] == result.hosts[0])]
    est = est.assign(family=[probe_family(p) for p in est["probe"]])
    out = {}
    for family in sorted(est["family"].unique(), key=family_rank):
        out[family] = est[est["family"] == family].sort_values("estimate_ns").reset_index(drop=True)
    return out


def value_cell(probe: str, variant: str, ns: float, lo: float, hi: float) -> str:
    """A condition's number as the paper prints it: a time per operation, or for a bandwidth probe the bytes
    moved per second (with the bytes one operation moves)."""
    n = bytes_per_op(probe, variant)
    if n:
        return f"{rate_with_ci_tex(n, ns, lo, hi)} ({bytes_tex(n)} per op)"
    return time_with_ci_tex(ns, lo, hi)


def results_tex(result) -> str:
    """The appendix of every condition measured natively: per family one table, ordered by cost."""
    from osbench_analysis.stats.pooled import WITHIN_ONE_CAMPAIGN

    lvl = percent_tex(result.settings.level)
    out = [r"\section{Every condition measured on native Linux}\label{sec:all-native}",
           f"Tables~\\ref{{tab:res-first}}--\\ref{{tab:res-last}} give, family by family, the {ESTIMAND} of every "
           f"condition measured on native Linux in the baseline campaign with its {lvl} interval "
           f"{WITHIN_ONE_CAMPAIGN}; bandwidth probes are given in bytes per "
           "second. The file system a file probe ran on is named in its own column."
           + (f" How far the host's {result.pooling.n_campaigns_max} comparable campaigns spread is in "
              "Table~\\ref{tab:spread} and Figure~\\ref{fig:reproducibility}."
              if getattr(result, "pooling", None) is not None and result.pooling.n_campaigns_max > 1 else ""), ""]
    fams = _family_estimates(result)
    names = list(fams)
    for i, (family, est) in enumerate(fams.items()):
        label = "tab:res-first" if i == 0 else ("tab:res-last" if i == len(names) - 1 else f"tab:res-{_slug(family)}")
        rows = []
        for _, r in est.iterrows():
            warned_row = _warned(r)
            needed = r.get("runs_needed")
            runs = f"{int(r['n_runs'])}"
            if warned_row and needed is not None and pd.notna(needed) and int(needed) > int(r["n_runs"]):
                runs += f" ({int(needed)} needed)"
            mark = r" $\dagger$" if warned_row else ""
            rows.append(f"{print_name(r['probe'])}{mark} & {tex_escape(print_variant(r['variant']))} & "
                        f"{tex_escape(file_system(r['variant']))} & {placement_words(r['placement'])} & "
                        f"{value_cell(r['probe'], r['variant'], r['estimate_ns'], r['ci_low_ns'], r['ci_high_ns'])} & "
                        f"{runs} \\\\")
        out.append(_table("lllllr", rf"Probe & Variant & File system & Placement & Per operation [{lvl} CI] & Runs",
                          rows, f"{tex_escape(family)} on native Linux: the {ESTIMAND} per operation with its {lvl} "
                          f"interval {WITHIN_ONE_CAMPAIGN}, ordered by cost ($\\dagger$: the runs are not alike or too few; the runs a slow "
                          "minority would need in brackets).", label, size=r"\scriptsize", placement="!htbp"))
    return "\n".join(out)


def _warned(row) -> bool:
    w = row.get("warning") if hasattr(row, "get") else None
    return isinstance(w, str) and w not in ("", "nan")
