"""Questions a researcher asks of sealed campaigns, each answered by one call.

    >>> from osbench_analysis import explore
    >>> s = explore.samples("pipe_pingpong", placement="cross_cpu", environments=["native", "gvisor"])
    >>> explore.run_summary(s)          # one row per worker run: median, spread, flags, slow?
    >>> explore.runs_agree(s)           # one verdict per condition, with its reason
    >>> explore.compare(s, "environment", "gvisor", "native")   # ratio with its interval
    >>> explore.plot_runs(s)            # every batch, one column per run

``samples`` reads only the campaigns asked for (by id, or by default the
newest of each environment) and keeps one condition's measured batches, each
with its interference flag.  Everything else takes that frame, so a question
is a line, and nothing re-reads the disk.  The statistics are the package's
own (``heterogeneity``, ``stats.ratio_ci``): this module only selects and
words them.  docs/python_api.md shows each call with its output.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis import formatting, stats
from osbench_analysis.stats import heterogeneity
from osbench_analysis.stats import quality
from osbench_analysis.store import campaigns as store
from osbench_analysis.errors import OsbenchError
from osbench_analysis.store.schema import GROUP_KEYS


class ExploreError(OsbenchError, ValueError):
    """A question that the selected data cannot answer as asked."""


#: The columns a condition is told apart by, and those a run is.
CONDITION = list(GROUP_KEYS)
RUN = [*GROUP_KEYS, "run"]
_SHOWN = ["campaign_id", "environment", "host", "probe", "variant", "placement", "run", "batch", "per_op_ns",
          "flagged", "cpu_start", "cpu_end", "nivcsw", "loadavg_1m"]


def _one_of(name: str, value, known) -> None:
    from osbench_analysis.analysis.pipeline import GUEST_ENVIRONMENTS

    known = sorted(set(known))
    if value is not None and not set([value] if isinstance(value, str) else value) <= set(known):
        guests = sorted(set([value] if isinstance(value, str) else value) & set(GUEST_ENVIRONMENTS))
        where = (f" ({', '.join(guests)} count guest instructions, not ns: explore.guests() compares GNU Mach "
                 "with Linux)" if name == "environment" and guests else "")
        raise ExploreError(f"{name} {value!r} is not in the selected campaigns{where}; have: "
                           f"{', '.join(known) or 'none'}")


def guests(root: str | Path | None = None, campaigns: list[str] | None = None, *, host: str | None = None):
    """GNU Mach (microkernel) and Linux (monolithic) on one emulated CPU, in one call: per Mach primitive
    and its Linux pair, the guest instructions per operation of each kernel and Linux / Mach (the table
    analyze.ipynb shows, microkernel.screen_table, its caption naming the host and campaigns read), and its
    figure (None without a mach or linux-tcg campaign).  ``campaigns``: the guests' campaign ids (default:
    one host's, picked as analyze() picks, analysis.pipeline.select_guest_campaigns; ``host`` another)."""
    from osbench_analysis.analysis import microkernel, pipeline
    from osbench_analysis.plots import microkernel as plots_microkernel

    ids = list(campaigns) if campaigns is not None else pipeline.select_guest_campaigns(root, host=host)
    if not ids:
        return pd.DataFrame(), None
    tab, _ = microkernel.from_campaigns(ids, root=root)
    if not len(tab):
        return tab, None
    out = microkernel.screen_table(tab)
    cat = store.catalog(root).set_index("campaign_id")
    labels = sorted(set(cat.loc[[c for c in ids if c in cat.index], "host_label"]))
    stamps = sorted({formatting.campaign_stamp(c) for c in ids})
    out.attrs["caption"] = (f"On {', '.join(labels) or 'the campaigns named'}: {len(ids)} guest campaign"
                            f"{'s' if len(ids) != 1 else ''} ({' to '.join(dict.fromkeys([stamps[0], stamps[-1]]))}). "
                            + out.attrs.get("caption", ""))
    return out, plots_microkernel.plot_microkernel(tab, screen=True)


