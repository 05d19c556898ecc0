"""The one estimand every table and sentence of the paper quotes for a condition: the geometric mean of
the run medians, with its interval (the statistics' ``mean_over_runs``).  It is the estimand every ratio,
crossing cost and direct-versus-server factor of the paper is built from, so a condition's time in a table
can be divided by another's to give the printed ratio.  Where the statistics would quote the typical run
instead (runs not alike), the warning printed beside the number says so and gives the typical run."""
from __future__ import annotations

import numpy as np
import pandas as pd

#: What the paper's captions call the estimand.
ESTIMAND = "geometric mean of the run medians"
ESTIMAND_PLURAL = "geometric means of the run medians"
_COLUMNS = {"estimate_ns": "mean_over_runs", "ci_low_ns": "mean_over_runs_low", "ci_high_ns": "mean_over_runs_high"}


def paper_estimates(est: pd.DataFrame) -> pd.DataFrame:
    """`est` (analysis estimates) with estimate_ns / ci_low_ns / ci_high_ns holding the paper's estimand;
    rows without it (a single run) keep the quoted estimate and say so in `paper_estimand`."""
    if est.empty or not set(_COLUMNS.values()) <= set(est.columns):
        return est.assign(paper_estimand="quoted")
    out = est.copy()
    have = np.isfinite(out[list(_COLUMNS.values())].astype(float)).all(axis=1)
    for quoted, mean in _COLUMNS.items():
        out.loc[have, quoted] = out.loc[have, mean]
    out["paper_estimand"] = np.where(have, ESTIMAND, "quoted")
    return out


def environment_file_systems(est: pd.DataFrame, *, guest: bool = True) -> dict[str, str]:
    """environment -> the file system(s) its file probes ran on (the 'fs=' of its conditions' variants);
    ``guest=False``: only the host-backed folder's (a sandbox's file probes on the guest kernel's own tmpfs,
    'workdir_fs=guest-tmpfs', are other conditions, left out of the tables compared with native)."""
    from osbench_analysis.catalog.families import variant_params
    from osbench_analysis.catalog.registry import WORKDIR_FS

    out: dict[str, list[str]] = {}
    for env, variant in zip(est["environment"], est["variant"]):
        params = variant_params(variant)
        fs = params.get("fs")
        if fs and (guest or WORKDIR_FS not in params):
            out.setdefault(env, [])
            if fs not in out[env]:
                out[env].append(fs)
    return {env: ", ".join(v) for env, v in out.items()}


def environment_folders(est: pd.DataFrame) -> dict[str, str]:
    """environment -> where its file probes' folder was, each file system named with what it is: 'tmpfs' for
    one folder, '9p (host volume); tmpfs (guest's own)' for a sandbox measured on both (registry.WORKDIR_FS)."""
    from osbench_analysis.catalog.families import variant_params
    from osbench_analysis.catalog.registry import FS_HOST_VOLUME, WORKDIR_FS

    seen: dict[str, dict[str, list[str]]] = {}
    for env, variant in zip(est["environment"], est["variant"]):
        params = variant_params(variant)
        if params.get("fs"):
            where = seen.setdefault(env, {}).setdefault(params.get(WORKDIR_FS, FS_HOST_VOLUME), [])
            if params["fs"] not in where:
                where.append(params["fs"])
    words = {FS_HOST_VOLUME: "host volume", "guest-tmpfs": "guest's own"}
    return {env: "; ".join(f"{', '.join(fs)}" + (f" ({words.get(k, k)})" if len(by) > 1 else "")
                           for k, fs in sorted(by.items(), key=lambda kv: kv[0] != FS_HOST_VOLUME))
            for env, by in seen.items()}
