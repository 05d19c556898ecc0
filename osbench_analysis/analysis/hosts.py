"""Hosts as a level (issue #28): which host an analysis is about, which of its campaigns are complete
enough to be the primary ones, and the cross-host view when several hosts measured the same conditions.

A host is hosts.identity's: the CPU, its features, the memory, the kernel and its mitigations, the
hypervisor; never the machine-id or hostname alone (every VM of one image shares those).  The analysis
works on one host at a time:

- ``choose_host``: the host asked for (its key, a prefix of the key, or words of its label such as
  'intel' or 'v782'), else the host of the newest *complete* campaign of the baseline environment;
- ``newest_complete``: per environment of that host the newest campaign that measured at least
  ``COMPLETE_FRACTION`` of the primitives the host's fullest campaign of that environment measured (of
  the probes analysed, when they are restricted); a newer partial campaign is named in one sentence
  and left out, never silently made the baseline; a campaign sealed as partial (its environment
  stopped, or most runs failed: store.catalog's ``partial``) is never complete, whatever it measured;
- ``cross_host``: each host's campaigns pooled within the host (reproducibility.pool_campaigns), side
  by side per condition, ratio to the baseline and crossing cost, with the spread between hosts and
  whether each finding holds on every host; the guests' instruction counts per host (microkernel.py);
- ``reproduction``: this host against the reference host(s): which conclusions hold here, which change
  and by how much.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.analysis.comparable import compared, like_with_like, with_software  # noqa: F401
from osbench_analysis.errors import OsbenchError
from osbench_analysis.store.campaigns import sealed_partial

#: a campaign is complete when it measured at least this share of the primitives the fullest campaign
#: of its (host, environment) measured (a failed probe or two does not make a round partial; 3 of 69 does)
COMPLETE_FRACTION = 0.9
CONDITION = ["environment", "probe", "variant", "placement"]


class HostError(OsbenchError, ValueError):
    """A host asked for that no campaign (or more than one host) matches."""


def hosts_table(cat: pd.DataFrame) -> pd.DataFrame:
    """One row per host of a catalog (store.catalog): key, label, campaigns, newest campaign, and how its
    identity is known (``identity``: recorded, derived from older manifests, or recorded with a derived
    identity merged into it: hosts.identity.merges, each merge's facts in merge_notes)."""
    if cat.empty:
        return pd.DataFrame(columns=["host", "host_label", "campaigns", "newest", "identity"])
    g = cat.sort_values("created_utc").groupby("host", sort=False)
    out = pd.DataFrame({"host_label": g["host_label"].first(), "campaigns": g.size(),
                        "newest": g["created_utc"].last()}).reset_index().sort_values("newest", ascending=False,
                                                                                       ignore_index=True)
    return out.assign(identity=[identity_words(cat[cat["host"] == h]) for h in out["host"]])


def identity_words(rows: pd.DataFrame) -> str:
    """How one host's identity is known, from its catalog rows: 'recorded', 'derived' (older manifests:
    no family, microcode or features) or 'recorded + amd-epyc-3c69ac (derived, 11 campaigns) merged'."""
    if "identity" not in rows:
        return ""
    own = rows[rows["identity"] == rows["host"]]
    words = ("derived" if own["derived"].astype(bool).all() else "recorded") if len(own) else "recorded"
    merged = rows[rows["identity"] != rows["host"]].groupby("identity", sort=True).size()
    return words + "".join(f" + {k} (derived, {n} campaign{'s' if n != 1 else ''}) merged" for k, n in merged.items())


def merge_notes(cat: pd.DataFrame) -> list[str]:
    """The sentences of a catalog's host merges (hosts.identity.Merge.sentence: the facts each rests on) and
    of the derived identities kept apart because they agree with several recorded hosts, once each."""
    if cat.empty or "host_merge" not in cat:
        return []
    return [s for s in dict.fromkeys(cat["host_merge"].fillna("")) if s]


def resolve_host(asked: str, cat: pd.DataFrame) -> str:
    """The host key ``asked`` names: a key (a derived key merged into a machine's names that machine), a
    unique prefix of one, or words all found in one host's label (case-insensitive: 'intel', 'amd v782')."""
    table = hosts_table(cat)
    have = ", ".join(f"{r.host} ({r.host_label})" for r in table.itertuples()) or "none"
    if not isinstance(asked, str) or not asked.strip():
        raise HostError(f"host must name a host by its key or words of its label (got {asked!r}; have: {have})")
    keys = list(table["host"])
    if asked in keys:
        return asked
    if "identity" in cat and asked in set(cat["identity"]):   # a derived key merged into its machine's
        return str(cat.loc[cat["identity"] == asked, "host"].iloc[0])
    match = [k for k in keys if k.startswith(asked)]
    if not match:
        words = asked.lower().split()
        match = [r.host for r in table.itertuples() if all(w in str(r.host_label).lower() for w in words)]
    if len(match) == 1:
        return match[0]
    what = "matches no host" if not match else f"matches {len(match)} hosts"
    raise HostError(f"host {asked!r} {what}; name one by its key or words of its label (have: {have})")


def primitive_counts(cat: pd.DataFrame, probes=None, root=None) -> pd.Series:
    """Per catalog row: the primitives (probe, parameters) its campaign measured; of ``probes`` only
    when given (then read from the manifests' conditions)."""
    if probes is None:
        return cat["primitives"].astype(int)
    from osbench_analysis.store import campaigns as store
    from osbench_analysis.store.records import Manifest

    wanted, out = set(probes), []
    for p in cat["path"]:
        m = Manifest.from_json((Path(p) / store.MANIFEST_FILE).read_text())
        out.append(len({(c["probe"], json.dumps(c.get("params", {}), sort_keys=True))
                        for c in m.conditions if c["probe"] in wanted}))
    return pd.Series(out, index=cat.index, dtype=int)



def _complete(cat: pd.DataFrame, counts: pd.Series, by: list[str]) -> pd.Series:
    """A campaign sealed as partial is never complete, nor the bar of a complete one."""
    whole = ~sealed_partial(cat)
    full = counts.where(whole).groupby([cat[k] for k in by]).transform("max")
    return (counts >= COMPLETE_FRACTION * full) & (counts > 0) & whole


def choose_host(cat: pd.DataFrame, asked: str | None = None, baseline: str = "native") -> str:
    """``asked`` resolved (resolve_host), else the host of the newest campaign of the baseline
    environment (any environment if none) that is complete against every campaign of that environment
    on any host: a newcomer's full `make all` makes their machine the default, a small campaign does not."""
    if asked is not None:
        return resolve_host(asked, cat)
    if cat.empty:
        raise HostError("no campaigns: no host to analyse")
    pool = cat[cat["environment"] == baseline] if (cat["environment"] == baseline).any() else cat
    done = pool[_complete(pool, pool["primitives"].astype(int), ["environment"])]
    done = done if len(done) else pool    # nothing complete: newest_complete says what it leaves out
    return str(done.sort_values(["created_utc", "campaign_id"]).iloc[-1]["host"])


def partial_sentence(row, counts: int, full: int, primary: str) -> str:
    why = getattr(row, "partial", "") or ""
    what = f"was sealed as partial ({why})" if why else f"measured {counts} of {full} primitives"
    return (f"campaign {row.campaign_id} {what}: not used as the {row.environment} baseline "
            f"({primary + ' is' if primary else 'no complete campaign'}); pass it by name to use it")


def newest_complete(cat: pd.DataFrame, probes=None, root=None) -> tuple[pd.DataFrame, list[str]]:
    """Of one host's catalog rows (sweep campaigns already set apart): per environment the newest
    complete campaign, and a sentence for each newer partial campaign passed over."""
    if cat.empty:
        return cat, []
    counts = primitive_counts(cat, probes, root)
    cat = cat.assign(sel_n=counts, sel_done=_complete(cat, counts, ["environment"]),
                     sel_full=counts.groupby(cat["environment"]).transform("max"), sel_partial=sealed_partial(cat))
    rows, notes = [], []
    for env, g in cat.groupby("environment", sort=False):
        g = g.sort_values(["created_utc", "campaign_id"])
        done = g[g["sel_done"]]
        if done.empty:      # nothing measured any asked probe: the newest stands (the probes check says so) ...
            if (~g["sel_partial"]).any():
                rows.append(g[~g["sel_partial"]].iloc[-1])
            else:           # ... but never one sealed as partial
                notes += [partial_sentence(r, int(r.sel_n), int(r.sel_full), "") for r in g.itertuples()]
            continue
        pick = done.iloc[-1]
        rows.append(pick)
        later = g.iloc[list(g.index).index(pick.name) + 1:]      # newer in the order the pick was made in
        for r in later[~later["sel_done"]].itertuples():
            notes.append(partial_sentence(r, int(r.sel_n), int(r.sel_full), pick["campaign_id"]))
    out = pd.DataFrame(rows, columns=cat.columns).drop(columns=["sel_n", "sel_done", "sel_full", "sel_partial"])
    return out.reset_index(drop=True), notes


# ------------------------------------------------------------------ the cross-host view

def _interval(v, lo, hi, ns: bool = False) -> str:
    """'9.24 µs [8.69, 9.79] µs' for a time (``ns``), '237 [225, 250]' for a ratio."""
    from osbench_analysis.formatting import interval_plain, sig3, time_plain

    if ns:
        return f"{time_plain(v)} {interval_plain(lo, hi, v)}" if np.isfinite(lo) and np.isfinite(hi) else time_plain(v)
    return f"{sig3(v)} [{sig3(lo)}, {sig3(hi)}]" if np.isfinite(lo) and np.isfinite(hi) else sig3(v)


@dataclass
class CrossHost:
    """Every host's pooled values side by side (``Analysis``-like record of ``cross_host``)."""
    hosts: pd.DataFrame                      # host, host_label, primary campaigns, campaigns pooled
    estimates: pd.DataFrame                  # per host and condition: pooled per-op time [interval]
    ratios: pd.DataFrame                     # per host and condition: environment / baseline [interval]
    crossing_costs: pd.DataFrame             # per host and environment: cost of one crossing [interval]
    guests: pd.DataFrame = field(default_factory=pd.DataFrame)   # per host and Mach primitive: instructions
    notes: list[str] = field(default_factory=list)
    baseline: str = "native"
    # one machine, one host: (hosts.identity.Merge, its campaigns) for each derived identity counted as a host here
    merges: list = field(default_factory=list)

    @property
    def labels(self) -> dict[str, str]:
        """host key -> label; a label two hosts share gets the key beside it (a column per host)."""
        if self.hosts.empty:
            return {}
        twice = self.hosts["host_label"].duplicated(keep=False)
        return {h: f"{lab} [{h}]" if d else lab for h, lab, d in zip(self.hosts["host"], self.hosts["host_label"], twice)}

    def table(self, kind: str = "ratios") -> pd.DataFrame:
        """One row per condition measured on two hosts or more: each host's value with its interval
        (a column per host label), the spread (largest over smallest value), whether the intervals
        overlap and whether the finding holds on every host (spread_table)."""
        frames = {"estimates": (self.estimates, "estimate_ns", "ci_low_ns", "ci_high_ns"),
                  "ratios": (self.ratios, "ratio", "ci_low", "ci_high"),
                  "crossing_costs": (self.crossing_costs, "cost_ns", "ci_low_ns", "ci_high_ns")}
        if kind not in frames:
            raise HostError(f"kind must be one of {', '.join(frames)} (got {kind!r})")
        return spread_table(*frames[kind], labels=self.labels, ratio=kind == "ratios")

    def figure(self, placement: str = "same_cpu", labels: dict | None = None):
        """plots.hosts.cross_host_figure: each environment's crossing cost and crossing probe's ratio to
        the baseline on every host (``labels``: host -> its name in the legend; default the host labels)."""
        from osbench_analysis.plots.hosts import cross_host_figure

        return cross_host_figure(like_with_like(self.crossing_costs), like_with_like(crossing_ratios(self.ratios)),
                                 labels or self.labels, baseline=self.baseline, placement=placement)

    def guest_agreement(self, column: str = "mach_median") -> pd.Series:
        """Per Mach primitive, the guests' counts (``column``) on the host that counted most over the host that
        counted least (1.0: identical); empty unless two hosts or more counted."""
        g = self.guests
        if g.empty or g["host"].nunique() < 2:
            return pd.Series(dtype=float)
        return g.groupby("mach_probe")[column].agg(lambda v: v.max() / v.min())

    def findings(self) -> list[str]:
        """One sentence per crossing cost and per crossing probe's ratio (same CPU): the value on each
        host and whether the finding holds on every host; and one for the guests' counts."""
        out = []
        for kind, unit in (("crossing_costs", "ns"), ("ratios", "x")):
            t = self.table(kind)
            if t.empty:
                continue
            if kind == "ratios":
                t = crossing_ratios(t.assign(host="")) if len(t) else t
                t = t[t["placement"] == "same_cpu"]
            else:
                t = t[t["placement"] == "same_cpu"]
            for r in t.itertuples():
                what = (f"{r.environment} crossing cost" if kind == "crossing_costs"
                        else f"{r.environment}/{self.baseline} {r.probe}")
                out.append(f"{what}: {r.values}; {r.verdict}")
        g = self.guests
        if len(g) and g["host"].nunique() > 1:
            for kernel, col in (("GNU Mach", "mach_median"), ("Linux", "linux_median")):
                factor = self.guest_agreement(col)
                worst, which = float(factor.max()), str(factor.idxmax())
                same = ("identical on every host" if worst == 1.0 else
                        f"the same within {100 * (worst - 1):.2g} % on every host (most apart: {which})")
                out.append(f"guest instructions per operation under {kernel} (QEMU TCG), {len(factor)} primitives "
                           f"on {g['host'].nunique()} hosts: {same}")
        return out


def spread_table(t: pd.DataFrame, value: str, low: str, high: str, *, labels: dict, ratio: bool) -> pd.DataFrame:
    """The wide table behind CrossHost.table."""
    from osbench_analysis.formatting import times_plain

    t = like_with_like(t)
    keys = [k for k in ("baseline", *CONDITION, "probe_source") if k in t.columns]
    if t.empty:
        return pd.DataFrame()
    rows = []
    for key, g in t.groupby(keys, sort=False):
        if g["host"].nunique() < 2:
            continue
        g = g.drop_duplicates("host")
        v, lo, hi = (g[c].to_numpy(float) for c in (value, low, high))
        row = dict(zip(keys, key))
        for h, a, b, c in zip(g["host"], v, lo, hi):
            row[labels.get(h, h)] = _interval(a, b, c, ns=not ratio)
        pos = v[v > 0]
        row["spread"] = float(pos.max() / pos.min()) if len(pos) == len(v) and len(v) else math.nan
        row["overlap"] = bool(np.nanmax(lo) <= np.nanmin(hi))
        if ratio:   # a ratio's finding: slower, faster or no difference shown; the same on every host?
            side = ["slower" if a > 1 else "faster" if c < 1 else "no difference" for a, c in zip(lo, hi)]
            holds = len(set(side)) == 1
            row["verdict"] = (f"{side[0]} on every host" if holds else "differs: " + ", ".join(
                f"{s} on {labels.get(h, h)}" for s, h in zip(side, g["host"])))
        else:
            holds = row["overlap"]
            row["verdict"] = ("the same on every host (intervals overlap)" if holds else
                              f"differs between hosts: {times_plain(row['spread'])} from lowest to highest")
        row["holds_on_every_host"] = holds
        row["values"] = "; ".join(f"{_interval(a, b, c, ns=not ratio)} on {labels.get(h, h)}"
                                  for h, a, b, c in zip(g["host"], v, lo, hi))
        rows.append(row)
    return pd.DataFrame(rows)


def recorded_first(cat: pd.DataFrame) -> pd.DataFrame:
    """One host's catalog rows without the campaigns of a derived identity merged into it (hosts.identity.merges)
    for every environment its own campaigns measured: older manifests pool with the machine's comparable
    campaigns and count as the machine, but never become the primary campaign of an environment the machine
    measured since, nor set the bar of a complete one (an older round that measured more primitives made the
    reference host's FUSE baseline a campaign of 2026-11-23 measured with other probe code)."""
    if "identity" not in cat or not (merged := cat["identity"] != cat["host"]).any():
        return cat
    return cat[~merged | ~cat["environment"].isin(set(cat.loc[~merged, "environment"]))]


def crossing_ratios(ratios: pd.DataFrame) -> pd.DataFrame:
    """Of ratios to the baseline (a ``host`` column), per host, environment and placement the row of the
    environment's own crossing probe (architectures.crossing_candidates, the first the host measured): a
    file server's stat, never its null system call; the default parameters only."""
    from osbench_analysis.analysis.architectures import crossing_candidates

    if ratios is None or ratios.empty:
        return pd.DataFrame() if ratios is None else ratios
    r = ratios[ratios["variant"].fillna("") == ""]
    rank = [crossing_candidates(e).index(p) if p in crossing_candidates(e) else -1
            for e, p in zip(r["environment"], r["probe"])]
    r = r.assign(_rank=rank)
    r = r[r["_rank"] >= 0].sort_values("_rank", kind="stable")
    return r.drop_duplicates(["host", "environment", "placement"]).drop(columns="_rank").sort_index()


def select_primary(cat: pd.DataFrame, probes=None, root=None) -> tuple[pd.DataFrame, list[str]]:
    """One host's catalog rows -> (per environment the campaign to analyse, sentences on partial
    campaigns passed over).  Guests (instruction counts) are never chosen; a sweep campaign only for an
    environment with no campaign of the whole catalog (pipeline.select_sweep_campaigns reads those)."""
    from osbench_analysis.analysis.microkernel import GUEST_ENVIRONMENTS

    cat = recorded_first(cat[~cat["environment"].isin(GUEST_ENVIRONMENTS)])
    sweep = cat["sweep_only"].astype(bool)
    whole, notes = newest_complete(cat[~sweep], probes, root)
    only_sweep = cat[sweep & ~cat["environment"].isin(set(whole["environment"]) if len(whole) else set())]
    newest = only_sweep.sort_values(["created_utc", "campaign_id"]).groupby("environment").tail(1)
    return pd.concat([whole, newest], ignore_index=True) if len(newest) else whole, notes


def cross_host(root=None, *, hosts: list[str] | None = None, probes: list[str] | None = None,
               environments: list[str] | None = None, baseline: str = "native", level: float = 0.95) -> CrossHost:
    """Every host (or those named, resolve_host) analysed on its own: its newest complete campaigns pooled
    with its comparable earlier ones (reproducibility.pool_campaigns, never across hosts), then the hosts'
    pooled estimates, ratios to the baseline and crossing costs side by side."""
    from osbench_analysis.analysis import comparable, microkernel, pooling_cache, reproducibility
    from osbench_analysis.store import campaigns as store
    from osbench_analysis.store.records import Manifest

    cat = store.catalog(root)
    guests_cat = cat[cat["environment"].isin(microkernel.GUEST_ENVIRONMENTS)]
    timed = cat.drop(guests_cat.index)
    keys = [resolve_host(h, cat) for h in hosts] if hosts else list(hosts_table(timed)["host"])
    parts = {"estimates": [], "ratios": [], "crossing_costs": [], "guests": []}
    rows, notes = [], []
    for h in keys:
        chosen, said = select_primary(timed[timed["host"] == h], probes, root)
        if environments is not None:
            chosen = chosen[chosen["environment"].isin(environments)]
        chosen = chosen[~chosen["sweep_only"].astype(bool)]
        primary = ", ".join(chosen["campaign_id"])
        # in the analysis' order (baseline environment first: pipeline.select_campaigns), so that the pooling
        # analyze() made of its host is the one asked for here (pooling_cache: the order is part of the key)
        chosen = chosen.assign(_b=chosen["environment"] != baseline).sort_values(
            ["_b", "environment", "created_utc"], kind="stable").drop(columns="_b")
        label = cat.loc[cat["host"] == h, "host_label"].iloc[0]
        notes += [f"{label}: {s}" for s in said]
        if len(chosen):
            manifests = {r.campaign_id: Manifest.from_json((Path(r.path) / store.MANIFEST_FILE).read_text())
                         for r in chosen.itertuples()}
            p = pooling_cache.pool_campaigns(manifests, root, baseline=baseline, level=level, probes=probes)
            sw = {m.environment: comparable.software(m) for m in manifests.values()}
            for name in ("estimates", "ratios", "crossing_costs"):
                t = getattr(p, name)
                if len(t):
                    t = t[~t["probe"].isin(reproducibility.CANARY_PROBES)] if "probe" in t else t
                    parts[name].append(with_software(t, sw, None if name == "estimates" else baseline))
            pooled = sorted({c for ids in p.campaigns.values() for c in ids})
        else:
            pooled = []
        # the four designs' guests (the kernel-version sweep's: analysis/versions.py)
        g = guests_cat[(guests_cat["host"] == h) & guests_cat["environment"].isin(microkernel.DESIGN_GUESTS)
                       & ~store.memory_model(guests_cat)]     # the memory model's campaigns: analysis/memevents.py
        if len(g):
            tab, _ = microkernel.from_campaigns(list(g["campaign_id"]), root)
            if len(tab):
                parts["guests"].append(tab.assign(host=h))
        rows.append({"host": h, "host_label": label, "identity": identity_words(cat[cat["host"] == h]),
                     "primary": primary,
                     "campaigns_pooled": len(pooled), "guest_campaigns": len(g)})
    frames = {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in parts.items()}
    # one machine, one host: each merge said with the facts it rests on (hosts.identity.merges)
    notes += merge_notes(cat[cat["host"].isin(keys)])
    return CrossHost(pd.DataFrame(rows), frames["estimates"], frames["ratios"], frames["crossing_costs"],
                     frames["guests"], notes, baseline, merges_of(cat, keys))


def merges_of(cat: pd.DataFrame, keys=None) -> list[tuple]:
    """(hosts.identity.Merge, campaigns) for every derived identity the catalog counts as another host (of
    ``keys`` only, when given), as store.catalog merged them (over every identity of the root)."""
    from osbench_analysis.hosts.identity import host_identity, merges
    from osbench_analysis.store import campaigns as store

    if cat.empty or "identity" not in cat:
        return []
    first = cat.drop_duplicates("identity")
    merged, _ = merges(host_identity(store.parsed_manifest((Path(p) / store.MANIFEST_FILE).read_text()).host)
                       for p in first["path"])
    moved = cat[cat["identity"] != cat["host"]].groupby("identity").size()
    return [(m, int(moved[k])) for k, m in sorted(merged.items())
            if k in moved.index and (keys is None or m.into in set(keys))]


# ------------------------------------------------------------------ does this host reproduce the reference?

#: The file naming the paper's reference host(s) (data/reference_hosts.txt: one host key a line, '#' comments).
REFERENCE_HOSTS_FILE = Path(__file__).resolve().parents[2] / "data" / "reference_hosts.txt"


def reference_hosts(keys, path: Path | str | None = None) -> list[str]:
    """The reference hosts among ``keys`` (the hosts measured), as named by ``path`` (default
    REFERENCE_HOSTS_FILE); when the file is missing or names none of ``keys``: [] (then every other host
    is a reference, as reproduction() does by default)."""
    p = Path(path) if path is not None else REFERENCE_HOSTS_FILE
    if not p.is_file():
        return []
    named = [ln.split("#", 1)[0].strip() for ln in p.read_text().splitlines()]
    return [h for h in keys if h in {n for n in named if n}]


def _verdict(lo: float, hi: float) -> str:
    return "slower" if lo > 1 else "faster" if hi < 1 else "no difference shown"


def reproduction(cross: CrossHost, this: str | None = None, reference: list[str] | None = None,
                 reference_file: Path | str | None = None, same_software: bool = False) -> pd.DataFrame:
    """The reference host's conclusions on another host: per conclusion (each environment's crossing cost, and
    its own crossing probe's ratio to the baseline, same CPU) the reference host's value (``reference``) and
    the other host's (``here``), both with their intervals, here over the reference, whether the conclusion
    holds there too (the same verdict: slower / faster / no difference for a ratio; overlapping intervals for
    a cost), whether the value lies inside the reference's prediction interval for one more campaign (NaN
    with fewer than two reference campaigns), and ``same_size``: it holds and its size too (inside that
    prediction interval, else the intervals overlap).

    ``this``: the host asked about (default the first of ``cross.hosts``); ``reference``: the reference hosts
    (default reference_hosts(), data/reference_hosts.txt or ``reference_file``; none of them measured: every
    other host).  A configuration flagged as faulty never enters (like_with_like); ``same_software``: a
    conclusion is compared only where both hosts ran the same probe code (the paper's hosts, issue 42).
    Every row goes from a reference host (``reference_host``) to the host compared with it
    (``this_host``): ``this`` against each reference host, or, when ``this`` is itself a reference host,
    each other host against it."""
    keys = list(cross.hosts["host"])
    if not keys:
        return pd.DataFrame()
    this = this if this in keys else keys[0]
    refs = [h for h in (reference if reference is not None else reference_hosts(keys, reference_file)) if h in keys]
    if this in refs:
        pairs = [(this, h) for h in keys if h != this]
    else:
        pairs = [(ref, this) for ref in (refs or [h for h in keys if h != this])]
    labels = cross.labels
    rows = []
    r = like_with_like(crossing_ratios(cross.ratios))
    r = r[r["placement"] == "same_cpu"] if len(r) else r
    c = like_with_like(cross.crossing_costs)
    c = c[c["placement"] == "same_cpu"] if len(c) else c
    for ref, other in pairs:
        for kind, t, value, lo, hi, plo, phi in (
                ("ratio", r, "ratio", "ci_low", "ci_high", "pred_low_ratio", "pred_high_ratio"),
                ("crossing cost", c, "cost_ns", "ci_low_ns", "ci_high_ns", "pred_low_ns", "pred_high_ns")):
            if t.empty:
                continue
            here = t[t["host"] == other].drop_duplicates(["environment", "probe"]).set_index(["environment", "probe"])
            there = t[t["host"] == ref].drop_duplicates(["environment", "probe"]).set_index(["environment", "probe"])
            for (env, probe), a in there.iterrows():
                if (env, probe) not in here.index:
                    continue
                b = here.loc[(env, probe)]
                if same_software and a.get("probe_source") != b.get("probe_source"):
                    continue
                if kind == "ratio":
                    holds = _verdict(a[lo], a[hi]) == _verdict(b[lo], b[hi])
                    says = (_verdict(a[lo], a[hi]), _verdict(b[lo], b[hi]))
                else:
                    holds = bool(max(a[lo], b[lo]) <= min(a[hi], b[hi]))
                    says = ("", "")
                inside = (bool(a[plo] <= b[value] <= a[phi]) if a.get("n_campaigns", 1) > 1
                          and np.isfinite(a.get(plo, np.nan)) else math.nan)
                # the size too: inside the reference's prediction interval where it has one, else overlapping
                same_size = bool(inside) if isinstance(inside, bool) else bool(max(a[lo], b[lo]) <= min(a[hi], b[hi]))
                rows.append({"conclusion": f"{env} {kind}" + (f" ({probe}/{cross.baseline})" if kind == "ratio"
                                                              else f" ({probe})"),
                             "kind": kind, "environment": env, "probe": probe,
                             "reference_host": labels.get(ref, ref), "this_host": labels.get(other, other),
                             "reference_key": ref, "this_key": other,
                             "reference": _interval(a[value], a[lo], a[hi], ns=kind != "ratio"),
                             "here": _interval(b[value], b[lo], b[hi], ns=kind != "ratio"),
                             "reference_value": float(a[value]), "reference_low": float(a[lo]),
                             "reference_high": float(a[hi]), "here_value": float(b[value]),
                             "here_low": float(b[lo]), "here_high": float(b[hi]),
                             "here_over_reference": float(b[value] / a[value]) if a[value] else math.nan,
                             "reference_says": says[0], "here_says": says[1], "holds": holds,
                             "same_size": holds and same_size, "inside_reference_prediction": inside})
    return pd.DataFrame(rows)


def reproduction_sentences(table: pd.DataFrame) -> list[str]:
    """'On Intel Xeon · ... against AMD EPYC · ...: 9 of 14 conclusions hold; gvisor ratio ... changes
    by 3.6x (...)' per reference host."""
    from osbench_analysis.formatting import times_plain

    out = []
    if table.empty:
        return out
    for (ref, other), g in table.groupby(["reference_host", "this_host"], sort=False):
        held, sized = int(g["holds"].sum()), int(g["same_size"].sum())
        s = (f"{other} against the reference {ref}: {held} of {len(g)} of the reference's conclusions hold "
             f"there, {sized} of them in size too")
        changed = g[~g["holds"]]
        if len(changed):
            s += "; changed: " + "; ".join(
                f"{r.conclusion} {r.reference} on the reference, {r.here} on {other} ({times_plain(r.here_over_reference)})"
                for r in changed.itertuples())
        out.append(s)
    return out


# ------------------------------------------------------------------ how much of a difference the mechanism explains

def _diff(a_v, a_lo, a_hi, b_v, b_lo, b_hi) -> tuple[float, float, float]:
    """a - b with an interval from the two independent intervals' half-widths (each side's own,
    combined in quadrature: a normal approximation, as the delta method's intervals are)."""
    d = a_v - b_v
    hw = math.hypot(max(a_v - a_lo, a_hi - a_v), max(b_v - b_lo, b_hi - b_v))
    return d, d - hw, d + hw


def mechanism_share(here: pd.DataFrame, there: pd.DataFrame, *, baseline: str = "native",
                    level: float = 0.95, placement: str = "same_cpu", counts: pd.DataFrame | None = None
                    ) -> pd.DataFrame:
    """How much of the difference between two hosts' crossing costs the mechanism's native pieces
    account for (issue #28, item 5).  ``here``, ``there``: each host's samples (its sandbox round and the
    native campaign(s) with the prices' probes: mechanism.decompose, with ``counts``, the counted events:
    analysis.crossing_counts.load_counts() by default).  Per environment whose
    crossing and pieces both hosts measured: each host's crossing and pieces, their differences with
    intervals, and ``share`` = pieces difference / crossing difference (1: the pieces explain it all;
    near 0: the difference is in what the pieces leave out, the sandbox's own dispatch)."""
    from osbench_analysis.analysis import mechanism
    from osbench_analysis.formatting import time_plain

    a = mechanism.decompose(here, counts, baseline=baseline, level=level)[0]
    b = mechanism.decompose(there, counts, baseline=baseline, level=level)[0]
    keys = ["environment", "crossing_probe", "placement"]
    m = a.merge(b, on=keys, suffixes=("_here", "_there"))
    m = m[(m["placement"] == placement) & m["pieces_ns_here"].notna() & m["pieces_ns_there"].notna()]
    rows = []
    for r in m.to_dict("records"):
        cx = _diff(*(r[f"crossing{s}_{w}"] for w in ("here", "there") for s in ("_ns", "_low_ns", "_high_ns")))
        pc = _diff(*(r[f"pieces{s}_{w}"] for w in ("here", "there") for s in ("_ns", "_low_ns", "_high_ns")))
        share = pc[0] / cx[0] if cx[0] else math.nan
        rows.append({**{k: r[k] for k in keys},
                     "crossing_here_ns": r["crossing_ns_here"], "crossing_there_ns": r["crossing_ns_there"],
                     "pieces_here_ns": r["pieces_ns_here"], "pieces_there_ns": r["pieces_ns_there"],
                     "crossing_difference_ns": cx[0], "crossing_difference_low_ns": cx[1],
                     "crossing_difference_high_ns": cx[2], "pieces_difference_ns": pc[0],
                     "pieces_difference_low_ns": pc[1], "pieces_difference_high_ns": pc[2], "share": share,
                     "sentence": f"{r['environment']} ({r['crossing_probe']}): one crossing costs "
                                 f"{time_plain(r['crossing_ns_here'])} here, {time_plain(r['crossing_ns_there'])} "
                                 f"there; its native pieces {time_plain(r['pieces_ns_here'])} and "
                                 f"{time_plain(r['pieces_ns_there'])}: they account for "
                                 + (f"{share:.0%}" if np.isfinite(share) else "none")
                                 + " of the difference"})
    return pd.DataFrame(rows)