@dataclass(frozen=True)
class ThisHost:
    """Which host this machine is (``this_host``): its ``key`` and ``label`` (hosts.identity), the sealed
    ``campaigns`` under ``root`` measured on it, whether it is a ``reference`` host (data/reference_hosts.txt)
    and which those are, and ``also``: sentences on derived hosts of the root whose every recorded fact
    agrees with this machine's (older campaigns that may be its own, hosts.identity.merges)."""
    key: str
    label: str
    campaigns: int
    reference: bool
    reference_hosts: tuple[str, ...]
    root: str
    also: tuple[str, ...] = ()
    reference_file: str = "data/reference_hosts.txt"

    def lines(self) -> list[str]:
        """What `osbench host` prints."""
        refs = ", ".join(self.reference_hosts) or "none named"
        return [f"this machine is host {self.key}: {self.label}",
                f"campaigns measured on it under {self.root}: {self.campaigns}"
                + ("" if self.campaigns else " (`osbench run` measures one; `make all` measures every environment)"),
                f"reference host of the paper: {'yes' if self.reference else 'no'} ({self.reference_file}: {refs})",
                *self.also]


def this_host(root: str | Path | None = None, *, reference_file: str | Path | None = None,
              facts: dict | None = None) -> ThisHost:
    """Which host this machine is: its identity from the facts it reads here (``facts``: a manifest's host
    record instead), how many campaigns under ``root`` it measured (derived campaigns merged into it
    included), and whether it is the paper's reference host (``reference_file``: default
    data/reference_hosts.txt)."""
    from osbench_analysis.analysis import hosts as ah
    from osbench_analysis.hosts import identity, machine

    me = identity.host_identity(facts if facts is not None else machine.identity_facts())
    cat = store.catalog(root)
    mine = cat[cat["host"] == me.key] if len(cat) else cat
    path = Path(reference_file) if reference_file is not None else ah.REFERENCE_HOSTS_FILE
    lines = path.read_text().splitlines() if path.is_file() else []
    named = [n for n in (ln.split("#", 1)[0].strip() for ln in lines) if n]   # as ah.reference_hosts reads it
    counted = set(mine["identity"]) if len(mine) else set()
    also = []
    for key, g in (cat[cat["derived"].astype(bool)].groupby("identity", sort=True) if len(cat) else ()):
        if key in counted:
            continue
        theirs = identity.host_identity(store.parsed_manifest(
            (Path(g["path"].iloc[0]) / store.MANIFEST_FILE).read_text()).host)
        agree = identity.agreeing_facts(theirs, me)
        if agree is not None:
            now = g["host"].iloc[0]
            also.append(f"{key} (derived, {len(g)} campaigns) agrees with this machine on every fact it records "
                        f"({identity.fact_text(agree)})" + (
                            f"; it agrees with {now} too, whose campaigns it is counted with: which of the two "
                            "machines measured them its manifests do not record" if now != key else ""))
    return ThisHost(me.key, me.label, len(mine), me.key in named or bool(counted & set(named)), tuple(named),
                    str(root or store.default_root()), tuple(also),
                    "data/reference_hosts.txt" if reference_file is None else str(reference_file))


def campaigns(root: str | Path | None = None) -> pd.DataFrame:
    """The sealed campaigns timed in host ns under root, newest first (id,
    environment, host, when, size).  Campaigns of an emulated guest count
    instructions instead: microkernel.from_campaigns compares those."""
    from osbench_analysis.analysis.pipeline import GUEST_ENVIRONMENTS

    cat = store.catalog(root)
    cat = cat[~cat["environment"].isin(GUEST_ENVIRONMENTS)]
    # a campaign's host is its machine's (`identity`: its manifest's own key when merged; `osbench list` says why)
    return cat.drop(columns=["path", "derived", "host_merge"]).sort_values(["created_utc", "campaign_id"],
                                                                           ascending=False, ignore_index=True)


