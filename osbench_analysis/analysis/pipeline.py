"""Analysis of sealed campaigns: the one function behind analyze.ipynb and
`osbench analyze`, returning a plain record that plots, the paper and the
reference comparison read from (none of them re-runs statistics).

Campaigns are keyed explicitly by (environment, host, campaign); a host is
hosts.identity's (CPU, kernel, ..., not the hostname).  By default one host
(``host``, else the host of the newest complete round: analysis/hosts.py) and
its newest *complete* campaign of each environment (a newer partial one is
named in ``Analysis.notes``, not used); the first campaign named for
an (environment, host) is its *primary* one, whose numbers the paper quotes.
A *sweep campaign* (sweeps.sweep_only: it names only swept probes and measures
a sweep at two or more points) is never the primary while a campaign of the
whole catalog exists for its (environment, host): by default the newest one of
each (environment, host) is read beside the primary for the scalability fits
alone (``Analysis.sweep_campaigns``), not for estimates, ratios or pooling.
Ratios:
- each environment against the baseline environment (default native), per host;
- several campaigns of one environment and host against the first one named;
- the same environment on different hosts against the first host;
- cross-CPU over same-CPU placement, per campaign;
and the cost of one kernel crossing per environment (architectures.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis import stats
from osbench_analysis.analysis import architectures
from osbench_analysis.catalog import registry
from osbench_analysis.analysis import service_ipc
from osbench_analysis.store import campaigns as store
from osbench_analysis.analysis import sweeps
from osbench_analysis.errors import OsbenchError
from osbench_analysis.analysis.microkernel import GUEST_ENVIRONMENTS
from osbench_analysis.store.schema import GROUP_KEYS


class AnalysisError(OsbenchError, ValueError):
    """Campaigns or settings that cannot be analysed together as asked."""


@dataclass(frozen=True)
class AnalysisSettings:
    level: float = stats.DEFAULT_LEVEL
    n_resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = stats.DEFAULT_SEED
    estimator: str = "median"
    ci_method: str = stats.DEFAULT_CI_METHOD
    baseline: str = "native"    # environment every other environment is compared with

    def __post_init__(self) -> None:
        check_settings(self)

    def stats_kwargs(self) -> dict:
        return dict(level=self.level, n_resamples=self.n_resamples, seed=self.seed,
                    estimator=self.estimator, ci_method=self.ci_method)


#: resamples at most (N14b): a bootstrap method's resampled statistics are arrays of this length
MAX_RESAMPLES = 1_000_000


def check_settings(settings: AnalysisSettings) -> None:
    """Every analysis option checked before anything is read, each as one line saying
    what was given and what is accepted (the CLI and the notebooks both land here)."""
    from osbench_analysis.stats.ci_methods import CI_METHODS, ESTIMAND

    level = settings.level
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise AnalysisError(f"level must be a confidence level between 0 and 1, e.g. 0.95 (got {level!r})")
    n = settings.n_resamples
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 100 <= n <= MAX_RESAMPLES:
        raise AnalysisError(f"n_resamples must be an integer from 100 to {MAX_RESAMPLES:,}, e.g. 10000 (got {n!r}; "
                            "a bootstrap holds its resamples in memory: 1e9 needed 22 GiB)")
    seed = settings.seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise AnalysisError(f"seed must be an integer >= 0 (got {seed!r})")
    if settings.estimator not in stats.ESTIMATORS:
        raise AnalysisError(f"estimator must be one of {', '.join(stats.ESTIMATORS)} (got {settings.estimator!r})")
    if settings.ci_method not in CI_METHODS:
        raise AnalysisError(f"ci_method must be one of {', '.join(CI_METHODS)} (got {settings.ci_method!r})")
    if (settings.estimator, settings.ci_method) not in ESTIMAND:
        ok = [m for (e, m) in ESTIMAND if e == settings.estimator]
        raise AnalysisError(f"ci_method {settings.ci_method!r} does not go with estimator {settings.estimator!r}; "
                            f"use one of {', '.join(ok)}")
    if not isinstance(settings.baseline, str) or not settings.baseline:
        raise AnalysisError(f"baseline must name an environment, e.g. 'native' (got {settings.baseline!r})")


def _check_names(what: str, asked, known) -> list[str] | None:
    """None (all) or the names asked for, each one known."""
    if asked is None:
        return None
    asked = [asked] if isinstance(asked, str) else list(asked)
    unknown = [a for a in asked if a not in set(known)]
    if not asked or unknown:
        raise AnalysisError(f"{what} {unknown or asked!r} not in the selected campaigns "
                            f"(have: {', '.join(sorted(set(known))) or 'none'})")
    return asked


@dataclass(frozen=True)
class CampaignRef:
    campaign_id: str
    environment: str
    host: str                  # hosts.identity key
    created_utc: str
    host_label: str = ""


def _order_key(ref: CampaignRef, baseline: str) -> tuple:
    return (ref.host, ref.environment != baseline, ref.environment, ref.created_utc)


def sweep_campaign_ids(cat: pd.DataFrame) -> set[str]:
    """The sweep campaigns (sweeps.sweep_only) among a catalog's rows (store.catalog's ``sweep_only``)."""
    return set(cat.loc[cat["sweep_only"].astype(bool), "campaign_id"])


def _intact(cat: pd.DataFrame) -> pd.DataFrame:
    """The catalog rows whose seal verifies: a damaged campaign is left out with a warning naming it
    (store.DamagedCampaign), never blocking the others (issue 31)."""
    return cat[[store.intact(Path(p)) for p in cat["path"]]] if len(cat) else cat


def _refs(rows: pd.DataFrame) -> list[CampaignRef]:
    """Catalog rows (store.catalog) as CampaignRefs, in their order."""
    return [CampaignRef(r.campaign_id, r.environment, r.host, r.created_utc, r.host_label) for r in rows.itertuples()]


def select_campaigns(campaigns: list[str] | None = None, root: str | Path | None = None, *,
                     baseline: str = "native", host: str | None = None, probes: list[str] | None = None,
                     notes: list[str] | None = None) -> list[CampaignRef]:
    """The named campaigns in the order named, or by default, on one host (``host``, else the host
    of the newest complete round: hosts.choose_host), the newest complete campaign of each environment
    (hosts.select_primary: of the ``probes`` analysed, when given), baseline environment first.
    A newer partial campaign passed over gets a sentence in ``notes``.  A sweep campaign
    (sweeps.sweep_only) is chosen by default only for an environment that has no other campaign: see
    select_sweep_campaigns."""
    from osbench_analysis.analysis import hosts as host_choice

    if campaigns is not None and (isinstance(campaigns, str) or not all(isinstance(c, str) for c in campaigns)):
        raise AnalysisError(f"campaigns must be a list of campaign ids, e.g. ['{campaigns}'] (got {campaigns!r}; "
                            f"papermill: -y \"campaigns: [ID]\")")   # B118: a string was read letter by letter
    cat = store.catalog(root)
    if campaigns:
        known = cat.set_index("campaign_id")
        unknown = [c for c in campaigns if c not in known.index]
        for c in unknown:   # a folder of that name the catalog left out: say what is wrong with it
            if (Path(root or store.default_root()) / c).exists():
                store.load_campaign(c, root)
        if unknown:
            raise store.StoreError(f"no campaign {unknown[0]!r} under {root or store.default_root()} "
                                   f"(known: {', '.join(cat['campaign_id']) or 'none'})")
        if len(set(campaigns)) != len(campaigns):
            raise AnalysisError(f"a campaign is named twice in {campaigns}")
        guest = [c for c in campaigns if known.loc[c, "environment"] in GUEST_ENVIRONMENTS]
        if guest:
            raise AnalysisError(f"campaign {guest[0]!r} counts guest instructions, not ns: compare it with "
                                "microkernel.from_campaigns, not with the host environments")
        if host is not None:
            key = host_choice.resolve_host(host, cat)
            other = [c for c in campaigns if known.loc[c, "host"] != key]
            if other:
                raise AnalysisError(f"campaign {other[0]!r} was measured on {known.loc[other[0], 'host_label']}, "
                                    f"not on host {host!r}: name campaigns of one host, or leave host unset")
        return _refs(known.loc[campaigns].reset_index())
    if cat.empty:
        raise store.StoreError(f"no campaigns under {root or store.default_root()}: run `osbench run` "
                               "(or notebooks/run_campaign.ipynb) first")
    # the emulated-CPU guests count instructions, not ns: they are compared only with each other (microkernel.py)
    cat = cat[~cat["environment"].isin(GUEST_ENVIRONMENTS)]
    if cat.empty:
        raise store.StoreError(f"no campaigns timed in ns under {root or store.default_root()}")
    cat = _intact(cat)
    key = host_choice.choose_host(cat, host, baseline)
    chosen, said = host_choice.select_primary(cat[cat["host"] == key], probes, root)
    if chosen.empty:    # every campaign sealed as partial (hosts.newest_complete names each)
        raise store.StoreError(f"no complete campaign to analyse on this host: {'; '.join(said)}")
    if notes is not None:
        notes.extend(said)
    return sorted(_refs(chosen), key=lambda r: _order_key(r, baseline))


def select_guest_campaigns(root: str | Path | None = None, *, host: str | None = None,
                           baseline: str = "native") -> list[str]:
    """The GNU Mach and Linux guests' campaigns as analyze() picks its campaigns: on one host (``host``, else
    hosts.choose_host's), of each guest environment the newest complete campaign (hosts.newest_complete);
    never every guest campaign under root, nor earlier rounds (another guest build may count otherwise:
    kernels.newest_round)."""
    from osbench_analysis.analysis import hosts as host_choice
    from osbench_analysis.analysis.microkernel import LINUX, LINUX_NOMITIG, MACH

    cat = store.catalog(root)
    key = host_choice.choose_host(cat, host, baseline) if len(cat) else None
    chosen, _ = host_choice.newest_complete(host_choice.recorded_first(
        cat[(cat["host"] == key) & cat["environment"].isin([MACH, LINUX, LINUX_NOMITIG]) & ~store.memory_model(cat)]))
    return list(chosen.sort_values(["created_utc", "campaign_id"])["campaign_id"]) if len(chosen) else []


def select_sweep_campaigns(refs: list[CampaignRef], root: str | Path | None = None,
                           campaigns: list[str] | None = None) -> tuple[list[CampaignRef], list[CampaignRef]]:
    """(refs without the sweep campaigns, the sweep campaigns) for an analysis of ``refs``.

    By default (``campaigns`` None) the newest sweep campaign of each (environment, host) of ``refs`` that is
    not itself one of ``refs``.  With campaigns named, a named sweep campaign is a sweep campaign when another
    campaign of its (environment, host) is named beside it (else it stays the primary it was named as)."""
    cat = store.catalog(root)
    if cat.empty:
        return refs, []
    cat = cat[~cat["environment"].isin(GUEST_ENVIRONMENTS)]
    sweep_ids = sweep_campaign_ids(cat)
    if campaigns:
        whole = {(r.environment, r.host) for r in refs if r.campaign_id not in sweep_ids}
        moved = [r for r in refs if r.campaign_id in sweep_ids and (r.environment, r.host) in whole]
        return [r for r in refs if r not in moved], moved
    have = {r.campaign_id for r in refs}
    keys = {(r.environment, r.host) for r in refs}
    sw = cat[cat["campaign_id"].isin(sweep_ids - have)]
    sw = sw[np.array([(e, h) in keys for e, h in zip(sw["environment"], sw["host"])], dtype=bool)]
    newest = _intact(sw).sort_values(["created_utc", "campaign_id"]).groupby(["environment", "host"]).tail(1)
    return refs, _refs(newest)


def campaign_condition_tables(samples: pd.DataFrame, **kw) -> tuple[pd.DataFrame, pd.DataFrame]:
    """stats.condition_tables of one campaign's primitives (the host-state canaries are controls)."""
    return stats.condition_tables(samples[~samples["probe"].isin(registry.CANARY_PROBES)].reset_index(drop=True),
                                  **kw)


