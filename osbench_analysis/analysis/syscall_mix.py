"""Whole programs predicted from their parts (issues #32 item 4, #42 item 5): each application workload's
system calls counted by name (data/syscall_mix/, measure/syscall_mix.py), each call priced with the measured
primitive that is that call, environment minus native in the same round, against the slowdown measured
for the workload.

A call is priced only by a primitive that makes it (``MATCH``, ``plan``):

* ``getpid`` and its kin (``getppid``, ``gettid``, ``getuid``...): the null system call;
* ``openat``/``open``/``creat``: one open + close, a ``close`` inside it (at most one per open);
* ``stat`` and the calls that walk a path and read its attributes (``newfstatat``, ``statx``, ``lstat``,
  ``access``, ``faccessat2``, ``readlink``): one stat;
* a process made and run: one fork + exec + wait per process created (``clone``/``vfork``/``fork``) that
  ran an ``execve``, its ``wait4`` inside; an ``execve`` beyond the processes created is one that failed
  (a compiler looks for its passes along a path): a path walk, priced as a stat;
* ``mmap``: one mmap + touch + munmap, a ``munmap`` inside it.

Every other call (``read``, ``write``, ``brk``, ``futex``, ``ioctl``...) has no probe measured in the
sandboxes that makes it: it is *unpriced*, counted and named with its share of the calls, never priced as
another call.  In a file server's environment (FUSE) only calls on files reach the server: opens and path
walks are priced with its primitives, a file's reads, writes and directory changes are unpriced, every
other call is served by the host kernel as natively (``not served``, no added cost).

The prediction per round: 1 + sum(n_call * (environment - native of its primitive)) / native workload
time, all from the same round; its standard error by the delta method over those terms' within-round
errors; the rounds pooled as every other quantity (stats.pooled: t interval over the rounds, equal
weights), so its interval covers the host's rounds, like the measured slowdown's.  It leaves out the
unpriced calls and the work no call's price covers (page faults, memory the sandbox maps, a file system's
own code): with unpriced calls it is a floor for the calls' share, not a forecast."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.paths import REPO_ROOT

MIX_DIR = REPO_ROOT / "data" / "syscall_mix"
NULL_LIKE = {"getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getpgrp"}
OPEN = {"openat", "open", "creat"}
PATH_WALK = {"stat", "lstat", "newfstatat", "statx", "access", "faccessat", "faccessat2", "readlink", "readlinkat"}
CREATE = {"clone", "clone3", "fork", "vfork"}
EXEC = {"execve", "execveat"}
#: a call -> the probe that makes it (process creation and failed execs: see ``plan``)
MATCH = {**{n: "null_syscall" for n in NULL_LIKE}, **{n: "open_close" for n in OPEN},
         **{n: "stat" for n in PATH_WALK}, "mmap": "mmap_touch"}
#: calls inside a primitive's price, at most one per priced call of it
INSIDE = {"open_close": ("close",), "fork_exec": ("wait4", "waitid"), "mmap_touch": ("munmap",)}
#: under a file server, the calls on files that reach it and that no probe measured there prices
FILE_IO = {"read", "pread64", "readv", "preadv", "write", "pwrite64", "writev", "pwritev", "getdents64",
           "unlink", "unlinkat", "mkdir", "mkdirat", "rmdir", "rename", "renameat", "renameat2", "fsync",
           "fdatasync", "ftruncate", "truncate", "fchmod", "fchmodat", "chmod", "utimensat", "statfs", "fstatfs",
           "fstat", "lseek"}
FILE_PROBES = ("open_close", "stat")
PRICING_PROBES = ("null_syscall", "open_close", "stat", "fork_exec", "mmap_touch")
COLUMNS = ["environment", "probe", "measured", "measured_low", "measured_high", "measured_over", "predicted",
           "predicted_low", "predicted_high", "n_rounds", "predicted_over", "calls", "calls_priced",
           "calls_unpriced", "calls_not_served", "unpriced_share", "unpriced", "predicted_over_measured"]


def plan(per_run: dict[str, float], *, server: bool = False) -> dict:
    """How one run's calls are priced: {"priced": {probe: calls}, "inside": {name: calls}, "unpriced":
    {name: calls}, "not_served": {name: calls}, "total": calls}; ``server``: a file server's environment."""
    n = {k: float(v) for k, v in per_run.items() if float(v) > 0}
    priced: dict[str, float] = {}
    inside: dict[str, float] = {}
    unpriced: dict[str, float] = {}
    not_served: dict[str, float] = {}

    def add(d, k, v):
        if v > 0:
            d[k] = d.get(k, 0.0) + v

    made = sum(n.get(k, 0.0) for k in CREATE)
    execs = sum(n.get(k, 0.0) for k in EXEC)
    runs = min(made, execs)
    for name, v in n.items():
        if name in CREATE or name in EXEC or any(name in ins for ins in INSIDE.values()):
            continue
        probe = MATCH.get(name)
        if server and probe not in FILE_PROBES:
            add(unpriced if name in FILE_IO else not_served, name, v)
        elif probe is not None:
            add(priced, probe, v)
        else:
            add(unpriced, name, v)
    failed = execs - runs                             # an execve that created no process image: a path walk
    if server:
        add(not_served, "process creation", made + execs)
    else:
        add(priced, "fork_exec", runs)
        add(inside, "execve", runs)                   # each process run: its clone/vfork priced, its execve inside
        add(unpriced, "clone/vfork without exec", made - runs)
        add(priced, "stat", failed)
    for probe, names in INSIDE.items():
        left = priced.get(probe, 0.0)
        for name in names:
            v = n.get(name, 0.0)
            if server and probe not in FILE_PROBES:
                add(not_served, name, v)
                continue
            covered = min(v, left)
            add(inside, name, covered)
            add(unpriced, name, v - covered)
            left -= covered
    return {"priced": priced, "inside": inside, "unpriced": unpriced, "not_served": not_served,
            "total": sum(n.values())}


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


