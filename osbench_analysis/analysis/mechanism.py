"""What one crossing is made of, as an accounting (issues #22 and #32, item 3): for each sandbox
environment, the measured cost of one crossing (the environment's operation minus native's: a null
system call, for a file server a stat or an open + close) beside the host events the sandbox's own
processes were *counted* making per operation (measure/counting.py, data/crossing_counts/: host system
calls, context switches, signals delivered), each priced at the cost of that event measured
alone on native Linux on the host of the crossing.  What the priced events leave is stated as
unexplained, never named; pieces that exceed the crossing are a finding, marked, not a negative rest.

The pieces (`PIECES`, a registry: a new kind of counted event is one entry) are the counts of the
environment minus native's for the same probe (native getpid makes one system call: the crossing is
what the sandbox adds), times a price that is a linear combination of native probes' per-op estimates:

* a host system call: one native getpid (a lower bound for a call that does work, as a file server's do);
* a context switch (voluntary: blocking, and involuntary: preemption, for instance of a task that woke
  another on its CPU): half a native pipe round trip (two switches) less its four system calls;
* a signal delivered: a native breakpoint signal handled and returned from, less its sigreturn (the
  sigreturn is counted as a host system call).

The split of the switches into voluntary and involuntary (the latter partly other load's), wake-ups,
inter-processor interrupts and FUSE requests are counted and shown, not priced: a wake-up and a request's
hand-off are inside a switch's and the system calls' prices already.

Every figure is a linear combination sum(c_i * G_i) of geometric means of run medians G_i (the engine's
estimand); counts enter as fixed coefficients (their spread over the counted pairs is shown beside);
the interval is the delta method over the terms' run-to-run variances with Welch-Satterthwaite degrees
of freedom, as `architectures.geomean_difference_ci` gives for a difference of two.  A term in both the
crossing and the pieces (native getpid) is merged before the variance is taken.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd
from scipy import stats as sps

from osbench_analysis import formatting, stats
from osbench_analysis.analysis import crossing_counts, host_calls
from osbench_analysis.analysis.architectures import CROSSING_PROBE, CROSSING_PROBES, FILE_CROSSING_PROBE
from osbench_analysis.catalog import registry
from osbench_analysis.errors import OsbenchError


@dataclass(frozen=True)
class Piece:
    name: str                                # printable: 'host system call'
    counters: tuple[str, ...]                # counted per operation (measure/counting.py), summed
    price: tuple[tuple[str, float], ...]     # (native probe, coefficient) per event
    priced_as: str                           # the price in words
    params: dict = field(default_factory=dict)


PIECES: tuple[Piece, ...] = (
    Piece("host system call", ("syscalls", "server_syscalls"), ((CROSSING_PROBE, 1.0),), "one native getpid"),
    Piece("context switch", ("context_switches", "server_context_switches"),
          (("pipe_pingpong", 0.5), (CROSSING_PROBE, -2.0)),
          "half a native pipe round trip less its four system calls"),
    Piece("signal delivered", ("signals_delivered", "server_signals_delivered"),
          (("signal_trap_self", 1.0), (CROSSING_PROBE, -1.0)),
          "a native breakpoint signal handled and returned from, less its sigreturn"),
)
#: counted and shown, not priced (see the module's docstring)
SHOWN_ONLY = {"switches_voluntary": "of which voluntary", "switches_involuntary": "of which involuntary",
              "wakeups": "wake-ups",
              "ipis": "inter-processor interrupts", "fuse_requests": "FUSE requests"}

#: The crossings decomposed, per sandbox environment: the probes whose environment-minus-native
#: difference is one crossing (the null system call; for a file server a stat, and an open + close).
ENVIRONMENT_CROSSINGS: dict[str, tuple[str, ...]] = {
    "gvisor": (CROSSING_PROBE,), "gvisor-ptrace": (CROSSING_PROBE,), "uml": (CROSSING_PROBE,),
    "gvisor-gofer": (FILE_CROSSING_PROBE,), "fuse": (FILE_CROSSING_PROBE, "open_close"),
    "fuse-nocache": (FILE_CROSSING_PROBE, "open_close"),
}

#: |events per operation| below this are counted as none: the differencing over N2 - N1 = 20000 operations
#: leaves a few stray events of start-up or other work (measured: at most 0.003 per operation natively)
COUNT_FLOOR = 0.01
#: the counts are taken with the sandbox (or the worker and the FUSE server) confined to one CPU
#: (measure/counting.py): only that placement's crossing is accounted for
COUNTED_PLACEMENT = "same_cpu"
STATUSES = ("adds up", "rest", "exceeds", "not decomposed")
TERM_COLUMNS = ["environment", "crossing_probe", "placement", "piece", "count", "count_min", "count_max",
                "price_ns", "price_low_ns", "price_high_ns", "cost_ns", "cost_low_ns", "cost_high_ns",
                "priced_as"]
SUMMARY_COLUMNS = ["environment", "crossing_probe", "placement", "crossing_ns", "crossing_low_ns",
                   "crossing_high_ns", "pieces_ns", "pieces_low_ns", "pieces_high_ns", "unexplained_ns",
                   "unexplained_low_ns", "unexplained_high_ns", "adds_up", "status", "verdict", "counts_host",
                   "counts_same_host", "excess_ns", "excess_low_ns", "excess_high_ns", "level", "by_name",
                   "host_calls", "host_calls_unpriced", "unpriced_calls"]


class MechanismError(OsbenchError, ValueError):
    """An environment the decomposition does not know."""


@dataclass(frozen=True)
class Combination:
    value: float
    ci_low: float
    ci_high: float


def linear_combination_ci(terms: list[tuple[float, stats.RunData]], level: float = stats.DEFAULT_LEVEL
                          ) -> Combination:
    """sum(c * exp(mean log run median)) with a delta-method Welch interval;
    every term needs >= 2 runs (as `architectures.geomean_difference_ci`)."""
    value = var = denom = 0.0
    for c, data in terms:
        v = data.run_values("median")
        if v.size < 2:
            raise ValueError(f"a combination's interval needs >= 2 runs per term (a term has {v.size})")
        g = math.exp(v.mean())
        part = (c * g) ** 2 * v.var(ddof=1) / v.size
        value += c * g
        var += part
        denom += part ** 2 / (v.size - 1)
    df = var ** 2 / denom if denom > 0 else float(sum(d.n_runs for _, d in terms) - len(terms))
    half = float(sps.t.ppf(0.5 + level / 2, max(df, 1.0))) * math.sqrt(var)
    return Combination(value, value - half, value + half)


def _variant(probe: str, params: dict) -> str:
    p = registry.get_probe(probe)
    return registry.variant_label(p, registry.resolve_params(p, params))


def _condition(samples: pd.DataFrame, environment: str, probe: str, variant: str, placement: str,
               prefer_campaign: str = "") -> pd.DataFrame:
    """One condition's measured batches from one campaign: `prefer_campaign` if it has the condition,
    else the newest campaign that does (campaign ids start with their UTC start time).  A single-party
    probe is measured same_cpu only: it stands for every placement.  The file system is part of a file
    probe's variant ('fs=...'): it is ignored here, the environment decides it."""
    s = samples[(samples["environment"] == environment) & (samples["probe"] == probe)
                & ~samples["warmup"].astype(bool)]
    s = s[s["variant"].map(_without_fs) == variant]
    if not registry.PROBES[probe].two_party:
        placement = "same_cpu"
    s = s[s["placement"] == placement]
    if s.empty:
        return s
    ids = sorted(s["campaign_id"].unique())
    cid = prefer_campaign if prefer_campaign in ids else ids[-1]
    return s[s["campaign_id"] == cid]


