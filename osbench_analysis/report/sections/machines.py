"""The paper's "Across machines" section (machines.tex, input by paper.tex; issue #28 items 4-6, issue #32
item 1): the paper is about one host; this section sets every other host that measured the same conditions
beside it.  Per environment the cost of one crossing on every host (each host's campaigns pooled on their
own, never across hosts), whether the environment-to-native ratios keep their direction and how far their
sizes move, the measured share of the difference that the native pieces of a crossing account for
(analysis.hosts.mechanism_share), the guests' instruction counts across hosts, and which of the other hosts'
conclusions hold on the paper's host (analysis.hosts.reproduction).  Every number and every verdict comes
from analysis/hosts.py's records; nothing is computed here but counts of them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.catalog.families import print_name
from osbench_analysis.formatting import sig3, tex_escape, time_plain

SECTION_FILE = "machines.tex"
#: the appendix section "Does this machine reproduce the paper?" (or, on the reference host, how the others compare)
REPRODUCE_FILE = "machines_reproduce.tex"
FIGURE_NAME = "hosts_crossing"


def _env(env: str) -> str:
    from osbench_analysis.plots.architectures import env_short

    return tex_escape(env_short(env))


def _host(label: str) -> str:
    """A host label as TeX: 'AMD EPYC (AVX-512), 2 vCPU, 6.18.44-fc-v669'."""
    return tex_escape(str(label).replace(" · ", ", "))


def _us(v: float, lo: float, hi: float) -> str:
    """A time in µs with its interval, the unit in the column's head: '8.37 [8.12, 8.62]'."""
    v, lo, hi = v / 1e3, lo / 1e3, hi / 1e3
    return f"{sig3(v)} [{sig3(lo)}, {sig3(hi)}]" if np.isfinite(lo) and np.isfinite(hi) else sig3(v)


def host_letters(cross, this: str) -> dict[str, str]:
    """host -> 'host A', 'host B', ...: this paper's host first, then the others in cross.hosts' order (the
    tables and the figure name the hosts alike; past Z, 'host 27', ...)."""
    order = [this, *[h for h in cross.hosts["host"] if h != this]]
    return {h: f"host {chr(ord('A') + i)}" if i < 26 else f"host {i + 1}" for i, h in enumerate(order)}


def _primary(cross) -> dict[str, list[str]]:
    """host -> its primary campaigns (cross.hosts' comma-joined column)."""
    return {r.host: [c for c in str(r.primary).split(", ") if c] for r in cross.hosts.itertuples()}


def _letter(name: str) -> str:
    return name.removeprefix("host ")


def _crossings(cross):
    """The same-CPU crossing costs, grouped per (environment, crossing probe) measured on two hosts or more."""
    c = cross.crossing_costs
    if c.empty:
        return []
    c = c[c["placement"] == "same_cpu"]
    return [(key, g.drop_duplicates("host")) for key, g in c.groupby(["environment", "probe"], sort=True)
            if g["host"].nunique() >= 2]


def hosts_key(cross, this: str) -> str:
    """'host A: AMD EPYC, 2 vCPU, 6.18.44-fc-v782 (this paper's host; 4 campaigns); host B: ...'."""
    short = host_letters(cross, this)
    pooled = {r.host: int(r.campaigns_pooled) for r in cross.hosts.itertuples()}
    return "; ".join(f"{short[h]}: {_host(cross.labels.get(h, h))} ("
                     + ("this paper's host, " if h == this else "")
                     + f"{pooled.get(h, 0)} campaign{'' if pooled.get(h, 0) == 1 else 's'})" for h in short)


