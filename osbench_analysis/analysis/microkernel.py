"""Microkernel and monolithic kernel on one emulated CPU: GNU Mach (the
``mach`` environment) against Linux (``linux-tcg``, and ``linux-tcg-nomitig``
with mitigations=off), primitive by primitive, in guest instructions.

The unit is what both kernels retire per operation under QEMU TCG
``-icount shift=0`` (kernel + user): a path length, not a time.  Every
instruction is one tick, so cache and TLB misses, TLB flushes and the cost of
privileged instructions count for nothing.  These counts never share an axis
or a table column with the host environments' nanoseconds.

Runs are boots: each run's count is the median of its measured batches
(min and mean beside it: a timer interrupt's tail stays visible).  A count
identical in every boot (its min, median and mean) is reported as exact
("deterministic"), not as a degenerate interval; otherwise the interval is
the range of the boots' medians, which covers the median boot with
probability 1 - 2^(1-B) for B boots (order statistics).

    tab = microkernel.comparison(samples)          # one row per Mach probe and its Linux pair
    microkernel.write_tables(tab, published(), out_dir)
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.catalog import registry
from osbench_analysis.catalog.families import print_condition, print_name
from osbench_analysis.catalog.guests import DESIGN_GUESTS, GUEST_ENVIRONMENTS, LINUX, LINUX_NOMITIG, MACH, UNIT  # noqa: F401  (the guests' names, re-exported)
from osbench_analysis.formatting import sig3, tex_escape

#: the published microkernel figures set beside ours (data/reference, miao_minix3_linux's background)
PUBLISHED_METRICS = ("message_cost", "rpc_cost")


#: what names one boot's row of boot_counts(), in the order its rows are sorted (campaign_id where the samples have it)
BOOT_KEYS = ("environment", "probe", "params_json", "campaign_id", "run")


def boot_counts(samples: pd.DataFrame) -> pd.DataFrame:
    """Per (environment, probe, params_json, campaign, run = boot): the measured batches'
    per-operation count, min / median / mean, and how many batches.  A boot is a run of
    one campaign: run 0 of two campaigns is two boots (grouped by run alone, the boots
    of every round were merged run by run, and three rounds of 3 + 6 + 3 boots read as 6)."""
    s = samples[~samples["warmup"].astype(bool)].copy()
    s["per_op"] = s["elapsed_ns"].astype("float64") / s["iterations"].astype("float64")
    keys = [k for k in BOOT_KEYS if k in s]
    g = s.groupby(keys)["per_op"]
    return g.agg(min="min", median="median", mean="mean", batches="size").reset_index()


def summarise(boots: pd.DataFrame) -> dict:
    """One condition across boots: the median of the boots' medians, the range
    of them as the interval, min and mean, and whether it is exact (two boots
    or more, every one the same)."""
    med = boots["median"].to_numpy()
    # exact: every boot counted the same min, median and mean (the batches may still differ within a boot); one
    # boot shows nothing of that (the quick profile's budget may leave a guest's repeat boot out: config.py)
    exact = bool((np.ptp(boots[["min", "median", "mean"]].to_numpy(), axis=0) == 0).all()) if len(boots) > 1 else False
    n = len(boots)
    return {"median": float(np.median(med)) if n else np.nan, "lo": float(med.min()) if n else np.nan,
            "hi": float(med.max()) if n else np.nan, "min": float(boots["min"].min()) if n else np.nan,
            "mean": float(boots["mean"].mean()) if n else np.nan, "boots": n, "exact": exact,
            "coverage": 1 - 2.0 ** (1 - n) if n > 1 else np.nan}


def _condition(boots: pd.DataFrame, env: str, probe: str, params: dict) -> dict:
    """The boots of `probe` at `params` (its defaults filled in; a campaign may
    record fewer parameters than the catalog now has) in `env`."""
    full = registry.resolve_params(registry.PROBES[probe], params)
    part = boots[(boots["environment"] == env) & (boots["probe"] == probe)]
    mask = np.array([{**full, **json.loads(j)} == full for j in part["params_json"]], dtype=bool)
    return summarise(part.loc[mask] if len(part) else part)


def comparison(samples: pd.DataFrame) -> pd.DataFrame:
    """One row per GNU Mach primitive: its counts, its Linux pair's (default
    mitigations, and mitigations=off when measured), the ratio Linux / Mach
    of the medians with the interval the boots' ranges give, and how the
    work differs."""
    return comparison_of_boots(boot_counts(samples))


def comparison_of_boots(boots: pd.DataFrame) -> pd.DataFrame:
    """comparison() from boot_counts() (of one campaign or of many, rows in boot_counts' order)."""
    rows = []
    for name, spec in registry.PROBES.items():
        if spec.guest != "mach" or spec.hidden:   # hidden: the memory model's known answers (analysis/memevents.py)
            continue
        m = _condition(boots, MACH, name, {})
        if spec.pairs_with:
            pair, params = spec.pairs_with
            lx = _condition(boots, LINUX, pair, params)
            off = _condition(boots, LINUX_NOMITIG, pair, params)
            label = pair + (" (" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")" if params else "")
        else:   # no Linux operation does the same (a message to oneself): compared with nothing
            lx = off = summarise(boots.iloc[0:0])
            label = "none (no counterpart)"
        row = {"mach_probe": name, "linux_probe": label, "mach_unit": spec.unit, "differs": spec.differs}
        for prefix, st in (("mach", m), ("linux", lx), ("linux_nomitig", off)):
            row.update({f"{prefix}_{k}": v for k, v in st.items()})
        ok = m["boots"] and lx["boots"]
        row["ratio"] = lx["median"] / m["median"] if ok else np.nan
        row["ratio_lo"] = lx["lo"] / m["hi"] if ok else np.nan
        row["ratio_hi"] = lx["hi"] / m["lo"] if ok else np.nan
        row["ratio_exact"] = bool(ok and m["exact"] and lx["exact"])
        rows.append(row)
    return pd.DataFrame(rows)


def published(reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """The published microkernel IPC figures in data/reference (Mach vs L3 and
    L4 vs Mach vs UNIX, as the MINIX 3 paper's background cites them), in
    their own unit and on their own hardware."""
    if reference is None:
        from osbench_analysis.reference import studies as ref

        reference = ref.load_reference()
    r = reference[reference["metric_id"].isin(PUBLISHED_METRICS)]
    cols = ["source_id", "metric_id", "system_as_published", "cell_as_published", "value", "unit_label", "hardware",
            "semantics", "citation"]
    return r[[c for c in cols if c in r.columns]].reset_index(drop=True)


# ------------------------------------------------------------------ text

def count_tex(st: dict) -> str:
    """'76 (exact)' or '10\\,500 [10\\,400, 10\\,600]'."""
    if not st.get("boots"):
        return "--"
    if st["exact"]:
        return f"{_int(st['median'])} (exact)"
    return f"{_int(st['median'])} [{_int(st['lo'])}, {_int(st['hi'])}]"


def _int(x: float) -> str:
    return f"{x:,.0f}".replace(",", "\\,") if np.isfinite(x) else "n/a"


def _stats(row: pd.Series, prefix: str) -> dict:
    return {k: row[f"{prefix}_{k}"] for k in ("median", "lo", "hi", "min", "mean", "boots", "exact")}


def table_tex(tab: pd.DataFrame) -> str:
    """The comparison as a LaTeX tabular (booktabs): per pair, Mach and Linux
    counts (median over boots [range], min / mean), the ratio, and Linux with
    mitigations=off when measured."""
    lines = [r"\begin{tabular}{llrrrr}", r"\toprule",
             r"GNU Mach primitive & Linux counterpart & Mach & Linux & Linux/Mach & Linux, mitigations=off \\",
             r" & & \multicolumn{4}{c}{" + UNIT + r" (median over boots [range]; min / mean)} \\", r"\midrule"]
    for _, r in tab.iterrows():
        m, lx, off = _stats(r, "mach"), _stats(r, "linux"), _stats(r, "linux_nomitig")
        ratio = ("--" if not np.isfinite(r["ratio"]) else
                 f"{sig3(r['ratio'])}" + (" (exact)" if r["ratio_exact"] else
                                         f" [{sig3(r['ratio_lo'])}, {sig3(r['ratio_hi'])}]"))
        lines.append(f"{print_condition(r['mach_probe'])} & {print_condition(r['linux_probe'])} & "
                     f"{count_tex(m)} & {count_tex(lx)} & {ratio} & {count_tex(off)} \\\\")
        tails = [f"{_int(s['min'])} / {_int(s['mean'])}" if s["boots"] else "--" for s in (m, lx)]
        lines.append(f" & & {tails[0]} & {tails[1]} & & \\\\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def published_tex(pub: pd.DataFrame) -> str:
    """The published figures, one row per published comparison (the systems it sets side by side), each
    in its own unit, with what was measured as the source states it."""
    lines = [r"\begin{tabular}{p{3.2cm}p{2.2cm}p{9.4cm}}", r"\toprule", r"Systems, as published & Unit & What was measured \\",
             r"\midrule"]
    # a table without the comparison it belongs to: each row its own
    key = pub["metric_id"] if "metric_id" in pub else pd.Series(range(len(pub)), index=pub.index)
    for _, g in pub.groupby(key, sort=False):
        r = g.iloc[0]
        systems = ", ".join(f"{tex_escape(s)} {tex_escape(c)}" for s, c in zip(g["system_as_published"],
                                                                           g["cell_as_published"]))
        what = str(r.get("semantics", ""))
        lines.append(f"{systems} & {tex_escape(r.get('unit_label', ''))} & {tex_escape(what)} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def caveats_tex(facts: dict | None = None) -> str:
    """What the unit is and is not, and what is compared: the paragraph that
    goes with the table (facts: a mach or linux-tcg campaign's environment facts)."""
    facts = facts or {}
    qemu = tex_escape(facts.get("qemu", "QEMU"))
    return (
        "Counts are guest instructions retired per operation, kernel and user, on the same emulated "
        f"\\texttt{{qemu64}} CPU ({qemu}, TCG, \\texttt{{-icount shift=0}}): a path length, not a time. "
        "Every instruction is one tick, so cache misses, TLB misses and flushes, and the cost of "
        "privileged instructions count for nothing; on real hardware the ratios differ, and IPC that "
        "switches address spaces typically gets relatively dearer. "
        "GNU Mach here is Debian's uniprocessor x86\\_64 kernel without speculative-execution defences; "
        "Linux is Debian's SMP kernel on one virtual CPU with its default mitigations (retpolines), "
        "and the last column gives it with \\texttt{mitigations=off}. "
        "This is bare Mach with one bootstrap task of ours, not the Hurd: a Hurd system call would be an "
        "RPC to a user-space server with glibc on top. "
        "The operations do different work: a Mach RPC is two traps with a reply capability and a direct "
        "hand-off, a pipe round trip four system calls through the VFS and the scheduler. "
        "A count identical in every boot (min, median and mean) is marked exact; otherwise the range of the "
        "boots' medians is given. These counts are not comparable with the host environments' nanoseconds."
    )


def write_tables(tab: pd.DataFrame, pub: pd.DataFrame, out_dir: str | Path, facts: dict | None = None) -> list[Path]:
    """paper/generated/ files: microkernel_table.tex, microkernel_published.tex,
    microkernel_caveats.tex, microkernel.csv (the table as data), and the figure
    microkernel.pdf (plots_microkernel)."""
    from osbench_analysis.plots import microkernel as plots_microkernel

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"microkernel_table.tex": table_tex(tab), "microkernel_published.tex": published_tex(pub),
             "microkernel_caveats.tex": caveats_tex(facts) + "\n"}
    written = []
    for name, text in files.items():
        (out / name).write_text(text)
        written.append(out / name)
    tab.to_csv(out / "microkernel.csv", index=False)
    fig = plots_microkernel.plot_microkernel(tab)
    fig.savefig(out / "microkernel.pdf", bbox_inches="tight", metadata={"CreationDate": None})   # the same bytes any day
    import matplotlib.pyplot as plt

    plt.close(fig)
    return [*written, out / "microkernel.csv", out / "microkernel.pdf"]


def from_campaigns(campaigns: list[str] | None = None, root: str | Path | None = None) -> tuple[pd.DataFrame, dict]:
    """The comparison from sealed campaigns (default: every mach and linux-tcg*
    campaign under root not sealed as partial) and the facts of the Mach campaign."""
    from osbench_analysis.store import campaigns as store
    from osbench_analysis.store import values_cache

    cat = store.catalog(root)
    asked = campaigns is not None
    if not asked:
        cat = cat[~store.sealed_partial(cat)] if len(cat) else cat     # sealed as partial: only when named
        cat = cat[~store.memory_model(cat)] if len(cat) else cat       # the memory model's: analysis/memevents.py
        campaigns = list(cat[cat["environment"].isin([MACH, LINUX, LINUX_NOMITIG])]["campaign_id"]) if len(cat) else []
    # each campaign's boots are its own: kept on disk (values_cache); a damaged one left out, named (issue 31),
    # unless asked for by name
    parts = {c: values_cache.derived(boot_counts, c, root, strict=asked) for c in campaigns}
    parts = {c: b for c, b in parts.items() if b is not None}
    if not parts:
        return pd.DataFrame(), {}
    boots = pd.concat(parts.values(), ignore_index=True).sort_values(list(BOOT_KEYS), kind="mergesort")
    boots = boots.reset_index(drop=True)    # the rows in boot_counts' order, as from all campaigns' samples at once
    manifests = (store.parsed_manifest((store.resolve(c, root) / store.MANIFEST_FILE).read_text()) for c in parts)
    facts = next((m.environment_facts for m in manifests if m.environment == MACH), {})
    return comparison_of_boots(boots), facts


def _count(v: float) -> str:
    """A count as a person reads it: three significant digits, thousands separated ('76.0', '10,600')."""
    from osbench_analysis.formatting import sig3_rounded

    if not np.isfinite(v):
        return "not measured"
    return f"{float(f'{v:.3g}'):,.0f}" if abs(v) >= 1000 else sig3_rounded(v)


def screen_table(tab: pd.DataFrame) -> pd.DataFrame:
    """comparison() as a notebook shows it: per Mach primitive and its Linux pair, the
    guest instructions per operation of each kernel (median over boots, three
    significant digits), Linux / Mach with the range the boots give, the boots and
    how the work differs; the unit said once, in the caption (formatting.show)."""
    from osbench_analysis.formatting import with_ci_plain

    if tab.empty:
        return pd.DataFrame()
    out = pd.DataFrame({"GNU Mach primitive": tab["mach_probe"], "Linux counterpart": tab["linux_probe"],
                        "GNU Mach": [_count(v) for v in tab["mach_median"]],
                        "Linux": [_count(v) for v in tab["linux_median"]]})
    if np.isfinite(tab["linux_nomitig_median"].to_numpy(float)).any():
        out["Linux, mitigations=off"] = [_count(v) for v in tab["linux_nomitig_median"]]
    out["Linux / Mach [boots' range]"] = [
        with_ci_plain(r, lo, hi) if np.isfinite(r) else "not measured"
        for r, lo, hi in zip(tab["ratio"], tab["ratio_lo"], tab["ratio_hi"])]
    out["boots"] = [f"{int(m)} / {int(lx)}" for m, lx in zip(tab["mach_boots"], tab["linux_boots"])]
    out["how the work differs"] = tab["differs"]
    out.attrs["caption"] = (f"Counts are {UNIT} (QEMU TCG -icount, kernel and user), the median over boots "
                            "(boots: Mach / Linux); a path length, not a time: never compared with the host "
                            "environments' ns.")
    return out


# ------------------------------------------------------------------ the paper's section (a)

def _ratio_range(tab: pd.DataFrame, column: str = "ratio") -> tuple[float, float] | None:
    r = tab[column].to_numpy(float)
    r = r[np.isfinite(r)]
    return (float(r.min()), float(r.max())) if len(r) else None


def measured(tab: pd.DataFrame | None) -> bool:
    """Whether `tab` (comparison) holds at least one pair measured on both kernels."""
    return tab is not None and len(tab) > 0 and "ratio" in tab and bool(np.isfinite(tab["ratio"].to_numpy(float)).any())


def conclusion_sentence(tab: pd.DataFrame | None) -> str:
    """The Conclusion's sentence on section (a): the range of Linux / Mach in instructions, or ''."""
    if not measured(tab):
        return ""
    lo, hi = _ratio_range(tab)
    n = int(np.isfinite(tab["ratio"].to_numpy(float)).sum())
    return (f" On it, Linux retires {sig3(lo)}--{sig3(hi)} times as many instructions per operation as GNU Mach "
            f"over {n} pairs of primitives: a path length without caches or TLBs, not a time.")


def _exactness(ok: pd.DataFrame, exact: int) -> str:
    """Whether the boots repeated their counts, in words: which ratios are exact, and by how much
    the others' ranges over boots (ratio_lo..ratio_hi) spread around them at most."""
    n = len(ok)
    if exact == n:
        return f"all {n} ratios are exact, every boot of both kernels counting the same."
    rest = ok[~ok["ratio_exact"].astype(bool)]
    spread = float(np.nanmax(np.maximum(rest["ratio_hi"] / rest["ratio"] - 1, 1 - rest["ratio_lo"] / rest["ratio"])))
    cause = "(a timer interrupt lands in one boot's batch and not in another's)"
    why = (f"no ratio is exact: the boots of each kernel differ slightly {cause}" if exact == 0 else
           f"{exact} of the {n} ratios are exact; in the other {n - exact} the boots differ slightly {cause}")
    if not spread > 5e-4:
        return why + ", which leaves their median counts, and so the ratios, the same in every boot."
    return why + f", which moves a ratio by at most {sig3(100 * spread)}\\% over its range of boots."


def findings_tex(tab: pd.DataFrame) -> str:
    """The sentences with numbers of section (a), every number from `tab`: how many pairs,
    the range of Linux / Mach, and the same with mitigations=off."""
    ok = tab[np.isfinite(tab["ratio"].to_numpy(float))]
    if ok.empty:
        return ""
    lo, hi = _ratio_range(ok)
    exact = int(ok["ratio_exact"].astype(bool).sum())
    below = ok[ok["ratio"] < 1]
    s = (f"Over the {len(ok)} pairs measured, Linux retires {sig3(lo)}--{sig3(hi)} times as many instructions "
         f"per operation as GNU Mach (Table~\\ref{{tab:microkernel}}, Figure~\\ref{{fig:microkernel}}); "
         + _exactness(ok, exact))
    if len(below):
        s += (f" Mach's path is the longer one for "
              + ", ".join(print_name(p) for p in below["mach_probe"]) + ".")
    off = ok["linux_nomitig_median"].to_numpy(float) / ok["mach_median"].to_numpy(float)
    change = ok["linux_nomitig_median"].to_numpy(float) / ok["linux_median"].to_numpy(float) - 1
    has = np.isfinite(off)
    if has.any():
        worst = float(np.max(np.abs(change[has])))
        s += (f" With \\texttt{{mitigations=off}} the factor is {sig3(off[has].min())}--{sig3(off[has].max())}: "
              f"Linux's speculative-execution defences, which this Mach lacks, change its counts by at most "
              f"{sig3(100 * worst)}\\%" + (", a small part of the difference." if worst < 0.1 else "."))
    return s


def _marker_words(tab: pd.DataFrame) -> str:
    """What the figure's markers show, from the counts drawn: a filled marker only where some count is exact."""
    cols = [c for c in tab.columns if c.endswith("_exact") and c != "ratio_exact"]
    any_exact = any(tab[c].fillna(False).astype(bool).any() for c in cols)
    return ("filled markers: every boot counted the same; hollow markers with bars: the median over boots and "
            "their range" if any_exact else "markers: the median over boots, bars: the range over boots")


def section_tex(tab: pd.DataFrame, pub: pd.DataFrame) -> str:
    """paper/generated/microkernel.tex: the body of section (a) (paper.tex gives its heading and label):
    the unit, the findings, the pair table, the figure, the published figures and the caveats."""
    lines = [
        "This comparison runs GNU Mach~\\citep{accetta1986mach}, a microkernel, and Linux, a monolithic kernel, "
        "as guests of the same CPU emulator and counts the guest instructions each retires per operation: a path "
        "length, not a time (what the unit leaves out is stated below the tables).",
        findings_tex(tab),
        "",
        r"\begin{table}[t]", r"\centering", r"\scriptsize", r"\setlength{\tabcolsep}{3pt}",
        r"\resizebox{\linewidth}{!}{\input{generated/microkernel_table}}",
        r"\caption{Microkernel and monolithic kernel on one emulated CPU: " + UNIT + ", per GNU Mach primitive "
        r"and its Linux counterpart (median over boots, with the range of the boots' medians, or exact when every "
        r"boot counted the same; second line: min / mean), their ratio, and Linux with \texttt{mitigations=off}. "
        r"A count of instructions, not a time.}",
        r"\label{tab:microkernel}", r"\end{table}",
        "",
        r"\begin{figure}[t]", r"\centering",
        r"\includegraphics[width=0.72\linewidth]{generated/microkernel}",
        r"\caption{Microkernel and monolithic kernel on one emulated CPU: guest instructions per operation "
        r"(left, logarithmic; " + _marker_words(tab) + r") and Linux / Mach (right). "
        r"The axis is instructions, not time; it is not comparable with the host's nanoseconds.}",
        r"\label{fig:microkernel}", r"\end{figure}",
        "",
    ]
    if len(pub):
        lines += [
            "The published microkernel figures are set beside ours in their own units and on their own "
            "hardware in Appendix~\\ref{sec:published-microkernel} (Table~\\ref{tab:microkernel-published}; "
            "the IPC costs of seL4, L4Re and L3 in cycles or time-stamp-counter ticks are in "
            "Table~\\ref{tab:published-ipc}): another unit on other hardware, not comparable with instruction "
            "counts.", ""]
    # when the four designs were measured, paper.tex inputs their section (report/sections/kernels.py) instead
    lines += [r"\input{generated/microkernel_caveats}", ""]
    return "\n".join(lines)


def published_float_tex(pub: pd.DataFrame) -> str:
    """The published microkernel figures' table as a float of the appendix (paper.tex inputs it there)."""
    if not len(pub):
        return ""
    return "\n".join([
        r"\begin{table}[!htbp]", r"\centering", r"\scriptsize",
        r"\input{generated/microkernel_published}",
        r"\caption{Published microkernel IPC figures (Mach against L3 and L4) as the MINIX~3 study's "
        r"background cites them from Liedtke's work, in the cited unit; hardware not stated, no intervals.}",
        r"\label{tab:microkernel-published}", r"\end{table}", ""])


def write_section(out_dir: str | Path, campaigns: list[str] | None = None, root: str | Path | None = None,
                  reference: pd.DataFrame | None = None, loaded: tuple[pd.DataFrame, dict] | None = None) -> list[Path]:
    """Section (a) of the paper from the sealed mach / linux-tcg campaigns (or `loaded`, what
    from_campaigns returned): its tables, figure and microkernel.tex; nothing (and no stale
    microkernel.tex) when no Mach campaign is stored."""
    out = Path(out_dir)
    tab, facts = loaded if loaded is not None else from_campaigns(campaigns, root)
    section = out / "microkernel.tex"
    if tab.empty or "mach_boots" not in tab or not tab["mach_boots"].astype(float).gt(0).any():
        section.unlink(missing_ok=True)
        return []
    pub = published(reference)
    written = write_tables(tab, pub, out, facts)
    section.write_text(section_tex(tab, pub))
    (out / "microkernel_published_float.tex").write_text(published_float_tex(pub))
    return [*written, section, out / "microkernel_published_float.tex"]