def newest(environment: str = "native", n: int = 2, root: str | Path | None = None, *,
           probe: str | None = None, placement: str | None = None, host: str | None = None) -> list[str]:
    """The ids of the n newest campaigns of one environment on one host, oldest first (what a
    two-campaign comparison compares by default: the previous one, then the latest).  ``host``:
    its key or words of its label (analysis/hosts.py); default the host of the newest such
    campaign, so that the comparison never crosses hosts unasked.

    With ``probe`` (and ``placement``): the newest that measured it there.  Without:
    campaigns of the whole catalog, never a sweep campaign (analysis.sweep_campaign_ids:
    it measures the swept probes alone), unless too few others exist.  Never a campaign sealed as
    partial (store.catalog's ``partial``: name it to compare it)."""
    from osbench_analysis.analysis.pipeline import sweep_campaign_ids

    cat = store.catalog(root)
    _one_of("environment", environment, campaigns(root)["environment"])
    cat = cat[(cat["environment"] == environment) & ~store.sealed_partial(cat)]
    cat = cat.sort_values(["created_utc", "campaign_id"], ascending=False)
    if host is not None:
        from osbench_analysis.analysis.hosts import resolve_host

        cat = cat[cat["host"] == resolve_host(host, store.catalog(root))]
    ids = list(cat["campaign_id"])
    if probe is not None:
        _, held = store.load_campaigns(ids, root, columns=["campaign_id", "probe", "placement"])
        held = held[(held["probe"] == probe) & ((held["placement"] == placement) if placement else True)]
        ids = [c for c in ids if c in set(held["campaign_id"])]
        what = f" that measured {probe}" + (f" {placement}" if placement else "")
    else:
        sweep = sweep_campaign_ids(cat)
        whole = [c for c in ids if c not in sweep]
        ids = whole if len(whole) >= n else ids
        what = ""
    on = dict(zip(cat["campaign_id"], cat["host"]))
    ids = [c for c in ids if on[c] == on[ids[0]]] if ids else ids    # the newest one's host alone
    if len(ids) < n:
        where = f" on {cat.loc[cat['campaign_id'] == ids[0], 'host_label'].iloc[0]}" if ids else ""
        raise ExploreError(f"{environment} has {len(ids)} campaign(s){what}{where} under "
                           f"{root or store.default_root()}, {n} asked for (name campaigns of two hosts to "
                           "compare across hosts)")
    return ids[:n][::-1]


def samples(probe: str, *, variant: str | None = None, placement: str | None = None,
            environments: list[str] | None = None, campaigns: list[str] | None = None,
            root: str | Path | None = None, host: str | None = None) -> pd.DataFrame:
    """One probe's measured batches (warm-ups dropped) across campaigns and environments.

    ``campaigns``: ids to read; default the newest complete campaign of each
    environment on ``host`` (default: the host of the newest complete round,
    as analyze() chooses).  ``environments``, ``variant``, ``placement``: keep
    only those (default all).  Columns: the condition, ``host``, ``run``,
    ``batch``, ``per_op_ns``, ``flagged`` (interference or a severe outlier,
    quality.flag_batches) and what the flags are read from.
    """
    from osbench_analysis.analysis import pipeline as analysis  # select_campaigns: the same choice analyze() makes

    refs = analysis.select_campaigns(campaigns, root, host=host)
    if environments is not None:
        _one_of("environment", environments, [r.environment for r in refs])
        refs = [r for r in refs if r.environment in environments]
    hosts = {r.campaign_id: r.host for r in refs}
    _, s = store.load_campaigns([r.campaign_id for r in refs], root)
    _one_of("probe", probe, s["probe"].unique())
    s = full = s[s["probe"] == probe]
    _one_of("placement", placement, s["placement"].unique())
    _one_of("variant", variant, s["variant"].unique())
    if placement is not None:
        s = s[s["placement"] == placement]
    if variant is not None:
        s = s[s["variant"] == variant]
    for c in campaigns or []:        # nor a campaign named (a sweep campaign holds the swept probes alone)
        if c in hosts and not (s["campaign_id"] == c).any():
            raise ExploreError(f"campaign {c!r} has no {probe} batches with placement={placement!r}, "
                               f"variant={variant!r}; it has placements: "
                               f"{', '.join(sorted(set(full.loc[full['campaign_id'] == c, 'placement']))) or 'none'}")
    for env in environments or []:   # an environment asked for must not vanish silently
        if not (s["environment"] == env).any():
            raise ExploreError(f"environment {env!r} has no {probe} batches with placement={placement!r}, "
                               f"variant={variant!r}; it has placements: "
                               f"{', '.join(sorted(set(full.loc[full['environment'] == env, 'placement']))) or 'none'}")
    s = quality.flag_batches(s.assign(host=s["campaign_id"].map(hosts)))
    s = s[~s["warmup"]]
    return s[[c for c in _SHOWN if c in s.columns]].reset_index(drop=True)


