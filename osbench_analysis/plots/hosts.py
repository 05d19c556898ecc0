"""One primitive across hosts: its per-operation time on each host, with CIs.

The fleet's figure (issue: campaigns from many hosts): one row per
(host, environment), the estimate and its interval, hosts in the order the
analysis met them, so a reader sees at a glance whether a kernel version, a
CPU or a configuration moves the primitive, and by how much beyond the CIs.
The ratio table and forest against the first host (``Analysis.host_ratios``)
carry the per-host ratios with their own intervals.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from osbench_analysis.catalog.families import plain_name
from osbench_analysis.plots.architectures import env_short

#: the primitive the analysis draws across hosts unless told otherwise
DEFAULT_PRIMITIVE = ("null_syscall", "", "same_cpu")


def primitive_across_hosts(estimates: pd.DataFrame, probe: str, variant: str = "",
                           placement: str = "same_cpu", *, title: str | None = None) -> Figure:
    """``estimates``: ``Analysis.estimates`` (or any table with host, environment,
    probe, variant, placement, estimate_ns, ci_low_ns, ci_high_ns)."""
    need = {"host", "environment", "probe", "variant", "placement", "estimate_ns", "ci_low_ns", "ci_high_ns"}
    missing = need - set(estimates.columns)
    if missing:
        raise ValueError(f"primitive_across_hosts needs the columns {sorted(missing)}")
    rows = estimates[(estimates["probe"] == probe) & (estimates["variant"].fillna("") == variant)
                     & (estimates["placement"] == placement)]
    if rows.empty:
        have = sorted(set(estimates["probe"]))
        raise ValueError(f"no estimate of {probe!r} [{variant}] {placement} (probes here: {', '.join(have)})")
    # one row per (host, environment): the host's first (primary) campaign
    rows = rows.drop_duplicates(["host", "environment"], keep="first").reset_index(drop=True)
    envs = list(dict.fromkeys(rows["environment"]))
    colours = dict(zip(envs, sns.color_palette("colorblind", len(envs))))
    fig = Figure(figsize=(6.5, 0.34 * len(rows) + 1.5), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(rows))[::-1].astype(float)
    for env in envs:
        m = (rows["environment"] == env).to_numpy()
        r = rows[m]
        err = np.vstack([r["estimate_ns"] - r["ci_low_ns"], r["ci_high_ns"] - r["estimate_ns"]])
        ax.errorbar(r["estimate_ns"], y[m], xerr=np.clip(np.nan_to_num(err), 0, None), fmt="o", ms=5,
                    capsize=2.5, lw=1.3, color=colours[env], label=env)
    ax.set_yticks(y, [f"{h} ({e})" if len(envs) > 1 else str(h) for h, e in zip(rows["host"], rows["environment"])])
    ax.set_xscale("log")
    ax.set_xlabel("time per operation (ns, log scale)")
    level = rows["level"].iloc[0] if "level" in rows.columns else 0.95
    label = probe + (f" [{variant}]" if variant else "") + f" {placement}"
    ax.set_title(title or f"{label} on each host, {level:.0%} CI", fontsize=10)
    ax.grid(axis="x", which="both", alpha=0.25)
    if len(envs) > 1:
        fig.legend(loc="outside lower center", ncol=min(len(envs), 4), fontsize=9, frameon=False)
    ax.set_ylim(-0.8, len(rows) - 0.4)
    return fig


#: a placement as a reader reads it
PLACEMENT_WORDS = {"same_cpu": "both on one CPU", "cross_cpu": "on two CPUs", "unpinned": "unpinned"}


def cross_host_figure(crossing_costs: pd.DataFrame, ratios: pd.DataFrame, labels: dict, *,
                      baseline: str = "native", placement: str = "same_cpu") -> Figure:
    """Hosts as a level (analysis/hosts.py ``CrossHost.figure``): left, each environment's crossing cost
    on every host; right, its crossing probe's ratio to the baseline (``ratios``: those rows alone) on
    every host; each host (``labels``: key -> label) in its own colour and marker, with its pooled
    interval (over the host's campaigns where it has several)."""
    panels = []
    cc = crossing_costs
    if len(cc):
        panels.append((cc[cc["placement"] == placement], "cost_ns", "ci_low_ns", "ci_high_ns",
                       "one crossing over the baseline (ns, log scale)", "crossing cost"))
    r = ratios
    if len(r):
        panels.append((r[r["placement"] == placement], "ratio", "ci_low", "ci_high", f"ratio to {baseline} (log scale)",
                       "crossing probe"))
    panels = [p for p in panels if len(p[0])]
    if not panels:
        raise ValueError("no crossing cost or crossing-probe ratio on any host to draw")
    # one row per (environment, crossing probe): a host without an environment's probe shows no value in its
    # row, never another probe's (issue 41: FUSE's crossing drawn from a null system call)
    rows = sorted({(e, pr) for p in panels for e, pr in zip(p[0]["environment"], p[0]["probe"])})
    several = {e for e, _ in rows if sum(1 for f, _ in rows if f == e) > 1}
    hosts = list(dict.fromkeys(h for p in panels for h in p[0]["host"]))
    colours = dict(zip(hosts, sns.color_palette("colorblind" if len(hosts) <= 10 else "husl", len(hosts))))
    markers = dict(zip(hosts, ("osD^vP*Xhd<>p8H" * (len(hosts) // 15 + 1))[:len(hosts)]))
    fig = Figure(figsize=(10, 0.45 * len(rows) * max(1, len(hosts) / 2) + 1.8 + 0.22 * ((len(hosts) + 1) // 2)),
                 layout="constrained")
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    y0 = np.arange(len(rows))[::-1].astype(float)
    step = 0.6 / max(1, len(hosts))
    for ax, (t, value, low, high, xlabel, title) in zip(axes, panels):
        for k, h in enumerate(hosts):
            g = t[t["host"] == h].drop_duplicates(["environment", "probe"])
            keys = [key for key in zip(g["environment"], g["probe"]) if key in rows]
            if not keys:
                continue
            g = g.set_index(["environment", "probe"]).loc[keys]
            y = np.array([y0[rows.index(key)] for key in keys]) + 0.3 - (k + 0.5) * step
            v = g[value].to_numpy(float)
            err = np.vstack([v - g[low].to_numpy(float), g[high].to_numpy(float) - v])
            ax.errorbar(np.clip(v, 1e-9, None), y, xerr=np.clip(np.nan_to_num(err), 0, None), fmt=markers[h],
                        ms=5, capsize=2.5, lw=1.2, color=colours[h], label=labels.get(h, h))
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_title(f"{title}, {PLACEMENT_WORDS.get(placement, placement)}", fontsize=10)
        ax.grid(axis="x", which="both", alpha=0.25)
    axes[0].set_yticks(y0, [env_short(e) + (f" ({plain_name(pr)})" if e in several else "") for e, pr in rows])
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=min(len(hosts), 2 if len(hosts) < 5 else 3),
               fontsize=8, frameon=False)
    return fig
