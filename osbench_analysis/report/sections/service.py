"""Comparison (b), the same service in the kernel and behind a user-space server (Section sec:service), the
appendix's table of microkernels' published IPC costs (published_ipc_table.tex), and the sentence on the
service the abstract and the Conclusion quote."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from osbench_analysis.formatting import percent_tex, ratio_with_ci, sig3, tex_escape, time_with_ci_tex
from osbench_analysis.report.estimand import ESTIMAND
from osbench_analysis.report.sections.common import MAIN_PLACEMENT, _table, placement_words
from osbench_analysis.report.sections.factors import SectionInputs


def service_tex(inp: SectionInputs, reference_root=None) -> str:
    """(b) The same service reached directly and through a user-space server on Linux, beside the published
    microkernel figures (MINIX 3 from its study's tables; seL4, L4Re and L3 IPC with units and hardware)."""
    result, pub = inp.result, inp.published
    out = [r"\subsection{The same service in the kernel and behind a user-space server}\label{sec:service}"]
    svc = _service_rows(result)
    if svc:
        out.append(svc)
    minix = pub[(pub["primitive"] == "syscall_mix") & (pub["subject_arch"] == "microkernel")]
    rng = _service_range(result)
    if len(minix):
        text = ("MINIX~3 reaches its servers by messages: its published system-call loop took "
                f"{sig3(minix['slowdown_factor'].min())}--{sig3(minix['slowdown_factor'].max())} times as long as on "
                f"Linux on the same PC~\\citep{{{minix['bibkey'].iloc[0]}}}")
        if rng is not None:
            text += (", a loop of several system calls on the hardware of its study, not one call through one server "
                     "as here: neither factor bounds the other")
        out.append(text + ".")
    ipc = load_published_ipc(reference_root)
    if len(ipc):
        out.append(f"Microkernels built for IPC make the crossing itself cheap (Table~\\ref{{tab:published-ipc}} in "
                   f"Appendix~\\ref{{sec:published-microkernel}}): {_ipc_range(ipc)}, while the user-space servers "
                   "measured here pay for Linux's scheduler and wake-up path on every call.")
    return "\n".join(out) + "\n"


def _service_words(nbytes) -> str:
    return r"\texttt{getppid}" if not nbytes else f"read of {int(nbytes)}~B"


def _service_rows(result) -> str:
    """Microkernel-style IPC on the baseline environment: the same small service done directly as a system
    call and via a user-space server, one row per service and transport, the placements side by side, each
    with the per-call time and the ratio to the direct call (each with its interval;
    analysis.Analysis.service_ipc), and the sentence that reads it."""
    t = result.service_ipc
    if t is None or t.empty:
        return ""
    t = t[(t["environment"] == result.settings.baseline) & (t["host"] == result.hosts[0])]
    if t.empty:
        return ""
    lvl = percent_tex(result.settings.level)
    placements = [p for p in ("same_cpu", "cross_cpu") if (t["placement"] == p).any()]
    placements += [p for p in dict.fromkeys(t["placement"]) if p not in placements]
    rows = []
    for (nbytes, transport), g in t.groupby(["bytes", "transport"], sort=False):
        g = g.set_index("placement")
        cells = []
        for p in placements:
            if p not in g.index:
                cells += ["--", "--"]
                continue
            r = g.loc[p]
            cells += [time_with_ci_tex(r["estimate_ns"], r["ci_low_ns"], r["ci_high_ns"]),
                      "1" if transport == "direct" else ratio_with_ci(r["ratio"], r["ratio_low"], r["ratio_high"])]
        rows.append((int(nbytes or 0), transport != "direct", float(g["ratio"].min()),
                     f"{_service_words(nbytes)} & {tex_escape(transport)} & " + " & ".join(cells) + " \\\\"))
    rows = [r[-1] for r in sorted(rows, key=lambda r: r[:3])]
    head = ("Service & Transport & " + " & ".join(
        f"\\multicolumn{{2}}{{c}}{{{placement_words(p)}}}" for p in placements) + " \\\\\n"
        + "".join(f"\\cmidrule(lr){{{3 + 2 * i}-{4 + 2 * i}}}" for i in range(len(placements))) + "\n"
        + " & & " + " & ".join(f"per call [{lvl} CI] & $\\times$ direct" for _ in placements))
    text = ("The same small service done directly as a system call and as a request to a user-space server process "
            "that performs it and replies (Table~\\ref{tab:service}) measures, on one monolithic kernel, what moving "
            "a service out of the kernel costs per call")
    same = t[(t["transport"] != "direct") & (t["placement"] == "same_cpu")]
    if len(same):
        best = [g.sort_values("ratio").iloc[0] for _, g in same.groupby("bytes", sort=True)]
        text += (f": with both processes on one CPU the cheapest transport makes "
                 + " and ".join(f"a {_service_words(b['bytes'])} "
                                f"{ratio_with_ci(b['ratio'], b['ratio_low'], b['ratio_high'])} times as long as the "
                                f"direct call ({tex_escape(b['transport'])})" for b in best))
    cross = t[(t["transport"] != "direct") & (t["placement"] == "cross_cpu") & (t["bytes"].fillna(0) == 0)]
    if len(cross):
        text += (f"; with the server on the other CPU a \\texttt{{getppid}} takes {sig3(cross['ratio'].min())}--"
                 f"{sig3(cross['ratio'].max())} times as long")
    return (text + ".\n"
            + _table("ll" + "rr" * len(placements), head, rows,
                     "Microkernel-style IPC on native Linux: a service done directly and via a user-space server "
                     f"(the {ESTIMAND} per call, and its ratio to the direct call with a Welch interval), per "
                     "placement of the server.", "tab:service", size=r"\scriptsize"))


def _service_range(result, nbytes: int = 0):
    """(lowest, highest) row of the direct-versus-server table with both processes on one CPU, of one service
    (``nbytes``: 0 the getppid service, else the read of that many bytes: a range never mixes services), or None."""
    t = result.service_ipc
    if t is None or t.empty:
        return None
    t = t[(t["environment"] == result.settings.baseline) & (t["host"] == result.hosts[0])
          & (t["transport"] != "direct") & (t["placement"] == MAIN_PLACEMENT)]
    if "bytes" in t:
        t = t[t["bytes"].fillna(0).astype(int) == nbytes]
    if t.empty:
        return None
    t = t.sort_values("ratio")
    return t.iloc[0], t.iloc[-1]


def _service_sentence(inp: SectionInputs) -> str:
    rng = _service_range(inp.result)
    if rng is None:
        return ""
    lo, hi = rng
    text = (f" On Linux, a \\texttt{{getppid}} served by a user-space process "
            f"takes {ratio_with_ci(lo['ratio'], lo['ratio_low'], lo['ratio_high'])} ({tex_escape(lo['transport'])}) to "
            f"{ratio_with_ci(hi['ratio'], hi['ratio_low'], hi['ratio_high'])} ({tex_escape(hi['transport'])}) times as "
            "long as the system call, both processes on one CPU")
    return text + "."


def published_ipc_tex(reference_root=None) -> str:
    """The appendix's table of microkernels' published IPC costs (service_tex cites it); '' without them."""
    ipc = load_published_ipc(reference_root)
    if not len(ipc):
        return ""
    rows = [f"{tex_escape(r.kernel)} & {tex_escape(r.operation)} & {tex_escape(r.hardware)} & "
            f"{int(r.value):,} {tex_escape(r.unit)}" + (f" ({sig3(r.time_ns)} ns)" if r.time_ns == r.time_ns else "")
            + f" & \\citet{{{r.bibkey}}} \\\\" for r in ipc.itertuples()]
    return _table("p{0.12\\linewidth}p{0.27\\linewidth}p{0.2\\linewidth}p{0.13\\linewidth}p{0.15\\linewidth}",
                  "Kernel & Operation & Hardware & Published cost & Source", rows,
                  "Published IPC costs of microkernels, in the units their authors report (cycles, or ticks "
                  "of the time-stamp counter), with the hardware they were measured on, and in brackets cycles divided by the clock the hardware states; no intervals published.",
                  "tab:published-ipc", size=r"\scriptsize", placement="!htbp")


def _ipc_range(ipc: pd.DataFrame) -> str:
    """'their published IPC costs are 250--934 cycles or time-stamp-counter ticks' from the table's rows."""
    units = " or ".join(dict.fromkeys("time-stamp-counter ticks" if "TSC" in u else u for u in ipc["unit"]))
    return f"their published IPC costs are {int(ipc['value'].min()):,}--{int(ipc['value'].max()):,} {units}"


def load_published_ipc(reference_root=None) -> pd.DataFrame:
    """data/reference/published_ipc.csv: microkernel IPC costs as their authors publish them."""
    from osbench_analysis.reference import studies as reference

    path = Path(reference_root or reference.default_reference_dir()) / "published_ipc.csv"
    if not path.is_file():
        return pd.DataFrame()
    ipc = pd.read_csv(path)
    # a time only where the unit is cycles and the hardware states its clock: cycles / clock, never typed in
    ipc["time_ns"] = [value / clock_ghz(hw) if unit == "cycles" else float("nan")
                      for value, unit, hw in zip(ipc["value"], ipc["unit"], ipc["hardware"])]
    return ipc


def clock_ghz(hardware: str) -> float:
    """The clock a hardware description states ('..., 3.4 GHz' -> 3.4; 'i486, 50 MHz' -> 0.05), NaN if none."""
    import re

    m = re.search(r"([0-9]+(?:\.[0-9]+)?)\s*(GHz|MHz)", str(hardware))
    if not m:
        return float("nan")
    return float(m.group(1)) / (1000.0 if m.group(2) == "MHz" else 1.0)
