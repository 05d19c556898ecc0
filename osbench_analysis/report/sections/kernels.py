"""Section (a), four kernel designs on one emulated CPU (microkernel_kernels.tex, input by paper.tex's
subsection sec:microkernel): Linux, Linux as Xen's PV dom0, GNU Mach and seL4 (with and without its IPC
fastpath), like against like (analysis.kernels.matched), in guest instructions; the unit's limits, the
versions and their age, boot-to-boot determinism per kernel, and the published seL4/L4/MINIX figures
beside ours, each in its own unit and on its own hardware.  Every number comes from the matched table,
the guests' manifests or data/reference; the sentences for the abstract and the Conclusion too."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.catalog import matched as catalog
from osbench_analysis.catalog.families import print_name
from osbench_analysis.catalog.guests import LINUX, LINUX_NOMITIG, MACH, SEL4, SEL4_SLOWPATH, UNIT, XEN_LINUX
from osbench_analysis.formatting import sig3, tex_escape

#: seL4 5.0.0's release year: the tree predates the Meltdown and Spectre disclosures (January 2018) and the
#: defences seL4 added after them; the measured kernel's configuration says so in its manifest.
SEL4_RELEASE_YEAR = 2017
#: The same, when the memory model's campaigns were read: its paragraph follows this section's.
MEMORY_NEXT = "The cache and TLB model of the next paragraph counts those misses."
#: Where the misses the count leaves out are counted: the memory model (sections/memory.py when measured).
PLUGIN_CHECK = ("A cache and TLB model that counts them, a QEMU plugin of this repository, runs in every guest on "
                "request (\\texttt{osbench run --memory-events}).")


def _label(env: str) -> str:
    return tex_escape(catalog.COLUMN_LABELS.get(env, env))


def _n(v: float) -> str:
    """A count as the table prints it: three significant digits, thin-space thousands ('1\\,660', '432')."""
    if not np.isfinite(v):
        return "--"
    if abs(v) >= 1000:
        return f"{float(f'{v:.3g}'):,.0f}".replace(",", "\\,")
    return sig3(v)


def _plain(v: float) -> str:
    """The same count as plain text ('1,660')."""
    return _n(v).replace("\\,", ",")


def cheapest(tab: pd.DataFrame, row: str, env: str) -> pd.Series | None:
    """The measured entry of `env` in `row` with the smallest median count (None if none was measured)."""
    part = tab[(tab["row"] == row) & (tab["environment"] == env) & (tab["boots"].astype(float) > 0)]
    part = part[np.isfinite(part["median"].to_numpy(float))]
    return None if part.empty else part.loc[part["median"].astype(float).idxmin()]


def _entry(tab: pd.DataFrame, env: str, probe: str) -> float:
    part = tab[(tab["environment"] == env) & (tab["probe"] == probe) & (tab["boots"].astype(float) > 0)]
    return float(part["median"].iloc[0]) if len(part) else np.nan


def rtt_sentence(tab: pd.DataFrame, short: bool = False) -> str:
    """The request-reply round trip between two address spaces on each kernel (its cheapest entry), and
    Linux's against seL4's and GNU Mach's: the sentence the abstract and the Conclusion quote ('' if unmeasured);
    `short`: seL4 without its fastpath and Linux on Xen left to the body."""
    envs = (SEL4, MACH, LINUX) if short else (SEL4, SEL4_SLOWPATH, MACH, LINUX, XEN_LINUX)
    c = {env: cheapest(tab, "rtt_spaces", env) if env in envs else None
         for env in (SEL4, SEL4_SLOWPATH, MACH, LINUX, XEN_LINUX)}
    if c[LINUX] is None or (c[SEL4] is None and c[MACH] is None):
        return ""
    parts = []
    if c[SEL4] is not None:
        parts.append(f"{_n(c[SEL4]['median'])} guest instructions on seL4"
                     + (f" ({_n(c[SEL4_SLOWPATH]['median'])} without its fastpath)" if c[SEL4_SLOWPATH] is not None else ""))
    if c[MACH] is not None:
        parts.append(f"{_n(c[MACH]['median'])}" + ("" if parts else " guest instructions") + " on GNU Mach")
    parts.append(f"{_n(c[LINUX]['median'])} on Linux (" + ("" if short else f"{print_name(c[LINUX]['probe'])}, ")
                 + "its cheapest)")
    if c[XEN_LINUX] is not None:
        parts.append(f"{_n(c[XEN_LINUX]['median'])} on Linux on Xen")
    lx = float(c[LINUX]["median"])
    vs = [f"{sig3(lx / float(c[k]['median']))} times seL4's" if k == SEL4 else f"{sig3(lx / float(c[k]['median']))} "
          "times GNU Mach's" for k in (SEL4, MACH) if c[k] is not None]
    return ("A request-reply round trip between two address spaces takes " + ", ".join(parts[:-1]) + " and "
            + parts[-1] + ("." if short else ": Linux's path is " + " and ".join(vs) + "."))


def rtt_counts(tab: pd.DataFrame) -> dict:
    """Each kernel's cheapest round trip between two address spaces, by its name in prose (seL4, GNU Mach,
    Linux): what the abstract's memory sentence quotes beside the model's events."""
    names = {SEL4: "seL4", MACH: "GNU Mach", LINUX: "Linux"}
    found = {name: cheapest(tab, "rtt_spaces", env) for env, name in names.items()} if len(tab) else {}
    return {name: float(r["median"]) for name, r in found.items() if r is not None}


def abstract_sentence(tab: pd.DataFrame, memory: str = "") -> str:
    """The abstract's sentences on the four designs ('' unless two designs were measured); `memory`: the same
    round trip in the memory model's terms (sections/memory.abstract_sentence), when its campaigns were read:
    then the counts are said to be instructions and a model's events, else a path length without caches."""
    from osbench_analysis.analysis import kernels

    if not kernels.measured(tab):
        return ""
    if memory:      # the round trip's counts and its memory events in one sentence (memory.abstract_sentence)
        return (" Linux, Linux on Xen, GNU Mach and seL4 run on one emulated CPU, counted in guest instructions "
                "and a model's cache and TLB misses. " + memory)
    rtt = rtt_sentence(tab)
    return (" Four kernel designs---Linux, Linux on Xen, GNU Mach and seL4---run on the same emulated CPU, "
            "counted in guest instructions, a path length without caches or TLBs, not a time."
            + (" " + rtt if rtt else ""))


