"""Numbers that survive a re-run: campaigns of one host as a level of replication.

An interval over the worker runs of one campaign says where another run of
that campaign would land, not where a re-run of the campaign hours later
would: the host drifts between campaigns by more than runs differ inside one.
This module

- takes the *comparable* campaigns of a campaign (comparable.py): same host (hosts.identity:
  CPU, kernel, ..., never the name; a derived identity merged into the recorded one
  of its machine, hosts.identity.merges), environment, probe code (``probes.source_sha256``); the
  parameters that define a condition are in its (probe, variant, placement);
- reduces each campaign's condition to one value, the mean log run median
  (the engine's estimand) with its standard error over runs (``campaign_values``);
- pools them with stats.pooled (random effects, Hartung-Knapp) per condition,
  for absolute times, for ratios to the baseline environment paired within each
  campaign round (the campaigns one ``osbench run`` made together, interleaved)
  and for crossing costs (differences in ns, paired the same way);
- compares host-state canaries between and within campaigns;
- checks the pooled intervals on the data: leave one campaign out.

Nothing here reads files except through ``catalog_manifests`` (the catalog) and the values cache.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

# which campaigns pool (comparable.py), named here as they always were
from osbench_analysis.analysis.comparable import (catalog_manifests, comparable_campaigns, comparable_key,  # noqa: F401
                                                  machine_keys, round_of)
from osbench_analysis.stats.pooled import OVER_CAMPAIGNS, WITHIN_ONE_CAMPAIGN, random_effects

CONDITION = ["host", "environment", "probe", "variant", "placement"]
#: The host-state canaries (registry family "canary"); measured in every round of every campaign.
CANARY_PROBES = ("canary_cpu", "canary_memcpy", "canary_syscall")
#: In campaigns measured before the canaries existed: native probes that do fixed work of the same kinds
#: (a vDSO clock read: CPU only; an 8 MiB copy: memory bandwidth; getpid: one kernel entry).
PROXY_CANARIES = ("clock_gettime", "memcpy_bw", "null_syscall")


@dataclass
class Pooling:
    """Everything the analysis pools over campaigns (Analysis.pooling)."""

    campaigns: dict[str, list[str]]          # primary campaign -> comparable campaigns pooled (oldest first)
    rounds: dict[str, str]                   # campaign -> its round (campaigns measured together)
    values: pd.DataFrame                     # campaign_values of every pooled campaign
    estimates: pd.DataFrame                  # pooled_estimates
    ratios: pd.DataFrame                     # pooled_ratios (environment / baseline, paired within rounds)
    crossing_costs: pd.DataFrame             # pooled_crossing_costs
    canaries: pd.DataFrame                   # canary_table (the canaries, else the proxy canaries)
    level: float = 0.95
    baseline: str = "native"

    @property
    def n_campaigns_max(self) -> int:
        return max((len(v) for v in self.campaigns.values()), default=0)

    condition = tuple(CONDITION)   # the columns that name one condition

    def spread(self) -> pd.DataFrame:
        return spread_table(self.estimates, self.ratios)

    def paired(self) -> pd.DataFrame:   # log ratios environment / baseline within each round
        return paired_values(self.values, self.rounds, self.baseline)

    def leave_one_out(self) -> list["LeaveOneOut"]:
        paired = paired_values(self.values, self.rounds, self.baseline)
        return [leave_one_campaign_out(self.values, level=self.level),
                leave_one_campaign_out(paired.assign(campaign_id=paired["round"]), ["baseline", *CONDITION],
                                       scale="ratio", level=self.level)]


def pool_campaigns(primary: dict, root=None, *, baseline: str = "native", level: float = 0.95,
                   loaded: dict | None = None, probes: list[str] | None = None) -> Pooling:
    """Pool each primary campaign (id -> Manifest) with its comparable campaigns
    measured no later than it.  ``loaded``: campaign id -> store.Campaign already
    in memory (the others are loaded, seals verified); ``probes``: pool only
    these (the canaries and their stand-ins always)."""
    from osbench_analysis.analysis.sweeps import sweep_only
    from osbench_analysis.store import values_cache

    # a sweep campaign (sweeps.sweep_only) is read for the scalability fits alone, never pooled; one sealed as
    # partial (Manifest.partial: its environment stopped, or most runs failed) only when it is a primary one
    whole = catalog_manifests(root)
    every = {cid: m for cid, m in whole.items() if not sweep_only(m.config) and not m.partial}
    every.update(primary)
    comparable = comparable_campaigns(primary, {**whole, **every})
    comparable = {cid: [c for c in ids if c in every and every[c].created_utc <= primary[cid].created_utc]
                  for cid, ids in comparable.items()}
    loaded = dict(loaded or {})
    ids = list(dict.fromkeys(c for ids in comparable.values() for c in ids))
    # a campaign's values are its own: kept on disk (values_cache); those in memory and not kept yet computed
    # in one pass; the others read (or loaded, seal verified, and computed); a damaged one left out, named
    ahead = _values_at_once({cid: loaded[cid] for cid in ids if cid in loaded})
    per_campaign = {}
    for cid in ids:
        if (v := ahead[cid] if cid in ahead else values_cache.derived(campaign_values, cid, root)) is not None:
            per_campaign[cid] = v
    comparable = {k: [c for c in ids if c in per_campaign] for k, ids in comparable.items()}
    every_value = pd.concat(per_campaign.values(), ignore_index=True)
    # each campaign's values carry its manifest's own identity (values_cache): its machine's key here
    machines = machine_keys([*whole.values(), *primary.values()])
    every_value["host"] = every_value["host"].map(lambda k: machines.get(k, k))
    if probes is not None:
        keep = every_value["probe"].isin([*probes, *CANARY_PROBES, *PROXY_CANARIES])
        every_value = every_value[keep].reset_index(drop=True)
    rounds = {cid: round_of(every[cid]) for cid in every_value["campaign_id"].unique()}
    is_canary = every_value["probe"].isin(CANARY_PROBES)
    if is_canary.any():
        canaries = canary_table(every_value[is_canary], rounds, CANARY_PROBES, level=level)
    else:   # before the canaries: the baseline's fixed-work probes stand in (in a sandbox they measure it)
        native = every_value[every_value["environment"] == baseline]
        canaries = canary_table(native, rounds, PROXY_CANARIES, level=level)
    values = every_value[~is_canary].reset_index(drop=True)    # the primitives; the canaries are controls
    paired = paired_values(values, rounds, baseline)
    return Pooling(comparable, rounds, values, pooled_estimates(values, level), pooled_ratios(paired, level),
                   pooled_crossing_costs(paired, level), canaries, level, baseline)


def _values_at_once(loaded: dict) -> dict:
    """campaign_values of each campaign in memory (id -> store.Campaign), as values_cache.derived gives it:
    read where kept, the others computed in one pass over their samples and kept each.  One groupby
    instead of one per campaign (100 campaigns: 1.1 -> 0.3 s); its groups are per campaign, in the order
    they appear, so each campaign's table is the one computed alone, to the last bit."""
    from osbench_analysis.hosts.identity import host_identity
    from osbench_analysis.store import values_cache

    out, todo = {}, []
    for cid, c in loaded.items():
        at = values_cache.entry(campaign_values, c.path)
        got = values_cache.read(at)
        if got is not None:
            out[cid] = got
        else:
            todo.append((cid, c, at))
    if todo:
        every = campaign_values(pd.concat([c.samples.assign(host=host_identity(c.manifest.host).key)
                                           for _, c, _ in todo], ignore_index=True))
        for cid, _, at in todo:
            mine = every[every["campaign_id"] == cid].reset_index(drop=True)
            values_cache.keep(at, mine)
            out[cid] = mine
    return out


