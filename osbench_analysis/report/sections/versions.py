"""The paper's "Linux across its versions" (versions.tex, input by paper.tex after the four kernel designs;
issue 39 item 3, issue 42 item 3) and its appendix table of every change (versions_appendix.tex).

The history is analysis/versions.py's (the newest campaign of each linux-tcg-<version>[-nomitig] under the
paper's root: the round data/paper_campaigns.txt names), the kernel functions its per-function profiles'
(data/kernel_profiles/), the comparison with LEBench analysis/lebench.py's.  Every number and every
verdict below is computed from them; this module only chooses, orders and words them.

    inp = versions.load(root)                  # None without a sweep campaign under root
    versions.section_tex(inp)                  # the body's subsection (figure, main changes, LEBench, hosts)
    versions.appendix_tex(inp.changes)         # every change of more than 5 %, with its functions"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.formatting import tex_escape

SECTION_FILE = "versions.tex"
APPENDIX_FILE = "versions_appendix.tex"
FIGURE_NAME = "versions_history"   # not kernel_history: make kernels writes that one, larger
#: how many changes the body names (the largest confirmed ones with the default mitigations, beyond their spread)
MAIN_CHANGES = 5
#: the conditions whose mitigation cost the body quotes: no partner and no idle wait in their count
SOLO = ("null_syscall", "syscall_mix", "service_direct", "fork_exit")
#: the kernel both the sweep and the four-designs comparison boot (the same Debian package)
SHARED_KERNEL = ("6.1", "linux-tcg")


@dataclass
class VersionsInputs:
    hist: pd.DataFrame          # versions.history
    changes: pd.DataFrame       # versions.explain(versions.changes(hist), profiles)
    agree: pd.DataFrame         # lebench.agreement
    hosts: pd.DataFrame         # host_check: the shared kernel's counts on the sweep's host and the other's
    sweep_args: tuple = ()      # what every sweep boot's command line adds (kernel_versions.SWEEP_ARGS)
    spread: pd.DataFrame = None  # versions.round_spread: how far each condition moved between two rounds
    user_functions: frozenset = frozenset()   # the profiles' user-space names (the probes' own code): never named
    memory: pd.DataFrame = None  # versions.memory_history: the memory model's events per version (warm), or empty


def load(root=None, profiles_dir=None, reference_root=None) -> VersionsInputs | None:
    """The section's inputs from the campaigns under root (None: no sweep campaign there)."""
    from osbench_analysis.analysis import lebench, versions
    from osbench_analysis.catalog.kernel_versions import SWEEP_ARGS

    hist = versions.history(versions.from_campaigns(root))
    if hist.empty:
        return None
    prof = versions.profiles(profiles_dir)
    spread = versions.spread_of(hist, root)
    ch = versions.beyond_spread(versions.explain(versions.changes(hist), prof), spread)
    user = frozenset(prof.loc[prof["space"] == "user", "function"]) if len(prof) else frozenset()
    return VersionsInputs(hist, ch, lebench.agreement(hist, reference_root, prof=prof), host_check(root),
                          tuple(SWEEP_ARGS), spread, user, versions.memory_history(root))


