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