def crossing_table_tex(cross, this: str) -> str:
    """Per environment and crossing probe (same CPU), one row whatever the number of hosts: how many hosts
    measured it, the cheapest and the dearest host's crossing cost with its interval, the spread (dearest
    over cheapest) and whether every host's interval overlaps every other's.  Each host's own value is in
    the appendix's table (crossing_hosts_tex)."""
    groups = _crossings(cross)
    if not groups:
        return ""
    short = host_letters(cross, this)
    rows = []
    for (env, probe), g in groups:
        g = g.set_index("host")
        v, lo, hi = (g[k].to_numpy(float) for k in ("cost_ns", "ci_low_ns", "ci_high_ns"))
        i, j = int(np.argmin(v)), int(np.argmax(v))
        cell = (lambda k: f"{_us(v[k], lo[k], hi[k])} ({_letter(short.get(g.index[k], g.index[k]))})")
        spread = f"{v.max() / v.min():.2f}$\\times$" if (v > 0).all() else "--"
        rows.append(" & ".join([_env(env), print_name(probe), str(len(g)), cell(i), cell(j), spread,
                                "yes" if np.nanmax(lo) <= np.nanmin(hi) else "no"]) + " \\\\")
    return "\n".join([
        r"\begin{table}[t]", r"\centering", r"\scriptsize", r"\setlength{\tabcolsep}{3pt}",
        r"\begin{tabular}{llrrrrl}", r"\toprule",
        r"environment & crossing & hosts & cheapest (\textmu{}s, host) & dearest (\textmu{}s, host) & spread & overlap \\",
        r"\midrule", *rows, r"\bottomrule", r"\end{tabular}",
        r"\caption{The cost of one crossing (the environment's time minus native Linux's for one system call, "
        r"or one \texttt{stat} on the served file system; both processes on one CPU) on the hosts that measured "
        r"it: the cheapest and the dearest host, each host's comparable campaigns pooled on their own with a 95\% "
        r"interval across that host's campaigns (within one campaign where a host has one); every host's value "
        r"is in Table~\ref{tab:hosts-crossing-all}. Hosts: " + hosts_key(cross, this) + ".}",
        r"\label{tab:hosts-crossing}", r"\end{table}"])


def crossing_hosts_tex(cross, this: str) -> str:
    """The appendix's long table: one row per host for each environment and crossing probe (same CPU), its
    crossing cost with its interval; hosts as rows, so any number of hosts stays on the page (it breaks
    across pages)."""
    groups = _crossings(cross)
    if not groups:
        return ""
    short = host_letters(cross, this)
    order = list(short)
    rows = []
    for (env, probe), g in groups:
        g = g.set_index("host")
        first = True
        for h in [h for h in order if h in g.index]:
            r = g.loc[h]
            rows.append(" & ".join([_env(env) if first else "", print_name(probe) if first else "",
                                    short[h][0].upper() + short[h][1:], _us(r["cost_ns"], r["ci_low_ns"], r["ci_high_ns"])])
                        + " \\\\")
            first = False
        rows.append(r"\midrule")
    rows[-1] = r"\bottomrule"
    return "\n".join([
        r"\begingroup\small", r"\begin{longtable}{lllr}",
        r"\caption{Every host's cost of one crossing (\textmu{}s, both processes on one CPU, 95\% interval "
        r"across the host's campaigns), hosts named as in Table~\ref{tab:hosts-crossing}.}"
        r"\label{tab:hosts-crossing-all}\\",
        r"\toprule", r"environment & crossing & host & crossing cost (\textmu{}s) \\", r"\midrule", r"\endfirsthead",
        r"\toprule", r"environment & crossing & host & crossing cost (\textmu{}s) \\", r"\midrule", r"\endhead",
        *rows, r"\end{longtable}", r"\endgroup", ""])


def ratio_summary(cross) -> dict:
    """Counts over the environment-to-native ratios measured on two hosts or more (every primitive, same CPU):
    how many keep their verdict on every host, and the largest spread with its condition."""
    t = cross.table("ratios")
    if t.empty:
        return {}
    t = t[t["placement"] == "same_cpu"]
    worst = t.loc[t["spread"].idxmax()] if t["spread"].notna().any() else None
    return {"n": len(t), "hold": int(t["holds_on_every_host"].sum()),
            "median_spread": float(t["spread"].median()),
            "worst": worst}