def host_check(root=None) -> pd.DataFrame:
    """Per condition: the shared kernel's count in the sweep (its newest campaign) and in the newest campaign of
    the four-designs guest on another host under root, each boot's smallest batch (the history's statistic),
    the two hosts, the two batch lengths (ms) and the difference in percent; empty unless both exist."""
    from osbench_analysis.analysis.microkernel import boot_counts
    from osbench_analysis.catalog.kernel_versions import env_name
    from osbench_analysis.store import campaigns as store

    cols = ["probe", "params_json", "sweep", "other", "percent", "sweep_host", "other_host", "sweep_batch_ms",
            "other_batch_ms"]
    cat = store.catalog(root)
    if not len(cat):
        return pd.DataFrame(columns=cols)
    cat = cat.sort_values("created_utc")
    sweep = cat[cat["environment"] == env_name(SHARED_KERNEL[0])].tail(1)
    if sweep.empty:
        return pd.DataFrame(columns=cols)
    other = cat[(cat["environment"] == SHARED_KERNEL[1]) & (cat["host"] != sweep.iloc[0]["host"])].tail(1)
    if other.empty:
        return pd.DataFrame(columns=cols)
    per = []
    for row in (sweep.iloc[0], other.iloc[0]):
        samples = pd.read_parquet(Path(row["path"]) / "samples.parquet")
        per.append(boot_counts(samples).groupby(["probe", "params_json"])["min"].median())
    both = pd.concat({"sweep": per[0], "other": per[1]}, axis=1).dropna().reset_index()
    both["percent"] = 100 * (both["sweep"] / both["other"] - 1)
    ms = [_batch_ms(Path(r["path"])) for r in (sweep.iloc[0], other.iloc[0])]
    return both.assign(sweep_host=sweep.iloc[0]["host"], other_host=other.iloc[0]["host"], sweep_batch_ms=ms[0],
                       other_batch_ms=ms[1])[cols]


def _batch_ms(folder: Path):
    import json

    return json.loads((folder / "manifest.json").read_text()).get("config", {}).get("min_batch_ms")


# ------------------------------------------------------------------ words

def _tt(name: str) -> str:
    return r"\texttt{" + tex_escape(str(name)) + "}"


def _pct(v: float, digits: int = 0) -> str:
    return f"{v:+.{digits}f}\\,\\%".replace("-", "$-$", 1) if v < 0 else f"{v:+.{digits}f}\\,\\%"


def _count(v: float) -> str:
    s = f"{v:+,.0f}".replace(",", "{,}")
    return s.replace("-", "$-$", 1)


#: where the paper's kernel function names are listed for its identifier check (report/pdf_check.py): the
#: measured kernels' own symbols, real interfaces like the system calls it names, never this package's names
SYMBOLS_FILE = "kernel_symbols.txt"


def _cond(label: str) -> str:
    """A history's condition ('service_direct bytes=64') as a reader reads it (TeX): 'service, direct (bytes 64)'."""
    from osbench_analysis.catalog.families import print_condition

    probe, _, variant = str(label).partition(" ")
    return print_condition(f"{probe} ({variant})" if variant else probe)


def _functions_tex(functions: str, named: int = 2, user: frozenset = frozenset()) -> str:
    """'do_syscall_64 +30, x86_return_thunk +12' -> '\\texttt{do\\_syscall\\_64} +30, ...' (the first `named`
    kernel functions; a compiler's clone suffix, '.isra.0', left out)."""
    parts = []
    items = [p.strip() for p in str(functions or "").split(", ") if p.strip()]
    # the rows that name no function (the profile's summed remainder, the idle time) and the probes' own
    # user-space code are the analysis' tables', not the paper's
    for item in items:
        name, _, value = item.rpartition(" ")
        if not name or name.startswith("(") or name in user:
            continue
        parts.append(f"{_tt(name.split('.', 1)[0])} {value.replace(',', '{,}').replace('-', '$-$', 1)}")
        if len(parts) == named:
            break
    return ", ".join(parts)


def main_changes(ch: pd.DataFrame, n: int = MAIN_CHANGES) -> pd.DataFrame:
    """The `n` largest changes (in percent) with the default mitigations that the profiles confirm, at most one
    per condition and pair of versions, oldest pair first."""
    from osbench_analysis.analysis import versions

    if ch.empty:
        return ch
    ok = ch[(ch["mitigations"] == "default") & (ch["confirmed"] == "yes") & (ch["functions"].astype(str) != "")]
    if "beyond" in ok:
        ok = ok[ok["beyond"].astype(bool)]
    ok = ok.reindex(ok["percent"].abs().sort_values(ascending=False).index)
    # largest first, each pair of versions and each condition once (then the rest), so that the history's
    # steps and its primitives are named before a second of either
    pairs, conds, first = set(), set(), []
    for i, r in ok.iterrows():
        if (r["from"], r["to"]) not in pairs and r["condition"] not in conds:
            first.append(i)
            pairs.add((r["from"], r["to"]))
            conds.add(r["condition"])
    top = pd.concat([ok.loc[first], ok.drop(first)]).head(n)
    order = {v: i for i, v in enumerate(versions.version_order())}
    return top.assign(_o=top["from"].map(order)).sort_values(["_o", "percent"], ascending=[True, False]).drop(
        columns="_o")


