"""The paper's account of what one crossing is made of and what whole programs feel of it (issue #22,
section 4.1; issue #32): each sandbox's crossing as an accounting of its counted host events priced
natively (mechanism.from_analysis, data/crossing_counts/), and the application workloads beside each
environment's crossing factor.
Every number comes from the analysis; a piece or workload not measured is said to be, never dropped."""
from __future__ import annotations

import math

import pandas as pd

from osbench_analysis.analysis import crossing_counts, host_calls, mechanism
from osbench_analysis.catalog import registry
from osbench_analysis.analysis.pipeline import without_fs
from osbench_analysis.analysis.architectures import CROSSING_PROBE, CROSSING_PROBES
from osbench_analysis.catalog.families import print_name
from osbench_analysis.formatting import percent_tex, sig3, ratio_with_ci, tex_escape, time_with_ci_tex
from osbench_analysis.report.estimand import ESTIMAND, paper_estimates

MAIN_PLACEMENT = "same_cpu"


def _env(name: str) -> str:
    from osbench_analysis.plots.architectures import env_short

    return tex_escape(env_short(name))


def _t(v: float, lo: float, hi: float) -> str:
    """A time with its interval; '--' when not computed."""
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in (v, lo, hi)):
        return "--"
    return time_with_ci_tex(v, lo, hi)


def _n(v) -> str:
    """A count per operation: a whole number when within 0.005 of one, else three significant digits."""
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        return "--"
    if abs(v - round(v)) < 0.005:
        return str(int(round(v)))
    return sig3(v)


