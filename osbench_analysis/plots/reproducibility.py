"""Reproducibility shown, not just computed: per family of primitives, each
campaign's estimate with its within-campaign interval beside the pooled one,
so campaign-to-campaign spread is visible at a glance (issue #20)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps
from osbench_analysis.plots.architectures import env_short


MAX_ROWS = 40     # conditions per figure; a family with more is split

#: A placement as a reader reads it.
_PLACEMENT_WORDS = {"same_cpu": "one CPU", "cross_cpu": "two CPUs", "unpinned": "unpinned"}


def _condition_label(environment: str, probe: str, variant: str, placement: str) -> str:
    """'gVisor: open + close (9p), one CPU': printed names, never the identifiers."""
    from osbench_analysis.catalog.families import file_system, plain_text, print_name, print_variant

    shown = print_variant(variant or "")
    fs = "--" if "guest's own" in shown else file_system(variant or "")     # named once
    extra = [w for w in (shown, fs) if w != "--"]
    return (f"{env_short(environment)}: {plain_text(print_name(probe))}"
            + (f" ({', '.join(extra)})" if extra else "") + f", {_PLACEMENT_WORDS.get(placement, placement)}")


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text.lower()).strip("_")


def campaigns_forest(values: pd.DataFrame, pooled: pd.DataFrame, title: str = "", level: float = 0.95):
    """One row per condition (environment, probe, variant, placement): each
    campaign's estimate with its t interval over runs (thin, coloured by
    campaign order) and the pooled estimate with its interval over campaigns
    (black diamond).  Log time axis."""
    import matplotlib.pyplot as plt

    keys = ["environment", "probe", "variant", "placement"]
    conds = pooled[keys].drop_duplicates().reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(conds) + 1.4))
    order = {c: i for i, c in enumerate(sorted(values["campaign_id"].unique()))}
    cmap = plt.get_cmap("viridis", max(len(order), 2))
    labels = []
    for i, c in conds.iterrows():
        sel = np.logical_and.reduce([values[k] == c[k] for k in keys])
        v = values[sel]
        for j, r in enumerate(v.sort_values("campaign_id").itertuples()):
            y = i + 0.12 * (j - (len(v) - 1) / 2)
            t = sps.t.ppf(0.5 + level / 2, max(r.n_runs - 1, 1))
            lo, hi = np.exp(r.y - t * r.se), np.exp(r.y + t * r.se)
            ax.plot([lo, hi], [y, y], color=cmap(order[r.campaign_id]), lw=1)
            ax.plot([r.estimate_ns], [y], "o", ms=3, color=cmap(order[r.campaign_id]))
        p = pooled[np.logical_and.reduce([pooled[k] == c[k] for k in keys])].iloc[0]
        ax.plot([p.ci_low_ns, p.ci_high_ns], [i + 0.42, i + 0.42], color="black", lw=2)
        ax.plot([p.estimate_ns], [i + 0.42], "D", ms=4, color="black")
        tau = "" if not np.isfinite(p.between_campaign_sd) else f" τ={p.between_campaign_sd:.2f}"
        labels.append(_condition_label(c.environment, c.probe, c.variant, c.placement) + tau)
    ax.set_yticks(range(len(conds)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("time per operation (ns, log scale)")
    n = int(pooled["n_campaigns"].max()) if len(pooled) else 0
    ax.set_title(f"{title}: per campaign (colour, {level:.0%} CI over runs) and pooled\n"
                 f"(black, {level:.0%} CI over {n} campaigns); τ: between-campaign SD (log)", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def reproducibility_figures(pooling) -> dict:
    """name -> Figure: one campaigns_forest per family (families.py), for the
    conditions pooled over more than one campaign."""
    from osbench_analysis.catalog import families

    pooled = pooling.estimates[pooling.estimates["n_campaigns"] > 1]
    if pooled.empty:
        return {}
    fam = pooled["probe"].map(families.probe_family)
    figs = {}
    for family in [f for f in families.FAMILIES if (fam == f).any()]:
        part = pooled[fam == family]
        for k in range(0, len(part), MAX_ROWS):
            chunk = part.iloc[k:k + MAX_ROWS]
            suffix = f"_{k // MAX_ROWS + 1}" if len(part) > MAX_ROWS else ""
            figs[f"reproducibility_{_slug(family)}{suffix}"] = campaigns_forest(
                pooling.values, chunk, title=family, level=pooling.level)
    return figs


def _deviations(values: pd.DataFrame, pooled: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Each campaign's value of a pooled condition relative to the pooled value (log scale)."""
    p = pooled[pooled["n_campaigns"] > 1]
    m = values.merge(p[[*keys, "estimate"]], on=keys)
    return m.assign(deviation=np.exp(m["y"] - np.log(m["estimate"])))


