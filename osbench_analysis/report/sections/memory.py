"""Section (a) in memory terms (memory.tex in the body, memory_appendix.tex in the appendix): the matched
round trips of the four kernel designs, and Linux with page-table isolation, through the guests' memory-system
model (analysis/memevents.py): footprint, L1/L2/TLB misses warm and with the caches emptied first, CR3 writes
and kernel entries per operation; the model's geometry as the campaigns' manifests record it, its checks,
and what a native Linux timing says a counted instruction costs (analysis/counts_to_time.py).  Every number
and every sentence that states one comes from those tables.

    tabs = memory.load(root)                        # memevents.from_campaigns of the newest per guest and mode
    cal = memory.calibration(result, tabs)          # counts_to_time against the paper's native estimates
    memory.write_section(result, out_dir, tabs)     # memory.tex, memory_appendix.tex, their figures and CSVs"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.catalog.families import plain_name
from osbench_analysis.formatting import sig3, tex_escape

#: the events of both tables, per mode (matched() column suffixes) and their headings
MISSES = (("L1I misses", "L1I"), ("L1D misses", "L1D"), ("L2 misses", "L2"), ("TLB misses", "TLB"))
#: a one-operation window this much larger than the warm operation holds the guest's own work too (marked)
WINDOW_MARK = 1.2


def _n(v) -> str:
    """A count as the tables print it: three significant digits, thin-space thousands; below 0.05 '0'
    (a warm miss every twentieth operation or rarer), '--' when missing."""
    v = float(v) if v is not None else np.nan
    if not np.isfinite(v):
        return "--"
    if abs(v) < 0.05:
        return "0"
    if abs(v) >= 1000:
        return f"{float(f'{v:.3g}'):,.0f}".replace(",", "\\,")
    if abs(v - round(v)) < 0.005:      # a whole count (2 CR3 writes, 1 entry) as one
        return f"{round(v):.0f}"
    return sig3(v) if abs(v) < 10 else f"{v:.0f}"


def _label(env: str) -> str:
    """A guest's printable name (catalog/matched.py COLUMN_LABELS), never its environment id, in prose."""
    from osbench_analysis.catalog.matched import COLUMN_LABELS

    return tex_escape(COLUMN_LABELS.get(env, env))


def _plain(v) -> str:
    return _n(v).replace("\\,", ",")


def load(root=None, campaigns: list[str] | None = None) -> dict | None:
    """memevents.from_campaigns of `campaigns` (default: the newest memory-events campaign of each guest and
    mode under root), or None without any."""
    from osbench_analysis.analysis import memevents

    from osbench_analysis.analysis import kernels
    from osbench_analysis.store import campaigns as store

    ids = campaigns if campaigns is not None else memevents.memory_campaigns(root)
    if not ids:
        return None
    # the round of the four designs the paper reads (without the model): the counts set against it
    tabs = memevents.from_campaigns(ids, root, reference=kernels.newest_round(store.catalog(root)))
    return tabs if len(tabs["matched"]) else None


def native_estimates(result) -> pd.DataFrame:
    """The paper's native estimates (report/paper.paper_macros' selection: the paper's estimand, the first
    host's primary campaigns), per (probe, params_json) at same_cpu, with their intervals."""
    from osbench_analysis.analysis import counts_to_time
    from osbench_analysis.report.estimand import paper_estimates

    est = paper_estimates(result.primary_estimates)
    first = next((c.host for c in result.campaigns if c.campaign_id == result.baseline_id), None)
    if first is not None and "host" in est.columns:
        est = est[est["host"] == first]
    if "params_json" not in est.columns and {"probe", "variant", "params_json"} <= set(result.samples.columns):
        # an estimate names its parameters by variant; the guests' per-operation table by params_json
        names = result.samples[["environment", "probe", "variant", "params_json"]].drop_duplicates(
            ["environment", "probe", "variant"])
        est = est.merge(names, on=["environment", "probe", "variant"], how="left")
    return counts_to_time.native_from_estimates(est, result.settings.baseline)


def calibration(result, tabs: dict | None) -> pd.DataFrame:
    """counts_to_time's table of the paper's native estimates against linux-tcg's warm counts (empty when
    either side is missing)."""
    from osbench_analysis.analysis import counts_to_time

    if tabs is None or result is None:
        return pd.DataFrame()
    native = native_estimates(result)
    if native.empty:
        return pd.DataFrame()
    return counts_to_time.from_native(native, tabs["per_op"])