def _without_fs(variant: str) -> str:
    return ",".join(p for p in str(variant or "").split(",") if p and not p.startswith("fs="))


def _round_of(campaign_id: str) -> str:
    """The UTC start shared by the campaigns of one round: '20261123T135922Z-vm-gvisor' -> '20261123T135922Z'."""
    return campaign_id.split("-", 1)[0]


def _native_campaign_of_round(samples: pd.DataFrame, baseline: str, campaign_id: str) -> str:
    ids = samples.loc[samples["environment"] == baseline, "campaign_id"].unique()
    return next((c for c in ids if _round_of(c) == _round_of(campaign_id)), "")


def _key(d: pd.DataFrame) -> tuple:
    return (d["campaign_id"].iloc[0], d["probe"].iloc[0], _without_fs(d["variant"].iloc[0]), d["placement"].iloc[0])


def _combine(terms: list[tuple[float, pd.DataFrame]]) -> list[tuple[float, pd.DataFrame]]:
    """The same condition of the same campaign merged into one term (its coefficients added)."""
    out: dict = {}
    for c, d in terms:
        k = _key(d)
        out[k] = (out.get(k, (0.0, d))[0] + c, d)
    return [(c, d) for c, d in out.values() if abs(c) > 1e-12]


def _ci(terms: list[tuple[float, pd.DataFrame]], level: float) -> Combination:
    return linear_combination_ci([(c, stats.run_data(d)) for c, d in _combine(terms)], level)


