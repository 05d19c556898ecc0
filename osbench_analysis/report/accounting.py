"""The accounting of one crossing as an argument (review W9: not a sentence per table cell): what the priced
host events cover of each crossing, which host calls dominate, where the accounting falls short and what
that leaves open, and what the FUSE server's requests say of its switches.  Every sentence is chosen by the
shape of report/mechanism.decomposition's tables (summary, terms) and the FUSE server's own counts, and
says only what they hold; Table tab:mechanism has every cell.

    argument_tex(summary, terms, counts)     # the sentences after the method's, for mechanism_tex"""
from __future__ import annotations

import math

import pandas as pd

from osbench_analysis.analysis import crossing_counts
from osbench_analysis.formatting import sig3, tex_escape

#: a crossing whose priced events cover at least this share of it counts as mostly accounted for
MOSTLY = 0.5
#: two counts per operation this close (relative) are one count per the other ('one per FUSE request')
SAME = 0.02


def _env(name: str) -> str:
    from osbench_analysis.plots.architectures import env_short

    return tex_escape(env_short(name))


def _op(probe: str) -> str:
    from osbench_analysis.analysis.architectures import CROSSING_PROBE
    from osbench_analysis.catalog.families import print_name

    return {CROSSING_PROBE: "null system call"}.get(probe, print_name(probe))


def _n(v: float) -> str:
    if not math.isfinite(v):
        return "--"
    return str(int(round(v))) if abs(v - round(v)) < 0.005 else sig3(v)


def _joined(items: list[str]) -> str:
    items = list(dict.fromkeys(items))
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _range(values: list[float], fmt=_n) -> str:
    lo, hi = fmt(min(values)), fmt(max(values))
    return lo if lo == hi else f"{lo}--{hi}"


def _pct(v: float) -> str:
    """A share as a whole percentage ('61\\%'): the counts behind it vary by more than a per cent."""
    return f"{100 * v:.0f}\\%"


def _who(rows) -> str:
    """'gVisor (ptrace)'s and User-mode Linux's null system call; FUSE (no cache)'s stat': the crossings grouped
    by operation."""
    ops: dict[str, list[str]] = {}
    for r in rows:
        ops.setdefault(_op(r.crossing_probe), []).append(f"{_env(r.environment)}'s")
    return "; ".join(_joined(envs) + f" {op}" for op, envs in ops.items())


def _terms(terms: pd.DataFrame, r) -> pd.DataFrame:
    return terms[(terms["environment"] == r.environment) & (terms["crossing_probe"] == r.crossing_probe)]


def _count(terms: pd.DataFrame, r, piece: str) -> float:
    t = _terms(terms, r)
    t = t[t["piece"] == piece]
    return float(t["count"].iloc[0]) if len(t) else float("nan")


def largest_piece(terms: pd.DataFrame, r) -> tuple[str, float] | None:
    """(piece, its share of the priced sum) of the priced piece that costs most in one crossing."""
    t = _terms(terms, r)
    t = t[t["price_ns"].notna() & (t["count"] > 0)]
    if t.empty:
        return None
    cost = t["count"] * t["price_ns"]
    i = cost.idxmax()
    total = float(r.pieces_ns) if r.pieces_ns and math.isfinite(r.pieces_ns) else float(cost.sum())
    return str(t.loc[i, "piece"]), float(cost[i] / total) if total else float("nan")


def unpriced_calls(r) -> list[tuple[str, float]]:
    """A crossing's unpriced host calls per operation, most frequent first ('futex 4.14, nanosleep 0.508')."""
    out = []
    for item in str(getattr(r, "unpriced_calls", "") or "").split(", "):
        name, _, n = item.rpartition(" ")
        try:
            out.append((name, float(n)))
        except ValueError:
            continue
    return sorted(out, key=lambda x: -x[1])


def covered_sentence(done: pd.DataFrame, terms: pd.DataFrame) -> str:
    """The crossings the priced events mostly cover, and the piece that is most of their price."""
    mostly = [r for r in done.itertuples() if r.crossing_ns > 0 and r.pieces_ns / r.crossing_ns >= MOSTLY]
    if not mostly:
        return ""
    shares = [r.pieces_ns / r.crossing_ns for r in mostly]
    tops = [largest_piece(terms, r) for r in mostly]
    text = (f"The priced events cover {_range(shares, _pct)} of the crossing for {_who(mostly)}")
    pieces = {t[0] for t in tops if t is not None}
    if len(pieces) == 1 and all(t is not None for t in tops):
        piece = pieces.pop()
        counts = [_count(terms, r, piece) for r in mostly]
        text += (f"; in each the {piece}es" if piece.endswith("switch") else f"; in each the {piece}s") + (
            f" ({_range(counts)} per operation) are the largest part of the price, "
            f"{_range([t[1] for t in tops], _pct)} of it")
    return text + "."


