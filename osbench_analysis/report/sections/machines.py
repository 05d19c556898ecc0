"""The paper's "Across machines" section (machines.tex, input by paper.tex; issue #28 items 4-6, issue #32
item 1, issue #42 item 4): the paper is about one machine; this section sets every other machine kind (a
host: hosts.identity, derived identities merged) that measured the same conditions beside it, like with like
(analysis.hosts.like_with_like: the same probe code and environment configuration, never a configuration
the package flags as faulty).  Per environment the cost of one crossing on every machine (each machine's
campaigns pooled on their own), whether the environment-to-native ratios keep their direction and how far
their sizes move, what the manifests record differently about the machines (no cause named), the guests'
instruction counts across machines, and which of the other machines' conclusions hold on the paper's
(analysis.hosts.reproduction).  Every number and every verdict comes
from analysis/hosts.py's records; nothing is computed here but counts of them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.catalog.families import print_name
from osbench_analysis.formatting import sig3, tex_escape

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
    """The same-CPU crossing costs, grouped per (environment, crossing probe, probe code) measured on two hosts
    or more: like with like (analysis.hosts.like_with_like: no faulty configuration, one probe code)."""
    from osbench_analysis.analysis.hosts import like_with_like

    c = like_with_like(cross.crossing_costs)
    if c.empty:
        return []
    c = c[c["placement"] == "same_cpu"]
    by = ["environment", "probe", *(["probe_source"] if "probe_source" in c else [])]
    return [(key[:2], g.drop_duplicates("host")) for key, g in c.groupby(by, sort=True)
            if g["host"].nunique() >= 2]


def hosts_key(cross, this: str) -> str:
    """'host A: AMD EPYC, 2 vCPU, 6.18.44-fc-v782 (this paper's host; 4 campaigns); host B: ...'."""
    short = host_letters(cross, this)
    pooled = {r.host: int(r.campaigns_pooled) for r in cross.hosts.itertuples()}
    labels = dict(zip(cross.hosts["host"], cross.hosts["host_label"]))   # the letter tells equal labels apart
    return "; ".join(f"{short[h]}: {_host(labels.get(h, h))} ("
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


#: what a reader calls each recorded fact of a machine (hosts.identity parts), in the order the paper says them;
#: the values of the first group are printed, the others only named
SAID_FACTS = {"cpu_vendor": "CPU vendor", "cpu_model": "CPU model", "cpu_family": "CPU family",
              "cpu_model_number": "CPU model number", "cpu_stepping": "stepping", "kernel_release": "host kernel build",
              "signal_frame_bytes": "signal frame (bytes)", "logical_cpus": "logical CPUs", "memory_gib": "memory (GiB)",
              "virtualization": "hypervisor", "microcode": "microcode", "features": "crossing-relevant CPU features",
              "mitigations": "mitigations"}
_VALUES_SAID = ("cpu_vendor", "cpu_model", "cpu_family", "cpu_model_number", "cpu_stepping", "kernel_release",
                "signal_frame_bytes", "logical_cpus", "memory_gib", "virtualization")


def machine_identities(cross, root=None) -> dict:
    """host -> hosts.identity.HostIdentity of its recorded campaigns (the facts the comparison names)."""
    from osbench_analysis.hosts.identity import host_identity
    from osbench_analysis.store import campaigns as store

    cat = store.catalog(root)
    out = {}
    for h in cross.hosts["host"]:
        rows = cat[cat["host"] == h]
        if "identity" in rows:
            rows = rows[rows["identity"] == h] if (rows["identity"] == h).any() else rows
        if len(rows):
            out[h] = host_identity(store.parsed_manifest(
                (Path(rows["path"].iloc[0]) / store.MANIFEST_FILE).read_text()).host)
    return out


def _faulty(cross) -> list[tuple[str, str, str]]:
    """(host, environment, configuration) of every pooled value a faulty configuration measured."""
    c = cross.crossing_costs
    if c.empty or "configuration" not in c:
        return []
    bad = c[c["configuration"].fillna("") != ""].drop_duplicates(["host", "environment"])
    return [(r.host, r.environment, r.configuration) for r in bad.itertuples()]


def _guest_sentence(cross) -> str:
    factor = cross.guest_agreement("mach_median")
    if factor.empty:
        return ""
    worst = float(factor.max())
    same = "identical on every machine" if worst == 1.0 else f"the same within {100 * (worst - 1):.2g}\\% on every machine"
    return (f"GNU Mach's guest instruction counts, {len(factor)} primitives measured on {cross.guests['host'].nunique()} hosts, "
            f"are {same}: the one unit here that does not depend on the machine.").replace(" hosts", " machines")


def merge_sentences(cross, letters: dict) -> str:
    """One machine, one host (hosts.identity.merges): for each host whose campaigns include a derived identity
    (older manifests), a sentence with the facts the merge rests on; '' without one."""
    from osbench_analysis.hosts.identity import COMPARED_FACTS

    out = []
    for m, n in getattr(cross, "merges", []):
        if m.into in letters:
            out.append(f" {n} of the campaigns of {letters[m.into]} come from older manifests "
                       + tex_escape("without " + ", ".join(m.lacked) + "; every fact they record ("
                                    + ", ".join(COMPARED_FACTS[k] for k in m.facts) + ") agrees with that machine's, "
                                    "so they count as it."))
    return "".join(out)


def _software_sentence(cross, letters: dict) -> str:
    """Which hosts share probe code (comparisons only within them) and which pooled values a faulty
    configuration measured (in none)."""
    from osbench_analysis.analysis.hosts import like_with_like

    c = like_with_like(cross.crossing_costs)
    out = ("Machines are compared only like with like: on campaigns of the same probe code and environment "
           "configuration, each machine's comparable campaigns pooled on their own.")
    if len(c) and "probe_source" in c:
        groups = [sorted(letters[h] for h in g["host"].unique() if h in letters)
                  for _, g in c.groupby("probe_source", sort=False)]
        groups = [g for g in groups if g]
        if len(groups) > 1:
            out += (f" The machines' campaigns ran {len(groups)} versions of the probe code ("
                    + "; ".join(", ".join(g) for g in groups) + "): values of different versions are not compared.")
    bad: dict[tuple[str, str], list[str]] = {}
    for h, e, cfg in _faulty(cross):           # one clause per environment and configuration, its hosts together
        bad.setdefault((e, cfg), []).append(_letter(letters.get(h, h)))
    if bad:
        out += (" A configuration the package flags as faulty enters no comparison: "
                + "; ".join(f"{_env(e)} on host{'s' if len(hs) > 1 else ''} {' and '.join(hs)} ({tex_escape(cfg)})"
                            for (e, cfg), hs in bad.items()) + ".")
    return out


def _difference_items(a, b) -> tuple[dict[str, str], list[str]]:
    """({fact: (b's value, a's value) in words}, the facts recorded for only one of the two): what the manifests
    record differently about two machines (hosts.identity.HostIdentity each), keyed by fact so that
    differences_sentence can say what every machine shares; a fact one of them does not record is left out."""
    from osbench_analysis.hosts.identity import differences, short_cpu_name

    out = {}
    diff = differences(a, b)
    if "cpu_model" in diff:            # the model names the vendor too; a vendor id is no word
        diff.pop("cpu_vendor", None)
        diff["cpu_model"] = tuple(short_cpu_name(v) if v else v for v in diff["cpu_model"])
    for k in SAID_FACTS:
        if k not in diff or diff[k][0] is None or diff[k][1] is None:
            continue
        x, y = diff[k]
        if k in _VALUES_SAID:
            x, y = (str(v).rsplit("-", 1)[-1] if k == "kernel_release" else f"{v:,}" if isinstance(v, int) else v
                    for v in (x, y))
            out[k] = (tex_escape(str(y)), tex_escape(str(x)))
        elif k == "mitigations":
            names = set(x) | set(y)
            out[k] = (f"{sum(x.get(m) != y.get(m) for m in names)} of {len(names)}", "")
        elif k == "features":
            out[k] = (f"{len(set(x) ^ set(y))}", "")
        else:
            out[k] = ("", "")
    unrecorded = [SAID_FACTS[k] for k in ("cpu_family", "microcode", "features")
                  if (a.parts.get(k) is None) != (b.parts.get(k) is None)]
    return out, unrecorded


def differences_sentence(cross, this: str, idents: dict) -> str:
    """What the manifests record differently between this paper's machine and each other one, as one
    argument (review W9): the facts every other machine differs in, each machine's values beside this one's,
    then what only some differ in; what only one of a pair records is said once.  No cause named."""
    letters = host_letters(cross, this)
    if this not in idents:
        return ""
    items = {h: _difference_items(idents[this], idents[h]) for h in letters if h != this and h in idents}
    items = {h: d for h, d in items.items() if d[0]}
    if not items:
        return ""
    short = {h: letters[h].removeprefix("host ") for h in items}
    common = [k for k in SAID_FACTS if all(k in d for d, _ in items.values())]

    def fact(k: str, hosts: list[str]) -> str:
        name = SAID_FACTS[k]
        vals = [(short[h], *items[h][0][k]) for h in hosts]
        if len(vals) == 1:          # one machine: its value alone, no letter
            vals = [("", y, x) for _, y, x in vals]
        if k in _VALUES_SAID:
            return (f"{name} ({', '.join(f'{s} {y}'.strip() for s, y, _ in vals)}, against {vals[0][2]})")
        if k == "mitigations":
            return "the state of some mitigations (" + ", ".join(f"{s} {y}".strip() for s, y, _ in vals) + ")"
        if k == "features":
            return f"{name} (" + ", ".join(f"{s} {y}".strip() for s, y, _ in vals) + ")"
        return name

    others = [h for h in letters if h != this]
    every = ("every other machine" if len(items) > 1 and len(items) == len(others) else
             _and([letters[h] for h in items]) if len(items) > 1 else letters[next(iter(items))])
    every_verb = "differ" if len(items) > 1 and len(items) != len(others) else "differs"
    parts = []
    if common:
        parts.append(f"{every} {every_verb} from {letters[this]} in " + _and([fact(k, list(items)) for k in common]))
    for h, (d, _) in items.items():
        own = [k for k in SAID_FACTS if k in d and k not in common]
        if own:
            parts.append(f"{letters[h]} {'also ' if common else 'differs from ' + letters[this] + ' '}in "
                         + _and([fact(k, [h]) for k in own]))
    lacking = sorted({u for _, (_, un) in items.items() for u in un}, key=list(SAID_FACTS.values()).index)
    text = "What the manifests record about the machines: " + "; ".join(parts) + "."
    if lacking:
        text += (" " + _and(lacking)[0].upper() + _and(lacking)[1:]
                 + (" is" if len(lacking) == 1 else " are") + " recorded for only one machine of a pair, so "
                 + ("it is" if len(lacking) == 1 else "they are") + " not compared.")
    return text + " No experiment here varies one of these facts alone, so which of them moves a number is not measured."


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def section_tex(cross, this: str, repro: pd.DataFrame, idents: dict | None = None, figure: bool = False) -> str:
    """The section, or a one-paragraph note when no other machine measured these conditions.  ``idents``:
    host -> hosts.identity.HostIdentity (machine_identities), for what the machines' records say differs."""
    labels = dict(zip(cross.hosts["host"], cross.hosts["host_label"]))
    out = [r"\section{Across machines}\label{sec:machines}"]
    others = [h for h in cross.hosts["host"] if h != this]
    if not others:
        out.append(f"Only this paper's host ({_host(labels.get(this, this))}) measured these conditions: nothing "
                   "here says how its numbers move on another machine.")
        return "\n".join(out) + "\n"
    letters = host_letters(cross, this)
    n = len(cross.hosts)
    # two paragraphs: which machines, what is compared across them (like with like) and what that shows; what
    # their records say differs, and the one unit that does not depend on the machine
    out.append(f"The campaigns the paper reads come from {n} machine kind{'s' if n != 1 else ''} of one "
               "virtual-machine image (campaigns whose every recorded fact of the machine agrees count as one): "
               f"{hosts_key(cross, this)}." + merge_sentences(cross, letters))
    compared = [out.pop() + " " + _software_sentence(cross, letters)]      # one paragraph: which, and how compared
    c = cross.table("crossing_costs")
    if len(c):
        c = c[c["placement"] == "same_cpu"]
    if not len(c):
        compared.append("No environment was measured on two machines with the same probe code and configuration, "
                        "so this paper compares no timed value across machines; each machine's values belong to it.")
    else:
        differ = c[~c["holds_on_every_host"]]
        s = (f"The cost of one crossing (Table~\\ref{{tab:hosts-crossing}}"
             + (", Figure~\\ref{fig:hosts-crossing} in the appendix" if figure else "") + f") differs between "
             f"machines in {len(differ)} of {len(c)} environments and crossings compared")
        if len(differ):
            w = differ.loc[differ["spread"].idxmax()]
            s += (f", by up to {w['spread']:.2f} times from the cheapest machine to the dearest "
                  f"({_env(w['environment'])}, {print_name(w['probe'])})")
        compared.append(s + ".")
    rs = ratio_summary(cross)
    if rs:
        w = rs["worst"]
        s = (f"Of the {rs['n']} ratios to native Linux compared, {rs['hold']} keep their "
             "verdict (slower, faster or no measurable difference) on every machine; the machines' values differ "
             f"by {rs['median_spread']:.2f} times in the median ratio")
        if w is not None:
            s += (f" and by {w['spread']:.2f} times at most ({_env(w['environment'])}, {print_name(w['probe'])})")
        compared.append(s + ". A ratio measured on one machine is a finding about that machine.")
    out.append(" ".join(compared))
    recorded = [x for x in (differences_sentence(cross, this, idents or {}), _guest_sentence(cross)) if x]
    if recorded:
        out.append(" ".join(recorded))
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
    if this is not None and len(cross.hosts) > 1 and _crossings(cross):   # a figure of a comparison only
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
    repro = (analysis_hosts.reproduction(cross, this=this, reference=refs or None, same_software=True)
             if this is not None else pd.DataFrame())
    idents = machine_identities(cross, root) if this is not None and len(cross.hosts) > 1 else {}
    table = crossing_table_tex(cross, this) if this is not None else ""
    every = crossing_hosts_tex(cross, this) if this is not None else ""
    (out / "hosts_crossing_table.tex").write_text(table + "\n")
    (out / "machines_figure.tex").write_text((figure_tex() if figure else "") + every)
    written.append(out / "machines_figure.tex")
    (out / REPRODUCE_FILE).write_text("\n".join(reproduction_paragraphs(repro, this_is_reference)) + "\n")
    written.append(out / REPRODUCE_FILE)
    (out / SECTION_FILE).write_text(section_tex(cross, this, repro, idents, figure)
                                    + ("\n\\input{generated/hosts_crossing_table}\n" if table else ""))
    return [*written, out / "hosts_crossing_table.tex", out / SECTION_FILE]