def decomposition(result, counts: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, terms) of mechanism.from_analysis for the first host, both parties on one CPU (the rows
    that could not be decomposed, with their reason, kept)."""
    summary, terms = mechanism.from_analysis(result, counts)
    host = result.hosts[0]
    if len(summary):
        summary = summary[(summary["host"] == host) & summary["placement"].isin([MAIN_PLACEMENT, ""])]
    if len(terms):
        terms = terms[(terms["host"] == host) & (terms["placement"] == MAIN_PLACEMENT)]
    return summary.reset_index(drop=True), terms.reset_index(drop=True)


def _op(probe: str) -> str:
    return {CROSSING_PROBE: "null system call"}.get(probe, print_name(probe))


def _count(terms: pd.DataFrame, r, piece: str) -> float:
    m = terms[(terms["environment"] == r.environment) & (terms["crossing_probe"] == r.crossing_probe)
              & (terms["piece"] == piece)]
    return float(m["count"].iloc[0]) if len(m) else float("nan")


def _sentence(r, terms: pd.DataFrame) -> str:
    env, op = _env(r.environment), _op(r.crossing_probe)
    if r.status == "not decomposed":
        return f"{env}'s crossing ({op}) is not decomposed: {tex_escape(str(r.verdict).removeprefix('not decomposed: '))}."
    def some(piece: str, what: str) -> str:
        n = _n(_count(terms, r, piece))
        return f"{n} {what}" + ("" if n == "1" else ("es" if what.endswith("switch") else "s"))

    events = (f"{some('host system call', 'host system call')}, {some('context switch', 'context switch')} and "
              f"{some('signal delivered', 'signal')} more than native's")
    cx = _t(r.crossing_ns, r.crossing_low_ns, r.crossing_high_ns)
    ps = _t(r.pieces_ns, r.pieces_low_ns, r.pieces_high_ns)
    head = f"Under {env} one {op} adds {cx} and {events}, priced at {ps}"
    if r.status == "adds up":
        return head + ": they account for the crossing within their intervals."
    if r.status == "rest":
        share = percent_tex(r.unexplained_ns / r.crossing_ns) if r.crossing_ns else "n/a"
        return (head + f"; {_t(r.unexplained_ns, r.unexplained_low_ns, r.unexplained_high_ns)} ({share} of the "
                "crossing) is not accounted for by these events.")
    return (head + f": more than the crossing, by {_t(r.excess_ns, r.excess_low_ns, r.excess_high_ns)}, so some "
            "of these events cost less there than measured alone; the counts do not tell which.")


def _spread(terms: pd.DataFrame) -> str:
    """'; over the counted pairs, system calls within 9.2% of their median, context switches within 21%'."""
    parts = []
    for piece, words in (("host system call", "system calls"), ("context switch", "context switches")):
        m = terms[(terms["piece"] == piece) & (terms["count"].abs() >= 0.5)]
        if len(m):
            dev = ((m["count_max"] - m["count"]).abs().combine((m["count"] - m["count_min"]).abs(), max)
                   / m["count"].abs()).max()
            parts.append(f"{words} within {percent_tex(float(dev))} of their median")
    return ("; over the counted pairs, " + ", ".join(parts)) if parts else ""


def _prices(terms: pd.DataFrame) -> str:
    """The prices in words: host calls by name (each at the native call that is it, the unpriced named) or,
    counted only as a total, every host call at a getpid (said so); a switch; a signal."""
    out, calls = [], []
    priced = terms[terms["price_ns"].notna()] if "price_ns" in terms else terms.iloc[0:0]
    for name, m in priced.groupby("piece", sort=False):
        p = m.iloc[0]
        cost = _t(p.price_ns, p.price_low_ns, p.price_high_ns)
        if name.startswith("host ") and name != "host system call":
            calls.append((name.removeprefix("host "), f"\\texttt{{{tex_escape(name.removeprefix('host '))}}} {cost}"))
        else:
            out.append(f"a {name} at {tex_escape(p.priced_as)} ({cost})")
    unpriced = terms[terms["piece"] == "host system call, unpriced"]
    if calls or len(unpriced):
        # the unpriced calls are named where they matter, in the argument (report/accounting.py) and the caption
        unnamed = any(float(n.split()[-1]) >= 0.05 for t in unpriced["priced_as"]
                      for n in str(t).split(": ", 1)[-1].split(", ") if n)
        order = list(host_calls.PRICES)
        calls = [c for _, c in sorted(dict(calls).items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99)]
        out.insert(0, "each host system call, counted by name, at the native call that is it ("
                   + ", ".join(dict.fromkeys(calls)) + "; a read or write at a 1-byte one, a floor for one that "
                   "waits or copies more)" + ("; one no native probe makes alone unpriced" if unnamed else ""))
    return "; ".join(out)


def _unpriced_caption(summary: pd.DataFrame) -> str:
    """' Host system calls counted by name, each priced by the native call that is it; unpriced per
    operation: gVisor, futex 4.07; ...' ('' when none was counted by name)."""
    named = summary[summary["by_name"].fillna(False).astype(bool)] if "by_name" in summary else summary.iloc[0:0]
    if named.empty:
        return (" Every host system call is priced as a native getpid: these counts are totals, not by name."
                if len(summary[summary["status"] != "not decomposed"]) else "")
    groups: dict[str, list[str]] = {}     # the unpriced calls' names (largest first) -> the environments making them
    for r in named.itertuples():
        if r.unpriced_calls:
            names = ", ".join(n.split()[0] for n in str(r.unpriced_calls).split(", ")[:2])
            groups.setdefault(names, [])
            if _env(r.environment) not in groups[names]:
                groups[names].append(_env(r.environment))
    un = [f"{' and '.join(envs)}: {tex_escape(names)}" for names, envs in groups.items()]
    return (" System calls: host calls per operation counted by name, each priced by the native call that is it; "
            "in parentheses those no native probe makes alone, left unpriced (in the rest"
            + (": " + "; ".join(un) if un else "") + ")"
            + ("; the getpid native Linux makes and the sandbox does not counts $-1$, priced"
               if (named["crossing_probe"] == CROSSING_PROBE).any() else "") + ".")


def _label(counts: pd.DataFrame, h: str) -> str:
    return tex_escape(crossing_counts.host_label(counts, h).replace(" · ", ", "))


def paper_probe_sources(result) -> set[str]:
    """The first 8 hex digits of the probe code of the analysed host's primary campaigns (their manifests)."""
    host = result.hosts[0] if getattr(result, "hosts", None) else None
    s = result.samples
    mine = set(s.loc[s["host"] == host, "campaign_id"]) if host is not None and "host" in s else set(result.manifests)
    return {str((m.host or {}).get("probes", {}).get("source_sha256", ""))[:8]
            for cid, m in (getattr(result, "manifests", None) or {}).items()
            if cid in mine and cid in set(result.primary_ids)} - {""}