POOLED_COLUMNS = ["pooled", "n_campaigns", "interval_over", "between_campaign_sd"]


def annotate_estimates(estimates: pd.DataFrame, pooling: "Pooling | None") -> pd.DataFrame:
    """The per-campaign estimate table with what its interval covers: every row
    is one campaign (``pooled`` False, ``n_campaigns`` 1, ``interval_over``
    'within one campaign'); ``between_campaign_sd`` is the spread of the host's
    comparable campaigns for that condition (NaN without another), reported beside."""
    out = estimates.assign(pooled=False, n_campaigns=1, interval_over=WITHIN_ONE_CAMPAIGN)
    tau = pd.Series(np.nan, index=out.index)
    if pooling is not None and len(pooling.estimates):
        t = pooling.estimates[pooling.estimates["n_campaigns"] > 1].set_index(CONDITION)["between_campaign_sd"]
        keys = pd.MultiIndex.from_frame(out[CONDITION].astype(object))
        tau = pd.Series(t.reindex(keys).to_numpy(), index=out.index)
    return out.assign(between_campaign_sd=tau)


def pooled_rows(pooling: "Pooling | None") -> pd.DataFrame:
    """Pooled estimates as rows of the estimate table (``pooled`` True), for
    conditions with more than one comparable campaign."""
    if pooling is None or pooling.estimates.empty:
        return pd.DataFrame()
    p = pooling.estimates[(pooling.estimates["n_campaigns"] > 1) & ~pooling.estimates["probe"].isin(CANARY_PROBES)]
    return p.assign(campaign_id="pooled:" + p["campaigns"], ci_method="pooled-t", confidence=p["level"],
                    quoted="mean over campaigns", note=p["note"]).drop(columns=["campaigns"]).reset_index(drop=True)