def other_mixes(host: str | None, directory: str | Path | None = None) -> list[dict]:
    """Every counted mix under ``directory`` but ``host``'s: the same programs counted on other machines."""
    d = Path(directory) if directory is not None else MIX_DIR
    return [json.loads(f.read_text()) for f in sorted(d.glob("*.json")) if f.stem != host] if d.is_dir() else []


def mix_agreement(a: dict, b: dict) -> pd.DataFrame:
    """Per workload both mixes counted: the calls per run of each, the largest difference of one call's count
    (name, both counts) and the sum of the absolute differences over the calls (how far the two runs of the
    same programs differ, call by call)."""
    rows = []
    for w in sorted(set(a.get("workloads", {})) & set(b.get("workloads", {}))):
        x, y = a["workloads"][w]["per_run"], b["workloads"][w]["per_run"]
        names = set(x) | set(y)
        diff = {k: float(y.get(k, 0.0)) - float(x.get(k, 0.0)) for k in names}
        top = max(names, key=lambda k: (abs(diff[k]), k)) if names else ""
        rows.append({"probe": w, "calls_a": sum(map(float, x.values())), "calls_b": sum(map(float, y.values())),
                     "abs_diff": sum(abs(v) for v in diff.values()), "largest": top,
                     "largest_a": float(x.get(top, 0.0)), "largest_b": float(y.get(top, 0.0))})
    return pd.DataFrame(rows)


def _round_values(values: pd.DataFrame, rounds: dict[str, str], host: str | None) -> pd.DataFrame:
    """Campaign values (reproducibility.campaign_values) of one host, both parties on one CPU, with their
    round and the variant without its file system (a file probe's fs= is the environment's)."""
    from osbench_analysis.analysis.reproducibility import _without_fs

    v = values[values["placement"] == "same_cpu"]
    if host is not None and "host" in v:
        v = v[v["host"] == host]
    return v.assign(round=v["campaign_id"].map(rounds), variant=v["variant"].fillna("").map(_without_fs))


def per_round(values: pd.DataFrame, rounds: dict[str, str], mix: dict, *, host: str | None = None,
              arch_classes: dict | None = None, baseline: str = "native") -> pd.DataFrame:
    """Per environment, workload and round: the predicted slowdown and its standard error (delta method over
    the round's terms), the calls priced, unpriced and not served.  A round counts when it measured the
    workload natively and, in the environment and natively, every primitive the environment measured in any
    round (so that every round prices the same calls)."""
    v = _round_values(values, rounds, host)
    v = v[v["variant"] == ""]
    workloads = (mix or {}).get("workloads", {})
    rows = []
    for env in sorted(set(v["environment"]) - {baseline}):
        server = (arch_classes or {}).get(env) == "user-space-server"
        have = sorted(set(v.loc[(v["environment"] == env) & v["probe"].isin(PRICING_PROBES), "probe"]))
        for probe, w in workloads.items():
            p = plan(w["per_run"], server=server)
            priced = {k: c for k, c in p["priced"].items() if k in have}
            lacking = {k: c for k, c in p["priced"].items() if k not in have and c > 0}
            unpriced = dict(p["unpriced"])
            for k, c in lacking.items():   # a primitive this environment never measured: its calls unpriced
                unpriced[f"({k})"] = c     # named by the probe in parentheses (report: "not measured there")
            for r, g in v.groupby("round", sort=True):
                nat = g[(g["environment"] == baseline)].set_index("probe")
                env_v = g[g["environment"] == env].set_index("probe")
                if probe not in nat.index or not all(k in nat.index and k in env_v.index for k in priced):
                    continue
                t = float(nat.loc[probe, "estimate_ns"])
                add, var = 0.0, 0.0
                for k, c in priced.items():
                    e, b = env_v.loc[k], nat.loc[k]
                    add += c * (float(e["estimate_ns"]) - float(b["estimate_ns"]))
                    var += c ** 2 * ((float(e["estimate_ns"]) * float(e["se"])) ** 2
                                     + (float(b["estimate_ns"]) * float(b["se"])) ** 2)
                var = var / t ** 2 + (add / t) ** 2 * float(nat.loc[probe, "se"]) ** 2
                pred = 1.0 + add / t
                rows.append({"environment": env, "probe": probe, "round": r, "predicted": pred,
                             "predicted_se": math.sqrt(var) if np.isfinite(var) else math.nan,
                             "calls": p["total"], "calls_priced": sum(priced.values()) + sum(p["inside"].values()),
                             "calls_unpriced": sum(unpriced.values()), "calls_not_served": sum(p["not_served"].values()),
                             "unpriced": unpriced})
    return pd.DataFrame(rows)