def _code_words(source: str, paper: set[str] | None) -> str:
    """Which probe code counted, in words, never its hash (review W9): 'the paper's probe code' or 'other
    probe code than the paper's'; '' when unknown."""
    if not source or paper is None:
        return ""
    return "the paper's probe code" if str(source)[:8] in paper else "other probe code than the paper's"


def _counted_caption(counts: pd.DataFrame, summary: pd.DataFrame, host: str, paper: set[str] | None = None) -> str:
    """' Counts taken on <other machine> (the paper's probe code), not on this host: it cannot be chosen to
    count again.'"""
    done = summary[summary["status"] != "not decomposed"]
    other = [h for h in dict.fromkeys(done["counts_host"]) if h and h != host]
    if not other:
        return ""
    return " Counts taken on " + "; ".join(
        _label(counts, h) + (f" ({w})" if (w := _code_words(crossing_counts.record_facts(counts, h).get(
            "probe_source", ""), paper)) else "")
        for h in other) + ", another machine, not on this host: it cannot be chosen to count again."


def _where(counts: pd.DataFrame, done: pd.DataFrame, host: str, paper: set[str] | None = None) -> str:
    """Where the counts were taken, and when not on this host, why and what is the same."""
    parts = []
    for h in [h for h in dict.fromkeys(done["counts_host"]) if h]:
        f = crossing_counts.record_facts(counts, h)
        code = f" with {w}" if (w := _code_words(f.get("probe_source", ""), paper)) else ""
        if h == host:
            parts.append("on this host" + code)
            continue
        mine = crossing_counts.record_facts(counts, host)
        same = [e for e, v in f.get("software", {}).items() if mine.get("software", {}).get(e) == v]
        sw = sorted(set(_version_words(f["software"][e]) for e in same))
        parts.append(f"on another machine, {_label(counts, h)}{code}, because this "
                     "host cannot be chosen to count again" + (
                         f" (the sandboxes' software the same as in this host's own counts: {tex_escape(', '.join(sw))})"
                         if sw else ""))
    return "; ".join(parts)


def _version_words(version: str) -> str:
    """A Go pseudo-version as its date, no commit hash in prose ('runsc v0.0.0-20260905035102-160fafc42237' ->
    'runsc of 2026-09-05'); any other version as it is."""
    import re

    m = re.search(r"v0\.0\.0-(\d{4})(\d{2})(\d{2})\d{6}-[0-9a-f]{12}", str(version))
    return str(version)[:m.start()].rstrip() + f" of {m.group(1)}-{m.group(2)}-{m.group(3)}" if m else str(version)


def _transfer(counts: pd.DataFrame, summary: pd.DataFrame, terms: pd.DataFrame, host: str, baseline: str,
              paper: set[str] | None = None) -> str:
    """The counts used against this host's own (where both exist): the largest differences per operation."""
    done = summary[(summary["status"] != "not decomposed") & (summary["counts_host"] != host)]
    rows = []
    for r in done.itertuples():
        if not crossing_counts.per_operation(counts, host, r.environment, r.crossing_probe):
            continue
        own = mechanism.event_counts(counts, host, r.environment, r.crossing_probe, baseline)
        for piece, words in (("host system call", "host system calls"), ("context switch", "switches")):
            used = _count(terms, r, piece)
            rows.append((abs(used - own[piece][0]), words, r, used, own[piece][0]))
    if not rows:
        return ""
    f = crossing_counts.record_facts(counts, host)
    out = []
    for words in ("host system calls", "switches"):
        d, _, r, used, theirs = max((x for x in rows if x[1] == words), key=lambda x: x[0])
        out.append(f"{words} by at most {_n(d)} per operation ({_env(r.environment)}'s {_op(r.crossing_probe)}: "
                   f"{_n(used)} against {_n(theirs)})")
    return (" This host's own counts, of totals only" + (f" and with {w}" if (w := _code_words(
                f.get("probe_source", ""), paper)) else "")
            + ", differ from these in " + " and in ".join(out) + ": the same software's counts vary between machines "
            "and runs, and the priced events with them.")