def event_counts(counts: pd.DataFrame, host: str, environment: str, probe: str, baseline: str) -> dict:
    """{piece name: (count, min, max)} per operation, the environment's minus the baseline's, and the shown-only
    counters the same way; min/max from the environment's pairs' spread; a difference smaller than
    COUNT_FLOOR is 0 (an event of start-up or of other work, not of the operation)."""
    env = counts[(counts["host"] == host) & (counts["environment"] == environment) & (counts["probe"] == probe)]
    base = counts[(counts["host"] == host) & (counts["environment"] == baseline) & (counts["probe"] == probe)]
    e, b = env.set_index("counter"), base.set_index("counter")

    def one(names) -> tuple[float, float, float]:
        got = [n for n in names if n in e.index]
        mine = [sum(float(e.loc[n, c]) for n in got) for c in ("median", "min", "max")]
        theirs = sum(float(b.loc[n, "median"]) for n in names if n in b.index)
        return tuple(0.0 if abs(v - theirs) < COUNT_FLOOR else v - theirs for v in mine)

    out = {p.name: one(p.counters) for p in PIECES}
    out.update({name: one((k, f"server_{k}")) for k, name in SHOWN_ONLY.items()})
    return out


def decompose(samples: pd.DataFrame, counts: pd.DataFrame | None = None, *, baseline: str = "native",
              level: float = stats.DEFAULT_LEVEL, environments: list[str] | None = None,
              host: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, terms) for each sandbox environment and crossing probe of ``samples``, both parties on one
    CPU (COUNTED_PLACEMENT, where the counts were taken), ``samples`` being one
    host's campaigns (the native prices may come from a campaign of their own).  ``counts``:
    crossing_counts.load_counts() (default: data/crossing_counts/); the host's own counts, else the newest
    other host's (said in counts_host / counts_same_host).  summary: the crossing, the priced pieces' sum and
    the rest, each with its interval, and a status (STATUSES); terms: each piece's count, price and cost."""
    counts = crossing_counts.load_counts() if counts is None else counts
    if host is None:
        host = str(samples["host"].iloc[0]) if "host" in samples and len(samples) else ""
    envs = environments or [e for e in dict.fromkeys(samples["environment"]) if e in ENVIRONMENT_CROSSINGS]
    for e in envs:
        if e not in ENVIRONMENT_CROSSINGS:
            raise MechanismError(f"no crossing known for environment {e!r} (known: {', '.join(ENVIRONMENT_CROSSINGS)})")
    summary, term_rows = [], []
    for env in envs:
        for probe in ENVIRONMENT_CROSSINGS[env]:
            env_s = samples[(samples["environment"] == env) & (samples["probe"] == probe)]
            if env_s.empty:
                if probe == ENVIRONMENT_CROSSINGS[env][0]:   # said, not dropped: which sandbox has no breakdown
                    summary.append(_undecomposed(env, probe, "", level, f"the {_words(probe)} was not measured in "
                                                                  f"{_env_words(env)}"))
                continue
            for placement in [p for p in sorted(env_s["placement"].unique()) if p == COUNTED_PLACEMENT]:
                r, t = _one(samples, counts, host, env, probe, placement, baseline, level)
                if r is not None:
                    summary.append(r)
                    term_rows += t
    return (pd.DataFrame(summary, columns=SUMMARY_COLUMNS).reset_index(drop=True),
            pd.DataFrame(term_rows, columns=TERM_COLUMNS))