def _ratio_range(tab: pd.DataFrame, num: str, den: str) -> tuple[float, float, int] | None:
    """min, max and count of num/den over the entries both environments measured."""
    a = tab[tab["environment"] == num].set_index(["row", "probe"])["median"].astype(float)
    b = tab[tab["environment"] == den].set_index(["row", "probe"])["median"].astype(float)
    r = (a / b.reindex(a.index)).replace([np.inf, -np.inf], np.nan).dropna()
    r = r[[p != "" for _, p in r.index]]
    return (float(r.min()), float(r.max()), len(r)) if len(r) else None


def served_sentence(tab: pd.DataFrame) -> str:
    """The microkernel question in instructions: a trivial query answered by a server costs one round trip
    between address spaces; each kernel's cheapest round trip over Linux's query served in its kernel."""
    direct = cheapest(tab, "kernel_query", LINUX)
    if direct is None:
        return ""
    base = float(direct["median"])
    names = {SEL4: "on seL4", MACH: "on GNU Mach", LINUX: "on Linux between two of its processes"}
    found = [(env, r) for env in (SEL4, MACH, LINUX) if (r := cheapest(tab, "rtt_spaces", env)) is not None]
    parts = [f"{sig3(float(r['median']) / base)} times" + (" as many" if k == 0 else "") + f" {names[env]}"
             for k, (env, r) in enumerate(found)]
    if len(parts) < 2:
        return ""
    what = tex_escape(str(direct["does"]).split(":")[0])
    return (f"Served by another address space instead of the kernel, a query that Linux answers in its kernel in "
            f"{_n(base)} instructions ({what}) costs at least one round trip between address spaces: "
            + ", ".join(parts[:-1]) + f" and {parts[-1]}.")


