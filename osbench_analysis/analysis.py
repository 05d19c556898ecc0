"""Analysis of sealed campaigns: the one function behind analyze.ipynb and
`osbench analyze`, returning a plain record the paper and plots read from."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis import quality, stats, store
from osbench_analysis.schema import GROUP_KEYS


@dataclass(frozen=True)
class AnalysisSettings:
    level: float = stats.DEFAULT_LEVEL
    n_resamples: int = stats.DEFAULT_RESAMPLES
    seed: int = stats.DEFAULT_SEED
    estimator: str = "median"
    ci_method: str = stats.DEFAULT_CI_METHOD
    baseline: str = "native"    # environment (or, for one environment, campaign) ratios are relative to

    def stats_kwargs(self) -> dict:
        return dict(level=self.level, n_resamples=self.n_resamples, seed=self.seed,
                    estimator=self.estimator, ci_method=self.ci_method)


def select_campaigns(campaigns: list[str] | None, root: str | Path | None = None) -> list[str]:
    """The given ids, or the newest sealed campaign of each environment."""
    if campaigns:
        return list(campaigns)
    cat = store.catalog(root)
    if cat.empty:
        raise store.StoreError(f"no campaigns under {root or store.default_root()}: run `osbench run` "
                               "(or notebooks/run_campaign.ipynb) first")
    newest = cat.sort_values("created_utc").groupby("environment", sort=True).tail(1)
    return list(newest.sort_values("environment")["campaign_id"])


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
    campaign_ids: list[str]
    settings: AnalysisSettings
    manifests: dict[str, dict]
    samples: pd.DataFrame
    estimates: pd.DataFrame                 # stats.flag_sensitivity: flagged kept, and *_clean excluded
    quality: pd.DataFrame                   # quality.quality_table per condition
    ratios: pd.DataFrame | None = None      # stats.ratio_table vs the baseline environment
    placement_ratios: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def primary_ids(self) -> list[str]:
        """The first campaign named for each environment: the paper's numbers come from these."""
        first = {}
        for cid in self.campaign_ids:
            first.setdefault(self.manifests[cid].environment, cid)
        return list(first.values())

    @property
    def primary_estimates(self) -> pd.DataFrame:
        return self.estimates[self.estimates["campaign_id"].isin(self.primary_ids)].reset_index(drop=True)

    def table(self) -> pd.DataFrame:
        """The per-condition table a reader looks at first."""
        cols = ["environment", "probe", "variant", "placement", "estimate_ns", "ci_low_ns", "ci_high_ns",
                "estimate_clean_ns", "ci_low_clean_ns", "ci_high_clean_ns", "n_runs", "n_batches",
                "flagged_fraction", "depends_on_flags", "multimodal", "ci_method", "note"]
        return self.estimates[[c for c in cols if c in self.estimates.columns]]

    def quality_report(self) -> pd.DataFrame:
        q = self.quality
        return q[(q["warnings"] != "") | (q["flagged_fraction"] > 0)].reset_index(drop=True)

    def methods_tex(self) -> str:
        from osbench_analysis import methods

        return methods.methods_paragraph(self.estimates.attrs["analysis_parameters"])

    def text_macros(self) -> dict[str, str]:
        """Numbers the paper's prose quotes, besides the per-condition ones."""
        from osbench_analysis.paper import macro_name, sig3, tex_escape

        first = self.manifests[self.primary_ids[0]]
        cfg, host = first.config, first.host
        out = {
            "osbCampaignIds": tex_escape(", ".join(self.primary_ids)),
            "osbRuns": str(cfg["runs"]), "osbBatches": str(cfg["batches"]),
            "osbMinBatchMs": f"{cfg['min_batch_ms']:g}",
            "osbMeasuringSeconds": f"{first.measuring_seconds:.0f}",
            "osbHostCpu": tex_escape(host["cpu_model"]), "osbHostCpus": str(host["cpu_count_logical"]),
            "osbHostKernel": tex_escape(host["kernel_release"]), "osbHostVirt": tex_escape(host["virtualization"]),
            "osbLevelPercent": f"{self.settings.level * 100:g}", "osbResamples": str(self.settings.n_resamples),
        }
        several_envs = self.samples["environment"].nunique() > 1
        primary = self.placement_ratios[self.placement_ratios["campaign_id"].isin(self.primary_ids)]
        for _, r in primary.iterrows():
            env = [r["environment"]] if several_envs else []
            base = macro_name("ratio", *env, r["probe"], r["variant"], "cross over same")
            out[base], out[base + "Low"], out[base + "High"] = (sig3(r[k]) for k in ("ratio", "ci_low", "ci_high"))
        return out

    def figures(self) -> dict:
        """name -> matplotlib Figure; the name says what it shows and is the file name."""
        from osbench_analysis import plots

        figs = {"per_op_forest": plots.forest_plot(self.primary_estimates)}
        if self.ratios is not None and len(self.ratios):
            figs[f"ratio_vs_{self.settings.baseline}_forest"] = plots.ratio_forest_plot(self.ratios)
        if len(self.placement_ratios):
            figs["cross_over_same_cpu_forest"] = plots.ratio_forest_plot(self.placement_ratios)
        return figs


def placement_ratio_table(samples: pd.DataFrame, settings: AnalysisSettings) -> pd.DataFrame:
    """cross_cpu / same_cpu per two-party condition: the cost of waking the other CPU."""
    return stats.ratio_table(samples[samples["placement"].isin(["same_cpu", "cross_cpu"])],
                             baseline="same_cpu", by="placement",
                             match=("campaign_id", "environment", "probe", "variant"),
                             **settings.stats_kwargs())


def analyze(campaigns: list[str] | None = None, root: str | Path | None = None, *,
            level: float = stats.DEFAULT_LEVEL, n_resamples: int = stats.DEFAULT_RESAMPLES,
            seed: int = stats.DEFAULT_SEED, estimator: str = "median", ci_method: str = stats.DEFAULT_CI_METHOD,
            baseline: str = "native") -> Analysis:
    """Load the campaigns (seals verified) and compute every estimate with its CI."""
    settings = AnalysisSettings(level, n_resamples, seed, estimator, ci_method, baseline)
    ids = select_campaigns(campaigns, root)
    loaded = [store.load_campaign(i, root) for i in ids]
    samples = pd.concat([c.samples for c in loaded], ignore_index=True)
    estimates = stats.flag_sensitivity(samples, **settings.stats_kwargs())
    qual = quality.quality_table(samples)
    ratios = None
    if samples["environment"].nunique() > 1:
        envs = set(samples["environment"])
        if baseline not in envs:
            raise ValueError(f"baseline {baseline!r} is not among the selected environments {sorted(envs)}")
        ratios = stats.ratio_table(samples, baseline=baseline, **settings.stats_kwargs())
    elif len(ids) > 1:  # several campaigns of one environment: each against the first one named
        settings = replace(settings, baseline=ids[0])
        ratios = stats.ratio_table(samples, baseline=ids[0], by="campaign_id", **settings.stats_kwargs())
    placement = placement_ratio_table(samples, settings)
    placement = placement[np.isfinite(placement["ratio"])].reset_index(drop=True)
    return Analysis(ids, settings, {c.id: c.manifest for c in loaded}, samples, estimates, qual, ratios, placement)