def mechanism_rows(cross, this: str, root=None) -> pd.DataFrame:
    """analysis.hosts.mechanism_share of this host against every other host whose primary campaigns hold a
    sandbox and the native pieces (both hosts' newest complete rounds' samples)."""
    from osbench_analysis.analysis.hosts import mechanism_share
    from osbench_analysis.store import campaigns as store

    primary = _primary(cross)
    if not primary.get(this):
        return pd.DataFrame()
    _, here = store.load_campaigns(primary[this], root)
    out = []
    for h, ids in primary.items():
        if h == this or not ids:
            continue
        _, there = store.load_campaigns(ids, root)
        t = mechanism_share(here, there)
        if len(t):
            out.append(t.assign(other=h))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def xsave_areas(cross, root=None) -> dict[str, int]:
    """host -> the XSAVE area in bytes its host kernel reported to User-mode Linux (the UML campaign's
    environment_info: the one record of it that every host's campaigns carry, derived identities too)."""
    import re

    from osbench_analysis.store import campaigns as store
    from osbench_analysis.store.records import Manifest

    out = {}
    paths = store.catalog(root).set_index("campaign_id")["path"]
    for host, ids in _primary(cross).items():
        uml = [c for c in ids if c.endswith("-uml") and c in paths.index]
        if not uml:
            continue
        try:
            info = Manifest.from_json((Path(paths[uml[0]]) / store.MANIFEST_FILE).read_text()).environment_info
        except (OSError, ValueError):
            continue
        m = re.search(r"(\d+) B XSAVE area", str((info or {}).get("xsave_shim_why", "")))
        if m:
            out[host] = int(m[1])
    return out


def _mechanism_sentences(mech: pd.DataFrame, cross, frames: dict, this: str) -> list[str]:
    out = []
    if mech.empty:
        return out
    labels = cross.labels
    for other, g in mech.groupby("other", sort=False):
        g = g[g["crossing_probe"] == "null_syscall"]
        if g.empty:
            continue
        parts = [f"{_env(r.environment)} {time_plain(r.crossing_here_ns)} here, {time_plain(r.crossing_there_ns)} "
                 f"there, pieces {time_plain(r.pieces_here_ns)} and {time_plain(r.pieces_there_ns)} "
                 f"({r.share:.0%})".replace("%", "\\%") for r in g.itertuples()]
        s = (f"Against {host_letters(cross, this).get(other, _host(labels.get(other, other)))}, one system call's crossing and the share of its difference "
             "that the measured native pieces account for: " + "; ".join(parts) + ".")
        if (g["share"] < 0).any():
            s += (" A negative share: the pieces (signal delivery, context switches, tracer stops) move against the "
                  "crossing, so the difference lies in what they leave out, the sandbox's own dispatch.")
        if this in frames and other in frames:
            a, b = frames[this], frames[other]
            s += f" The XSAVE area is {a:,} bytes here and {b:,} there"
            cheaper_here = float(g["crossing_here_ns"].median()) < float(g["crossing_there_ns"].median())
            s += (": a larger XSAVE area does not make crossings dearer here." if a != b and (a > b) == cheaper_here
                  else ".")
        out.append(s.replace("µ", "\\textmu{}"))
    return out


def _guest_sentence(cross) -> str:
    factor = cross.guest_agreement("mach_median")
    if factor.empty:
        return ""
    worst = float(factor.max())
    same = "identical on every host" if worst == 1.0 else f"the same within {100 * (worst - 1):.2g}\\% on every host"
    return (f"GNU Mach's guest instruction counts, {len(factor)} primitives measured on {cross.guests['host'].nunique()} hosts, "
            f"are {same}: the one unit here that does not depend on the machine.")


def merge_sentences(cross, letters: dict) -> str:
    """One machine, one host (hosts.identity.merges): for each host whose campaigns include a derived identity
    (older manifests), a sentence with the facts the merge rests on; '' without one."""
    from osbench_analysis.hosts.identity import COMPARED_FACTS

    out = []
    for m, n in getattr(cross, "merges", []):
        if m.into in letters:
            out.append(f" {n} of the campaigns of {_host(cross.labels.get(m.into, m.into))} ({letters[m.into]}) are "
                       + tex_escape("from manifests older than the recorded identity facts: every fact they record ("
                                    + ", ".join(COMPARED_FACTS[k] for k in m.facts) + ") agrees with that machine's, "
                                    "so they count as it; " + ", ".join(m.lacked)
                                    + " they do not record, so could not be compared."))
    return "".join(out)