def spread_overview(pooling):
    """The body's one reproducibility figure: for every pooled condition, each campaign's value divided by
    the pooled value, per environment, for absolute times (left) and for ratios to the baseline paired
    within rounds (right): campaign-to-campaign spread at a glance, on one relative axis.  A campaign and
    the round it was measured in share a colour (the round a campaign belongs to: pooling.rounds)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    keys = list(pooling.condition)
    est = pooling.estimates.rename(columns={"estimate_ns": "estimate"})
    absolute = _deviations(pooling.values, est, keys)
    absolute = absolute.assign(round=absolute["campaign_id"].map(pooling.rounds))
    paired = pooling.paired()
    paired = paired.assign(campaign_id=paired["round"])
    ratios = _deviations(paired, pooling.ratios.rename(columns={"ratio": "estimate"}), keys) \
        if len(pooling.ratios) else pd.DataFrame(columns=[*keys, "deviation", "round"])
    rounds = sorted(set(absolute["round"]) | set(ratios["round"]))
    fig, axes = plt.subplots(1, 2, figsize=(7.5, 2.9), sharey=True,
                             gridspec_kw={"width_ratios": [max(absolute["environment"].nunique(), 1),
                                                           max(ratios["environment"].nunique(), 1)]})
    cmap = plt.get_cmap("viridis", max(len(rounds), 2))
    rng = np.random.default_rng(0)          # jitter only: fixed, so the figure is the same on every build
    for ax, d, title in ((axes[0], absolute, "absolute time per operation"),
                         (axes[1], ratios, f"ratio to {pooling.baseline}, paired in its round")):
        envs = list(dict.fromkeys(d["environment"]))
        for x, env in enumerate(envs):
            part = d[d["environment"] == env]
            for k, rnd in enumerate(rounds):
                v = part[part["round"] == rnd]["deviation"].to_numpy(float)
                ax.scatter(x + (k - (len(rounds) - 1) / 2) * 0.22 + rng.uniform(-0.07, 0.07, len(v)), v, s=5,
                           alpha=0.7, color=cmap(k), linewidths=0)
        ax.axhline(1.0, color="0.3", lw=0.8)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(range(len(envs)), [env_short(e) for e in envs], rotation=30, ha="right", fontsize=7)
        ax.set_title(title, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_yticks([0.25, 0.5, 1, 2])
    axes[0].set_ylabel("campaign / pooled value", fontsize=8)
    handles = [plt.Line2D([], [], ls="", marker="o", ms=4, color=cmap(k)) for k in range(len(rounds))]
    fig.legend(handles, [f"campaign {r[:4]}-{r[4:6]}-{r[6:8]} {r[9:11]}:{r[11:13]}" if len(r) >= 13 else r
                         for r in rounds], loc="lower center", ncol=len(rounds), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def spread_summary(pooling):
    """The appendix's one reproducibility figure: per primitive (a row, printable name, ordered by family),
    how far apart the host's campaigns put it, as the largest campaign value over the smallest (1 = the
    campaigns agree), one marker per environment; only conditions measured in more than one campaign,
    one CPU placement, each environment's first variant of a probe."""
    import matplotlib.pyplot as plt

    from osbench_analysis.catalog import families

    v = pooling.values
    v = v[v["placement"] == "same_cpu"] if (v["placement"] == "same_cpu").any() else v
    g = v.groupby(["environment", "probe", "variant"], dropna=False)["y"]
    spread = pd.DataFrame({"spread": np.exp(g.max() - g.min()), "n": g.size()}).reset_index()
    spread = spread[spread["n"] > 1].drop_duplicates(["environment", "probe"])
    probes = sorted(spread["probe"].unique(), key=lambda p: (families.family_rank(families.probe_family(p)), families.print_name(p)))
    envs = list(dict.fromkeys(e for e in pooling.estimates["environment"] if e in set(spread["environment"])))
    fig, ax = plt.subplots(figsize=(7.0, max(2.5, 0.15 * len(probes) + 1.2)))
    markers = "osD^v<>PXh*"
    cmap = plt.get_cmap("tab10")
    row = {p: i for i, p in enumerate(probes)}
    for k, env in enumerate(envs):
        part = spread[spread["environment"] == env]
        ax.scatter(part["spread"], part["probe"].map(row), s=14, marker=markers[k % len(markers)],
                   color=cmap(k % 10), label=env_short(env), alpha=0.85, linewidths=0)
    ax.set_yticks(range(len(probes)), [families.plain_text(families.print_name(p)) for p in probes], fontsize=7)
    ax.set_ylim(len(probes) - 0.5, -0.5)
    ax.set_xscale("log")
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.tick_params(axis="x", which="both", labelsize=7)
    ax.set_xlabel("largest campaign value / smallest (1: the campaigns agree; log scale)", fontsize=8)
    ax.axvline(1.0, color="0.3", lw=0.8)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", frameon=True)
    fig.tight_layout()
    return fig


__all__ = ["campaigns_forest", "reproducibility_figures", "spread_overview", "spread_summary"]
