"""The microkernel-style IPC table: the same small service done directly as a
system call (service_direct) and as a request to a user-space server process
(service_pipe, service_unix, service_shm), same CPU and across CPUs.  Each
row is a condition's per-call estimate with its CI beside the direct call's
and their ratio with its own CI (stats.estimate_ci, stats.ratio_ci) -- the
measured counterpart, on this monolithic kernel, of MINIX 3's system-call
overhead."""
from __future__ import annotations

import json

import pandas as pd

from osbench_analysis import stats

DIRECT = "service_direct"
TRANSPORTS = {"service_pipe": "pipe", "service_unix": "AF_UNIX", "service_shm": "shared memory + futex"}
COLUMNS = ["transport", "bytes", "placement", "estimate_ns", "ci_low_ns", "ci_high_ns", "direct_ns",
           "direct_ci_low_ns", "direct_ci_high_ns", "ratio", "ratio_low", "ratio_high", "n_runs", "ci_method",
           "level"]


def _bytes(pj: str) -> int:
    return int((json.loads(pj) if isinstance(pj, str) and pj else {}).get("bytes", 0))


def service_table(samples: pd.DataFrame, **kw) -> pd.DataFrame:
    """One row per (transport, bytes, placement) measured in ``samples`` (one
    environment), plus the direct call's rows (transport 'direct', ratio 1)."""
    s = samples[samples["probe"].isin([DIRECT, *TRANSPORTS])]
    if "environment" in s.columns and s["environment"].nunique() > 1:
        raise ValueError(f"service_table needs one environment; got {sorted(s['environment'].unique())}")
    s = s.assign(bytes=s["params_json"].map(_bytes))
    rows = []
    for nbytes, part in s.groupby("bytes", sort=True):
        direct = part[part["probe"] == DIRECT]
        if direct.empty:
            continue
        d = stats.estimate_ci(direct, **kw)
        rows.append({"transport": "direct", "bytes": nbytes, "placement": "same_cpu", "estimate_ns": d.estimate_ns,
                     "ci_low_ns": d.ci_low_ns, "ci_high_ns": d.ci_high_ns, "direct_ns": d.estimate_ns,
                     "direct_ci_low_ns": d.ci_low_ns, "direct_ci_high_ns": d.ci_high_ns, "ratio": 1.0, "ratio_low": 1.0,
                     "ratio_high": 1.0, "n_runs": d.n_runs, "ci_method": d.ci_method, "level": d.level})
        for probe, transport in TRANSPORTS.items():
            for placement, cond in part[part["probe"] == probe].groupby("placement", sort=True):
                e = stats.estimate_ci(cond, **kw)
                r = stats.ratio_ci(cond, direct, **kw)
                rows.append({"transport": transport, "bytes": nbytes, "placement": placement,
                             "estimate_ns": e.estimate_ns, "ci_low_ns": e.ci_low_ns, "ci_high_ns": e.ci_high_ns,
                             "direct_ns": d.estimate_ns, "direct_ci_low_ns": d.ci_low_ns, "direct_ci_high_ns": d.ci_high_ns,
                             "ratio": r.ratio, "ratio_low": r.ci_low, "ratio_high": r.ci_high, "n_runs": e.n_runs,
                             "ci_method": e.ci_method, "level": e.level})
    return pd.DataFrame(rows, columns=COLUMNS)


def format_service_table(t: pd.DataFrame) -> str:
    """Plain-text table: per-call time [CI] and the ratio to the direct call [CI]."""
    lines = [f"{'service':10s} {'transport':22s} {'placement':9s} {'per call (ns)':>30s} {'x direct':>24s}"]
    for r in t.itertuples():
        service = "getppid" if r.bytes == 0 else f"read {r.bytes} B"
        lines.append(f"{service:10s} {r.transport:22s} {r.placement:9s} "
                     f"{r.estimate_ns:9.0f} [{r.ci_low_ns:8.0f}, {r.ci_high_ns:8.0f}] "
                     f"{r.ratio:7.1f} [{r.ratio_low:6.1f}, {r.ratio_high:6.1f}]")
    return "\n".join(lines)
