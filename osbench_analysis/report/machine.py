"""Does this machine reproduce the paper? (issue 37, item 1): a short report of its own, beside the paper.

The paper is the reference host's, from its pinned campaigns (report/scope.py).  This report is the
machine's that builds it: its identity (hosts.identity, read where the code runs), the campaigns it measured
that the paper does not read, and which of the reference host's conclusions hold on it (analysis.hosts
``reproduction``: each environment's crossing cost and its crossing probe's ratio to native, same CPU), the
largest changes first, every value with its interval.  Both sides are each host's comparable campaigns pooled
on their own (analysis.hosts.cross_host), never across hosts.  ``machine_report`` returns the record
(notebooks/analyze.ipynb shows it); ``write_report`` writes build/report/machine_report.tex and, with TeX,
its PDF, checked like the paper's (report/pdf_check.py)."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.errors import OsbenchError
from osbench_analysis.formatting import sig3, tex_escape
from osbench_analysis.paths import REPO_ROOT
from osbench_analysis.report.scope import this_machine  # noqa: F401  (the machine this code runs on)

#: where ``make report`` writes the report (machine_report.tex and .pdf) and this machine's campaigns' copy
REPORT_DIR = REPO_ROOT / "build" / "report"
REPORT_NAME = "machine_report"
#: how many of the largest changes the report names first
LARGEST = 3


class MachineReportError(OsbenchError):
    """The machine report's PDF was built but fails the reader's check."""


@dataclass
class MachineReport:
    this: str                                  # this machine's host key (hosts.identity)
    this_label: str
    identity: str                              # its identity as a sentence (TeX)
    reference: str | None                      # the paper's (reference) host key, None: none measured
    reference_label: str = ""
    campaigns: list[str] = field(default_factory=list)     # this machine's campaigns compared (not the paper's)
    rounds: str = ""                           # when they were measured, as a reader reads it
    reference_campaigns: int = 0               # the reference host's campaigns the paper pools
    table: pd.DataFrame = field(default_factory=pd.DataFrame)   # analysis.hosts.reproduction's rows
    note: str = ""                             # why nothing is compared, when nothing is

    @property
    def held(self) -> int:
        return int(self.table["holds"].sum()) if len(self.table) else 0

    @property
    def same_size(self) -> int:
        return int(self.table["same_size"].sum()) if len(self.table) else 0

    def largest_changes(self, n: int = LARGEST) -> pd.DataFrame:
        """The conclusions that do not hold here, the largest change (|log here/reference|) first."""
        t = self.table
        if t.empty:
            return t
        t = t[~t["holds"]]
        move = np.abs(np.log(t["here_over_reference"].astype(float).where(lambda v: v > 0)))
        return t.assign(_move=move).sort_values("_move", ascending=False, na_position="last").head(n).drop(
            columns="_move")

    def sentences(self) -> list[str]:
        """What the report says, as plain sentences (the notebook prints them)."""
        if self.note:
            return [f"This machine: {self.this_label} [{self.this}]. {self.note}"]
        out = [f"This machine: {self.this_label} [{self.this}], {len(self.campaigns)} campaigns ({self.rounds}); "
               f"the paper's host: {self.reference_label} [{self.reference}], {self.reference_campaigns} campaigns.",
               f"{self.held} of {len(self.table)} of the paper's conclusions hold here, {self.same_size} of them in "
               "size too."]
        for r in self.largest_changes().itertuples():
            out.append(f"Changed: {_what(r, tex=False)}: {r.reference} on the paper's host, {r.here} here "
                       f"({sig3(r.here_over_reference)} times).")
        return out


def _what(r, tex: bool = True) -> str:
    """A conclusion as a reader reads it: "gVisor's crossing cost (null system call)"."""
    from osbench_analysis.catalog.families import plain_name, print_name
    from osbench_analysis.plots.architectures import env_short

    env = tex_escape(env_short(r.environment)) if tex else env_short(r.environment)
    probe = print_name(r.probe) if tex else plain_name(r.probe)
    what = "ratio to native" if r.kind == "ratio" else "crossing cost"
    return f"{env}'s {what} ({probe})"


def _rounds(cat: pd.DataFrame) -> str:
    days = sorted({str(c)[:10] for c in cat["created_utc"]})
    if not days:
        return ""
    return f"measured {days[0]}" + (f" to {days[-1]}" if days[-1] != days[0] else "")


def machine_report(root: str | Path | None = None, paper_root: str | Path | None = None, this: str | None = None,
                   *, reference_file: str | Path | None = None, scratch: str | Path | None = None,
                   this_label: str | None = None, identity_parts: dict | None = None) -> MachineReport:
    """This machine (``this``: a host key; default the machine the code runs on, this_machine()) against the
    paper's host (report.scope.reference_host of ``paper_root``; default the paper's pinned campaigns,
    report.scope.paper_inputs): this machine's campaigns under ``root`` (default data/campaigns) that the paper
    does not read, copied into ``scratch`` (default build/report/campaigns) and pooled there, against the
    reference host's campaigns the paper pools."""
    from osbench_analysis.analysis import hosts as analysis_hosts
    from osbench_analysis.report import scope
    from osbench_analysis.report.hosts import identity_sentence
    from osbench_analysis.store import campaigns as store

    if this is None:
        this, label, parts = this_machine()
    else:
        label, parts = this, {}
    label = this_label or label
    parts = identity_parts if identity_parts is not None else parts
    if paper_root is None:
        paper_root, _ = scope.paper_inputs()
    paper_cat = store.catalog(paper_root)
    ref = scope.reference_host(paper_root, reference_file)
    cat = store.catalog(root)
    mine = cat[(cat["host"] == this) & ~cat["campaign_id"].isin(set(paper_cat["campaign_id"]))] if len(cat) else cat
    if len(mine):   # the kernel-version sweep and memory-events campaigns enter no conclusion: not counted as its
        from osbench_analysis.analysis.versions import parse_environment

        sweep = np.array([parse_environment(e) is not None for e in mine["environment"]], dtype=bool)
        mine = mine.loc[~sweep & ~store.memory_model(mine).to_numpy()]
    if len(mine) and not parts:
        parts = store.load_campaign(mine.sort_values("created_utc").iloc[-1]["path"]).manifest.host_identity.parts
    if len(mine) and label == this:
        label = str(mine["host_label"].iloc[0])
    rep = MachineReport(this, label, identity_sentence(parts) if parts else tex_escape(label), ref,
                        campaigns=sorted(mine["campaign_id"]) if len(mine) else [], rounds=_rounds(mine))
    if ref is None:
        rep.note = "The paper's campaigns name no reference host: there is nothing to reproduce."
        return rep
    rep.reference_label = str(paper_cat.loc[paper_cat["host"] == ref, "host_label"].iloc[0])
    if mine.empty:
        rep.note = ("It measured no campaign beyond the paper's"
                    + (" (it is the paper's host)" if this == ref else "")
                    + ": `make measure` (or `make all`) measures it, then `make report` compares it with the paper.")
        return rep
    here_root = scope.assemble(list(mine["campaign_id"]), root, Path(scratch) if scratch else REPORT_DIR / "campaigns")
    there = analysis_hosts.cross_host(paper_root, hosts=[ref])
    here = analysis_hosts.cross_host(here_root, hosts=[this])
    rep.reference_campaigns = int(there.hosts["campaigns_pooled"].iloc[0]) if len(there.hosts) else 0
    rep.table = analysis_hosts.reproduction(_beside(there, here, ref, this), this=_HERE, reference=[ref])
    if rep.table.empty:
        rep.note = "It measured none of the conditions the paper's conclusions rest on (the crossings, same CPU)."
    return rep