def _one(samples, counts, host, env, probe, placement, baseline, level):
    variant = _variant(probe, {})
    sub = _condition(samples, env, probe, variant, placement)
    if sub.empty:
        return None, []
    base = _condition(samples, baseline, probe, variant, placement,
                      _native_campaign_of_round(samples, baseline, sub["campaign_id"].iloc[0]))
    if sub["run"].nunique() < 2 or base["run"].nunique() < 2:
        return None, []
    crossing = [(1.0, sub), (-1.0, base)]
    cx = _ci(crossing, level)
    row = {"environment": env, "crossing_probe": probe, "placement": placement, "crossing_ns": cx.value,
           "crossing_low_ns": cx.ci_low, "crossing_high_ns": cx.ci_high, "level": level}
    chost = crossing_counts.counts_host_for(counts, host, env, probe, baseline) if len(counts) else ""
    if not chost:
        return {**_undecomposed(env, probe, placement, level, f"the {_words(probe)} was not counted in {_env_words(env)} "
                                f"and {_env_words(baseline)} Linux on any host", crossing=False), **row}, []
    row.update(counts_host=chost, counts_same_host=chost == host)
    events = event_counts(counts, chost, env, probe, baseline)
    native = base["campaign_id"].iloc[0]

    def parts_of(price):
        return [(c, _condition(samples, baseline, p, _variant(p, {}), "same_cpu", native)) for p, c in price]

    def measured(parts):
        return all(d["run"].nunique() >= 2 for _, d in parts)

    specs, shown = _specs(counts, chost, env, probe, baseline, events, parts_of, measured)
    row.update(by_name=shown["by_name"], host_calls=shown["host_calls"],
               host_calls_unpriced=shown["host_calls_unpriced"], unpriced_calls=shown["unpriced_calls"])
    prices, missing = {}, []
    for name, (n, _, _), price, _ in specs:
        parts = parts_of(price)
        if not measured(parts):
            if abs(n) > 0.01:   # a piece that happens needs its price
                missing += [p for (p, _), (_, d) in zip(price, parts) if d["run"].nunique() < 2]
            continue
        prices[name] = parts
    if missing:
        return {**_undecomposed(env, probe, placement, level, "native prices not measured on this host: "
                                + ", ".join(dict.fromkeys(_words(m) for m in missing)), crossing=False), **row,
                "counts_host": chost, "counts_same_host": chost == host}, []
    terms, pieces_terms = [], []
    for name, (n, lo, hi), _, priced_as in specs:
        if name not in prices:
            continue
        price = _ci(prices[name], level)
        cost = [(n * c, d) for c, d in prices[name]]
        pieces_terms += cost
        cc = _ci(cost, level) if abs(n) > 1e-12 and _combine(cost) else Combination(0.0, 0.0, 0.0)
        terms.append({"environment": env, "crossing_probe": probe, "placement": placement, "piece": name,
                      "count": n, "count_min": lo, "count_max": hi, "price_ns": price.value,
                      "price_low_ns": price.ci_low, "price_high_ns": price.ci_high, "cost_ns": cc.value,
                      "cost_low_ns": cc.ci_low, "cost_high_ns": cc.ci_high, "priced_as": priced_as})
    for name, (n, lo, hi), priced_as in shown["rows"]:
        terms.append({"environment": env, "crossing_probe": probe, "placement": placement, "piece": name,
                      "count": n, "count_min": lo, "count_max": hi, "priced_as": priced_as})
    nan = float("nan")
    ps = _ci(pieces_terms, level) if _combine(pieces_terms) else Combination(0.0, 0.0, 0.0)
    rest_terms = _combine(crossing + [(-c, d) for c, d in pieces_terms])
    un = _ci(rest_terms, level) if rest_terms else Combination(0.0, 0.0, 0.0)
    status = "adds up" if un.ci_low <= 0.0 <= un.ci_high else ("rest" if un.value > 0 else "exceeds")
    row.update(pieces_ns=ps.value, pieces_low_ns=ps.ci_low, pieces_high_ns=ps.ci_high,
               unexplained_ns=un.value if status != "exceeds" else nan,
               unexplained_low_ns=un.ci_low if status != "exceeds" else nan,
               unexplained_high_ns=un.ci_high if status != "exceeds" else nan,
               adds_up=status == "adds up", status=status, verdict=_verdict(status, un, cx))
    if status == "exceeds":   # the excess, kept (a finding), never as a negative rest
        row.update(excess_ns=-un.value, excess_low_ns=-un.ci_high, excess_high_ns=-un.ci_low)
    return row, terms