def _condition_tables(loaded: list, root, probes, kw: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """stats.condition_tables of the loaded campaigns' primitives (``probes``: only those), per campaign:
    every condition is one campaign's (its resampling seeded by its name), so the tables of all are
    those of each, in the conditions' order.  A sealed campaign's tables at these settings are kept on
    disk (store/values_cache.py, keyed by its seal, the settings and the whole package's code); the campaigns
    not kept yet are computed in one pass and kept each.  ``loaded``: campaigns in memory, seals verified."""
    from osbench_analysis.store import values_cache

    where = {c.id: values_cache.entry(campaign_condition_tables, c.path, kw) for c in loaded}
    parts = {c.id: values_cache.read(where[c.id], parts=2) for c in loaded}
    todo = [c for c in loaded if parts[c.id] is None]
    if todo:
        new = campaign_condition_tables(pd.concat([c.samples for c in todo], ignore_index=True), **kw)
        for c in todo:
            mine = tuple(t[t["campaign_id"] == c.id].reset_index(drop=True) for t in new)
            values_cache.keep(where[c.id], mine)
            parts[c.id] = mine
    out = []
    for i in (0, 1):
        t = pd.concat([parts[c.id][i] for c in loaded], ignore_index=True)
        if probes is not None:
            t = t[t["probe"].isin(probes)]
        out.append(t.sort_values(list(GROUP_KEYS), kind="mergesort").reset_index(drop=True))
    out[0].attrs["analysis_parameters"] = stats.summary.AnalysisParameters(**kw)   # what condition_tables attaches
    return out[0], out[1]


def overview(campaign: store.Campaign) -> pd.DataFrame:
    """What a campaign holds per condition: workers, batches, batch size and a
    raw median (no interval: analyze() gives those)."""
    s = campaign.samples
    m = s[~s["warmup"]]
    out = m.groupby(list(GROUP_KEYS[2:]), sort=True).agg(
        runs=("run", "nunique"), batches=("batch", "size"), iterations_per_batch=("iterations", "median"),
        raw_median_per_op_ns=("per_op_ns", "median"), fs_type=("fs_type", "first"))
    r = campaign.runs
    failed = r[r["status"] != "ok"].groupby(["probe", "variant", "placement"]).size().rename("failed_workers")
    return out.join(failed).fillna({"failed_workers": 0}).reset_index()


@dataclass
class Analysis:
    campaigns: list[CampaignRef]
    settings: AnalysisSettings
    manifests: dict[str, object]            # campaign id -> records.Manifest
    samples: pd.DataFrame                   # every selected campaign's samples but the canaries', plus `host`
    estimates: pd.DataFrame                 # per condition: flagged kept, and *_clean excluded
    quality: pd.DataFrame                   # per condition: stability, flags, warnings
    environment_ratios: pd.DataFrame        # each environment / baseline, per host (primary campaigns)
    campaign_ratios: pd.DataFrame           # later campaigns / first, per (environment, host)
    host_ratios: pd.DataFrame               # other hosts / first host, per environment
    placement_ratios: pd.DataFrame          # cross_cpu / same_cpu per campaign
    crossing_costs: pd.DataFrame            # one kernel crossing per environment, vs baseline
    service_ipc: pd.DataFrame = field(default_factory=pd.DataFrame)   # direct call vs via a server, per campaign
    sweep_fits: dict = field(default_factory=dict)   # (probe, environment, placement) -> stats.SweepFit
    # the sweep campaigns the fits come from (select_sweep_campaigns), read for the sweeps only, with manifests
    sweep_campaigns: list = field(default_factory=list)
    sweep_manifests: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # campaigns as a level of replication (issue #20): reproducibility.Pooling of each primary campaign
    # with the host's comparable earlier ones; None when analyze(pool=False)
    pooling: object = None

    @property
    def sweeps(self) -> pd.DataFrame:
        """One row per fitted scalability sweep: slope with its CI (sweeps.sweep_table)."""
        from osbench_analysis.analysis import sweeps

        return sweeps.sweep_table(self.sweep_fits)

    @property
    def campaign_ids(self) -> list[str]:
        return [c.campaign_id for c in self.campaigns]

    @property
    def primary_ids(self) -> list[str]:
        """The first campaign named for each (environment, host): the paper's numbers come from these."""
        first = {}
        for c in self.campaigns:
            first.setdefault((c.environment, c.host), c.campaign_id)
        return list(first.values())

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(c.host for c in self.campaigns))

    @property
    def host_labels(self) -> dict[str, str]:
        """host key -> its readable label (hosts.identity), for every host of the analysis."""
        return {c.host: c.host_label or c.host for c in self.campaigns}

    @property
    def environments(self) -> list[str]:
        return list(dict.fromkeys(c.environment for c in self.campaigns))

    @property
    def baseline_id(self) -> str:
        """The primary campaign of the baseline environment on the first host: the Method paragraph's."""
        host = self.hosts[0]
        for c in self.campaigns:
            if c.host == host and c.environment == self.settings.baseline:
                return c.campaign_id
        return self.primary_ids[0]

    @property
    def primary_estimates(self) -> pd.DataFrame:
        return self.estimates[self.estimates["campaign_id"].isin(self.primary_ids)].reset_index(drop=True)

    def table(self, full: bool = False) -> pd.DataFrame:
        """The per-condition table a reader looks at first: one row per campaign and
        condition (its interval within that campaign), then the pooled rows (interval
        over campaigns).  By default the quoted time and its interval in a readable
        unit (formatting.readable_estimates); ``full=True``: every numeric column (ns)."""
        from osbench_analysis import formatting
        from osbench_analysis.analysis import reproducibility

        pooled = reproducibility.pooled_rows(self.pooling)
        # the pooling's stand-in canaries are not conditions of this analysis
        pooled = pooled[pooled["probe"].isin(self.estimates["probe"])] if len(pooled) else pooled
        rows = pd.concat([self.estimates, pooled], ignore_index=True)
        if not full:
            t = formatting.readable_estimates(rows)
            # which host measured it (hosts.identity's label), said once above the table
            labels = self.host_labels
            said = "; ".join(f"{k} = {v}" for k, v in labels.items()) if len(labels) > 1 else "".join(labels.values())
            t.attrs["caption"] = " ".join(filter(None, [t.attrs.get("caption"), f"Host: {said}." if said else ""]))
            return t
        cols = ["environment", "host", "campaign_id", "probe", "variant", "placement", "quoted", "estimate_ns",
                "ci_low_ns", "ci_high_ns", "confidence", "mean_over_runs", "mean_over_runs_low", "mean_over_runs_high",
                "estimate_clean_ns", "ci_low_clean_ns", "ci_high_clean_ns", "n_runs", "n_batches",
                "flagged_fraction", "depends_on_flags", "multimodal", "warning", "ci_method", "note",
                "pooled", "n_campaigns", "interval_over", "between_campaign_sd"]
        return rows[[c for c in cols if c in rows.columns]]

    def quality_report(self, full: bool = False) -> pd.DataFrame:
        """Conditions with a warning or flagged batches; by default the condition, its
        runs, flagged share and warnings in full (``full=True``: every quality column)."""
        q = self.quality
        q = q[(q["warnings"] != "") | (q["flagged_fraction"] > 0)].reset_index(drop=True)
        if full:
            return q
        several = "campaign_id" in q and bool((q.groupby("environment")["campaign_id"].nunique() > 1).any())
        keys = ["environment", *(["campaign_id"] if several else []), "probe", "variant", "placement"]
        return q[keys].assign(runs=q["n_runs"], flagged=[f"{100 * f:.0f}%" for f in q["flagged_fraction"]],
                              multimodal=q["multimodal"], warnings=q["warnings"])

    def methods_tex(self, paper: bool = False) -> str:
        """The methods paragraph; ``paper``: in the paper's wording (the tables quote the mean over runs)."""
        from osbench_analysis.analysis import methods

        # the estimate table itself, so that the paragraph counts which number each condition quotes
        return methods.methods_paragraph(self.estimates, pooling=self.pooling, campaigns=True, paper=paper)

    def screen_figure_names(self) -> list[str]:
        """The names screen_figures() draws, in its order, without drawing any (cheap)."""
        return list(self._screen_figure_makers())

    def screen_figures(self, names: list[str] | None = None) -> dict:
        """name -> Figure for a notebook: the per-operation times and the ratios to the
        baseline, one figure per family of primitives (families.py), each environment in
        its own colour and marker, titled with what it shows and its interval.  ``names``:
        draw only these (screen_figure_names() lists them; default all).  The
        print-safe figures the paper uses are figures()."""
        makers = self._screen_figure_makers()
        if names is not None:
            unknown = [n for n in names if n not in makers]
            if unknown:
                raise AnalysisError(f"no screen figure named {', '.join(map(repr, unknown))}; "
                                    f"the figures are {', '.join(makers) or 'none'}")
            makers = {n: makers[n] for n in names}
        return {name: make() for name, make in makers.items()}

    def _screen_figure_makers(self) -> dict:
        """name -> function drawing that screen figure (screen_figures)."""
        from osbench_analysis.catalog import families

        level = f"{self.settings.level:.0%} CI"

        def styles():
            from osbench_analysis.plots import forest as plots

            return plots.environment_styles(
                [self.settings.baseline, *plots.series_labels(self.estimates)] if len(self.estimates) else [])

        def forest(rows, **kw):
            from osbench_analysis.plots import forest as plots

            return lambda: plots.environment_forest(rows, styles=styles(), **kw)

        # one row per probe parameter set: each environment's file system is part of the environment
        est = self.estimates.assign(family=self.estimates["probe"].map(families.probe_family),
                                    variant=self.estimates["variant"].map(without_fs))
        makers = {}
        for fam in sorted(est["family"].unique(), key=families.family_rank):
            makers[f"per_op_{fam}"] = forest(
                est[est["family"] == fam], value="estimate_ns", low="ci_low_ns", high="ci_high_ns",
                xlabel="time per operation (ns, log scale)", title=f"{fam}: time per operation, {level}")
        ratios = self.environment_ratios
        if len(ratios):
            ratios = ratios.assign(family=ratios["probe"].map(families.probe_family))
            for fam in sorted(ratios["family"].unique(), key=families.family_rank):
                makers[f"ratio_{fam}"] = forest(
                    ratios[ratios["family"] == fam], value="ratio", low="ci_low", high="ci_high", reference=1.0,
                    xlabel=f"per-op time relative to {self.settings.baseline} (log scale; > 1 = slower)",
                    title=f"{fam}: each environment relative to {self.settings.baseline}, {level}")
        return makers

    def figures(self) -> dict:
        """name -> matplotlib Figure; the name says what it shows and is the file name."""
        from osbench_analysis.plots import forest as plots

        figs = {"per_op_forest": plots.forest_plot(self.primary_estimates)}
        if len(self.environment_ratios):
            figs[f"ratio_vs_{self.settings.baseline}_forest"] = plots.ratio_forest_plot(self.environment_ratios)
        if len(self.campaign_ratios):
            figs["ratio_vs_first_campaign_forest"] = plots.ratio_forest_plot(self.campaign_ratios)
        if len(self.host_ratios):
            from osbench_analysis.plots import hosts as plots_hosts

            figs["ratio_vs_first_host_forest"] = plots.ratio_forest_plot(self.host_ratios)
            probe, variant, placement = plots_hosts.DEFAULT_PRIMITIVE
            est = self.primary_estimates
            if ((est["probe"] == probe) & (est["placement"] == placement)).any():
                figs[f"{probe}_across_hosts"] = plots_hosts.primitive_across_hosts(est, probe, variant, placement)
        if len(self.placement_ratios):
            figs["cross_over_same_cpu_forest"] = plots.ratio_forest_plot(self.placement_ratios)
        if self.pooling is not None and self.pooling.n_campaigns_max > 1:
            from osbench_analysis.plots import reproducibility as plots_reproducibility

            figs.update(plots_reproducibility.reproducibility_figures(self.pooling))
        if self.sweep_fits:
            from osbench_analysis.plots import sweeps as plots_sweeps

            figs["sweeps"] = plots_sweeps.sweeps_figure(self.sweep_fits)
        return figs