def _conditions(s: pd.DataFrame):
    if s.empty:
        raise ExploreError("no batches selected: widen the probe, placement or environment asked for")
    return s.groupby(CONDITION, sort=False, observed=True)


def _slow_runs(run_medians: pd.Series, het: heterogeneity.Heterogeneity) -> set:
    """The runs of the slower group when the runs split clearly in two (the split is
    contiguous in sorted order, so the slowest round(fraction * R) runs)."""
    if not het.clear_split or not np.isfinite(het.slow_run_fraction):
        return set()
    k = int(round(het.slow_run_fraction * len(run_medians)))
    return set(run_medians.sort_values().index[len(run_medians) - k:])


def run_summary(s: pd.DataFrame) -> pd.DataFrame:
    """One row per worker run: its median, spread (interquartile range over the
    median), flagged batches, how it compares with the condition's typical
    run, and ``slow`` when it belongs to a clearly slower group of runs."""
    rows = []
    for key, g in _conditions(s):
        per_run = g.groupby("run", sort=True)
        med = per_run["per_op_ns"].median()
        het = heterogeneity.heterogeneity([r.to_numpy() for _, r in per_run["per_op_ns"]])
        slow = _slow_runs(med, het)
        typical = float(med.median())
        q = per_run["per_op_ns"].quantile([0.25, 0.75]).unstack()
        for run, m in med.items():
            rows.append({**dict(zip(CONDITION, key)), "host": g["host"].iloc[0] if "host" in g else "",
                         "run": run, "batches": int(per_run.size()[run]), "median_ns": float(m),
                         "spread": float((q.loc[run, 0.75] - q.loc[run, 0.25]) / m),
                         "vs_typical_run": float(m / typical),
                         "flagged": int(per_run["flagged"].sum()[run]) if "flagged" in g else 0,
                         "slow": run in slow})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Verdict:
    """Whether the runs of one condition agree, and why (from heterogeneity.heterogeneity)."""

    condition: tuple
    verdict: str          # agree | differ | slow minority | too few runs
    reason: str
    n_runs: int
    p_value: float
    spread: float         # slowest run median / fastest run median
    runs_needed: int