def _specs(counts, chost, env, probe, baseline, events, parts_of, measured):
    """The priced pieces of one crossing, [(piece, (count, min, max), price, priced_as)], and what is shown
    beside them: by system call name when ``chost`` counted by name (host_calls: each call priced by the
    native probe that makes it, the rest unpriced and named; a switch priced as a pipe round trip's calls
    are), else PIECES (every host system call as a getpid, said so)."""
    named = host_calls.differences(counts, chost, env, probe, baseline)
    shown_only = [(name, events[name], "not priced") for name in SHOWN_ONLY.values()]
    total = events["host system call"]
    if named is None:
        return ([(p.name, events[p.name], p.price, p.priced_as) for p in PIECES],
                {"by_name": False, "host_calls": total[0], "host_calls_unpriced": 0.0, "unpriced_calls": "",
                 "rows": shown_only})
    sig = events["signal delivered"]
    parts = host_calls.split(named, sig[0])
    specs, unpriced = [], dict(parts["unpriced"])
    for name, n in parts["priced"].items():
        p, words = host_calls.PRICES[name]
        if measured(parts_of(((p, 1.0),))):
            specs.append((f"host {name}", named[name], ((p, 1.0),), words))
        else:                                     # its probe not measured natively here: unpriced, said
            unpriced[name] = n
    by_name_switch = measured(parts_of(host_calls.SWITCH_BY_NAME))
    switch = next(p for p in PIECES if p.name == "context switch")
    specs.append(("context switch", events["context switch"],
                  host_calls.SWITCH_BY_NAME if by_name_switch else switch.price,
                  host_calls.SWITCH_BY_NAME_WORDS if by_name_switch else switch.priced_as))
    specs.append(("signal delivered", sig, host_calls.SIGNAL_BY_NAME, host_calls.SIGNAL_BY_NAME_WORDS))
    n_un = sum(unpriced.values())
    total = tuple(sum(v[i] for v in named.values()) for i in range(3))   # the calls by name, beyond native's
    rows = [("host system call", total, "by name: each call priced by the native probe that makes it"),
            ("host system call, unpriced", (n_un, n_un, n_un),
             "not priced (no native probe makes it alone): " + host_calls.words(unpriced, 6))] + shown_only
    return specs, {"by_name": True, "host_calls": total[0], "host_calls_unpriced": n_un,
                   "unpriced_calls": host_calls.words(unpriced), "rows": rows}


def _words(probe: str) -> str:
    """A probe as a reader reads it, in plain text (the report escapes it for TeX)."""
    from osbench_analysis.catalog.families import plain_text, print_name

    return plain_text(print_name(probe))


def _env_words(env: str) -> str:
    from osbench_analysis.plots.architectures import env_short

    return env_short(env)