def geometry_words(model: dict, short: bool = False) -> str:
    """The model's geometry as its manifests record it (environment_facts.memory_model), in one clause
    (`short`: the sizes alone)."""
    if not model:
        return ""
    m = next(iter(model.values()))

    def size(key: str) -> str:      # '32 KiB, 8-way (...)' -> '32~KiB 8-way'
        return tex_escape(" ".join(str(m.get(key, "")).split(" (")[0].split(", ")[:2])).replace(" KiB", "~KiB") \
            .replace(" MiB", "~MiB")
    flush = tex_escape(str(m.get("tlb_flush", "")).split(",")[0])
    if short:
        return (f"L1I and L1D of {size('l1i')}, L2 of {size('l2')}, L1 TLBs of {size('itlb')} and "
                f"{size('dtlb')}, no PCID")
    return (f"L1I and L1D of {size('l1i')}, a unified L2 of {size('l2')}, {m.get('line_bytes', 64)}~B lines, LRU; "
            f"L1 TLBs of {size('itlb')} (instructions) and {size('dtlb')} (data), a shared second-level TLB of "
            f"{size('stlb')}, {int(m.get('page_bytes', 4096)) // 1024}~KiB pages; {flush}")


def _window_mark(r) -> str:
    w = r.get("polluted window / operation", np.nan)
    return f"$^{{{sig3(w)}\\times}}$" if np.isfinite(w) and w > WINDOW_MARK else ""


#: the matched rows' short names, for the tables' group lines
SHORT = {"null_entry": "null kernel entry", "kernel_query": "trivial kernel query",
         "rtt_spaces": "request-reply round trip, two address spaces",
         "rtt_threads": "request-reply round trip, one address space", "map_page": "map, touch and unmap a page",
         "thread_create": "thread create to first run", "space_create": "address space create and destroy",
         "msg_self": "message to oneself"}


def table_tex(rt: pd.DataFrame, *, probe_column: bool = False) -> str:
    """The tabular of round_trips() (or of matched() whole, with its probe column): per operation (a group
    line) and kernel instructions, the footprint (lines, pages), L1I/L1D/L2/TLB misses warm and with the
    caches emptied first, CR3 writes and kernel entries."""
    lead = "l" + ("l" if probe_column else "")
    width = len(lead) + 13
    head = ["Kernel"] + (["Probe"] if probe_column else [])
    lines = [r"\begin{tabular}{" + lead + "r@{\\hspace{4pt}}rr@{\\hspace{6pt}}rrrr@{\\hspace{6pt}}rrrr@{\\hspace{6pt}}rr}",
             r"\toprule",
             " & ".join([""] * len(head)) + r" & & \multicolumn{2}{c}{footprint} & \multicolumn{4}{c}{misses, warm}"
             r" & \multicolumn{4}{c}{misses, emptied first} & & \\",
             " & ".join(head) + r" & instr. & lines & pages & " + " & ".join(h for _, h in MISSES) + " & "
             + " & ".join(h for _, h in MISSES) + r" & CR3 & entries \\"]
    last = None
    for _, r in rt.iterrows():
        if r["row"] != last:
            lines += [r"\midrule" if last is None else r"\addlinespace",
                      f"\\multicolumn{{{width}}}{{l}}{{\\emph{{{tex_escape(SHORT.get(r['row'], str(r['title'])))}}}}} \\\\"]
        last = r["row"]
        cells = [tex_escape(str(r["label"]))] + ([tex_escape(plain_name(r["probe"]))] if probe_column else [])
        cells += [_n(r.get("warm:instructions")), _n(r.get("footprint lines")) + _window_mark(r),
                  _n(r.get("footprint pages"))]
        cells += [_n(r.get(f"warm:{c}")) for c, _ in MISSES] + [_n(r.get(f"polluted:{c}")) for c, _ in MISSES]
        cells += [_n(r.get("warm:CR3 writes")), _n(r.get("warm:kernel entries"))]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


def _get(rt: pd.DataFrame, row: str, env: str) -> pd.Series | None:
    part = rt[(rt["row"] == row) & (rt["environment"] == env)]
    return None if part.empty else part.iloc[0]