def mitigation_range(hist: pd.DataFrame, conditions=SOLO) -> tuple[float, float, int]:
    """(lowest, highest, versions) of default / mitigations=off - 1 in percent over the versions and the
    `conditions` measured with both settings; nan without them."""
    from osbench_analysis.analysis import versions

    cost = versions.mitigation_cost(hist)
    cost = cost[cost.index.isin(conditions)]
    vals = 100 * (cost.to_numpy(float) - 1)
    vals = vals[np.isfinite(vals)]
    if not vals.size:
        return float("nan"), float("nan"), 0
    return float(vals.min()), float(vals.max()), int(cost.notna().any(axis=0).sum())


def _intro(inp: VersionsInputs) -> str:
    from osbench_analysis.analysis import versions

    hist, ch = inp.hist, inp.changes
    names = [v for v in versions.version_order() if v in set(hist["version"])]
    both = hist.groupby("version")["mitigations"].nunique()
    two_boots = hist[hist["boots"] > 1]
    beyond = int(ch["beyond"].astype(bool).sum()) if "beyond" in ch and len(ch) else len(ch)
    args = " ".join(inp.sweep_args)
    skipped = (f", and every boot skips the crypto self-tests ({_tt(args)}), which from 7.1 on run beside the "
               "probes" if "cryptomgr.notests=1" in inp.sweep_args else "")
    return (
        f"The guest of Section~\\ref{{sec:microkernel}} ran the same probes on {len(names)} Debian kernels, Linux "
        f"{names[0]} to {names[-1]}, "
        + ("each with its default mitigations and with \\texttt{mitigations=off}" if (both == 2).all()
           else "with its default mitigations and, where measured, \\texttt{mitigations=off}")
        + f"; only the kernel changes{skipped}. "
        + f"{int(two_boots['exact'].sum())} of the {len(two_boots)} counts repeated to the instruction in two boots. "
        f"Figure~\\ref{{fig:versions}} gives each primitive's count relative to {names[0]}, in the manner of "
        f"LEBench~\\citep{{ren2019lebench}}. Appendix~\\ref{{sec:versions-appendix}} lists the {len(ch)} changes of "
        "more than 5\\,\\% between consecutive versions, each with the kernel functions whose instructions moved "
        "most (a QEMU plugin attributes every guest instruction to a kernel symbol), and how far each count moved "
        f"between two rounds of the sweep; {beyond} changes exceed that movement.\n")


def _spread_paragraph(inp: VersionsInputs) -> str:
    """How far the counts moved between two rounds of the same kernels, and how many changes exceed that."""
    sp = inp.spread
    if sp is None or sp.empty:
        return ""
    sp = sp[sp["mitigations"] == "default"] if (sp["mitigations"] == "default").any() else sp
    small = sp[sp["max_percent"] < 1.0]
    large = sp[sp["max_percent"] >= 1.0]
    ch = inp.changes
    beyond = int(ch["beyond"].astype(bool).sum()) if "beyond" in ch else len(ch)
    args = " ".join(inp.sweep_args) or "a boot parameter"
    words = [f"The sweep was run twice; on the {int(sp['versions'].max())} versions where the first round met "
             f"nothing else, the two rounds differ only by {_tt(args)}, which no probe's path runs:"]
    if len(small):
        words.append(f" {len(small)} conditions moved by under 1\\,\\% between them in every version")
    if len(large):
        top = large.loc[large["max_percent"].idxmax()]
        lo, hi = float(large["spread_percent"].min()), float(large["spread_percent"].max())
        words.append(("; the other" if len(small) else "") + f" {len(large)} by a median of "
                     + (f"{lo:.1f} to {hi:.1f}" if f"{lo:.1f}" != f"{hi:.1f}" else f"{hi:.1f}") + "\\,\\% "
                     f"over the versions and by up to {float(top['max_percent']):.0f}\\,\\% "
                     f"({_cond(top['condition'])}), so their counts depend on more than the path the probe runs")
    words.append(". A change counts as the kernel's only beyond its condition's median movement between the "
                 f"rounds; {beyond} of the {len(ch)} do.\n")
    return "".join(words)