def _verdict(key: tuple, g: pd.DataFrame) -> Verdict:
    med = g.groupby("run")["per_op_ns"].median()
    h = heterogeneity.heterogeneity([r.to_numpy() for _, r in g.groupby("run")["per_op_ns"]])
    spread = float(med.max() / med.min()) if len(med) else math.nan
    if h.n_runs < 2:
        return Verdict(key, "too few runs", f"{h.n_runs} run: nothing to compare it with", h.n_runs,
                       math.nan, spread, 0)
    beyond = f"beyond their batch noise (p={h.p_value:.2g})"
    if not h.heterogeneous:
        return Verdict(key, "agree", f"the {h.n_runs} run medians lie within {formatting.times_plain(spread)} of each other, "
                       f"no more than their batch noise explains (p={h.p_value:.2g})", h.n_runs, h.p_value, spread, 0)
    if h.clear_split:
        k = int(round(h.slow_run_fraction * h.n_runs))
        enough = ("too few to include such runs reliably: run at least "
                  f"{h.runs_needed} (the typical run is the number to quote)" if h.runs_needed > h.n_runs
                  else "enough runs to include them, so the interval over runs accounts for them")
        return Verdict(key, "slow minority", f"{k} of {h.n_runs} runs are {formatting.times_plain(h.slow_run_factor)} slower than "
                       f"the others, {beyond}; {enough}", h.n_runs, h.p_value, spread, h.runs_needed)
    return Verdict(key, "differ", f"the {h.n_runs} run medians spread over {formatting.times_plain(spread)}, {beyond}, with no "
                   "separate group of slow runs: the interval, computed over runs, already includes that spread",
                   h.n_runs, h.p_value, spread, h.runs_needed)


def runs_agree(s: pd.DataFrame) -> pd.DataFrame:
    """Do the runs of each condition agree?  One row per condition: ``verdict``
    (agree, differ, slow minority, too few runs) and its ``reason`` in words."""
    rows = []
    for key, g in _conditions(s):
        v = _verdict(key, g)
        rows.append({**dict(zip(CONDITION, key)), "verdict": v.verdict, "reason": v.reason, "n_runs": v.n_runs,
                     "p_value": v.p_value, "spread": v.spread, "runs_needed": v.runs_needed})
    return pd.DataFrame(rows)


def compare(s: pd.DataFrame, by: str, this: str, baseline: str, *, level: float = stats.DEFAULT_LEVEL,
            ci_method: str = stats.DEFAULT_CI_METHOD, seed: int = stats.DEFAULT_SEED,
            n_resamples: int = 2000, across_hosts: bool = False) -> pd.DataFrame:
    """``this`` over ``baseline`` in column ``by`` (environment, campaign_id,
    host or placement), per condition that both have: ratio of per-op times
    with its interval (stats.ratio_ci, runs as the unit) and a sentence.
    Two sides measured on different hosts are compared only with ``across_hosts``
    (or ``by='host'``), and the sentence says so."""
    if by not in s.columns:
        raise ExploreError(f"by {by!r} is not a column of the samples; use one of environment, campaign_id, "
                           "host, placement")
    _one_of(by, [this, baseline], s[by].astype(str).unique())
    sides = s[s[by].astype(str).isin([this, baseline])]
    # environments and placements are compared within each host (host is matched); two campaigns may differ
    two_hosts = by == "host" or (by == "campaign_id" and "host" in s.columns and sides["host"].nunique() > 1)
    if two_hosts and by != "host" and not across_hosts:
        raise ExploreError(f"{this} and {baseline} were measured on different hosts "
                           f"({', '.join(sorted(sides['host'].unique()))}): pass across_hosts=True to compare "
                           "them anyway (analysis/hosts.py compares hosts)")
    across = " (across hosts)" if two_hosts else ""
    match = [k for k in (*CONDITION, "host") if k in s.columns and k not in (by, "campaign_id", "environment")
             and not (k == "host" and two_hosts)]
    if by == "placement":
        match += ["campaign_id", "environment"]
    rows = []
    for key, g in s.groupby(match, sort=False, observed=True):
        a, b = g[g[by].astype(str) == this], g[g[by].astype(str) == baseline]
        if a.empty or b.empty:
            continue
        r = stats.ratio_ci(a, b, level=level, ci_method=ci_method, seed=seed, n_resamples=n_resamples)
        slower = "slower" if r.ratio > 1 else "faster"
        factor = r.ratio if r.ratio > 1 else 1 / r.ratio
        verdict = (f"{this} is {formatting.times_plain(factor)} {slower} than {baseline}" if r.different else
                   f"no difference shown between {this} and {baseline}")
        # the sentence first: it is what a reader reads; the numbers behind it follow
        rows.append({**dict(zip(match, key)), by: this, "baseline": baseline,
                     "sentence": f"{verdict}{across}: ratio {formatting.with_ci_plain(r.ratio, r.ci_low, r.ci_high)} "
                                 f"({r.level:.0%} CI, {r.ci_method})",
                     "ratio": r.ratio, "ci_low": r.ci_low, "ci_high": r.ci_high, "level": r.level,
                     "different": r.different, "n_runs": r.numerator.n_runs, "baseline_n_runs": r.denominator.n_runs})
    if not rows:
        raise ExploreError(f"no condition has both {by}={this!r} and {by}={baseline!r}")
    return pd.DataFrame(rows)