def findings_tex(tab: pd.DataFrame) -> str:
    """The section's sentences with numbers, every one from the matched table."""
    out = []
    rtt = rtt_sentence(tab)
    if rtt:
        out.append(rtt)
    served = served_sentence(tab)
    if served:
        out.append(served)
    # the lightest kernel entry of each kernel is Table tab:kernels-matched's first row: not repeated here
    fp = (_entry(tab, SEL4, "sel4_call_space"), _entry(tab, SEL4_SLOWPATH, "sel4_call_space"),
          _entry(tab, SEL4, "sel4_call_space_8mr"))
    if all(np.isfinite(fp)):
        out.append(f"seL4's fastpath makes its round trip {sig3(fp[1] / fp[0])} times shorter; a message of 8 words, "
                   f"past the fastpath's 4, takes the slow path even with the fastpath built in ({_n(fp[2])}).")
    xen = _ratio_range(tab, XEN_LINUX, LINUX)
    if xen:
        out.append(f"Under Xen the same Linux retires {sig3(xen[0])}--{sig3(xen[1])} times as many instructions "
                   f"per operation over the {xen[2]} matched entries: every system call enters Xen first.")
    off = _ratio_range(tab, LINUX_NOMITIG, LINUX)
    if off:
        worst = max(abs(off[0] - 1), abs(off[1] - 1))
        out.append(f"Linux's speculative-execution defences change its counts by at most {sig3(100 * worst)}\\% "
                   "(Linux with \\texttt{mitigations=off}); in instructions they are small, in time on real hardware "
                   "they need not be.")
    return " ".join(out)


def versions_tex(facts: dict) -> str:
    """The kernels' versions from the guests' manifests, with seL4's age and each kernel's defences."""
    def pkg(env: str, prefix: str, key: str = "version") -> str:
        pk = (facts.get(env) or {}).get("guest_packages") or {}
        return next((str(v.get(key, "")) for k, v in pk.items() if k.startswith(prefix) and v.get(key)), "")

    import re

    def upstream(v: str, cut_plus: bool = False) -> str:
        """A Debian package version without its epoch and revision ('2:1.8+git20250702-1' -> '1.8+git20250702')."""
        v = v.split(":", 1)[-1]
        v = v.rsplit("-", 1)[0] if "-" in v else v
        return v.split("+", 1)[0] if cut_plus else v

    linux = upstream(pkg(LINUX, "linux-image"))
    xen = upstream(pkg(XEN_LINUX, "xen-hypervisor"), cut_plus=True)
    mach = upstream(pkg(MACH, "gnumach-image"))
    sel4 = pkg(SEL4, "sel4-sys", "seL4")
    qemu_text = (facts.get(LINUX) or facts.get(SEL4) or facts.get(MACH) or {}).get("qemu", "")
    found = re.search(r"version ([0-9][0-9.]*)", str(qemu_text))
    qemu = f"QEMU {found.group(1)}" if found else ""
    parts = []
    if linux:
        parts.append(f"Linux {tex_escape(linux)} (Debian's kernel with its default defences, and once more with "
                     "\\texttt{mitigations=off})")
    if xen:
        parts.append(f"Xen {tex_escape(xen)} with the same Linux as its paravirtualised first domain")
    if mach:
        parts.append(f"GNU Mach {tex_escape(mach)} (uniprocessor, without speculative-execution defences)")
    if sel4:
        parts.append(f"seL4 {tex_escape(sel4)}, released in {SEL4_RELEASE_YEAR}: it predates the Meltdown and "
                     "Spectre defences its later releases added")
    if not parts:
        return ""
    return ("The kernels are " + "; ".join(parts) + "." + (f" All run on the emulated \\texttt{{qemu64}} CPU of "
                                                           f"{tex_escape(qemu)} (TCG, \\texttt{{-icount}})." if qemu else ""))


