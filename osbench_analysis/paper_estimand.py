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


def environment_file_systems(est: pd.DataFrame) -> dict[str, str]:
    """environment -> the file system(s) its file probes ran on (the 'fs=' of its conditions' variants)."""
    from osbench_analysis.families import variant_params

    out: dict[str, list[str]] = {}
    for env, variant in zip(est["environment"], est["variant"]):
        fs = variant_params(variant).get("fs")
        if fs:
            out.setdefault(env, [])
            if fs not in out[env]:
                out[env].append(fs)
    return {env: ", ".join(v) for env, v in out.items()}