def _within_words(one: pd.Series | None, two: pd.Series) -> str:
    """'; within one address space, writing no CR3, it misses them 0 times': what the switch adds, where seL4's
    round trip within one space writes CR3 less often and misses the TLBs less than the one across two."""
    if one is None or not (one["warm:CR3 writes"] < two["warm:CR3 writes"]
                           and one["warm:TLB misses"] < two["warm:TLB misses"]):
        return ""
    cr3 = "no CR3" if one["warm:CR3 writes"] < 0.05 else f"CR3 {_plain(one['warm:CR3 writes'])} times"
    return f", and within one address space, writing {cr3}, it misses them {_plain(one['warm:TLB misses'])} times"


def findings_tex(rt: pd.DataFrame, pti: pd.DataFrame) -> str:
    """What the round trips show, each sentence only where its numbers are there."""
    out = []
    s4, mach, lx = (_get(rt, "rtt_spaces", e) for e in ("sel4", "mach", "linux-tcg"))
    if s4 is not None and lx is not None:
        w = lx.get("polluted window / operation", np.nan)
        out.append(
            f"With its caches emptied first, seL4's round trip between two address spaces touches "
            f"{_plain(s4['footprint lines'])} cache lines on {_plain(s4['footprint pages'])} pages"
            + (f", GNU Mach's {_plain(mach['footprint lines'])} lines on {_plain(mach['footprint pages'])} pages"
               if mach is not None else "")
            + f", and Linux's {tex_escape(plain_name(lx['probe']))} {_plain(lx['footprint lines'])} lines on "
            f"{_plain(lx['footprint pages'])} pages"
            + (f" (an upper bound: its window also holds the guest's other work, {sig3(w)} times the operation's "
               "instructions)" if np.isfinite(w) and w > WINDOW_MARK else "") + ".")
        warm = {k: r for k, r in (("seL4", s4), ("GNU Mach", mach), ("Linux", lx)) if r is not None}
        words = [f"{k} {_plain(r['warm:L1 misses'])} L1 and {_plain(r['warm:TLB misses'])} TLB misses"
                 for k, r in warm.items()]
        out.append("Warm, the same round trip costs " + ", ".join(words[:-1]) + f" and {words[-1]} per operation"
                   + (f"; seL4's TLB misses follow its {_plain(s4['warm:CR3 writes'])} CR3 writes, which empty the "
                      "TLBs of a CPU without PCID" if s4["warm:CR3 writes"] >= 1 and s4["warm:TLB misses"] >= 1 else "")
                   + _within_words(_get(rt, "rtt_threads", "sel4"), s4) + ".")
    xen = _get(rt, "rtt_spaces", "xen-linux")
    if xen is not None and lx is not None:
        out.append(f"On Xen the same Linux round trip writes CR3 {_plain(xen['warm:CR3 writes'])} times against "
                   f"{_plain(lx['warm:CR3 writes'])} and misses the TLBs {_plain(xen['warm:TLB misses'])} times "
                   f"against {_plain(lx['warm:TLB misses'])}.")
    if len(pti):
        n = pti[pti["probe"] == "null_syscall"]
        if len(n):
            r = n.iloc[0]
            out.append(f"Page-table isolation turns Linux's null system call from {_plain(r['CR3 writes'])} CR3 "
                       f"writes and {_plain(r['TLB misses'])} TLB misses into {_plain(r['CR3 writes PTI'])} and "
                       f"{_plain(r['TLB misses PTI'])}, for {sig3((r['ratio'] - 1) * 100)}\\% more instructions.")
    return " ".join(out)


def calibration_words(cal: pd.DataFrame, summary: dict) -> str:
    """What a native Linux timing says a counted instruction costs, with its interval and what it covers."""
    if cal.empty or not summary:
        return ""
    prim = cal[~cal["known_answer"].astype(bool)] if "known_answer" in cal else cal
    lo, hi = prim.loc[prim["ns_per_insn"].idxmin()], prim.loc[prim["ns_per_insn"].idxmax()]
    def one(r) -> str:
        iv = (f" [{sig3(r['ns_per_insn_low'])}, {sig3(r['ns_per_insn_high'])}]"
              if "ns_per_insn_low" in r and np.isfinite(r["ns_per_insn_low"]) else "")
        return f"{sig3(r['ns_per_insn'])}{iv}~ns ({tex_escape(plain_name(r['probe']))})"
    return (f"Priced by native Linux, a counted instruction costs from {one(lo)} to {one(hi)} across the "
            f"{summary['primitives']} Linux primitives measured both ways: the paper's native time per operation "
            "(with its interval) over the guest's count of the same probe, another kernel build on other hardware "
            f"than the count's. A stated cost model adding misses and kernel entries to the instructions ranks them "
            f"with Spearman's $\\rho$ {summary['model_spearman']:.2f} (the bare count {summary['count_spearman']:.2f}) "
            f"and its ratio to the native time spans {sig3(summary['model_ratio_min'])} to "
            f"{sig3(summary['model_ratio_max'])} (the count's {sig3(summary['count_ratio_min'])} to "
            f"{sig3(summary['count_ratio_max'])}).")