# ------------------------------------------------------------------ one value per campaign

def campaign_values(samples: pd.DataFrame) -> pd.DataFrame:
    """Per campaign and condition: ``y`` the mean log run median, ``se`` its
    standard error over runs (NaN with one run), ``n_runs``, and ``estimate_ns`` = exp(y)."""
    s = samples[~samples["warmup"].astype(bool)] if "warmup" in samples.columns else samples
    keys = ["campaign_id", *[k for k in CONDITION if k in s.columns]]
    run_med = s.groupby([*keys, "run"], sort=False, observed=True)["per_op_ns"].median()
    logs = np.log(run_med).groupby(level=list(range(len(keys))), sort=False)
    out = pd.DataFrame({"y": logs.mean(), "sd": logs.std(ddof=1), "n_runs": logs.size()}).reset_index()
    out["se"] = out["sd"] / np.sqrt(out["n_runs"])
    out["estimate_ns"] = np.exp(out["y"])
    return out.drop(columns="sd")


def _pool_groups(values: pd.DataFrame, keys: list[str], level: float, *, log: bool = True) -> pd.DataFrame:
    rows = []
    for key, g in values.groupby(keys, sort=False, observed=True):
        g = g[np.isfinite(g["y"]) & np.isfinite(g["se"])]
        if g.empty:
            continue
        p = random_effects(g["y"].to_numpy(), g["se"].to_numpy(), level)
        back = np.exp if log else (lambda v: v)
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                     "pooled": p.n_campaigns > 1, "n_campaigns": p.n_campaigns,
                     "estimate": float(back(p.estimate)), "ci_low": float(back(p.ci_low)),
                     "ci_high": float(back(p.ci_high)), "between_campaign_sd": p.tau,
                     # the plain SD of the campaign values (tau subtracts what their runs explain)
                     "campaign_values_sd": float(g["y"].std(ddof=1)) if len(g) > 1 else math.nan,
                     "pred_low": float(back(p.pred_low)), "pred_high": float(back(p.pred_high)),
                     "interval_over": p.interval_over, "campaigns": ",".join(map(str, g["campaign_id"])),
                     "level": level, "note": p.note})
    return pd.DataFrame(rows)