def _changes_paragraph(inp: VersionsInputs) -> str:
    top = main_changes(inp.changes)
    if top.empty:
        return ""
    items = [f"{r['from']}$\\to${r['to']}: {_cond(r['condition'])} {_count(r['delta'])} instructions "
             f"({_pct(r['percent'])}), in {_functions_tex(r['functions'], user=inp.user_functions)}"
             for _, r in top.iterrows()]
    return ("The largest of them with the default mitigations, confirmed by the profiles: "
            + "; ".join(items) + ".\n")


def _mitigations_paragraph(inp: VersionsInputs) -> str:
    from osbench_analysis.analysis import lebench

    lo, hi, n = mitigation_range(inp.hist)
    out = []
    if n:
        out.append(f"The default mitigations against \\texttt{{mitigations=off}} change the counts of "
                   f"{'; '.join(_cond(c) for c in SOLO if c in set(inp.hist['condition']))} by "
                   f"{_pct(lo, 1)} to {_pct(hi, 1)} over the {n} versions.")
    a = inp.agree.dropna(subset=["lebench_step_percent"]) if len(inp.agree) else inp.agree
    a = a[a["verdict"] != "not measured here"] if len(a) else a
    if len(a):
        theirs = ", ".join(f"{_pct(r['lebench_step_percent'])} on {tex_escape(r['lebench_test'])}"
                           for _, r in a.iterrows())
        ours = a["ours_newest_percent"].to_numpy(float)
        same = int(a["verdict"].str.startswith("same direction").sum())
        rho = lebench.ranking(a)
        out.append(
            f"LEBench found the Meltdown and Spectre patches (its 4.13$\\to$4.14 step) costing, in time on a "
            f"Xeon, {theirs}; here the same mitigations change the counterparts' counts in the newest version by "
            f"{_pct(float(np.nanmin(ours)), 1)} to {_pct(float(np.nanmax(ours)), 1)}, the same direction in "
            f"{same} of {len(a)}"
            + (f" (rank correlation {rho:.2f})".replace("-", "$-$") if np.isfinite(rho) else "")
            + ". The two agree only where a mitigation adds instructions: what LEBench timed is mostly page-table "
              "isolation's address-space switch and flushes, which this AMD-vendor \\texttt{qemu64} guest does not "
              "run and an instruction count would not price. No kernel version is in both studies.")
    return " ".join(out) + ("\n" if out else "")


def _hosts_paragraph(inp: VersionsInputs) -> str:
    h = inp.hosts
    if h.empty:
        return ""
    worst = h.loc[h["percent"].abs().idxmax()]
    ns = h[h["probe"] == "null_syscall"]
    ns_txt = f", the {_cond('null_syscall')} within {abs(float(ns['percent'].iloc[0])):.2f}\\,\\%" if len(ns) else ""
    return (f"The sweep was measured on another machine than the paper's other campaigns, of the same kind. "
            "Counts under \\texttt{-icount} are the guest's, not the host's: on the kernel both booted (Linux "
            f"{SHARED_KERNEL[0]}, the same package and initramfs) the two machines' counts agree within "
            f"{abs(float(worst['percent'])):.1f}\\,\\% on all {len(h)} conditions{ns_txt}; their batches were "
            f"{float(worst['sweep_batch_ms']):g} and {float(worst['other_batch_ms']):g} guest milliseconds long.\n")