def price_words(cal: pd.DataFrame, summary: dict) -> str:
    """The body's one sentence of calibration: what native Linux says a counted instruction costs."""
    if cal.empty or not summary:
        return ""
    return (f"Priced by the paper's native Linux times of the same {summary['primitives']} probes, a counted "
            f"instruction costs {sig3(summary['ns_per_insn_min'])} to {sig3(summary['ns_per_insn_max'])}~ns "
            f"depending on the primitive; the counts rank those times with Spearman's $\\rho$ "
            f"{summary['count_spearman']:.2f}.")


def body_tex(tabs: dict, cal: pd.DataFrame) -> str:
    """memory.tex: a paragraph, the round trips' table and the short figure."""
    from osbench_analysis.analysis import counts_to_time, memevents

    rt = memevents.round_trips(tabs["matched"])
    if rt.empty:
        return ""
    summary = counts_to_time.summary(cal) if len(cal) else {}
    return "\n".join([
        r"\paragraph{In memory terms.} Every guest's fetches and memory accesses also went through a cache and "
        r"TLB model of ours (a QEMU plugin: " + geometry_words(tabs["matched"].attrs.get("model", {}), short=True)
        + r"), which counts events and prices none: Table~\ref{tab:memory} and Figure~\ref{fig:memory}, warm and "
        r"with the caches emptied first, as a partner touching more than the L2 leaves them. "
        + findings_tex(rt, tabs.get("pti", pd.DataFrame()))
        + " " + price_words(cal, summary) + r" Appendix~\ref{sec:memory} has the rest.",
        "",
        r"\begin{table}[t]", r"\centering", r"\scriptsize", r"\setlength{\tabcolsep}{2.5pt}",
        r"\resizebox{\linewidth}{!}{" + table_tex(rt) + "}",
        r"\caption{The matched round trips in memory terms, per operation (the model's counts, not times). "
        r"Footprint: distinct lines and pages of a one-operation window, caches emptied first; superscript: "
        r"that window's instructions over the operation's where it holds other work too. Linux with page-table "
        r"isolation and on Xen run Linux's probe.}",
        r"\label{tab:memory}", r"\end{table}",
        r"\begin{figure}[t]", r"\centering",
        r"\includegraphics[width=0.9\linewidth]{generated/memory_round_trips}",
        r"\caption{Table~\ref{tab:memory}'s misses per operation, warm (filled; below 0.1 drawn at 0.1) and caches "
        r"emptied first (open).}",
        r"\label{fig:memory}", r"\end{figure}", ""])


#: the known answers' events in words
EVENT_WORDS = {"l1d_misses": "L1D misses", "l2_misses": "L2 misses", "dtlb_misses": "data-TLB misses",
               "stlb_misses": "second-level TLB misses"}


def _pass(probe: str) -> str:
    return "a page pass" if "page_pass" in probe else "a line pass"