def mechanism_tex(result, counts: pd.DataFrame | None = None) -> str:
    """The paragraph and table accounting for one crossing (empty when no sandbox was measured)."""
    counts = crossing_counts.load_counts() if counts is None else counts
    summary, terms = decomposition(result, counts)
    if summary.empty:
        return ""
    host = result.hosts[0]
    lvl = percent_tex(float(summary["level"].iloc[0]))
    done = summary[summary["status"] != "not decomposed"]
    paper = paper_probe_sources(result)
    where = _where(counts, done, host, paper)
    from osbench_analysis.report.accounting import argument_tex

    text = ("\\paragraph{What one crossing is made of.} We counted the host events each sandbox's own processes "
            "make per operation (\\texttt{perf stat} over the kernel's scheduler, system-call and signal "
            "tracepoints, every process the sandbox starts and the FUSE server; two runs of "
            + (f"{int(counts['n_low'].iloc[0])} and {int(counts['n_high'].iloc[0])} operations, differenced so "
               "that start-up cancels" if len(counts) else "two lengths, differenced")
            + (f"; counted {where}" if where else "") + _spread(terms) + ") and priced each at its cost measured alone on native "
            f"Linux here ({lvl} intervals): " + _prices(terms) + ". "
            + _transfer(counts, summary, terms, host, result.settings.baseline, paper)
            + " ".join(_sentence(r, terms) for r in summary.itertuples() if r.status in ("not decomposed", "exceeds"))
            + " Table~\\ref{tab:mechanism} gives every count, its price and the rest. "
            + argument_tex(summary, terms, counts))
    rows = []
    for r in summary.itertuples():
        cells = [f"{_env(r.environment)} & {_op(r.crossing_probe)}"]
        if r.status == "not decomposed":
            # the counted columns and the priced events empty, the last column says why
            rows.append(cells[0] + f" & {_t(r.crossing_ns, r.crossing_low_ns, r.crossing_high_ns)} & -- & -- & -- "
                        "& -- & -- & not decomposed \\\\")
            continue
        vol, inv = _count(terms, r, "of which voluntary"), _count(terms, r, "of which involuntary")
        req = _count(terms, r, "FUSE requests")
        rest = (_t(r.unexplained_ns, r.unexplained_low_ns, r.unexplained_high_ns) if r.status != "exceeds" else
                f"pieces exceed it by {_t(r.excess_ns, r.excess_low_ns, r.excess_high_ns)}")
        rows.append(cells[0] + f" & {_t(r.crossing_ns, r.crossing_low_ns, r.crossing_high_ns)} & "
                    f"{_n(_count(terms, r, 'host system call'))}"
                    + (f" ({_n(r.host_calls_unpriced)} unpriced)" if getattr(r, "by_name", False) is True
                       and abs(r.host_calls_unpriced) >= 0.005 else "") + " & "
                    f"{_n(_count(terms, r, 'context switch'))} ({_n(vol)}/{_n(inv)}) & "
                    f"{_n(_count(terms, r, 'signal delivered'))} & {_n(req)} & "
                    f"{_t(r.pieces_ns, r.pieces_low_ns, r.pieces_high_ns)} & {rest} \\\\")
    table = "\n".join([
        r"\begin{table}[tbp]", r"\centering", r"\scriptsize",
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
        r"\begin{tabular}{lllllllll}", r"\toprule",
        rf"Environment & Operation & Crossing [{lvl} CI] & System calls & Switches (vol./invol.) & Signals & "
        r"FUSE requests & Priced events & Not accounted for \\",
        r"\midrule", *rows, r"\bottomrule", r"\end{tabular}}",
        "\\caption{One crossing as an accounting: each sandbox's added cost of one operation over native Linux, "
        "the host events its own processes make per operation beyond native's (counted), those events priced "
        f"at their native cost, and what they leave, each with its {lvl} interval (delta method over run "
        "medians, Welch degrees of freedom; counts as fixed coefficients). A sum needs an interval on the time "
        "scale, so it is symmetric; the appendix tables give one condition's interval on the log scale, so the same "
        "estimate has slightly different bounds there. Where the priced events exceed "
        "the crossing the table says so instead of printing a negative rest." + _unpriced_caption(summary)
        + _counted_caption(counts, summary, host, paper)
        + "}", r"\label{tab:mechanism}",
        r"\end{table}"])
    return text + "\n" + table + "\n"


