"""The catalog's scalability sweeps, fitted: which probes sweep which
parameter (the registry's ``sweep``), and one ``stats.sweep_fit`` per probe,
environment and placement found in a campaign's samples.

The fit itself (OLS slope over per-run estimates with a run-level CI) lives in
the stats layer; this module only selects the rows of each sweep and collects
the fits into a table the report layer prints or plots (plots_sweeps.py)."""
from __future__ import annotations

import json

import pandas as pd

from osbench_analysis import stats
from osbench_analysis.catalog import registry
# which probes sweep what, and which campaigns measure nothing else: the registry's knowledge (store.catalog
# needs it too), named here as ever
from osbench_analysis.catalog.registry import sweep_only, swept_probes  # noqa: F401

SWEEP_COLUMNS = ["probe", "environment", "placement", "x", "points", "runs", "slope_ns", "slope_ci_low_ns",
                 "slope_ci_high_ns", "intercept_ns", "growth_rel", "growth_ci_low", "growth_ci_high", "verdict",
                 "level", "note"]


def _sweep_rows(samples: pd.DataFrame, probe: str, x: str) -> pd.DataFrame:
    """The probe's rows whose other parameters are at their defaults (a sweep
    varies one parameter only), with x present."""
    spec = registry.PROBES[probe]
    rows = samples[samples["probe"] == probe]
    if rows.empty:
        return rows
    others = {k: v for k, v in spec.defaults().items() if k != x}

    def on_sweep(pj: str) -> bool:
        params = json.loads(pj) if isinstance(pj, str) and pj else {}
        return x in params and all(params.get(k, v) == v for k, v in others.items())

    return rows[rows["params_json"].map(on_sweep)]


def fit_sweeps(samples: pd.DataFrame, **fit_kw) -> dict[tuple[str, str, str], stats.SweepFit]:
    """One stats.sweep_fit per (probe, environment, placement) with at least two
    swept values in ``samples`` (one campaign's, or several of one host)."""
    fits = {}
    for probe, (x, _points) in swept_probes().items():
        rows = _sweep_rows(samples, probe, x)
        if rows.empty:
            continue
        keys = [k for k in ("environment", "placement") if k in rows.columns]
        groups = rows.groupby(keys, sort=True) if keys else [((), rows)]
        for key, part in groups:
            key = key if isinstance(key, tuple) else (key,)
            env = key[keys.index("environment")] if "environment" in keys else ""
            placement = key[keys.index("placement")] if "placement" in keys else ""
            xs = {json.loads(p)[x] for p in part["params_json"]}
            if len(xs) < 2:
                continue
            if "campaign_id" in part.columns and part["campaign_id"].nunique() > 1:
                # one fit per sweep: runs of several campaigns are runs at their x alike
                part = part.assign(run=part["campaign_id"].astype(str) + ":" + part["run"].astype(str),
                                   campaign_id="+".join(sorted(part["campaign_id"].astype(str).unique())))
            fits[(probe, env, placement)] = stats.sweep_fit(part, x, **fit_kw)
    return fits


def sweep_table(fits: dict[tuple[str, str, str], stats.SweepFit]) -> pd.DataFrame:
    """One row per fitted sweep: slope (ns per unit of x) with its CI, growth over
    the swept range with its CI, and the verdict."""
    rows = [{"probe": probe, "environment": env, "placement": placement, "x": f.x, "points": f.n_levels,
             "runs": f.n_runs, "slope_ns": f.slope_ns, "slope_ci_low_ns": f.slope_ci_low_ns,
             "slope_ci_high_ns": f.slope_ci_high_ns, "intercept_ns": f.intercept_ns, "growth_rel": f.growth_rel,
             "growth_ci_low": f.growth_ci_low, "growth_ci_high": f.growth_ci_high, "verdict": f.verdict,
             "level": f.level, "note": f.note}
            for (probe, env, placement), f in sorted(fits.items())]
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)
