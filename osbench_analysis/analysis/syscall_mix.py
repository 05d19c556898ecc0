"""Whole programs predicted from their parts (issue #32, item 4): each application workload's counted
system calls (data/syscall_mix/, measure/syscall_mix.py) priced with the per-primitive costs an
environment adds over native Linux on the same host, against the slowdown measured for the workload.

The price of a call is the measured difference environment minus native (same campaign round, both
processes on one CPU) of the primitive that stands for its kind (``PRICES``):

* process creation: one ``execve`` = one fork + exec + wait (the fork + exec probe); ``clone``,
  ``wait4`` and the like are inside that price and not priced again;
* file opening: one ``openat``/``open`` = one open + close (the open/close probe), its ``close`` inside it;
* file metadata: ``stat`` and its kin (``newfstatat``, ``statx``, ``lstat``, ``access``, ``readlink``...)
  = one stat;
* every other call = one null system call, except in a file server's environment (FUSE), where only
  file calls are served by the server: the rest cost nothing extra there.

A kind whose primitive the environment did not measure is left unpriced and counted as such.  The
prediction is a lower bound where the workload does work a system call's price does not cover (page
faults, memory the sandbox maps, a file system's own code) and an upper bound where calls are served
without a crossing (a FUSE workload's calls outside the served folder, a sandbox's cached paths).
The interval of a prediction is the range the prices' intervals give (their lows summed, their highs
summed), not a confidence interval."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from osbench_analysis.paths import REPO_ROOT

MIX_DIR = REPO_ROOT / "data" / "syscall_mix"
PROCESS = {"execve", "execveat"}
PROCESS_INSIDE = {"clone", "clone3", "fork", "vfork", "wait4", "waitid", "exit_group", "exit"}
OPEN = {"openat", "open", "creat"}
OPEN_INSIDE = {"close"}
METADATA = {"stat", "lstat", "fstat", "newfstatat", "statx", "access", "faccessat", "faccessat2", "readlink",
            "readlinkat", "getdents64", "unlink", "unlinkat", "mkdir", "mkdirat", "rename", "renameat2", "chmod",
            "fchmodat", "utimensat"}
#: kind -> the probe whose environment-minus-native difference prices one call of the kind
PRICES = {"process": "fork_exec", "open": "open_close", "metadata": "stat", "other": "null_syscall"}
FILE_KINDS = ("open", "metadata")


def kind_of(name: str) -> str | None:
    """A system call's kind (PRICES), or None for a call priced inside another's kind."""
    if name in PROCESS:
        return "process"
    if name in PROCESS_INSIDE or name in OPEN_INSIDE:
        return None
    if name in OPEN:
        return "open"
    if name in METADATA:
        return "metadata"
    return "other"


def load_mix(host: str | None = None, directory: str | Path | None = None) -> dict:
    """The counted mix under ``directory`` (default MIX_DIR, data/syscall_mix/): this host's file when there
    is one, else any host's (a program's calls are the program's), with the host it was counted on; {} when
    none was counted."""
    d = Path(directory) if directory is not None else MIX_DIR
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    if not files:
        return {}
    chosen = next((f for f in files if host and f.stem == host), files[0])
    return json.loads(chosen.read_text())


def kinds(per_run: dict[str, float]) -> dict[str, float]:
    """{kind: calls per run} (calls priced inside another kind left out)."""
    out: dict[str, float] = {}
    for name, n in per_run.items():
        k = kind_of(name)
        if k is not None:
            out[k] = out.get(k, 0.0) + float(n)
    return out


def differences(estimates: pd.DataFrame, env: str, baseline: str = "native") -> dict[str, tuple[float, float, float]]:
    """{probe: (difference, low, high)} of the pricing probes, environment minus baseline (same CPU, the
    plain variant or a file probe's host-backed one), low/high from the two intervals' far ends."""
    e = estimates[(estimates["placement"] == "same_cpu")]
    out = {}
    for probe in set(PRICES.values()):
        a = e[(e["environment"] == env) & (e["probe"] == probe)]
        b = e[(e["environment"] == baseline) & (e["probe"] == probe)]
        if a.empty or b.empty:
            continue
        a = a.sort_values("variant").iloc[0]     # '' (plain) first, then fs=host-volume before fs=tmpfs
        b = b.sort_values("variant").iloc[0]
        out[probe] = (a["estimate_ns"] - b["estimate_ns"], a["ci_low_ns"] - b["ci_high_ns"],
                      a["ci_high_ns"] - b["ci_low_ns"])
    return out


def predict(estimates: pd.DataFrame, ratios: pd.DataFrame, mix: dict, *, arch_classes: dict | None = None,
            baseline: str = "native") -> pd.DataFrame:
    """Per environment and workload: measured slowdown [interval], predicted slowdown [range], the calls
    per run priced and unpriced, and the predicted over measured."""
    rows = []
    workloads = (mix or {}).get("workloads", {})
    if ratios is None or ratios.empty or not {"placement", "probe", "environment"} <= set(ratios.columns):
        return pd.DataFrame()     # no environment beside native measured (or no workload): nothing to predict
    r = ratios[(ratios["placement"] == "same_cpu") & ratios["probe"].isin(list(workloads))]
    est = estimates[estimates["placement"] == "same_cpu"]
    for (env, probe), g in r.groupby(["environment", "probe"], sort=True):
        native = est[(est["environment"] == baseline) & (est["probe"] == probe)]
        if native.empty:
            continue
        t = float(native["estimate_ns"].iloc[0])
        diff = differences(estimates, env, baseline)
        server = (arch_classes or {}).get(env) == "user-space-server"
        calls = kinds(workloads[probe]["per_run"])
        add, low, high, priced, unpriced = 0.0, 0.0, 0.0, 0.0, 0.0
        for kind, n in calls.items():
            if server and kind not in FILE_KINDS:
                priced += n           # served by the host kernel, not the file server: no extra cost
                continue
            d = diff.get(PRICES[kind])
            if d is None:
                unpriced += n
                continue
            add, low, high, priced = add + n * d[0], low + n * d[1], high + n * d[2], priced + n
        m = g.iloc[0]
        pred = (t + add) / t
        rows.append({"environment": env, "probe": probe, "measured": float(m["ratio"]),
                     "measured_low": float(m["ci_low"]), "measured_high": float(m["ci_high"]),
                     "predicted": pred, "predicted_low": (t + low) / t, "predicted_high": (t + high) / t,
                     "calls_priced": priced, "calls_unpriced": unpriced,
                     "predicted_over_measured": pred / float(m["ratio"]) if m["ratio"] else math.nan})
    return pd.DataFrame(rows)


def from_result(result, directory: str | Path | None = None, ratios: pd.DataFrame | None = None
                ) -> tuple[pd.DataFrame, dict]:
    """predict() for an analysis' own host and primary campaigns, and the mix record used; ``ratios``: the
    measured slowdowns to set beside the predictions (default: the analysis' environment ratios within one
    campaign; the paper passes the ones its table prints, pooled over the host's rounds where it can)."""
    host = result.hosts[0] if getattr(result, "hosts", None) else None
    mix = load_mix(host, directory)
    if not mix:
        return pd.DataFrame(), {}
    e = result.estimates[result.estimates["campaign_id"].isin(result.primary_ids)]
    ratios = result.environment_ratios if ratios is None else ratios
    ratios = ratios[ratios["host"] == host] if host is not None and "host" in ratios else ratios
    arch = {m.environment: m.arch_class for cid, m in result.manifests.items() if cid in set(result.primary_ids)}
    return predict(e, ratios, mix, arch_classes=arch, baseline=result.settings.baseline), mix