# ------------------------------------------------------------------ application workloads

def crossing_factors(result) -> pd.DataFrame:
    """Per environment: its crossing factor over the baseline (the null system call's ratio, for a file
    server its stat's; host-backed folder, both parties on one CPU), first host."""
    r = result.environment_ratios
    if r is None or r.empty:
        return pd.DataFrame(columns=["environment", "probe", "ratio", "ci_low", "ci_high"])
    r = r[(r["host"] == result.hosts[0]) & (r["placement"] == MAIN_PLACEMENT) & r["probe"].isin(CROSSING_PROBES)]
    r = r[r["variant"].fillna("").map(without_fs) == ""]
    r = r.assign(_rank=r["probe"].map(CROSSING_PROBES.index)).sort_values("_rank")
    return r.drop_duplicates("environment")[["environment", "probe", "ratio", "ci_low", "ci_high"]]


def applications(result) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(native, slowdowns): the workloads' native times (the paper's estimand, one CPU) and, per environment
    that measured one, its slowdown over native (mechanism.applications_table, host-backed folder)."""
    apps = registry.APPLICATION_PROBES
    est = paper_estimates(result.primary_estimates)
    native = est[(est["environment"] == result.settings.baseline) & (est["host"] == result.hosts[0])
                 & est["probe"].isin(apps) & (est["placement"] == MAIN_PLACEMENT)]
    slow = mechanism.applications_table(result.environment_ratios)
    if len(slow):
        slow = slow[(slow["host"] == result.hosts[0]) & (slow["placement"] == MAIN_PLACEMENT)
                    & ~slow["variant"].fillna("").str.contains(f"{registry.WORKDIR_FS}=", regex=False)]
    slow = slow.assign(interval_over="within one campaign")
    pooled = getattr(getattr(result, "pooling", None), "ratios", None)
    if pooled is not None and len(pooled) and len(slow):
        # the same ratio pooled over the host's rounds that measured it (each round's ratio paired in its round)
        pr = pooled[(pooled["host"] == result.hosts[0]) & pooled["probe"].isin(apps) & (pooled["n_campaigns"] > 1)]
        pr = pr.assign(_v=pr["variant"].fillna("").map(without_fs)).drop_duplicates(["environment", "probe", "placement", "_v"])
        key = ["environment", "probe", "placement", "_v"]
        slow = slow.assign(_v=slow["variant"].fillna("").map(without_fs)).merge(
            pr[[*key, "ratio", "ci_low", "ci_high", "n_campaigns"]], on=key, how="left", suffixes=("", "_pooled"))
        have = slow["ratio_pooled"].notna()
        for c in ("ratio", "ci_low", "ci_high"):
            slow.loc[have, c] = slow.loc[have, f"{c}_pooled"]
        slow.loc[have, "interval_over"] = [f"over the host's {int(n)} rounds that measured it"
                                          for n in slow.loc[have, "n_campaigns"]]
        slow = slow.drop(columns=["_v", "ratio_pooled", "ci_low_pooled", "ci_high_pooled", "n_campaigns"])
    return native.reset_index(drop=True), slow.reset_index(drop=True)


def _over(slow: pd.DataFrame) -> str:
    """What the slowdowns' intervals cover, in words."""
    kinds = sorted(set(slow["interval_over"])) if "interval_over" in slow.columns else []
    if not kinds:
        return "within one campaign"
    return " or ".join(kinds)