def pooled_predictions(rounds_table: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Each (environment, workload)'s per-round predictions pooled as campaigns are (stats.pooled, on the log
    scale): the estimate and its interval over the rounds (within the one round when there is one)."""
    from osbench_analysis.stats.pooled import random_effects

    rows = []
    if rounds_table.empty:
        return pd.DataFrame(columns=COLUMNS)
    for (env, probe), g in rounds_table.groupby(["environment", "probe"], sort=True):
        g = g[(g["predicted"] > 0) & np.isfinite(g["predicted_se"])]
        if g.empty:
            continue
        y = np.log(g["predicted"].to_numpy())
        se = (g["predicted_se"] / g["predicted"]).to_numpy()
        p = random_effects(y, se, level)
        first = g.iloc[0]
        top = sorted(first["unpriced"].items(), key=lambda kv: (-kv[1], kv[0]))
        if first["calls_priced"] <= 0:   # nothing priced: no prediction, only its calls' count
            rows.append({"environment": env, "probe": probe, "predicted": math.nan, "predicted_low": math.nan,
                         "predicted_high": math.nan, "n_rounds": p.n_campaigns, "predicted_over": p.interval_over,
                         "calls": first["calls"], "calls_priced": 0.0, "calls_unpriced": first["calls_unpriced"],
                         "calls_not_served": first["calls_not_served"],
                         "unpriced_share": first["calls_unpriced"] / first["calls"] if first["calls"] else math.nan,
                         "unpriced": top})
            continue
        rows.append({"environment": env, "probe": probe, "predicted": math.exp(p.estimate),
                     "predicted_low": math.exp(p.ci_low), "predicted_high": math.exp(p.ci_high),
                     "n_rounds": p.n_campaigns, "predicted_over": p.interval_over, "calls": first["calls"],
                     "calls_priced": first["calls_priced"], "calls_unpriced": first["calls_unpriced"],
                     "calls_not_served": first["calls_not_served"],
                     "unpriced_share": first["calls_unpriced"] / first["calls"] if first["calls"] else math.nan,
                     "unpriced": top})
    return pd.DataFrame(rows)


def predict(values: pd.DataFrame, rounds: dict[str, str], ratios: pd.DataFrame, mix: dict, *,
            host: str | None = None, arch_classes: dict | None = None, baseline: str = "native",
            level: float = 0.95) -> pd.DataFrame:
    """Per environment and workload measured there: the measured slowdown [interval] (``ratios``: columns
    environment, probe, placement, ratio, ci_low, ci_high and optionally interval_over) beside the
    prediction [interval over rounds], the calls priced, unpriced (named) and not served."""
    if ratios is None or ratios.empty or not {"placement", "probe", "environment"} <= set(ratios.columns):
        return pd.DataFrame(columns=COLUMNS)
    pred = pooled_predictions(per_round(values, rounds, mix, host=host, arch_classes=arch_classes,
                                        baseline=baseline), level)
    if pred.empty:
        return pd.DataFrame(columns=COLUMNS)
    r = ratios[(ratios["placement"] == "same_cpu") & (ratios["environment"] != baseline)]
    r = r.drop_duplicates(["environment", "probe"])
    m = r.rename(columns={"ratio": "measured", "ci_low": "measured_low", "ci_high": "measured_high",
                          "interval_over": "measured_over"})
    if "measured_over" not in m:
        m = m.assign(measured_over="")
    t = m[["environment", "probe", "measured", "measured_low", "measured_high", "measured_over"]].merge(
        pred, on=["environment", "probe"], how="inner")
    t["predicted_over_measured"] = t["predicted"] / t["measured"]
    return t[COLUMNS].sort_values(["environment", "probe"]).reset_index(drop=True)


def from_result(result, directory: str | Path | None = None, ratios: pd.DataFrame | None = None
                ) -> tuple[pd.DataFrame, dict]:
    """predict() for an analysis' own host over its pooled rounds (Analysis.pooling), and the mix record
    used; ``ratios``: the measured slowdowns to set beside (default: the analysis' environment ratios)."""
    host = result.hosts[0] if getattr(result, "hosts", None) else None
    mix = load_mix(host, directory)
    pooling = getattr(result, "pooling", None)
    if not mix or pooling is None or pooling.values is None or pooling.values.empty:
        return pd.DataFrame(columns=COLUMNS), mix or {}
    ratios = result.environment_ratios if ratios is None else ratios
    ratios = ratios[ratios["host"] == host] if host is not None and "host" in ratios else ratios
    arch = {m.environment: m.arch_class for m in result.manifests.values()}
    return predict(pooling.values, pooling.rounds, ratios, mix, host=host, arch_classes=arch,
                   baseline=result.settings.baseline, level=result.settings.level), mix