#: this machine's key in the record set beside the paper's host (the two may be one machine kind)
_HERE = "this machine"


def _beside(there, here, ref: str, this: str):
    """One analysis.hosts.CrossHost of the paper's host and this machine's new campaigns (keyed _HERE: the
    same machine kind as the paper's host stays two rows)."""
    from osbench_analysis.analysis.hosts import CrossHost

    def mine(t):
        return t.assign(host=t["host"].replace({this: _HERE})) if len(t) and "host" in t else t

    hosts = pd.concat([there.hosts, mine(here.hosts).assign(host_label="this machine")], ignore_index=True)
    hosts.loc[hosts["host"] == ref, "host_label"] = "the paper's host"
    return CrossHost(hosts, *(pd.concat([getattr(there, k), mine(getattr(here, k))], ignore_index=True)
                              for k in ("estimates", "ratios", "crossing_costs", "guests")),
                     there.notes + here.notes, there.baseline)


# ------------------------------------------------------------------ the report as a PDF

def _cell(v: float, lo: float, hi: float, kind: str) -> str:
    from osbench_analysis.formatting import interval_plain, time_plain

    if kind == "ratio":
        return f"{sig3(v)} [{sig3(lo)}, {sig3(hi)}]" if np.isfinite(lo) and np.isfinite(hi) else sig3(v)
    text = f"{time_plain(v)} {interval_plain(lo, hi, v)}" if np.isfinite(lo) and np.isfinite(hi) else time_plain(v)
    return tex_escape(text).replace("µ", "\\textmu{}")