def section_tex(cross, this: str, repro: pd.DataFrame, mech: pd.DataFrame, frames: dict,
                figure: bool) -> str:
    """The section, or a one-paragraph note when no other host measured these conditions."""
    labels = cross.labels
    out = [r"\section{Across machines}\label{sec:machines}"]
    others = [h for h in cross.hosts["host"] if h != this]
    if not others:
        out.append(f"Only this paper's host ({_host(labels.get(this, this))}) measured these conditions: nothing "
                   "here says how its numbers move on another machine.")
        return "\n".join(out) + "\n"
    out.append(f"The same probes ran on {len(cross.hosts)} hosts of one virtual-machine image that differ in "
               f"processor, microcode, host kernel or hypervisor build: {hosts_key(cross, this)}. Each host is analysed on its own, "
               "its comparable campaigns pooled and never another host's; every interval below is across the "
               "campaigns of one host." + merge_sentences(cross, host_letters(cross, this)))
    c = cross.table("crossing_costs")
    if len(c):
        c = c[c["placement"] == "same_cpu"]
        differ = c[~c["holds_on_every_host"]]
        s = (f"The cost of one crossing (Table~\\ref{{tab:hosts-crossing}}"
             + (", Figure~\\ref{fig:hosts-crossing} in the appendix" if figure else "") + f") differs between hosts in "
             f"{len(differ)} of {len(c)} environments and crossings")
        if len(differ):
            w = differ.loc[differ["spread"].idxmax()]
            s += (f", by up to {w['spread']:.2f} times from the cheapest host to the dearest "
                  f"({_env(w['environment'])}, {print_name(w['probe'])})")
        out.append(s + ".")
    rs = ratio_summary(cross)
    if rs:
        w = rs["worst"]
        s = (f"Of the {rs['n']} ratios to native Linux measured on two hosts or more, {rs['hold']} keep their "
             "verdict (slower, faster or no measurable difference) on every host; their sizes do not transfer: "
             f"the hosts' values differ by {rs['median_spread']:.2f} times in the median ratio")
        if w is not None:
            s += (f" and by {w['spread']:.2f} times at most ({_env(w['environment'])}, {print_name(w['probe'])})")
        out.append(s + ". A ratio measured on one machine is a finding about that machine.")
    out += _mechanism_sentences(mech, cross, frames, this)
    gs = _guest_sentence(cross)
    if gs:
        out.append(gs)
    return "\n\n".join(out) + "\n"


def _changed(g: pd.DataFrame, n: int = 1, whose: str = "there") -> str:
    """The conclusions that do not hold, the largest change first: 'gVisor's crossing cost (stat), 3.03 times
    there' (the value of ``g``'s this_host over its reference_host's)."""
    ch = g[~g["holds"]].copy()
    if ch.empty:
        return ""
    ch["move"] = np.abs(np.log(ch["here_over_reference"].astype(float)))
    ch = ch.sort_values("move", ascending=False).head(n)
    return "; ".join(f"{_env(r.environment)}'s {'ratio to native' if r.kind == 'ratio' else 'crossing cost'} "
                     f"({print_name(r.probe)}) {r.here_over_reference:.3g} times {whose}" for r in ch.itertuples())