def applications_tex(result) -> str:
    """The workloads' slowdown per environment beside its crossing factor, '--' where not measured."""
    native, slow = applications(result)
    if native.empty and slow.empty:
        return ""
    lvl = percent_tex(result.settings.level)
    apps = [a for a in registry.APPLICATION_PROBES if a in set(native["probe"]) | set(slow["probe"])]
    factors = crossing_factors(result)
    envs = [e for e in result.environments if e != result.settings.baseline and e in set(factors["environment"])]
    measured = [e for e in envs if e in set(slow["environment"])]
    rows = ["native Linux (time) & " + " & ".join(
        (lambda n: time_with_ci_tex(n.estimate_ns, n.ci_low_ns, n.ci_high_ns) if n is not None else "--")(
            next(native[native["probe"] == a].itertuples(), None)) for a in apps) + " & 1 \\\\", r"\midrule"]
    for e in envs:
        f = factors[factors["environment"] == e].iloc[0]
        cells = []
        for a in apps:
            s = slow[(slow["environment"] == e) & (slow["probe"] == a)]
            cells.append(ratio_with_ci(s["ratio"].iloc[0], s["ci_low"].iloc[0], s["ci_high"].iloc[0]) if len(s) else "--")
        cross = ratio_with_ci(f["ratio"], f["ci_low"], f["ci_high"]) + (" (stat)" if f["probe"] != CROSSING_PROBE else "")
        rows.append(f"{_env(e)} ($\\times$ native) & " + " & ".join(cells) + f" & {cross} \\\\")
    head = "Environment & " + " & ".join(print_name(a) for a in apps) + " & One crossing"
    colspec = "l" + ">{\\raggedleft\\arraybackslash}p{0.16\\linewidth}" * len(apps) + "l"
    table = "\n".join([
        r"\begin{table}[tbp]", r"\centering", r"\scriptsize",
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
        f"\\begin{{tabular}}{{{colspec}}}", r"\toprule", head + r" \\", r"\midrule", *rows, r"\bottomrule",
        r"\end{tabular}}",
        f"\\caption{{Whole programs beside one crossing: each workload's native time ({ESTIMAND}, {lvl} "
        "interval, one CPU), its slowdown in each environment and that environment's factor for one crossing "
        "(null system call; for a file server one stat). Slowdown intervals: " + _over(slow) + " (each "
        "round's ratio to native in that round); crossing factors: within the newest campaign. "
        "`--': not measured in that environment.}",
        r"\label{tab:apps}", r"\end{table}"])
    unmeasured = [e for e in envs if e not in measured]
    times = {r.probe: time_with_ci_tex(r.estimate_ns, r.ci_low_ns, r.ci_high_ns) for r in native.itertuples()}
    text = ("\\paragraph{Whole programs.} Three application workloads run real programs: "
            + ", ".join(f"a {print_name(a)}" + (f" ({times[a]} on native Linux)" if a in times and not measured else "")
                        for a in apps)
            + (" (Table~\\ref{tab:apps})." if measured else "."))
    if measured:
        s = slow[slow["environment"].isin(measured)].merge(factors[["environment", "ratio"]], on="environment",
                                                             suffixes=("", "_cross"))
        lo, hi = s.loc[s["ratio"].idxmin()], s.loc[s["ratio"].idxmax()]
        below = int((s["ci_high"] < s["ratio_cross"]).sum())
        text += (f" Measured in {len(measured)} environment{'s' if len(measured) > 1 else ''}, they take from "
                 f"{ratio_with_ci(lo['ratio'], lo['ci_low'], lo['ci_high'])} ({print_name(lo['probe'])} under "
                 f"{_env(lo['environment'])}) to {ratio_with_ci(hi['ratio'], hi['ci_low'], hi['ci_high'])} "
                 f"({print_name(hi['probe'])} under {_env(hi['environment'])}) times as long as natively; "
                 f"{below} of the {len(s)} slowdowns lie below their environment's factor for one crossing: "
                 + ("a whole program feels only part of it." if below == len(s)
                    else f"{len(s) - below} {'does' if len(s) - below == 1 else 'do'} not."))
    if unmeasured:
        text += (" In the campaigns analysed here they were not measured in "
                 + ", ".join(_env(e) for e in unmeasured)
                 + ("" if measured else " (only on native Linux)")
                 + ", so how much of " + ("those environments'" if measured else "an environment's")
                 + " crossing factor a whole program feels is not answered by these data"
                 + ("; the table marks them." if measured else "."))
    # a table of nothing but 'not measured' says less than the sentence above: only with a slowdown to show
    return text + "\n" + (table + "\n" if measured else "")
