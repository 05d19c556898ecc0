"""The Method's statement of validated coverage (validation.tex), from the cells of the statistics'
simulation study."""
from __future__ import annotations

from pathlib import Path

import pandas as pd


def load_validation(path: str | Path | None = None) -> pd.DataFrame:
    """The cells of the statistics' simulation study (benchmarks/stats_coverage.py --save)."""
    import json

    from osbench_analysis.paths import VALIDATION_DIR

    p = Path(path) if path else VALIDATION_DIR / "stats_coverage.jsonl"
    if not p.is_file():
        return pd.DataFrame()
    return pd.DataFrame([json.loads(line) for line in p.read_text().splitlines() if line.strip()])


def validation_tex(cells: pd.DataFrame) -> str:
    """The Method's statement of validated coverage, from the simulation study's cells."""
    if cells.empty or "coverage_%" not in cells.columns:
        return ("The intervals' coverage has not been validated on this checkout: run "
                "\\texttt{benchmarks/stats\\_coverage.py --save data/validation/stats\\_coverage.jsonl}.\n")
    meta = cells[cells["section"] == "meta"].iloc[0]
    lo_band, hi_band = (100 * b for b in meta["band"])
    out = [f"We validated the intervals on simulated experiments with known truths ({int(meta['experiments']):,} "
           "experiments per cell; the study and its cells are part of the code that regenerates this paper, "
           "Appendix~\\ref{sec:reproduce})."]
    a = cells[cells["section"] == "A"]
    if len(a):
        c = a["coverage_%"]
        inband = int(((c >= lo_band) & (c <= hi_band)).sum())
        out.append(f"For unimodal run effects (lognormal, heavy-tailed and contaminated batches; 5--20 runs of 10--50 "
                   f"batches) the $t$ interval for the mean over runs covered {c.min():.1f}--{c.max():.1f}\\% of truths "
                   f"({inband} of {len(a)} cells within {lo_band:.0f}--{hi_band:.0f}\\%, Monte-Carlo standard error "
                   f"{a['mc_se_%'].max():.1f} points).")
    j = cells[(cells["section"] == "J") & (cells.get("slow_frac", pd.Series(0, index=cells.index)) > 0)]
    if len(j) and "mean_over_runs_cov_%" in j.columns:
        ok = int((j["ok"] == "yes").sum())
        big, small = j[j["runs"] >= 10], j[j["runs"] < 10]
        out.append(f"When a minority of whole runs (5--30\\%) is 1.1--3$\\times$ slower, the interval for the mean "
                   f"over runs covered only {j['mean_over_runs_cov_%'].min():.1f}--"
                   f"{j['mean_over_runs_cov_%'].max():.1f}\\%: in samples that hold no slow run the minority "
                   "cannot be seen. The typical run the package quotes covered "
                   f"{big['coverage_%'].min():.1f}--{big['coverage_%'].max():.1f}\\% with 10 or more runs; with "
                   f"{int(small['runs'].min())}--{int(small['runs'].max())} runs it carried a warning in at least "
                   f"{small['warn_%'].min():.0f}\\% of experiments, and "
                   f"{ok} of {len(j)} cells have coverage in the band or a warning in at least 90\\% of experiments.")
    q = cells[cells["section"] == "Q"]
    if len(q):
        cq = q["coverage_%"]
        ok_q = int((q["ok"] == "yes").sum())
        out.append(f"On normal, heavy-tailed (Student-$t_3$) and skewed run effects the typical run covered "
                   f"{cq.min():.1f}--{cq.max():.1f}\\% ({ok_q} of {len(q)} cells in the band or warned).")
    k = cells[cells["section"] == "K2"]
    if len(k) and "what" in k.columns:
        pct = [c for c in k.columns if c.startswith("R=") and c.endswith("%")]
        fa = k[k["what"].astype(str).str.contains("false")][pct].stack()
        pw = k[k["what"].astype(str).str.contains("power")][pct].stack()
        if len(fa) and len(pw):
            out.append(f"The test for two modes raised a false alarm in at most {fa.max():.1f}\\% of experiments with "
                       "unimodal lognormal run effects (log-sd up to 0.4, 2--30 runs) and found both modes of a "
                       f"10$\\times$ bimodal condition in at least {pw.min():.1f}\\% of experiments whose sample held both.")
    return " ".join(out) + "\n"