def report_tex(rep: MachineReport) -> str:
    """The whole report as a LaTeX document: who this machine is, the verdict, the largest changes, and every
    conclusion in a long table (one row each: it stays on the page however many environments there are)."""
    out = [r"\documentclass[10pt]{article}", r"\usepackage[margin=2.5cm]{geometry}", r"\usepackage{booktabs}",
           r"\usepackage{longtable}", r"\usepackage{array}", r"\usepackage{textcomp}", r"\usepackage[utf8]{inputenc}",
           r"\title{Does this machine reproduce the paper?}", r"\author{osbench, machine report}", r"\date{}",
           r"\begin{document}", r"\maketitle", r"\section*{This machine}",
           f"\\begin{{sloppypar}}{rep.identity}; its key (\\texttt{{osbench list}}): {tex_escape(rep.this)}."
           "\\end{sloppypar}"]
    if rep.note:
        out += [tex_escape(rep.note.replace("`", "")), r"\end{document}", ""]
        return "\n".join(out)
    out += [f"It measured {len(rep.campaigns)} campaign{'s' if len(rep.campaigns) != 1 else ''} that the paper does "
            f"not read ({tex_escape(rep.rounds)}), pooled here as the paper pools its host's. The paper's host, "
            f"{tex_escape(rep.reference_label.replace(' · ', ', '))}, is pooled over its "
            f"{rep.reference_campaigns} campaigns.",
            r"\section*{Which of the paper's conclusions hold here}",
            f"{rep.held} of the paper's {len(rep.table)} conclusions hold on this machine, {rep.same_size} of them in "
            "size too. A conclusion is each environment's crossing cost (one system call, or one \\texttt{stat} on a "
            "served file system, over native Linux's, both processes on one CPU) and its crossing's ratio to native "
            "Linux; a ratio holds with the same verdict (slower, faster, no difference shown), a cost with "
            "overlapping 95\\% intervals, and its size too when this machine's value lies inside the paper's "
            "prediction interval for one more campaign (else when the intervals overlap)."]
    ch = rep.largest_changes()
    if len(ch):
        out += [r"\section*{The largest changes}", r"\begin{itemize}"]
        out += [f"\\item {_what(r)}: {_cell(r.reference_value, r.reference_low, r.reference_high, r.kind)} on the "
                f"paper's host, {_cell(r.here_value, r.here_low, r.here_high, r.kind)} here, "
                f"{sig3(r.here_over_reference)} times." for r in ch.itertuples()]
        out += [r"\end{itemize}"]
    else:
        out += ["Every conclusion holds here."]
    rows = [" & ".join([_what(r), _cell(r.reference_value, r.reference_low, r.reference_high, r.kind),
                        _cell(r.here_value, r.here_low, r.here_high, r.kind), f"{sig3(r.here_over_reference)}",
                        "yes, in size too" if r.same_size else "yes" if r.holds else "no"]) + r" \\"
            for r in rep.table.itertuples()]
    head = r"conclusion & paper's host & this machine & here/paper & holds here \\"
    out += [r"\section*{Every conclusion}", r"\begingroup\small\setlength{\tabcolsep}{4pt}",
            r"\begin{longtable}{>{\raggedright\arraybackslash}p{0.3\linewidth}rrrl}",
            r"\toprule", head, r"\midrule", r"\endfirsthead", r"\toprule", head, r"\midrule", r"\endhead",
            *rows, r"\bottomrule", r"\end{longtable}", r"\endgroup", r"\end{document}", ""]
    return "\n".join(out)


def write_report(rep: MachineReport, out_dir: str | Path | None = None, pdf: bool = True) -> str:
    """machine_report.tex under ``out_dir`` (default build/report), and with TeX its PDF, checked like the
    paper's (overfull boxes, '??', identifiers a reader meets, blank pages); a line saying what was written."""
    from osbench_analysis.report.pdf_check import check_paper

    out = Path(out_dir) if out_dir else REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    tex = out / f"{REPORT_NAME}.tex"
    tex.write_text(report_tex(rep))
    if not pdf:
        return f"wrote {tex}"
    if not shutil.which("pdflatex"):
        return f"wrote {tex}; no pdflatex on this machine: no PDF"
    for _ in range(2):     # the long table's column widths settle on the second pass
        r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=out,
                           capture_output=True, text=True, errors="replace")
        if r.returncode != 0:
            tail = "\n".join(r.stdout.splitlines()[-20:])
            raise RuntimeError(f"pdflatex failed on {tex}:\n{tail}")
    check = check_paper(tex.with_suffix(".pdf"))
    if not check.ok:
        raise MachineReportError(f"{tex.with_suffix('.pdf')} built but fails its check: " + "; ".join(check.problems))
    return f"built {tex.with_suffix('.pdf')}: {check.pages} page{'s' if check.pages != 1 else ''}"


def main(argv: list[str] | None = None) -> int:
    """``python -m osbench_analysis.report.machine`` (make report): this machine against the paper."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m osbench_analysis.report.machine", description=main.__doc__)
    ap.add_argument("--root", help="campaigns folder holding this machine's campaigns (default data/campaigns)")
    ap.add_argument("--host", help="compare this host's campaigns instead of this machine's (its key)")
    ap.add_argument("--out-dir", help="where the report goes (default build/report)")
    args = ap.parse_args(argv)
    try:
        rep = machine_report(args.root, this=args.host)
        print("\n".join(rep.sentences()))
        print(write_report(rep, args.out_dir))
    except OsbenchError as e:
        print(f"osbench report: error: {e}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