def _body_tail(inp: VersionsInputs) -> str:
    """The body's last paragraph: the mitigations beside LEBench and the hosts, in one sentence each."""
    lo, hi, n = mitigation_range(inp.hist)
    a = inp.agree[inp.agree["verdict"] != "not measured here"] if len(inp.agree) else inp.agree
    out = []
    if n and len(a):
        step = a["lebench_step_percent"].to_numpy(float)
        out.append(f"The default mitigations change the system-call paths' counts by {_pct(lo, 1)} to {_pct(hi, 1)}, "
                   f"where LEBench timed {_pct(float(np.nanmin(step)))} to {_pct(float(np.nanmax(step)))} for the "
                   "Meltdown and Spectre patches: mostly page-table isolation's switch and flushes, which this "
                   "AMD-vendor \\texttt{qemu64} guest does not run and a count would not price.")
    mem = memory_sentence(inp.memory)
    if mem:     # the memory model on every version (Table tab:versions-memory in the appendix)
        out.append("In the memory model, warm, " + mem[0].lower() + mem[1:-1] + " (Table~\\ref{tab:versions-memory}).")
    h = inp.hosts
    if len(h):
        out.append("The sweep ran on another machine of the reference host's kind; on the kernel both booted the "
                   f"counts agree within {float(h['percent'].abs().max()):.1f}\\,\\%.")
    return " ".join(out) + ("\n" if out else "")


#: the memory model's events the appendix's table gives per version (versions.MEMORY_EVENTS), in a reader's words
MEMORY_ROWS = (("l1i_misses", "L1I misses"), ("dtlb_misses", "data-TLB misses"))
#: a condition enters that table when it misses at least this often per operation in some version
MEMORY_FLOOR = 1.0


def memory_grid(mem: pd.DataFrame, event: str) -> pd.DataFrame:
    """condition x version of one event per operation, warm, default mitigations, the conditions without a
    variant that miss at least MEMORY_FLOOR times in some version (empty without them)."""
    from osbench_analysis.analysis import versions

    if mem is None or mem.empty or event not in mem:
        return pd.DataFrame()
    m = mem[(mem["mode"] == "warm") & (mem["mitigations"] == "default") & ~mem["condition"].str.contains(" ")]
    g = m.pivot_table(index="condition", columns="version", values=event, aggfunc="first")
    g = g[[v for v in versions.version_order() if v in g.columns]]
    return g[g.max(axis=1) >= MEMORY_FLOOR]


def _events(v: float) -> str:
    if not np.isfinite(v):
        return "--"
    if v < 0.05:
        return "0"
    return f"{v:,.0f}".replace(",", "{,}") if v >= 10 else f"{v:.2g}"


def memory_changes(mem: pd.DataFrame, event: str = "l1i_misses") -> pd.DataFrame:
    """Per condition of memory_grid: the event in the oldest and the newest version and their ratio, largest
    ratio first."""
    g = memory_grid(mem, event)
    if g.empty or g.shape[1] < 2:
        return pd.DataFrame(columns=["condition", "first", "last", "ratio"])
    out = pd.DataFrame({"condition": g.index, "first": g.iloc[:, 0].to_numpy(float), "last": g.iloc[:, -1].to_numpy(float)})
    out["ratio"] = out["last"] / out["first"].where(out["first"] > 0)
    return out.sort_values("ratio", ascending=False).reset_index(drop=True)


def memory_sentence(mem: pd.DataFrame) -> str:
    """The versions' memory events in words: how many conditions miss more L1I lines in the newest version than
    in the oldest, the range of that growth and the largest ('' without the model's campaigns)."""
    ch = memory_changes(mem).dropna(subset=["ratio"])
    g = memory_grid(mem, "l1i_misses")
    if ch.empty:
        return ""
    up = ch[ch["ratio"] > 1]
    first, last = g.columns[0], g.columns[-1]
    top = ch.iloc[0]
    who = f"All {len(ch)} conditions" if len(up) == len(ch) else f"{len(up)} of the {len(ch)} conditions"
    return (f"{who} that miss the L1I cache miss it more often per operation on {last} than on {first}, "
            f"{ch['ratio'].min():.2f} to {ch['ratio'].max():.2f} times as often (most, {_cond(top['condition'])}: "
            f"{_events(top['first'])} to {_events(top['last'])}).")


