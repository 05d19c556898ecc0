"""What a campaign measures, environment by environment, and how much more it needs.

`_EnvRun` is one environment's part of an interleaved campaign set: its
session, the conditions it measures (those of its placements that the
configuration keeps for it), and what its workers have returned so far.
Adaptive precision judges those runs (`_precision_report`, through
stats/precision.py) and projects the worker runs still to go
(`_runs_to_go`, the measuring bar's total); `_needs_more` says whether a
condition gets another run.  The round loop that acts on it is rounds.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from osbench_analysis.catalog import registry
from osbench_analysis.environments import Environment, Session
from osbench_analysis.measure.config import Condition
from osbench_analysis.store.records import RunRecord
from osbench_analysis.store.schema import samples_frame


@dataclass
class _EnvRun:
    """One environment's part of an interleaved campaign set."""
    env: Environment
    session: Session
    campaign_id: str
    rows: list[dict] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    report: object = None
    conditions: list[Condition] = field(default_factory=list)
    boots: int | None = None      # a guest counting instructions: stopped after this many boots (guest_boots)
    stopped: str = ""             # why its remaining runs were skipped (its server died: Session.dead)
    failed_groups: int = 0        # consecutive groups of which every worker failed

    def samples(self):
        return samples_frame(self.rows, campaign_id=self.campaign_id, environment=self.env.name,
                             arch_class=self.env.arch_class)


def _run_key(env: str, probe: str, params_json: str, placement: str, run: int) -> tuple:
    return env, probe, params_json, placement, run


def _precision_report(p: _EnvRun, target, elapsed_s: float, seconds_per_round: float):
    import numpy as np
    import pandas as pd

    from osbench_analysis.stats import precision

    samples = p.samples()
    # Only batches of workers that finished: a crashed worker's partial batches are not a run.
    ok = {(r.probe, r.variant, r.placement, r.run) for r in p.runs if r.status == "ok"}
    # The host-state canaries are controls measured alongside every round: they never decide the stop.
    keep = np.array([k in ok and k[0] not in registry.CANARY_PROBES
                     for k in zip(samples["probe"], samples["variant"], samples["placement"], samples["run"])],
                    dtype=bool)
    if not keep.any():  # every worker failed: nothing to judge, nothing more to add
        return precision.CampaignPrecision(target, pd.DataFrame(columns=[*precision.CONDITION_KEYS, *_STATUS_COLUMNS]),
                                           True, "no_successful_run", elapsed_s)
    return precision.campaign_precision(samples[keep], target, elapsed_s=elapsed_s,
                                        seconds_per_round=seconds_per_round)


#: the per-condition columns CampaignPrecision.to_manifest reads
_STATUS_COLUMNS = ("n_runs", "n_batches", "estimate_ns", "halfwidth_rel", "met", "reason", "runs_needed",
                   "heterogeneous", "runs_needed_heterogeneity", "stop")


def _ok_variants(p: _EnvRun, cond: Condition) -> set[str]:
    """The variant labels a condition's successful runs were recorded under (the label names the file
    system the worker found, so it is known only from the runs): how the precision report keys it."""
    return {r.variant for r in p.runs if r.status == "ok" and r.probe == cond.probe
            and r.placement == cond.placement and r.params_json == cond.params_json}


def _needs_more(p: _EnvRun, cond: Condition) -> bool:
    """Another run for this condition?  Never for one without a successful run:
    more of what always fails would not help."""
    return any(p.report.needs_more(cond.probe, v, cond.placement) for v in _ok_variants(p, cond))


def _runs_to_go(p: _EnvRun, open_conditions: list[Condition], run: int, max_runs: int) -> int:
    """How many more worker runs an environment's open conditions are projected to need, each at
    least one more and at most max_runs in all: the precision report's runs_needed (and the runs that
    would include a slow minority); the canaries go on as long as the environment's longest."""
    table = p.report.conditions if p.report is not None else None
    rounds: list[int] = []
    for cond in open_conditions:
        if cond.probe in registry.CANARY_PROBES:
            continue
        need = run + 1
        if table is not None and len(table):
            rows = table[(table["probe"] == cond.probe) & (table["placement"] == cond.placement)
                         & table["variant"].isin(_ok_variants(p, cond))]
            for col in ("runs_needed", "runs_needed_heterogeneity"):
                if col in rows and rows[col].notna().any():
                    need = max(need, int(rows[col].max()))
        rounds.append(min(max(need - run, 1), max_runs - run))
    return sum(rounds) + max(rounds, default=0) * sum(c.probe in registry.CANARY_PROBES for c in open_conditions)


def projected_runs(env_name: str, conditions: list[Condition], target, first_round: int,
                   root=None) -> dict[tuple, int]:
    """(probe, placement) -> the worker runs precision is projected to give each condition, before any run:
    what the newest sealed campaign of this environment on this host, with the same target, ended up
    needing (its conditions' runs_needed and the runs that include a slow minority), at least the first
    round and at most max_runs; the first round where no such campaign holds the condition.  The
    measuring bar starts at this total (rounds.py), so that it does not jump when precision adds runs."""
    import os

    from osbench_analysis.store import campaigns as store

    out = {(c.probe, c.placement): first_round for c in conditions}
    if target is None:
        return out
    try:
        cat = store.catalog(root)
    except (OSError, store.StoreError):
        return out
    node = os.uname().nodename
    cat = cat[(cat["environment"] == env_name) & (cat["hostname"] == node)] if len(cat) else cat
    for cid in cat.sort_values("created_utc", ascending=False)["campaign_id"] if len(cat) else []:
        try:
            prec = store.load_campaign(cid, root).manifest.precision or {}
        except (OSError, store.StoreError, ValueError):
            continue
        t = prec.get("target") or {}
        if t.get("target_rel") != target.target_rel:
            continue
        for row in prec.get("conditions", []):
            key = (row.get("probe"), row.get("placement"))
            if key in out:
                need = max(int(row.get("runs_needed") or 0), int(row.get("runs_needed_heterogeneity") or 0),
                           int(row.get("n_runs") or 0))
                out[key] = max(out[key], min(need, target.max_runs))
        break
    return out