def determinism_sentence(det: pd.DataFrame) -> str:
    from osbench_analysis.analysis import kernels

    return kernels.determinism_sentence(det)


def determinism_summary(det: pd.DataFrame) -> str:
    """The body's word on boot-to-boot determinism: which kernels counted the same in every boot, and how far
    the others' boots lie apart ('' without boots); each kernel's conditions and boots are the appendix's."""
    if det.empty:
        return ""
    order = list(catalog.COLUMNS)
    det = det.assign(_o=[order.index(e) if e in order else len(order) for e in det["environment"]]).sort_values("_o")
    single = (det["single_boot"].astype(int) == det["conditions"].astype(int)) if "single_boot" in det else False
    exact = det[(det["exact"].astype(int) == det["conditions"].astype(int)) & ~single]
    other = det[(det["exact"].astype(int) != det["conditions"].astype(int)) & ~single]
    once = det[single] if "single_boot" in det else det.iloc[0:0]

    def names(part) -> str:
        n = [_label(e) for e in part["environment"]]
        if len(n) == 1:
            return n[0]
        if any("," in x for x in n):          # 'Linux, mitigations=off' is one name: semicolons between them
            return "; ".join(n[:-1]) + "; and " + n[-1]
        return ", ".join(n[:-1]) + " and " + n[-1]

    parts = []
    if len(exact) and len(other) and len(exact) > len(other):
        # most kernels exact: name the few that are not (a list of labels with commas in them reads badly)
        parts.append(f"every boot of every kernel but {names(other)} counted the same instructions")
    elif len(exact):
        parts.append(f"every boot of {names(exact)} counted the same "
                     "instructions")
    if len(other):
        parts.append("; ".join(f"{_label(r.environment)}'s boots' medians lie within {100 * r.max_spread:.2g}\\%"
                               for r in other.itertuples()))
    if len(once):
        parts.append(f"{names(once)} booted once (the quick profile's budget left the repeat out): whether "
                     f"{'its' if len(once) == 1 else 'their'} counts repeat is not shown")
    text = "; ".join(parts)
    return (text[0].upper() + text[1:] + " (boot to boot, within one round; Appendix~\\ref{sec:published-microkernel} "
            "gives each kernel's conditions and boots).")


def _hardware(text) -> str:
    """A published hardware description without its bracketed notes (transcription remarks, code names)."""
    import re

    return re.sub(r"\s*\([^)]*\)", "", str(text)).strip()


def published_beside(tab: pd.DataFrame, ipc: pd.DataFrame, published: pd.DataFrame | None) -> pd.DataFrame:
    """The published microkernel figures beside what was counted here: one row per published figure, its
    unit and hardware, and our nearest count (seL4's one-way IPC is half our round trip) or why none."""
    rows = []
    sel4 = cheapest(tab, "rtt_spaces", SEL4) if len(tab) else None
    for r in ipc.itertuples():
        here = "no such kernel measured here"
        if str(r.kernel).startswith("seL4") and sel4 is not None and "one-way" in str(r.operation):
            here = (f"{_plain(float(sel4['median']) / 2)} guest instructions (half our round trip of "
                    f"{_plain(float(sel4['median']))}, seL4 5.0.0 on the emulated CPU)")
        value = f"{int(r.value):,} {r.unit}" + (f" ({sig3(r.time_ns)} ns)" if r.time_ns == r.time_ns else "")
        rows.append({"kernel": r.kernel, "operation": r.operation, "published": value, "hardware": _hardware(r.hardware),
                     "bibkey": r.bibkey, "here": here})
    if published is not None and len(published):
        minix = published[(published["primitive"] == "syscall_mix") & (published["subject_arch"] == "microkernel")]
        if len(minix):
            f = minix["slowdown_factor"]
            rows.append({"kernel": "MINIX 3 over Linux", "operation": "system-call loop (MINIX 3: messages to servers)",
                         "published": f"{sig3(f.min())}--{sig3(f.max())} times as long (a ratio of times)",
                         "hardware": _hardware(minix["hardware"].iloc[0]), "bibkey": str(minix["bibkey"].iloc[0]),
                         "here": "no multi-server system measured here (MINIX 3 and the Hurd could not be run)"})
    return pd.DataFrame(rows, columns=["kernel", "operation", "published", "hardware", "bibkey", "here"])