def memory_table_tex(mem: pd.DataFrame) -> str:
    """The appendix's table: per condition and version the memory model's warm L1I and data-TLB misses per
    operation ('' without the model's campaigns)."""
    grids = [(words, memory_grid(mem, e)) for e, words in MEMORY_ROWS]
    grids = [(w, g) for w, g in grids if not g.empty]
    if not grids:
        return ""
    cols = list(grids[0][1].columns)
    lines = [r"\begin{table}[!htbp]", r"\centering", r"\scriptsize", r"\setlength{\tabcolsep}{3pt}",
             r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
             r"\begin{tabular}{l" + "r" * len(cols) + "}", r"\toprule",
             "condition & " + " & ".join(str(c) for c in cols) + r" \\"]
    for words, g in grids:
        lines += [r"\midrule", rf"\multicolumn{{{len(cols) + 1}}}{{l}}{{\emph{{{words} per operation}}}} \\"]
        for cond, row in g.iterrows():
            lines.append(_cond(cond) + " & " + " & ".join(_events(row.get(c, np.nan)) for c in cols) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}}",
              r"\caption{Linux's versions in memory terms: the guests' memory model of Section~\ref{sec:microkernel} "
              r"(stated geometry, no timing) in one warm campaign per version, default mitigations, per operation; "
              rf"the conditions that miss at least {MEMORY_FLOOR:g} time per operation in some version.}}",
              r"\label{tab:versions-memory}", r"\end{table}", ""]
    return "\n".join(lines)


def figure_tex(inp: VersionsInputs) -> str:
    from osbench_analysis.analysis import versions

    names = [v for v in versions.version_order() if v in set(inp.hist["version"])]
    return "\n".join([
        r"\begin{figure}[t]", r"\centering",
        rf"\includegraphics[width=\linewidth]{{generated/{FIGURE_NAME}}}",
        rf"\caption{{Linux {names[0]} to {names[-1]} (Debian's kernels), per primitive: the guest-instruction "
        rf"count per operation relative to {names[0]} (each boot's cleanest batch, median of two boots); left "
        r"with the default mitigations, right with \texttt{mitigations=off}.  Red: more instructions, blue: "
        r"fewer.  Counts, not time.}", r"\label{fig:versions}", r"\end{figure}", ""])


def section_tex(inp: VersionsInputs) -> str:
    """The body's subsection: what ran, the figure, the main changes with their functions, the mitigations
    beside LEBench, and the hosts."""
    # \sloppy: a kernel function's name is one unbreakable word of up to 30 typewriter letters
    return "\n".join([r"\subsection{Linux across its versions}\label{sec:versions}", figure_tex(inp), r"{\sloppy",
                      _intro(inp), _changes_paragraph(inp), _body_tail(inp) + r"\par}", ""])