def plot_runs(s: pd.DataFrame, *, title: str | None = None):
    """Every measured batch, one column per worker run, one panel per condition
    (plots.runs_plot)."""
    from osbench_analysis.plots import forest as plots

    return plots.runs_plot(s, run_summary(s), title=title)


__all__ = ["ExploreError", "ThisHost", "Verdict", "across_versions", "campaigns", "compare", "guests", "memory_events",
           "newest", "plot_runs", "run_summary", "runs_agree", "samples", "this_host", "versions"]


def ipc_across_kernels(campaigns: list[str] | None = None, root: str | Path | None = None, *,
                       host: str | None = None) -> pd.DataFrame:
    """Compare the IPC round trip across kernels, in one call: the request-reply round trips between two
    address spaces and between two threads of one, of every emulated-CPU kernel in one round (on one host,
    ``host`` or the one analyze() chooses, the newest campaign of each guest environment, as the paper reads
    them; or `campaigns`): Linux, Linux on Xen, GNU Mach, seL4 with and without its fastpath, in guest
    instructions per operation, each cell naming the kernel's operation and whether it is an analog
    (analysis.kernels.ipc_round_trip)."""
    from osbench_analysis.analysis import hosts as ah
    from osbench_analysis.analysis import kernels

    if campaigns is None:
        cat = store.catalog(root)
        campaigns = kernels.newest_round(cat[cat["host"] == ah.choose_host(cat, host)]) if len(cat) else []
    tab, _ = kernels.from_campaigns(campaigns, root) if campaigns else (pd.DataFrame(), None)
    if tab.empty:
        raise ExploreError(f"no emulated-CPU guest campaign under {root or 'data/campaigns'}: measure one with "
                           "`osbench run --environment sel4,mach,linux-tcg,xen-linux`")
    return kernels.ipc_round_trip(tab)


def memory_events(root: str | Path | None = None, campaigns: list[str] | None = None):
    """The matched operations in memory terms, in one call: per matched row and kernel, the footprint of
    one operation and its misses warm and polluted from the guests' memory-system model (the newest
    memory-events campaign of each guest and mode under root, or `campaigns`), as a table and its figure
    (analysis.memevents.matched_screen, plots.memevents)."""
    from osbench_analysis.analysis import memevents
    from osbench_analysis.plots import memevents as plots_memevents

    campaigns = campaigns or memevents.memory_campaigns(root)
    if not campaigns:
        raise ExploreError(f"no memory-events campaign under {root or 'data/campaigns'}: measure one with "
                           "`osbench run --environment linux-tcg,mach,sel4 --memory-events`")
    tab = memevents.from_campaigns(campaigns, root)["matched"]
    return memevents.matched_screen(tab), plots_memevents.plot_memory_matched(tab)