def published_beside_tex(side: pd.DataFrame) -> str:
    if side.empty:
        return ""
    rows = [f"{tex_escape(r.kernel)} & {tex_escape(r.operation)} & {tex_escape(r.published)}, "
            f"{tex_escape(r.hardware)}~\\citep{{{r.bibkey}}} & {tex_escape(r.here)} \\\\"
            for r in side.itertuples()]
    return "\n".join([r"\begin{table}[!htbp]", r"\centering", r"\scriptsize",
                      r"\begin{tabular}{p{0.12\linewidth}p{0.19\linewidth}p{0.3\linewidth}p{0.25\linewidth}}",
                      r"\toprule", r"Kernel & Operation & Published: value in its unit, hardware & Here: " + UNIT + r" \\",
                      r"\midrule", *rows, r"\bottomrule", r"\end{tabular}",
                      r"\caption{Published microkernel figures beside ours, each in its own unit on its own hardware "
                      r"(cycles or time-stamp-counter ticks, a ratio of times; a time in brackets only where the clock "
                      r"is stated): not comparable with instruction counts, set side by side only to show the scale.}",
                      r"\label{tab:kernels-published}\label{tab:published-ipc}", r"\end{table}", ""])


def _switch_words(tab: pd.DataFrame) -> str:
    """', so seL4's round trips within one address space and across two count almost the same (426 and 432)':
    what a count leaves out of an address-space switch, where seL4 measured both round trips within 10 %."""
    one, two = cheapest(tab, "rtt_threads", SEL4), cheapest(tab, "rtt_spaces", SEL4)
    if one is None or two is None:
        return ""
    a, b = float(one["median"]), float(two["median"])
    if abs(b / a - 1) > 0.1:
        return ""
    return (f", so seL4's round trips within one address space and across two count almost the same "
            f"({_n(a)} and {_n(b)})")


def section_tex(tab: pd.DataFrame, det: pd.DataFrame, ipc: pd.DataFrame, published: pd.DataFrame | None,
                memory_measured: bool = False) -> str:
    """microkernel_kernels.tex: the body of section (a) on the four designs (`memory_measured`: the memory
    model's paragraph follows, sections/memory.py, and counts what these counts leave out)."""
    facts = tab.attrs.get("facts", {}) if hasattr(tab, "attrs") else {}
    side = published_beside(tab, ipc, published)
    return "\n".join([
        "Four kernel designs run as guests of the same CPU emulator, and each operation is counted in the guest "
        "instructions it retires, kernel and user: Linux (monolithic), Linux as the paravirtualised first domain "
        "of Xen (an operating-system personality on a small kernel: every system call enters Xen first), GNU Mach "
        "(a first-generation microkernel) and seL4 (an L4-family microkernel, with and without its IPC fastpath). "
        "Table~\\ref{tab:kernels-matched} sets their matched primitives side by side (seL4 has no processes, "
        "files or pipes). "
        + versions_tex(facts),
        "",
        findings_tex(tab),
        "",
        r"\begin{table}[t]", r"\centering", r"\scriptsize", r"\setlength{\tabcolsep}{2pt}",
        r"\resizebox{\linewidth}{!}{\input{generated/microkernel_matched}}",
        r"\caption{Matched primitives of four kernel designs on one emulated CPU: " + UNIT + r", median over "
        r"boots, exact when every boot counted the same, else with the range of the boots' medians, or $^*$ "
        r"when they differ past the digits shown; " + ("$^1$: one boot; " if (tab["boots"] == 1).any() else "")
        + r"$^a$: an analog, doing other work than the row's; "
        r"\emph{none}: no counterpart on that kernel. A count of instructions, not a time; "
        r"Figure~\ref{fig:kernels-matched} (Appendix~\ref{sec:published-microkernel}) draws it on one logarithmic axis.}",
        r"\label{tab:kernels-matched}", r"\end{table}",
        "",
        "Instructions are not time. A CR3 write (an address-space switch), a \\texttt{syscall} and a locked "
        "instruction each count one, and TLB and cache misses count nothing" + _switch_words(tab) + ". "
        "Table~\\ref{tab:kernels-paths} (Appendix~\\ref{sec:published-microkernel}) bounds what is left out from "
        "each kernel's own path: the kernel entries, address-space switches and copies each operation makes (read "
        "from the kernels' code, not measured); on hardware each switch also refills the TLB, since none of these "
        "kernels runs with PCID here. " + (MEMORY_NEXT if memory_measured else PLUGIN_CHECK) + " "
        + determinism_summary(det)
        # the published figures beside ours (Table tab:kernels-published) are cited by Section sec:service
        + (" Table~\\ref{tab:kernels-published} sets the published microkernel figures beside these counts, in "
           "their own units." if len(side) else ""), ""])