def checks_words(tabs: dict) -> str:
    """The model's checks: the known answers, the counts with and without the model, boot to boot."""
    ka, cc, per = tabs.get("known_answers", pd.DataFrame()), tabs.get("count_check", pd.DataFrame()), tabs["per_op"]
    out = []
    if len(ka):
        ev = ka[ka["event"] != "pages_touched"]
        bad = ev[~ev["agrees"].astype(bool)]
        out.append(f"The known-answer probes (a pass over $N$ pages, a stride over $S$ bytes) gave "
                   f"{int(ev['agrees'].sum())} of {len(ev)} predicted miss counts within 2\\% plus two per pass"
                   + (": " + "; ".join(f"{_label(r['environment'])}, {_pass(r['probe'])} over "
                                       f"{r['bytes'] // 1024}~KiB, {EVENT_WORDS.get(r['event'], 'misses')} "
                                       f"{_plain(r['measured'])} for {_plain(r['predicted'])}"
                                       for _, r in bad.iterrows()) + " missed"
                      if len(bad) else "") + ".")
        pages = ka[ka["event"] == "pages_touched"]
        if len(pages):
            off = sorted(set(pages.loc[~pages["agrees"].astype(bool), "environment"]))
            out.append(f"A window's distinct pages covered its buffer with at most 32 pages more in "
                       f"{int(pages['agrees'].sum())} of {len(pages)} known-answer windows"
                       + (f" (not in {'; '.join(_label(e) for e in off)})" if off else "") + ".")
    if len(cc):
        same = cc["same_counts"].astype(bool)
        envs = sorted(set(cc.loc[~same, "environment"]))
        out.append(f"In {int(same.sum())} of {len(cc)} conditions the boot without the model counted, batch by "
                   "batch, the instructions the model's boots counted"
                   + (f"; the others ({'; '.join(_label(e) for e in envs)}) differ by at most "
                      f"{sig3(cc.loc[~same, 'max_relative_difference'].max() * 100)}\\% of a batch" if len(envs) else "")
                   + ".")
    if len(per):
        two = per[per["boots"] > 1]
        out.append(f"Two boots with the model gave the same events batch by batch in {int(two['exact'].sum())} of "
                   f"{len(two)} conditions"
                   + (f" (not in {'; '.join(_label(e) for e in sorted(set(two.loc[~two['exact'].astype(bool), 'environment'])))})"
                      if (~two["exact"].astype(bool)).any() else "") + ".")
    return " ".join(out)


def host_words(same: pd.DataFrame | None) -> str:
    """The boots without the model against the paper's round of the four designs, batch by batch."""
    if same is None or same.empty:
        return ""
    parts = []
    for env, g in same.groupby("environment", sort=False):
        code = "the same probe code" if same.attrs.get("same_probe_code", {}).get(env) else "a later probe code"
        parts.append(f"{_label(env)} {int(g['same'].sum())} of {int(g['batches'].sum())} "
                     f"({code}; the others differ by up to {sig3(g['max_relative_difference'].max() * 100)}\\%)"
                     if g["same"].sum() < g["batches"].sum() else
                     f"{_label(env)} all {int(g['batches'].sum())} ({code})")
    return ("Set against the round of the four designs that Table~\\ref{tab:kernels-matched} reads, the boots "
            "without the model counted exactly the same instructions in these batches of the same size, boot and "
            "probe: " + "; ".join(parts) + ". The two campaigns ran other lists of jobs in their boots"
            + ("" if same.attrs.get("same_host", True) else ", on two hosts") + ".")