def without_fs(variant: str) -> str:
    """A variant label without its fs= part ('linkage=static,fs=tmpfs' -> 'linkage=static')."""
    return ",".join(p for p in str(variant or "").split(",") if p and not p.startswith("fs="))


def _finite(t: pd.DataFrame) -> pd.DataFrame:
    return t[np.isfinite(t["ratio"])].reset_index(drop=True) if len(t) else t


def _ratio_tables(groups, *, baseline: str, by: str, **kw) -> pd.DataFrame:
    """stats.ratio_table over each group that has the baseline and something to compare with it."""
    parts = []
    for g in groups:
        values = set(g[by].astype(str)) if len(g) else set()
        if baseline in values and len(values) > 1:
            parts.append(_finite(stats.ratio_table(g, baseline=baseline, by=by, **kw)))
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def analyze(campaigns: list[str] | None = None, root: str | Path | None = None, *,
            level: float = stats.DEFAULT_LEVEL, n_resamples: int = stats.DEFAULT_RESAMPLES,
            seed: int = stats.DEFAULT_SEED, estimator: str = "median", ci_method: str = stats.DEFAULT_CI_METHOD,
            baseline: str = "native", probes: list[str] | None = None,
            environments: list[str] | None = None, pool: bool = True, host: str | None = None) -> Analysis:
    """Load the campaigns (seals verified) and compute every estimate, ratio and
    crossing cost once, with its CI.

    ``probes`` and ``environments`` restrict the analysis to those (default
    all): a question about one probe then takes a fraction of the time.
    ``pool``: also pool each primary campaign with the host's comparable
    earlier campaigns (same environment and probe code:
    reproducibility.pool_campaigns) into intervals over campaigns.  ``host``: the host to analyse (its
    key or words of its label, analysis/hosts.py); default the host of the newest complete round."""
    settings = AnalysisSettings(level, n_resamples, seed, estimator, ci_method, baseline)
    chose: list[str] = []
    refs = select_campaigns(campaigns, root, baseline=baseline, host=host, probes=probes, notes=chose)
    refs, sweep_refs = select_sweep_campaigns(refs, root, campaigns)
    environments = _check_names("environments", environments, [r.environment for r in refs])
    if environments is not None:
        refs = [r for r in refs if r.environment in environments]
        sweep_refs = [r for r in sweep_refs if r.environment in environments]
    loaded = [store.load_campaign(r.campaign_id, root) for r in refs]
    samples = pd.concat([c.samples.assign(host=r.host) for c, r in zip(loaded, refs)], ignore_index=True)
    # the host-state canaries are controls, not primitives: compared between campaigns in result.pooling
    samples = samples[~samples["probe"].isin(registry.CANARY_PROBES)].reset_index(drop=True)
    probes = _check_names("probes", probes, samples["probe"].unique())
    if probes is not None:
        samples = samples[samples["probe"].isin(probes)].reset_index(drop=True)
    kw = settings.stats_kwargs()
    # flags, quality and both estimates (flagged batches kept and excluded) in one pass, per campaign
    estimates, qual = _condition_tables(loaded, root, probes, kw)
    hosts = dict(zip([r.campaign_id for r in refs], [r.host for r in refs]))
    estimates.insert(2, "host", estimates["campaign_id"].map(hosts))
    result = Analysis(refs, settings, {c.id: c.manifest for c in loaded}, samples, estimates, qual,
                      pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame())
    from osbench_analysis.analysis import reproducibility

    if pool:
        by_id = {c.id: c for c in loaded}
        from osbench_analysis.analysis import pooling_cache

        result.pooling = pooling_cache.pool_campaigns(
            {cid: by_id[cid].manifest for cid in result.primary_ids}, root, baseline=baseline, level=level,
            loaded=by_id, probes=probes)
    result.estimates = reproducibility.annotate_estimates(estimates, result.pooling)
    primary = samples[samples["campaign_id"].isin(result.primary_ids)]
    envs = set(primary["environment"])
    notes = result.notes
    notes.extend(chose)
    if len(envs) > 1:
        if baseline not in envs:
            raise AnalysisError(f"baseline environment {baseline!r} is not among the selected environments "
                                f"{sorted(envs)}: measure it (osbench run --environment {baseline}) or choose "
                                "another with --baseline")
        # the file system a file probe sees is part of its environment (tmpfs natively, 9p under gVisor,
        # hostfs under UML, the FUSE mount): environments are compared on the probe's own parameters
        result.environment_ratios = _ratio_tables(
            [primary.assign(variant=primary["variant"].map(without_fs))], baseline=baseline, by="environment",
            match=("host", "probe", "variant", "placement"), **kw)
        for host, g in primary.groupby("host", sort=False):
            result.crossing_costs = pd.concat(
                [result.crossing_costs, architectures.crossing_costs(g, baseline=baseline, level=level).assign(host=host)],
                ignore_index=True)
    parts = []
    for (env, host), g in samples.groupby(["environment", "host"], sort=False):
        ids = [r.campaign_id for r in refs if r.environment == env and r.host == host]
        if len(ids) > 1:
            notes.append(f"{env} on {host}: campaigns {ids[1:]} compared with {ids[0]}")
            parts.append(_ratio_tables([g], baseline=ids[0], by="campaign_id",
                                       match=("environment", "host", "probe", "variant", "placement"), **kw))
    result.campaign_ratios = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if len(result.hosts) > 1:
        result.host_ratios = _ratio_tables(
            [g for _, g in primary.groupby("environment", sort=False) if g["host"].nunique() > 1],
            baseline=result.hosts[0], by="host", match=("environment", "probe", "variant", "placement"), **kw)
    # microkernel-style IPC (direct call vs via a user-space server) per primary campaign, and the sweeps
    svc = []
    for cid in result.primary_ids:
        part = primary[primary["campaign_id"] == cid]
        if part["probe"].isin(list(service_ipc.TRANSPORTS)).any():
            t = service_ipc.service_table(part, level=level, ci_method=ci_method)
            svc.append(t.assign(campaign_id=cid, environment=part["environment"].iloc[0], host=part["host"].iloc[0]))
    result.service_ipc = pd.concat(svc, ignore_index=True) if svc else pd.DataFrame()
    # the sweeps: from the (environment, host)'s sweep campaign where there is one, else from its primary
    result.sweep_campaigns = sweep_refs
    swept = []
    for r in sweep_refs:
        camp = store.load_campaign(r.campaign_id, root)
        result.sweep_manifests[r.campaign_id] = camp.manifest
        part = camp.samples.assign(host=r.host)
        swept.append(part[part["probe"].isin(probes) if probes is not None
                          else ~part["probe"].isin(registry.CANARY_PROBES)])
    swept = pd.concat(swept, ignore_index=True) if swept else primary.iloc[:0]
    from_sweep = set(zip(swept["environment"], swept["host"]))
    for host, g in primary.groupby("host", sort=False):
        g = g[[(e, host) not in from_sweep for e in g["environment"]]]
        g = pd.concat([g, swept[swept["host"] == host]], ignore_index=True)
        for key, fit in sweeps.fit_sweeps(g, level=level).items():
            result.sweep_fits[(*key, host) if len(result.hosts) > 1 else key] = fit
    two_party = samples[samples["placement"].isin(["same_cpu", "cross_cpu"])]
    result.placement_ratios = _ratio_tables(
        [two_party], baseline="same_cpu", by="placement", match=("campaign_id", "environment", "host", "probe",
                                                                  "variant"), **kw)
    return result