def pooled_estimates(values: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per condition (host, environment, probe, variant, placement): the pooled
    per-op time ``estimate_ns`` [``ci_low_ns``, ``ci_high_ns``] over campaigns,
    ``between_campaign_sd`` (tau, log scale), ``n_campaigns`` and what the
    interval covers (``interval_over``).  A campaign whose condition has one
    run (no standard error) is left out of the pool."""
    t = _pool_groups(values, CONDITION, level)
    if t.empty:
        return t
    return t.rename(columns={"estimate": "estimate_ns", "ci_low": "ci_low_ns", "ci_high": "ci_high_ns",
                             "pred_low": "pred_low_ns", "pred_high": "pred_high_ns"})


def _without_fs(variant: str) -> str:
    return ",".join(p for p in str(variant or "").split(",") if p and not p.startswith("fs="))


def paired_values(values: pd.DataFrame, rounds: dict[str, str], baseline: str = "native") -> pd.DataFrame:
    """Log ratios environment / baseline per campaign round, both sides from the
    same round (measured interleaved): y = y_env - y_base, se = sqrt(se_env^2 + se_base^2).
    The fs= part of a variant is the environment's, not the condition's."""
    v = values.assign(round=values["campaign_id"].map(rounds), variant=values["variant"].map(_without_fs))
    base = v[v["environment"] == baseline]
    other = v[v["environment"] != baseline]
    on = ["host", "round", "probe", "variant", "placement"]
    m = other.merge(base[[*on, "y", "se", "estimate_ns"]], on=on, suffixes=("", "_base"))
    m["y_abs"], m["se_abs"] = m["y"], m["se"]
    m["y"] = m["y_abs"] - m["y_base"]
    m["se"] = np.sqrt(m["se_abs"] ** 2 + m["se_base"] ** 2)
    m["diff_ns"] = m["estimate_ns"] - m["estimate_ns_base"]
    # delta method on each side: Var(exp(y)) ~ exp(y)^2 Var(y)
    m["diff_se_ns"] = np.sqrt((m["estimate_ns"] * m["se_abs"]) ** 2 + (m["estimate_ns_base"] * m["se_base"]) ** 2)
    return m.assign(baseline=baseline)


def pooled_ratios(paired: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Environment / baseline ratio per condition pooled over rounds:
    ``ratio`` [``ci_low``, ``ci_high``], ``between_campaign_sd`` of the log ratio."""
    t = _pool_groups(paired.assign(campaign_id=paired["round"]), ["baseline", *CONDITION], level)
    return t.rename(columns={"estimate": "ratio", "pred_low": "pred_low_ratio", "pred_high": "pred_high_ratio"}) \
        if len(t) else t


def pooled_crossing_costs(paired: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """What one crossing adds over the baseline (ns), pooled over rounds on the ns scale; per environment its
    crossing probe (architectures.crossing_candidates: a file server's is a stat, never its null system call)."""
    from osbench_analysis.analysis.architectures import crossing_candidates

    parts = []
    for env, g in paired.groupby("environment", sort=False):
        probe = next((p for p in crossing_candidates(env, g["arch_class"].iloc[0] if "arch_class" in g else None)
                      if (g["probe"] == p).any()), None)
        if probe is not None:
            parts.append(g[g["probe"] == probe])
    if not parts:
        return pd.DataFrame()
    d = pd.concat(parts, ignore_index=True)
    d = d.assign(campaign_id=d["round"], y=d["diff_ns"], se=d["diff_se_ns"])
    t = _pool_groups(d, ["baseline", *CONDITION], level, log=False)
    return t.rename(columns={"estimate": "cost_ns", "ci_low": "ci_low_ns", "ci_high": "ci_high_ns",
                             "between_campaign_sd": "between_campaign_sd_ns",
                             "campaign_values_sd": "campaign_values_sd_ns",
                             "pred_low": "pred_low_ns", "pred_high": "pred_high_ns"}) if len(t) else t


# ------------------------------------------------------------------ spread at a glance

def spread_table(pooled: pd.DataFrame, ratios: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per environment: the median between-campaign SD (log scale, ~ relative
    spread) over its pooled conditions, for absolute times and for ratios to the baseline."""
    def med(t, what):
        t = t[t["n_campaigns"] > 1] if t is not None and len(t) else pd.DataFrame()
        if t.empty:
            return pd.DataFrame(columns=["environment", f"tau_{what}_median", f"sd_{what}_median",
                                         f"conditions_{what}"])
        g = t.groupby("environment", sort=False)["between_campaign_sd"]
        sd = t.groupby("environment", sort=False)["campaign_values_sd"]
        return pd.DataFrame({f"tau_{what}_median": g.median(), f"sd_{what}_median": sd.median(),
                             f"conditions_{what}": g.size(),
                             "n_campaigns": t.groupby("environment", sort=False)["n_campaigns"].max()
                             }).reset_index()
    a = med(pooled, "absolute")
    r = med(ratios, "ratio")
    out = a.merge(r.drop(columns=[c for c in ("n_campaigns",) if c in r.columns]), on="environment", how="outer")
    return out


# ------------------------------------------------------------------ leave one campaign out

@dataclass(frozen=True)
class LeaveOneOut:
    scale: str                    # absolute | ratio
    conditions: int
    checks: int                   # (condition, left-out campaign) pairs
    pairs: int                    # (condition, campaign, other campaign) triples behind the before-figures
    single_interval_covers: float  # before: one other campaign's within-campaign interval covers the left-out estimate
    single_intervals_overlap: float
    pooled_ci_covers: float       # the others' pooled CI (for mu) covers the left-out estimate
    prediction_covers: float      # the others' prediction interval for a new campaign's estimate covers it
    expected_single: float        # what the before-figure would be if runs were the only variance (~0.83)
    level: float

    def sentence(self) -> str:
        return (f"Leave one campaign out ({self.scale}, {self.conditions} conditions, {self.checks} checks): "
                f"one campaign's {self.level:.0%} interval covered another's estimate in "
                f"{self.single_interval_covers:.0%} (expected {self.expected_single:.0%} if runs were the only "
                f"variance); the pooled interval of the others in {self.pooled_ci_covers:.0%}; "
                f"their prediction interval in {self.prediction_covers:.0%} (target {self.level:.0%}).")


def leave_one_campaign_out(values: pd.DataFrame, keys: list[str] | None = None, *, scale: str = "absolute",
                           level: float = 0.95, campaign_col: str = "campaign_id") -> LeaveOneOut:
    """For each condition with >= 3 campaigns and each campaign i: does the
    interval made from the others cover campaign i's estimate?  ``values``:
    campaign_values (or paired_values with campaign_col='round')."""
    keys = keys or CONDITION
    single = overlap = ci = pred = n_single = checks = conds = 0
    for _, g in values.groupby([k for k in keys if k in values.columns], sort=False, observed=True):
        g = g[np.isfinite(g["y"]) & np.isfinite(g["se"]) & (g["n_runs"] >= 2)] if "n_runs" in g else g
        if len(g) < 3:
            continue
        conds += 1
        y, se = g["y"].to_numpy(), g["se"].to_numpy()
        r = g["n_runs"].to_numpy() if "n_runs" in g else np.full(len(g), 5)
        tq = sps.t.ppf(0.5 + level / 2, np.maximum(r - 1, 1))
        for i in range(len(g)):
            others = np.arange(len(g)) != i
            p = random_effects(y[others], se[others], level)
            checks += 1
            ci += p.ci_low <= y[i] <= p.ci_high
            pred += p.pred_low <= y[i] <= p.pred_high
            for j in np.nonzero(others)[0]:
                n_single += 1
                single += abs(y[i] - y[j]) <= tq[j] * se[j]
                overlap += abs(y[i] - y[j]) <= tq[j] * se[j] + tq[i] * se[i]
    frac = (lambda a, b: a / b if b else math.nan)
    z = sps.norm.ppf(0.5 + level / 2)
    return LeaveOneOut(scale, conds, checks, n_single, frac(single, n_single), frac(overlap, n_single), frac(ci, checks),
                       frac(pred, checks), float(2 * sps.norm.cdf(z / math.sqrt(2)) - 1), level)


# ------------------------------------------------------------------ host-state canaries

def canary_table(values: pd.DataFrame, rounds: dict[str, str], canaries=CANARY_PROBES, *,
                 level: float = 0.95) -> pd.DataFrame:
    """Each campaign's canaries against the same canary in the first comparable
    campaign of its environment: ``ratio`` [``ci_low``, ``ci_high``] (Welch on
    log run medians, normal approximation), and ``within_sd`` the canary's
    spread across the runs (rounds) of the campaign: a host that got slower
    between or noisier within campaigns shows here."""
    c = values[values["probe"].isin(canaries)]
    rows = []
    z = sps.norm.ppf(0.5 + level / 2)
    for (host, env, probe, variant, placement), g in c.groupby(CONDITION, sort=False):
        g = g.assign(round=g["campaign_id"].map(rounds)).sort_values("round")
        first = g.iloc[0]
        for r in g.itertuples():
            d = r.y - first.y
            # the reference itself: ratio 1 by definition, no interval
            s = math.sqrt(r.se ** 2 + first.se ** 2) if r.campaign_id != first.campaign_id else math.nan
            rows.append({"host": host, "environment": env, "probe": probe, "placement": placement,
                         "campaign_id": r.campaign_id, "round": r.round, "reference": first.campaign_id,
                         "ratio": math.exp(d), "ci_low": math.exp(d - z * s), "ci_high": math.exp(d + z * s),
                         "within_sd": r.se * math.sqrt(r.n_runs), "n_runs": r.n_runs})
    return pd.DataFrame(rows)


def host_state_sentences(canaries: pd.DataFrame, threshold: float = 1.05) -> list[str]:
    """'the host was 1.2x slower in campaign B: canary x1.19 [1.15, 1.23]' for
    each campaign whose canary interval lies wholly beyond ``threshold``."""
    out = []
    for r in canaries.itertuples():
        if r.campaign_id == r.reference:
            continue
        if r.ci_low > threshold or r.ci_high < 1 / threshold:
            word = "slower" if r.ratio > 1 else "faster"
            factor = r.ratio if r.ratio > 1 else 1 / r.ratio
            out.append(f"{r.environment}: the host was {factor:.2f}x {word} in {r.campaign_id} than in "
                       f"{r.reference}: {r.probe} x{r.ratio:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]")
    return out


def canary_normalisation(values: pd.DataFrame, canary: str, environment: str = "native",
                         level: float = 0.95) -> dict:
    """Does dividing each campaign's times by its canary shrink the
    between-campaign spread?  Median tau over the environment's pooled
    conditions, raw and normalised (the canary itself left out)."""
    v = values[values["environment"] == environment]
    c = v[v["probe"] == canary][["campaign_id", "y", "se"]].rename(columns={"y": "yc", "se": "sec"})
    rest = v[v["probe"] != canary].merge(c, on="campaign_id")
    raw = pooled_estimates(rest, level)
    norm = pooled_estimates(rest.assign(y=rest["y"] - rest["yc"], se=np.hypot(rest["se"], rest["sec"])), level)
    raw, norm = raw[raw["n_campaigns"] > 1], norm[norm["n_campaigns"] > 1]
    m = raw.merge(norm, on=CONDITION, suffixes=("_raw", "_norm"))
    # the plain spread of the campaign values too: tau subtracts the within-campaign variance, which
    # normalising increases (the canary's own noise), so tau alone would flatter the normalisation
    spread = lambda y: y.groupby([rest[k] for k in CONDITION]).std(ddof=1).median()  # noqa: E731
    return {"canary": canary, "environment": environment, "conditions": len(m),
            "sd_raw_median": float(spread(rest["y"])) if len(m) else math.nan,
            "sd_normalised_median": float(spread(rest["y"] - rest["yc"])) if len(m) else math.nan,
            "tau_raw_median": float(m["between_campaign_sd_raw"].median()) if len(m) else math.nan,
            "tau_normalised_median": float(m["between_campaign_sd_norm"].median()) if len(m) else math.nan,
            "shrank_fraction": float((m["between_campaign_sd_norm"] < m["between_campaign_sd_raw"]).mean())
            if len(m) else math.nan}


__all__ = ["CANARY_PROBES", "CONDITION", "POOLED_COLUMNS", "LeaveOneOut", "annotate_estimates", "pooled_rows", "Pooling", "catalog_manifests", "pool_campaigns", "OVER_CAMPAIGNS", "PROXY_CANARIES", "WITHIN_ONE_CAMPAIGN",
           "campaign_values", "canary_normalisation", "canary_table", "comparable_campaigns", "comparable_key",
           "host_state_sentences", "leave_one_campaign_out", "paired_values", "pooled_crossing_costs",
           "pooled_estimates", "pooled_ratios", "round_of", "spread_table"]


# ------------------------------------------------------------------ what the paper says

def coverage_cells(path=None) -> pd.DataFrame:
    """Section R of benchmarks/stats_coverage.py (data/validation/campaign_coverage.jsonl)."""
    import json

    from osbench_analysis.paths import REPO_ROOT

    path = Path(path or REPO_ROOT / "data" / "validation" / "campaign_coverage.jsonl")
    if not path.is_file():
        return pd.DataFrame()
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return pd.DataFrame([r for r in rows if r.get("section") == "R"])


def methods_sentence(pooling: "Pooling | None", level: float = 0.95) -> str:
    """The Method's sentence on what the intervals cover (TeX)."""
    from osbench_analysis.formatting import percent_tex

    lvl = percent_tex(level)
    if pooling is None or pooling.n_campaigns_max < 2:
        return (f"Every {lvl} interval is \\emph{{within one campaign}}: it covers run-to-run variation "
                "inside that campaign and says nothing about where a re-run of the campaign on another "
                "day would land. ")
    k = pooling.n_campaigns_max
    s = (f"Campaigns of the same host, environment and probe code are replicates: each condition's "
         f"pooled value is the geometric mean of its {k} campaigns' estimates, and its {lvl} interval "
         f"is a Student-$t$ interval over the campaigns ($k-1$ degrees of freedom), so it covers the "
         "host's campaign-to-campaign drift, not only run-to-run variation; $\\tau$, the between-campaign "
         "standard deviation on the log scale, is the spread beyond what the runs explain. "
         "Ratios between environments and crossing costs are pooled the same way, each environment "
         "paired with the baseline measured in the same campaign round (interleaved). ")
    cells = coverage_cells()
    if len(cells):
        pooled = cells[cells["campaigns"] > 1]
        ok = pooled[pooled["ok"] == "yes"]
        s += (f"In simulation (campaign effects $\\tau$ 0--0.3, 2--10 campaigns of 6 runs, with and "
              f"without a minority of slow runs) the pooled interval covered the campaign-population "
              f"value in {percent_tex(ok['coverage_%'].min() / 100)}--{percent_tex(ok['coverage_%'].max() / 100)} "
              f"of experiments in {len(ok)} of {len(pooled)} settings; the others (a minority of slow runs "
              f"and no campaign effect, 2--3 campaigns) covered "
              f"{percent_tex(pooled['coverage_%'].min() / 100)} or more and carry the minority warning in "
              f"most experiments. ")
    return s


def quoting_sentence(k: int) -> str:
    """The Method's sentence on which interval each part of the paper quotes (TeX): with one campaign per
    environment everything is within it; with k > 1 the abstract and the Conclusion pool the crossing costs."""
    if k < 2:
        return ("The tables, the Results, the abstract and the Conclusion all quote each condition in its one "
                "campaign, with its interval within that campaign, so that the tables' times divide into their "
                "ratios; how far a re-run would move them is not measured (Section~\\ref{sec:threats}).")
    return ("The tables and the Results quote each condition in the baseline campaign, with its interval within "
            "that campaign, so that the tables' times divide into their ratios; the abstract and the Conclusion "
            f"quote the crossing costs pooled over {k} campaigns, and Section~\\ref{{sec:threats}} gives the "
            "spread between campaigns beside every within-campaign interval.")


def threats_sentence(pooling: "Pooling | None") -> str:
    """The Threats paragraph's sentence on reproducibility, with the measured spread (TeX)."""
    from osbench_analysis.formatting import percent_tex

    if pooling is None or pooling.n_campaigns_max < 2:
        return ("The intervals are within one campaign; this host has no earlier comparable campaign, so "
                "how far a re-run would move the numbers is not measured here. ")
    loo_abs, loo_ratio = pooling.leave_one_out()
    spread = pooling.spread()
    tau_abs = spread["tau_absolute_median"].median()
    tau_ratio = spread["tau_ratio_median"].median() if "tau_ratio_median" in spread else float("nan")
    differ = "differ by more than their runs do" if tau_abs > 0 else "differ no more than their runs do"
    s = (f"Campaigns a few hours apart on this host {differ}: the median "
         f"between-campaign spread of absolute times is $\\tau={tau_abs:.2f}$ (log scale, about "
         f"{percent_tex(math.expm1(tau_abs))})")
    if loo_abs.pairs:
        s += (f", and one campaign's {percent_tex(loo_abs.level)} interval "
              f"covered another campaign's estimate in {percent_tex(loo_abs.single_interval_covers)} of "
              f"{loo_abs.pairs} comparisons (expected {percent_tex(loo_abs.expected_single)} if runs were "
              "the only variance)")
    s += ". "
    if np.isfinite(tau_ratio):
        sd_ratio = spread["sd_ratio_median"].median()
        how = ("reproduce better" if tau_ratio < tau_abs else
               "reproduce no better" if tau_ratio == tau_abs else "reproduce worse")
        s += (f"Ratios to native, measured interleaved, {how} (median $\\tau={tau_ratio:.2f}$; "
              f"the campaigns' ratios spread by an SD of {sd_ratio:.2f} on the log scale"
              + (f"; one campaign's interval covered another's ratio in "
                 f"{percent_tex(loo_ratio.single_interval_covers)}" if loo_ratio.pairs else "") + "). ")
    if loo_abs.checks:
        s += (f"Leaving one campaign out, the prediction interval of the others covered it in "
              f"{percent_tex(loo_abs.prediction_covers)} of {loo_abs.checks} cases for absolute times"
              + (f" and {percent_tex(loo_ratio.prediction_covers)} of {loo_ratio.checks} for ratios"
                 if loo_ratio.checks else "")
              + f" (target {percent_tex(loo_abs.level)}). ")
    else:
        s += (f"With {pooling.n_campaigns_max} campaigns no campaign can be left out and predicted from the "
              "others (that takes three). ")
    return s


def spread_tex(pooling: "Pooling | None") -> str:
    """The paper's table of the median between-campaign spread per environment
    (tau and the plain SD of the campaign values, log scale), for absolute times
    and for ratios to the baseline (TeX tabular; '' without pooled campaigns)."""
    from osbench_analysis.formatting import tex_escape

    if pooling is None or pooling.n_campaigns_max < 2:
        return ""
    t = pooling.spread()
    cell = (lambda x: "--" if not np.isfinite(x) else f"{x:.3f}")  # noqa: E731
    from osbench_analysis.plots.architectures import env_short

    name = (lambda e: "native Linux" if e == pooling.baseline else env_short(e))  # noqa: E731
    rows = [f"{tex_escape(name(r.environment))} & {cell(r.tau_absolute_median)} & {cell(r.sd_absolute_median)} & "
            f"{cell(getattr(r, 'tau_ratio_median', np.nan))} & {cell(getattr(r, 'sd_ratio_median', np.nan))} & "
            f"{int(r.conditions_absolute) if np.isfinite(r.conditions_absolute) else 0} \\\\"
            for r in t.itertuples()]
    return ("\\begin{tabular}{lrrrrr}\n\\toprule\n"
            f"environment & $\\tau$ & SD & $\\tau$ ratio & SD ratio & conditions \\\\\n"
            f"\\multicolumn{{6}}{{l}}{{\\footnotesize median over conditions, log scale, "
            f"{pooling.n_campaigns_max} campaigns; ratios to {tex_escape(pooling.baseline)} paired within rounds}} "
            "\\\\\n\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}\n")


def paper_macros(analysis) -> dict[str, str]:
    """TeX macros (name -> value) for the paper's Method, Threats and abstract:
    osbReproCampaigns, osbReproIntervalOver, osbReproTauAbsolute, osbReproTauRatio,
    osbReproLooSingle / Pooled / Prediction (absolute times) and osbReproLooRatio*,
    osbReproTau<Environment> and osbReproTauRatio<Environment>, osbReproCrossing<Environment>
    (pooled crossing cost with its interval), osbReproRatio<Environment><Probe> (pooled ratio to the
    baseline of the crossing probes, same CPU), osbReproMethods and osbReproThreats (sentences)."""
    from osbench_analysis.formatting import macro_name, percent_tex, time_with_ci_tex

    p = getattr(analysis, "pooling", None)
    level = analysis.settings.level
    k = p.n_campaigns_max if p is not None else 1
    m = {macro_name("repro", "campaigns"): str(max(k, 1)),
         macro_name("repro", "interval", "over"): f"over {k} campaigns" if k > 1 else WITHIN_ONE_CAMPAIGN,
         macro_name("repro", "methods"): methods_sentence(p, level).strip(),
         macro_name("repro", "quoting"): quoting_sentence(k),
         macro_name("repro", "threats"): threats_sentence(p).strip()}
    if p is None or k < 2:
        return m
    spread = p.spread()
    m[macro_name("repro", "tau", "absolute")] = f"{spread['tau_absolute_median'].median():.2f}"
    if "tau_ratio_median" in spread and spread["tau_ratio_median"].notna().any():
        m[macro_name("repro", "tau", "ratio")] = f"{spread['tau_ratio_median'].median():.2f}"
    for r in spread.itertuples():
        if np.isfinite(r.tau_absolute_median):
            m[macro_name("repro", "tau", r.environment)] = f"{r.tau_absolute_median:.2f}"
        if np.isfinite(getattr(r, "tau_ratio_median", np.nan)):
            m[macro_name("repro", "tau", "ratio", r.environment)] = f"{r.tau_ratio_median:.2f}"
    loo_abs, loo_ratio = p.leave_one_out()
    for tag, loo in (("", loo_abs), ("ratio", loo_ratio)):
        if not loo.checks:   # fewer than three campaigns: nothing left out, no figure to give
            continue
        m[macro_name("repro", "loo", tag, "single")] = percent_tex(loo.single_interval_covers)
        m[macro_name("repro", "loo", tag, "pooled")] = percent_tex(loo.pooled_ci_covers)
        m[macro_name("repro", "loo", tag, "prediction")] = percent_tex(loo.prediction_covers)
    from osbench_analysis.analysis.architectures import CROSSING_PROBES
    from osbench_analysis.formatting import ratio_with_ci

    rt = p.ratios
    for r in (rt.itertuples() if len(rt) else []):
        if r.placement == "same_cpu" and r.n_campaigns > 1 and r.probe in CROSSING_PROBES and not r.variant:
            m[macro_name("repro", "ratio", r.environment, r.probe)] = ratio_with_ci(r.ratio, r.ci_low, r.ci_high)
    cc = p.crossing_costs
    for r in (cc.itertuples() if len(cc) else []):
        if r.placement == "same_cpu" and r.n_campaigns > 1:
            m[macro_name("repro", "crossing", r.environment)] = time_with_ci_tex(r.cost_ns, r.ci_low_ns, r.ci_high_ns)
    return m