def calls_sentence(done: pd.DataFrame, terms: pd.DataFrame) -> str:
    """Which host calls dominate: each crossing's most frequent unpriced call, grouped by its name, and
    whether it is one per FUSE request."""
    groups: dict[str, list] = {}
    for r in done.itertuples():
        calls = unpriced_calls(r)
        if calls and calls[0][1] >= 0.5:
            groups.setdefault(calls[0][0], []).append((r, calls[0][1]))
    if not groups:
        return ""
    parts = []
    for name, rows in groups.items():
        per_request = all(abs(n / req - 1) < SAME for r, n in rows
                          if (req := _count(terms, r, "FUSE requests")) and req == req) and all(
            _count(terms, r, "FUSE requests") > 0 for r, _ in rows)
        envs = _joined([_env(r.environment) for r, _ in rows])
        parts.append(f"\\texttt{{{tex_escape(name)}}} under {envs} ({_range([n for _, n in rows])} per operation"
                     + (", one per FUSE request" if per_request else "") + ")")
    return ("Counted by name, the host calls left unpriced, which no native probe makes alone, are led by "
            + _joined(parts) + ".")


def short_sentence(done: pd.DataFrame) -> str:
    """Where the accounting falls short, and the only two places its rest can be."""
    short = [r for r in done.itertuples() if r.crossing_ns > 0 and r.pieces_ns / r.crossing_ns < MOSTLY
             and r.status == "rest"]
    if not short:
        return ""
    quiet = [r for r in short if r.pieces_ns == 0 and not unpriced_calls(r)]
    rest = [r for r in short if r not in quiet]
    out = []
    if rest:
        by_call: dict[str, list] = {}
        for r in rest:
            calls = unpriced_calls(r)
            by_call.setdefault(calls[0][0] if calls else "", []).append(r)
        for name, rows in by_call.items():
            left = [r.unexplained_ns / r.crossing_ns for r in rows]
            out.append(f"The accounting falls short for {_who(rows)}, leaving {_range(left, _pct)} of the "
                       "crossing"
                       + (f", where the most frequent call is \\texttt{{{tex_escape(name)}}}: its rest is the unpriced "
                          "calls' cost and whatever no tracepoint counts, and the counts do not separate the two"
                          if name else ": no counted event is left unpriced there, so the rest is what no tracepoint "
                          "counts") + ".")
    if quiet:
        from osbench_analysis.formatting import time_with_ci_tex

        out.append(_who(quiet) + f" make{'s' if len(quiet) == 1 else ''} no counted event at all, so "
                   + ("its whole crossing, " if len(quiet) == 1 else "their whole crossings, ")
                   + _joined([time_with_ci_tex(r.crossing_ns, r.crossing_low_ns, r.crossing_high_ns) for r in quiet])
                   + (", lies" if len(quiet) == 1 else ", lie") + " outside them.")
    return " ".join(out)


def _opcodes(counts: pd.DataFrame, host: str, env: str, probe: str) -> dict[str, float]:
    c = crossing_counts.per_operation(counts, host, env, probe)
    return {k.removeprefix("fuse_").upper(): v for k, v in c.items()
            if k.startswith("fuse_") and k != "fuse_requests" and v >= 0.5}


def fuse_sentence(done: pd.DataFrame, terms: pd.DataFrame, counts: pd.DataFrame) -> str:
    """What the FUSE server's requests say: switches per request over the crossings that reach it, and what its
    cache removes of each operation's requests (by opcode)."""
    fuse = [r for r in done.itertuples() if r.environment.startswith("fuse")]
    reach = [r for r in fuse if _count(terms, r, "FUSE requests") >= 0.5]
    if not reach:
        return ""
    per = [_count(terms, r, "context switch") / _count(terms, r, "FUSE requests") for r in reach]
    text = (f"Each request the FUSE server answers costs {_range(per)} context switches over the {len(reach)} "
            "crossings that reach it")
    cached = {r.crossing_probe: r for r in fuse if r.environment == "fuse"}
    uncached = {r.crossing_probe: r for r in fuse if r.environment == "fuse-nocache"}
    parts = []
    for probe in [p for p in uncached if p in cached]:
        a = _opcodes(counts, uncached[probe].counts_host, "fuse-nocache", probe)
        b = _opcodes(counts, cached[probe].counts_host, "fuse", probe)
        n_a, n_b = sum(a.values()), sum(b.values())
        if not a:
            continue
        kept = sorted(b)
        what = ", ".join(f"{k} {_n(v)}" for k, v in sorted(a.items(), key=lambda kv: -kv[1]))
        parts.append(f"all {_n(n_a)} requests of a {_op(probe)} ({what})" if not kept else
                     f"{_n(n_a - n_b)} of the {_n(n_a)} of an {_op(probe)}, leaving {_joined(kept)}"
                     if _op(probe)[:1] in "aeiou" else
                     f"{_n(n_a - n_b)} of the {_n(n_a)} of a {_op(probe)}, leaving {_joined(kept)}")
    if parts:
        text += "; its cache removes " + " and ".join(parts)
    return text + "."


def argument_tex(summary: pd.DataFrame, terms: pd.DataFrame, counts: pd.DataFrame) -> str:
    """The accounting's sentences after the method's, each only where the data hold its case."""
    done = summary[summary["status"] != "not decomposed"]
    if done.empty:
        return ""
    out = [covered_sentence(done, terms), calls_sentence(done, terms), short_sentence(done),
           fuse_sentence(done, terms, counts)]
    n_up = int((done["status"] == "adds up").sum())
    n_over = int((done["status"] == "exceeds").sum())
    out.append(("In none of the" if n_up == 0 else f"In {n_up} of the") + f" {len(done)} decomposed crossings do "
               "the priced events reach the crossing within their intervals"
               + (f", and in {n_over} they exceed it" if n_over else "") + "; what they leave is not attributed here.")
    return " ".join(t for t in out if t)