def calibration_table_tex(cal: pd.DataFrame) -> str:
    lines = [r"\begin{tabular}{lrrrrrr}", r"\toprule",
             r"Primitive & native ns & instr. & ns/instr. & entries & model ns & model / native \\", r"\midrule"]
    for _, r in cal.iterrows():
        iv = (f" [{sig3(r['native_ns'] * r['ns_per_insn_low'] / r['ns_per_insn'])}, "
              f"{sig3(r['native_ns'] * r['ns_per_insn_high'] / r['ns_per_insn'])}]"
              if "ns_per_insn_low" in r and np.isfinite(r["ns_per_insn_low"]) else "")
        lines.append(" & ".join([tex_escape(plain_name(r["probe"])), sig3(r["native_ns"]) + iv, _n(r["instructions"]),
                                 sig3(r["ns_per_insn"]), _n(r["kernel_entries"]), sig3(r["modelled_ns"]),
                                 sig3(r["modelled_over_native"])]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


def appendix_tex(tabs: dict, cal: pd.DataFrame) -> str:
    """memory_appendix.tex: every matched row in memory terms, the model, its checks, the calibration."""
    from osbench_analysis.analysis import counts_to_time

    m = tabs["matched"]
    model = next(iter(m.attrs.get("model", {}).values()), {})
    costs = cal.attrs.get("costs", counts_to_time.COSTS) if len(cal) else counts_to_time.COSTS
    price = cal.attrs.get("entry_price_ns", np.nan) if len(cal) else np.nan
    parts = [r"\section{The matched primitives in memory terms}\label{sec:memory}",
             "The memory model is a TCG plugin of QEMU, built from this repository, loaded into the guests' QEMU "
             "when a campaign asks for memory events. Its geometry: " + geometry_words(m.attrs.get("model", {}))
             + ". It has no timing (" + tex_escape(str(model.get("timing", "")).split(": ", 1)[-1]) + "); global pages: "
             + tex_escape(str(model.get("global_pages", ""))) + ". A kernel entry is "
             + tex_escape(str(model.get("kernel_entries", ""))) + ". " + checks_words(tabs) + " "
             + host_words(tabs.get("same_batches")),
             "",
             r"\begin{table}[!htbp]", r"\centering", r"\tiny", r"\setlength{\tabcolsep}{2pt}",
             r"\resizebox{\linewidth}{!}{" + table_tex(m, probe_column=True) + "}",
             r"\caption{Every matched row of Table~\ref{tab:kernels-matched} in memory terms, as in "
             r"Table~\ref{tab:memory}.}", r"\label{tab:memory-all}", r"\end{table}", ""]
    if len(cal):
        parts += [("Table~\\ref{tab:counts-to-time} sets the paper's native times beside the Linux guest's counts of the "
                   "same probes. The cost model prices an instruction at "
                   f"{costs['ns_per_insn']}~ns, an L1 miss that hits the L2 at {costs['l2_hit_ns']}~ns, an L2 miss at "
                   f"{costs['memory_ns']}~ns and a page walk at {costs['walk_ns']}~ns (typical figures, stated, not "
                   "this host's), and a kernel entry with its exit at the native null system call's time less its "
                   f"instructions' ({sig3(price)}~ns). " + calibration_words(cal, counts_to_time.summary(cal))),
                  "", r"\begin{table}[!htbp]", r"\centering", r"\scriptsize", calibration_table_tex(cal),
                  r"\caption{From counts to time: the paper's native time per operation (its interval) over the "
                  r"guest's instructions, and the cost model's prediction.}", r"\label{tab:counts-to-time}",
                  r"\end{table}", ""]
    return "\n".join(parts)


#: the kernels whose round trip between two address spaces the abstract and the Conclusion set side by side
ABSTRACT_KERNELS = (("sel4", "seL4"), ("mach", "GNU Mach"), ("linux-tcg", "Linux"))


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _rtt_rows(tabs: dict | None) -> list[tuple[str, pd.Series]]:
    """(name, row) of the round trip between two address spaces per ABSTRACT_KERNELS kernel measured; [] unless
    Linux and another kernel were."""
    from osbench_analysis.analysis import memevents

    if not tabs:
        return []
    rt = memevents.round_trips(tabs["matched"])
    found = [(name, r) for env, name in ABSTRACT_KERNELS if (r := _get(rt, "rtt_spaces", env)) is not None]
    return found if len(found) > 1 and found[-1][0] == "Linux" else []


def _lines(r: pd.Series) -> str:
    """A footprint in lines, 'at most' where its window held the guest's other work too (an upper bound)."""
    w = r.get("polluted window / operation", np.nan)
    return ("at most " if np.isfinite(w) and w > WINDOW_MARK else "") + _n(r["footprint lines"])


def memory_events_sentence(tabs: dict | None, counts: dict | None = None) -> str:
    """The round trip between two address spaces for the abstract, per kernel in ABSTRACT_KERNELS' order: its
    instructions (`counts`, name -> the four designs' matched count, Table tab:kernels-matched's; left out
    without them), the lines it touches with the caches emptied first and its warm L1 and TLB misses ('' without
    Linux and another kernel).  Thin-space thousands, as the tables print them."""
    found = _rtt_rows(tabs)
    if not found:
        return ""
    def each(col: str) -> str:
        return _joined([_n(r[col]) for _, r in found])

    names = _joined([n for n, _ in found])
    counts = counts or {}
    head = (f"A round trip between two address spaces takes {_joined([_n(counts[n]) for n, _ in found])} "
            f"instructions on {names} (Linux's cheapest); it" if all(n in counts for n, _ in found) else
            f"A round trip between two address spaces on {names}")
    return (f"{head} touches {_joined([_lines(r) for _, r in found])} cache lines from cold caches; warm, it "
            f"misses L1 {each('warm:L1 misses')} times and the TLBs {each('warm:TLB misses')}.")


def price_sentence(cal: pd.DataFrame | None) -> str:
    """What native Linux's times make of a counted instruction, and how well the counts rank them ('' without
    the calibration)."""
    from osbench_analysis.analysis import counts_to_time

    summary = counts_to_time.summary(cal) if cal is not None and len(cal) else {}
    if not summary:
        return ""
    return (f"Native Linux times put a counted instruction at {sig3(summary['ns_per_insn_min'])}--"
            f"{sig3(summary['ns_per_insn_max'])}~ns; no microkernel was timed.")


def abstract_sentence(tabs: dict | None, cal: pd.DataFrame | None = None, counts: dict | None = None) -> str:
    """The abstract's words on the designs' round trip: its instructions (`counts`, see memory_events_sentence),
    footprint and warm misses, then what a native Linux time makes of a count ('' without the round trips)."""
    events = memory_events_sentence(tabs, counts)
    if not events:
        return ""
    price = price_sentence(cal)
    return events + (" " + price if price else "")


def conclusion_sentence(tabs: dict | None, cal: pd.DataFrame | None = None) -> str:
    """The Conclusion's sentence on the memory model: what it shows of the round trip between address
    spaces, and what a counted instruction costs natively; '' without the campaigns."""
    from osbench_analysis.analysis import counts_to_time, memevents

    if not tabs:
        return ""
    rt = memevents.round_trips(tabs["matched"])
    s4, lx = _get(rt, "rtt_spaces", "sel4"), _get(rt, "rtt_spaces", "linux-tcg")
    if s4 is None or lx is None:
        return ""
    seL4_miss = s4["warm:L1 misses"] + s4["warm:TLB misses"]
    linux_miss = lx["warm:L1 misses"] + lx["warm:TLB misses"]
    shorter = s4["warm:instructions"] < lx["warm:instructions"]
    # what the model adds to the counts, chosen by how the three measures order the two kernels
    same_order = (s4["footprint lines"] < lx["footprint lines"]) == shorter and (seL4_miss < linux_miss) == shorter
    out = (f"In the model, seL4's round trip between address spaces touches {_n(s4['footprint lines'])} lines "
           f"with the caches emptied first against {_lines(lx)} for Linux's, and misses "
           f"{_n(seL4_miss)} times warm against {_n(linux_miss)} (L1 and TLB): "
           + ("the shorter path is also the smaller footprint" if same_order and shorter else
              "the longer path is also the larger footprint" if same_order else
              "path length and footprint do not order the two kernels alike")
           + ", in a model that prices nothing.")
    summary = counts_to_time.summary(cal) if cal is not None and len(cal) else {}
    if summary:
        out += (f" Native Linux puts a counted instruction at {sig3(summary['ns_per_insn_min'])} to "
                f"{sig3(summary['ns_per_insn_max'])}~ns depending on the primitive: a count is not a time, and no "
                "microkernel's time is measured here.")
    return out


def write_section(result, out_dir, tabs: dict | None) -> list[Path]:
    """memory.tex and memory_appendix.tex with their figures and tables (memevents.write_files) from `tabs`
    (load()), or nothing (and no stale file) without them."""
    from osbench_analysis.analysis import memevents
    from osbench_analysis.plots import forest
    from osbench_analysis.plots import memevents as plots

    out = Path(out_dir)
    names = ("memory.tex", "memory_appendix.tex")
    if tabs is None:
        for n in names:
            (out / n).unlink(missing_ok=True)
        return []
    cal = calibration(result, tabs)
    written = memevents.write_files(tabs, out, cal)
    fig = plots.plot_round_trips(memevents.round_trips(tabs["matched"]))
    written += forest.save_figure(fig, out, "memory_round_trips")
    forest.close(fig)
    (out / names[0]).write_text(body_tex(tabs, cal) + "\n")
    appendix = appendix_tex(tabs, cal)
    fig_all = "\n".join([
        r"\begin{figure}[!htbp]", r"\centering",
        r"\includegraphics[width=\linewidth,height=0.8\textheight,keepaspectratio]{generated/memory_matched}",
        r"\caption{Table~\ref{tab:memory-all} drawn: footprint (left) and misses per operation (right).}",
        r"\label{fig:memory-all}", r"\end{figure}", ""])
    (out / names[1]).write_text(appendix + "\n" + fig_all)
    return written + [out / n for n in names]