def appendix_tex(ch: pd.DataFrame, user: frozenset = frozenset(), inp: VersionsInputs | None = None) -> str:
    """Every change of more than 5 % between consecutive versions, as a long table (`user`: the profiles'
    user-space names, never printed), after the rounds' spread, the mitigations beside LEBench and the
    hosts (`inp`)."""
    head = (r"\section{Linux across versions: every change}\label{sec:versions-appendix}" "\n"
            "Each change of more than 5\\,\\% between consecutive versions measured (guest instructions per "
            "operation), the kernel functions whose instructions moved most in its direction in the profiled "
            "boots, and whether the profiles show the change (\\emph{yes}: the same sign and at least half its "
            "size; \\emph{no}: most often a campaign batch that carried a one-off cost, or a round trip's idle "
            "wait).  Spread: how far the condition's count moved between the sweep's two rounds (the median over "
            "the versions, percent); "
            "$^*$: the change is no larger.\n")
    if inp is not None:
        head += "\n{\\sloppy\n" + _spread_paragraph(inp) + "\n" + _mitigations_paragraph(inp) + "\n" + _hosts_paragraph(inp) + "\\par}\n"
        mem_words = memory_sentence(inp.memory)
        if mem_words:
            head += ("\nThe guests' memory model also ran on every version, warm, with the default mitigations "
                     "(Table~\\ref{tab:versions-memory}). " + mem_words + "\n" + memory_table_tex(inp.memory) + "\n")
    lines = [head, r"\footnotesize", r"\setlength{\tabcolsep}{2.5pt}",
             r"\begin{longtable}{@{}l l >{\raggedright\arraybackslash}p{2.7cm} r r r r "
             r">{\raggedright\arraybackslash}p{5.2cm} l@{}}",
             r"\caption{Linux's changes of more than 5\,\% between consecutive versions (mit.: mitigations; "
             r"before and after: instructions per operation).}\label{tab:versions-changes}\\", r"\toprule",
             r"versions & mit. & condition & before & after & change & spread & functions & conf. \\", r"\midrule",
             r"\endfirsthead", r"\toprule",
             r"versions & mit. & condition & before & after & change & spread & functions & conf. \\", r"\midrule",
             r"\endhead", r"\bottomrule", r"\endlastfoot"]
    from osbench_analysis.analysis import versions

    order = {v: i for i, v in enumerate(versions.version_order())}
    ch = ch.assign(_o=ch["from"].map(order)).sort_values(["_o", "mitigations", "condition"], kind="stable")
    for _, r in ch.iterrows():
        lines.append(" & ".join([f"{r['from']}$\\to${r['to']}", "def." if r["mitigations"] == "default" else "off",
                                 _cond(r["condition"]), f"{r['before']:,.0f}".replace(",", "{,}"),
                                 f"{r['after']:,.0f}".replace(",", "{,}"), _pct(r["percent"], 1),
                                 (f"{r['spread_percent']:.1f}" if np.isfinite(r.get("spread_percent", np.nan))
                                  else "") + ("" if r.get("beyond", True) else "$^*$"),
                                 _functions_tex(r.get("functions", ""), named=3, user=user),
                                 tex_escape(str(r.get("confirmed", "") or ""))]) + r" \\")
    lines += [r"\end{longtable}", r"\normalsize", ""]
    return "\n".join(lines)


def write_section(out_dir, root=None, profiles_dir=None, reference_root=None,
                  inp: VersionsInputs | None = None) -> list[Path]:
    """versions.tex, versions_appendix.tex and the figure into out_dir; nothing (and no stale file) without a
    sweep campaign under root."""
    from osbench_analysis.analysis import versions
    from osbench_analysis.plots import forest as plots
    from osbench_analysis.plots import versions as plots_versions

    out = Path(out_dir)
    from osbench_analysis.catalog.families import plain_text

    files = [out / SECTION_FILE, out / APPENDIX_FILE]
    inp = inp if inp is not None else load(root, profiles_dir, reference_root)
    if inp is None:
        for p in [*files, out / SYMBOLS_FILE]:
            p.unlink(missing_ok=True)
        return []
    out.mkdir(parents=True, exist_ok=True)
    texts = [section_tex(inp), appendix_tex(inp.changes, inp.user_functions, inp)]
    for f, t in zip(files, texts):
        f.write_text(t)
    (out / SYMBOLS_FILE).write_text("".join(f"{n}\n" for n in printed_symbols(texts)))
    labels = {c: plain_text(_cond(c)) for c in set(inp.hist["condition"])}
    fig = plots_versions.plot_history(inp.hist, versions.version_order(), compact=True, labels=labels)
    written = plots.save_figure(fig, out, FIGURE_NAME)
    plots.close(fig)
    return [*files, out / SYMBOLS_FILE, *written]


def printed_symbols(texts: list[str]) -> list[str]:
    """The kernel function names the section's TeX prints (every \\texttt{...} but the boot parameter), sorted."""
    import re

    names = {m.replace("\\_", "_") for t in texts for m in re.findall(r"\\texttt\{([^}]*)\}", t)}
    return sorted(n for n in names if "=" not in n and "-" not in n)