def across_versions(probe: str, root: str | Path | None = None, *, variant: str | None = None) -> pd.DataFrame:
    """How did `probe`'s cost change across Linux versions?  One row per version of the kernel-version
    sweep (`make kernels`; its newest round under root, analysis.versions.newest_round): its
    count with the default mitigations and with mitigations=off (guest instructions per operation, the
    median over boots; `exact`: every boot the same), each relative to the oldest version, and the change
    from the version before when it exceeds 5 %, with the kernel functions that moved most
    (data/kernel_profiles/).  `variant`: one parameter set (e.g. "bytes=64"); default the probe's own."""
    from osbench_analysis.analysis import versions

    hist = versions.history(versions.from_campaigns(root))
    h = hist[(hist["probe"] == probe) & (hist["variant"] == (variant or ""))] if len(hist) else hist
    if h.empty:
        known = sorted(set(hist["probe"])) if len(hist) else []
        raise ExploreError(f"no kernel-version sweep of {probe!r}{f' ({variant})' if variant else ''} under "
                           f"{root or 'data/campaigns'}" + (f" (measured: {', '.join(known)})" if known else
                                                            ": measure it with `make kernels`"))
    changes = versions.explain(versions.changes(h), versions.profiles())
    out = []
    for v in [x for x in versions.version_order() if x in set(h["version"])]:
        row = {"version": v, "release": h[h["version"] == v]["release"].iloc[0]}
        for mit, label in (("default", "default"), ("off", "mitigations=off")):
            r = h[(h["version"] == v) & (h["mitigations"] == mit)]
            row[label] = float(r["median"].iloc[0]) if len(r) else np.nan
            row[f"{label} / oldest"] = float(r["relative"].iloc[0]) if len(r) else np.nan
            row[f"{label}: exact"] = bool(r["exact"].iloc[0]) if len(r) else False
            c = changes[(changes["to"] == v) & (changes["mitigations"] == mit)]
            row[f"{label}: change > 5 %"] = "; ".join(
                f"{x['delta']:+,.0f} ({x['percent']:+.1f} %)" + (f", in {x['functions']}" if x["functions"] else "")
                for _, x in c.iterrows())
        out.append(row)
    tab = pd.DataFrame(out)
    tab.attrs["caption"] = (f"{probe}{f' ({variant})' if variant else ''} across Linux versions: guest "
                            "instructions per operation (QEMU TCG -icount, kernel and user), not time.")
    return tab


def versions(root: str | Path | None = None):
    """The kernel-version sweep at a glance: every change of more than 5 % between consecutive versions
    with the kernel functions that carry it (a DataFrame, largest first) and the LEBench-style figure."""
    from osbench_analysis.analysis import versions as analysis_versions
    from osbench_analysis.plots import versions as plots_versions

    hist = analysis_versions.history(analysis_versions.from_campaigns(root))
    if hist.empty:
        return pd.DataFrame(), None
    ch = analysis_versions.explain(analysis_versions.changes(hist), analysis_versions.profiles())
    ch = ch.reindex(ch["percent"].abs().sort_values(ascending=False).index).reset_index(drop=True)
    shown = ch[["from", "to", "mitigations", "condition", "before", "after", "delta", "percent", "functions",
                "profiled_delta", "confirmed"]]
    return shown, plots_versions.plot_history(hist, analysis_versions.version_order())


@dataclass(frozen=True)
class TwoCampaigns:
    """Two campaigns of one environment compared (older first): the comparison table and the runs'
    figure, or, with fewer than two to compare, an empty table, no figure and a note saying so."""
    pair: list[str]
    table: pd.DataFrame
    figure: object | None
    note: str


def two_campaigns(environment: str, probe: str, *, placement: str | None = None, pair: list[str] | None = None,
                  root: str | Path | None = None, host: str | None = None) -> TwoCampaigns:
    """Did the newest campaign move against the one before it?  ``pair`` (two ids, older first), else
    the two newest of ``environment`` on one host that measured ``probe`` there (newest()).  A machine
    with one round has nothing to compare yet: the note says so and how to get a second, never an error."""
    if pair is None:
        try:
            pair = newest(environment, 2, root, probe=probe, placement=placement, host=host)
        except ExploreError as e:
            return TwoCampaigns([], pd.DataFrame(), None,
                                f"nothing to compare yet: {e}; measure another round (make measure) and run this again")
    two = samples(probe, placement=placement, campaigns=pair, root=root)
    return TwoCampaigns(list(pair), compare(two, "campaign_id", pair[1], pair[0]), plot_runs(two), "")