def reproduction_paragraphs(repro: pd.DataFrame, this_is_reference: bool) -> list[str]:
    """'Does this machine reproduce the paper?' from analysis.hosts.reproduction: with the paper's host a
    reference host (data/reference_hosts.txt) each other host against it, else this host against each
    reference host; per pair how many conclusions hold (in size too) and the largest changes."""
    if repro.empty:
        return []
    what = ("each environment's crossing cost and ratio to native Linux; a ratio holds with the same verdict, a "
            "cost with overlapping intervals")
    parts = []
    if this_is_reference:
        for other, g in repro.groupby("this_host", sort=False):
            ch = _changed(g, 1, "this host's")
            parts.append(f"on {_host(other)} {int(g['holds'].sum())} of {len(g)} hold"
                         + (f" (largest change: {ch})" if ch else ""))
        return ["\\section{How the other hosts compare with this one}\\label{sec:reproduce-host}\nThis paper's "
                "host is the reference host. Of its "
                f"conclusions ({what}), " + "; ".join(parts) + "."]
    for ref, g in repro.groupby("reference_host", sort=False):
        ch = _changed(g, 2, "the reference's")
        parts.append(f"{int(g['holds'].sum())} of {_host(ref)}'s {len(g)}" + (f" (changed: {ch})" if ch else ""))
    return ["\\section{Does this machine reproduce the paper?}\\label{sec:reproduce-host}\nThis paper's host is "
            "not a reference host. Of "
            f"each reference host's conclusions ({what}), these hold on this paper's host: " + "; ".join(parts)
            + "."]


def figure_tex() -> str:
    """The cross-host figure as a float (the appendix inputs it: the body has its table)."""
    return "\n".join([r"\begin{figure}[ht]", r"\centering",
                      rf"\includegraphics[width=\linewidth,height=0.8\textheight,keepaspectratio]{{generated/{FIGURE_NAME}}}",
                      r"\caption{Every host's cost of one crossing (left) and its crossing probe's ratio to native "
                      r"Linux (right), both processes on one CPU, with 95\% intervals across each host's campaigns; "
                      r"hosts named as in Table~\ref{tab:hosts-crossing}.}",
                      r"\label{fig:hosts-crossing}", r"\end{figure}", ""])


def write_section(result, out_dir, root=None) -> list[Path]:
    """machines.tex, its table (hosts_crossing_table.tex), and the appendix's figure and long table of every
    host's value (machines_figure.tex), for the analysis' own host, from the campaigns under ``root``."""
    from osbench_analysis.analysis import hosts as analysis_hosts
    from osbench_analysis.plots import forest as plots

    out = Path(out_dir)
    this = result.hosts[0] if getattr(result, "hosts", None) else None
    cross = analysis_hosts.cross_host(root)
    this = this if this in set(cross.hosts["host"]) else (cross.hosts["host"].iloc[0] if len(cross.hosts) else None)
    written = []
    figure = False
    if this is not None and len(cross.hosts) > 1:
        try:
            fig = cross.figure(labels=host_letters(cross, this))
        except ValueError:
            fig = None
        if fig is not None:
            written += plots.save_figure(fig, out, FIGURE_NAME)
            plots.close(fig)
            figure = True
    refs = analysis_hosts.reference_hosts(list(cross.hosts["host"])) if this is not None else []
    this_is_reference = this in refs
    # every row from a reference host to the host compared with it (analysis.hosts.reproduction): the others
    # against this paper's host when it is the reference, else this paper's host against each reference
    repro = analysis_hosts.reproduction(cross, this=this, reference=refs or None) if this is not None else pd.DataFrame()
    mech = mechanism_rows(cross, this, root) if this is not None and len(cross.hosts) > 1 else pd.DataFrame()
    frames = xsave_areas(cross, root) if len(mech) else {}
    table = crossing_table_tex(cross, this) if this is not None else ""
    every = crossing_hosts_tex(cross, this) if this is not None else ""
    (out / "hosts_crossing_table.tex").write_text(table + "\n")
    (out / "machines_figure.tex").write_text((figure_tex() if figure else "") + every)
    written.append(out / "machines_figure.tex")
    (out / REPRODUCE_FILE).write_text("\n".join(reproduction_paragraphs(repro, this_is_reference)) + "\n")
    written.append(out / REPRODUCE_FILE)
    (out / SECTION_FILE).write_text(section_tex(cross, this, repro, mech, frames, figure)
                                    + ("\n\\input{generated/hosts_crossing_table}\n" if table else ""))
    return [*written, out / "hosts_crossing_table.tex", out / SECTION_FILE]
