"""The microkernel-versus-monolithic comparison measured here: every
environment against native, per primitive, with the ratio's interval and the
absolute cost of one kernel crossing, beside the published factors.

The crossing cost is the difference of two per-op estimates (the
environment's minus native's, same probe and placement), each the engine's
estimand (geometric mean of run medians); its interval combines the two
run-level t-intervals by the delta method with Welch-Satterthwaite degrees of
freedom, so it carries both sides' run-to-run variation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from osbench_analysis import stats
from osbench_analysis.catalog import registry

#: The probe whose one iteration is one kernel entry and nothing else: the crossing.
CROSSING_PROBE = "null_syscall"
#: Where only the file path changes (a file server, the gofer): one stat on the served file
#: system (under FUSE's default caching partly answered from the kernel's caches; uncached,
#: 5 requests to the server at the probes' depth, docs/environments.md).
FILE_CROSSING_PROBE = "stat"
#: in order of preference: what an environment's crossing is measured with
CROSSING_PROBES = (CROSSING_PROBE, FILE_CROSSING_PROBE)

CROSSING_COLUMNS = ["environment", "arch_class", "baseline", "probe", "placement", "cost_ns", "ci_low_ns",
                    "ci_high_ns", "estimate_ns", "baseline_estimate_ns", "n_runs", "baseline_n_runs", "level",
                    "method"]


@dataclass(frozen=True)
class Difference:
    diff: float
    ci_low: float
    ci_high: float
    a: float
    b: float


def geomean_difference_ci(a: stats.RunData, b: stats.RunData, level: float = stats.DEFAULT_LEVEL) -> Difference:
    """exp(mean log run median of A) - the same of B, with a delta-method
    Welch interval.  Needs at least two runs a side."""
    va, vb = a.run_values("median"), b.run_values("median")
    if va.size < 2 or vb.size < 2:
        raise ValueError(f"a difference interval needs >= 2 runs on each side (have {va.size} and {vb.size})")
    ea, eb = math.exp(va.mean()), math.exp(vb.mean())
    ca = (ea ** 2) * va.var(ddof=1) / va.size   # delta method: Var(exp(m)) ~ exp(m)^2 Var(m)
    cb = (eb ** 2) * vb.var(ddof=1) / vb.size
    se = math.sqrt(ca + cb)
    denom = (ca ** 2 / (va.size - 1) if ca else 0.0) + (cb ** 2 / (vb.size - 1) if cb else 0.0)
    df = (ca + cb) ** 2 / denom if denom > 0 else float(va.size + vb.size - 2)
    t = float(sps.t.ppf(0.5 + level / 2, df))
    d = ea - eb
    return Difference(d, d - t * se, d + t * se, ea, eb)


#: the design whose crossing is a served file's, never a system call's (FUSE: environments/fuse.py)
FILE_SERVER = "user-space-server"


def crossing_candidates(environment: str, arch_class: str | None = None) -> tuple[str, ...]:
    """The probes an environment's crossing may be measured with, in order of preference: a file server's
    only with one stat on the served file system (its null system call never reaches the server: a FUSE
    campaign that measured one has no crossing in it), every other environment's with a null system call,
    else a stat.  ``arch_class``: the campaign's design (default: the registered environment's)."""
    if arch_class is None:
        from osbench_analysis import environments

        arch_class = environments.get(environment).arch_class if environment in environments.names() else None
    return (FILE_CROSSING_PROBE,) if arch_class == FILE_SERVER else CROSSING_PROBES


def crossing_probe(env_samples: pd.DataFrame) -> str | None:
    """The probe one of whose iterations crosses into what serves it: a null
    system call, or, where only the file path changes (a file server, the
    gofer), one stat on the served file system (crossing_candidates)."""
    have = set(env_samples["probe"])
    env = str(env_samples["environment"].iloc[0]) if len(env_samples) and "environment" in env_samples else ""
    arch = str(env_samples["arch_class"].iloc[0]) if len(env_samples) and "arch_class" in env_samples else None
    return next((p for p in crossing_candidates(env, arch) if p in have), None)


def crossing_costs(samples: pd.DataFrame, *, baseline: str = "native", probe: str | None = None,
                   level: float = stats.DEFAULT_LEVEL, workdir_fs: str | None = None) -> pd.DataFrame:
    """Per environment and placement: what one crossing adds over the baseline
    environment (ns, with CI), measured with `probe` (default: per environment,
    `crossing_probe`), on the host-backed folder (or ``workdir_fs``).  Environments
    without the probe, or the baseline missing, are left out."""
    s = samples[~samples["warmup"].astype(bool)]
    # one condition per side: a sandbox's file probe measured on the guest kernel's own tmpfs as well
    # (registry.WORKDIR_FS) is another condition; the crossing is the one to the host-backed folder, or
    # with ``workdir_fs`` (e.g. 'guest-tmpfs') the sandboxes' conditions in that folder, against the baseline's one
    in_guest = s["variant"].fillna("").astype(str).str.contains(f"{registry.WORKDIR_FS}=", regex=False)
    if workdir_fs in (None, registry.FS_HOST_VOLUME):
        s = s[~in_guest]
    else:
        mine = s["variant"].fillna("").astype(str).str.contains(f"{registry.WORKDIR_FS}={workdir_fs}", regex=False)
        s = s[(mine & (s["environment"] != baseline)) | (~in_guest & (s["environment"] == baseline))]
    rows = []
    for env, sub_env in s[s["environment"] != baseline].groupby("environment"):
        p = probe or crossing_probe(sub_env)
        if p is None:
            continue
        for placement, sub in sub_env[sub_env["probe"] == p].groupby("placement"):
            base = s[(s["environment"] == baseline) & (s["probe"] == p) & (s["placement"] == placement)]
            if base["run"].nunique() < 2 or sub["run"].nunique() < 2:
                continue
            d = geomean_difference_ci(stats.run_data(sub), stats.run_data(base), level)
            rows.append({"environment": env, "arch_class": sub["arch_class"].iloc[0], "baseline": baseline,
                         "probe": p, "placement": placement, "cost_ns": d.diff, "ci_low_ns": d.ci_low,
                         "ci_high_ns": d.ci_high, "estimate_ns": d.a, "baseline_estimate_ns": d.b,
                         "n_runs": sub["run"].nunique(), "baseline_n_runs": base["run"].nunique(),
                         "level": level,
                         "method": "difference of geometric means of run medians, delta-method Welch interval"})
    return pd.DataFrame(rows, columns=CROSSING_COLUMNS)


def slowdown_table(ratios: pd.DataFrame, primitive_of: dict[str, str]) -> pd.DataFrame:
    """Environment-over-native ratios (stats.ratio_table rows) with the
    primitive each probe measures, for drawing beside the published factors."""
    if ratios is None or ratios.empty:
        return pd.DataFrame(columns=["primitive", "environment", "probe", "variant", "placement", "ratio",
                                     "ci_low", "ci_high"])
    t = ratios[np.isfinite(ratios["ratio"])].copy()
    t["primitive"] = t["probe"].map(primitive_of)
    return t[t["primitive"].notna()].reset_index(drop=True)