def figure_tex() -> str:
    """The matched table's figure, a float of the appendix (it draws what Table tab:kernels-matched prints)."""
    return "\n".join([
        r"\begin{figure}[!htbp]", r"\centering",
        r"\includegraphics[width=\linewidth,height=0.8\textheight,keepaspectratio]{generated/microkernel_matched}",
        r"\caption{The matched primitives of Table~\ref{tab:kernels-matched}: guest instructions per operation "
        r"(logarithmic; hollow markers: Linux with \texttt{mitigations=off} and seL4 without its fastpath; bars: the "
        r"range of the boots' medians where they differ). The axis counts instructions, not time.}",
        r"\label{fig:kernels-matched}", r"\end{figure}", ""])


def write_section(tab: pd.DataFrame, det: pd.DataFrame, out_dir, reference_root=None,
                  published: pd.DataFrame | None = None, memory_measured: bool = False) -> list[Path]:
    """paper/generated/microkernel_kernels.tex, or nothing (and no stale file) unless two designs were measured
    (`memory_measured`: the memory model's paragraph follows it)."""
    from osbench_analysis.analysis import kernels
    from osbench_analysis.report.sections.service import load_published_ipc

    path = Path(out_dir) / "microkernel_kernels.tex"
    if not kernels.measured(tab):
        path.unlink(missing_ok=True)
        (Path(out_dir) / "microkernel_published_beside.tex").unlink(missing_ok=True)
        return []
    if published is None:
        from osbench_analysis.report.reference_compare import published_factors

        published = published_factors(root=reference_root)
    ipc = load_published_ipc(reference_root)
    path.write_text(section_tex(tab, det, ipc, published, memory_measured) + "\n")
    # the published figures beside ours: the appendix's table (it replaces the published figures alone there)
    # and what the counts leave out per path, and each kernel's boots (the body says them in a sentence)
    beside = Path(out_dir) / "microkernel_published_beside.tex"
    beside.write_text(published_beside_tex(published_beside(tab, ipc, published)) + "\n" + figure_tex() + "\n"
                      + paths_table_tex() + "\n" + determinism_sentence(det) + "\n")
    return [path, beside]


def paths_table_tex() -> str:
    """The appendix's table of what the instruction counts leave out from each kernel's path."""
    return "\n".join([r"\begin{table}[!htbp]", r"\centering", r"\scriptsize", r"\input{generated/microkernel_paths}",
                      r"\caption{What the instruction counts leave out, per operation, from each kernel's path.}",
                      r"\label{tab:kernels-paths}", r"\end{table}", ""])