def _undecomposed(env: str, probe: str, placement: str, level: float, why: str, crossing: bool = True) -> dict:
    """A summary row without a breakdown (NaN figures, adds_up None), saying why."""
    nan = float("nan")
    row = {"environment": env, "crossing_probe": probe, "placement": placement, "pieces_ns": nan,
           "pieces_low_ns": nan, "pieces_high_ns": nan, "unexplained_ns": nan, "unexplained_low_ns": nan,
           "unexplained_high_ns": nan, "adds_up": None, "status": "not decomposed",
           "verdict": f"not decomposed: {why}", "counts_host": "", "counts_same_host": None, "level": level}
    if crossing:
        row.update(crossing_ns=nan, crossing_low_ns=nan, crossing_high_ns=nan)
    return row


def _verdict(status: str, un: Combination, cx: Combination) -> str:
    def t(v):
        return formatting.time_plain(v)

    if status == "adds up":
        return f"the counted pieces add up to the crossing within their intervals (rest {t(un.value)} " \
               f"[{t(un.ci_low)}, {t(un.ci_high)}])"
    if status == "rest":
        share = un.value / cx.value if cx.value else float("nan")
        return (f"{t(un.value)} [{t(un.ci_low)}, {t(un.ci_high)}] ({share:.0%} of the crossing) is not "
                "accounted for by the counted events at their native prices: unexplained")
    return (f"the counted events at their native prices exceed the crossing by {t(-un.value)} "
            f"[{t(-un.ci_high)}, {t(-un.ci_low)}]: some of them cost less here than measured alone; "
            "which, the counts do not tell")


def from_analysis(result, counts: pd.DataFrame | None = None, **kw) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`decompose` of an ``Analysis`` (its samples, every campaign selected), host by host, with a
    ``host`` column: the native prices may be a campaign of their own beside the sandboxes' round."""
    kw.setdefault("baseline", result.settings.baseline)
    kw.setdefault("level", result.settings.level)
    counts = crossing_counts.load_counts() if counts is None else counts
    parts = [(host, *decompose(g, counts, host=host, **kw)) for host, g in result.samples.groupby("host", sort=False)]
    if not parts:
        return pd.DataFrame(columns=["host", *SUMMARY_COLUMNS]), pd.DataFrame(columns=["host", *TERM_COLUMNS])
    summary = pd.concat([sm.assign(host=h) for h, sm, _ in parts], ignore_index=True)
    terms = pd.concat([tm.assign(host=h) for h, _, tm in parts], ignore_index=True)
    return summary, terms


def mechanism_table(samples: pd.DataFrame, counts: pd.DataFrame | None = None, **kw) -> pd.DataFrame:
    """The summary of `decompose` alone: one row per sandbox environment, crossing probe and placement."""
    return decompose(samples, counts, **kw)[0]


APPLICATION_COLUMNS = ["host", "environment", "probe", "variant", "placement", "ratio", "ci_low", "ci_high",
                       "crossing_probe", "crossing_ratio", "crossing_ci_low", "crossing_ci_high", "estimate_ns",
                       "baseline_estimate_ns"]


def applications_table(environment_ratios: pd.DataFrame) -> pd.DataFrame:
    """The application workloads' slowdown per environment (``Analysis.environment_ratios`` rows of
    registry.APPLICATION_PROBES), each beside the same environment's crossing factor (its null system
    call's, else, for a file server, its stat's: architectures.CROSSING_PROBES): the micro factor next
    to what a user running the program feels."""
    r = environment_ratios
    if r is None or r.empty:
        return pd.DataFrame(columns=APPLICATION_COLUMNS)
    apps = r[r["probe"].isin(registry.APPLICATION_PROBES)].copy()
    micro = r[r["probe"].isin(CROSSING_PROBES) & (r["variant"].fillna("").map(_without_fs) == "")].copy()
    micro["_rank"] = micro["probe"].map(CROSSING_PROBES.index)
    micro = micro.sort_values("_rank").drop_duplicates(["host", "environment", "placement"])
    micro = micro.set_index(["host", "environment", "placement"])[["probe", "ratio", "ci_low", "ci_high"]]
    micro.columns = ["crossing_probe", "crossing_ratio", "crossing_ci_low", "crossing_ci_high"]
    apps = apps.join(micro, on=["host", "environment", "placement"])
    return apps[APPLICATION_COLUMNS].reset_index(drop=True)
