"""A whole program's time in an environment predicted from its system-call mix (issue #32, item 4):
native time + sum over its calls of count x the call's crossing cost (the matching probe's time in
the environment minus natively, same host), beside the time measured.

The counts are data/syscall_mix/ (measure/syscall_mix.py: strace -f -c natively, per workload
operation); a workload's call mix is the program's, so one host's counts serve every host, and the
text says which host counted them.  Each counted call name is priced by the measured primitive in
``MAPPING`` (``per_call``: the share of one probe operation a call is: an open+close pair prices the
open, a TCP round trip is two reads and two writes); a name not in the mapping is left unpriced and
reported (``coverage``).  The prediction prices only the crossings: user-space work the environment
slows (an emulated CPU) and blocking are not in it, which is what a disagreement shows.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from osbench_analysis.errors import OsbenchError
from osbench_analysis.paths import REPO_ROOT

MIX_DIR = REPO_ROOT / "data" / "syscall_mix"


@dataclass(frozen=True)
class Price:
    probe: str
    per_call: float = 1.0     # the share of one probe operation one call is
    why: str = ""


_BARE = "a bare kernel entry and exit (its own work unpriced)"
_PATH = "a path lookup, as stat"
MAPPING: dict[str, Price] = {
    **{n: Price("null_syscall", 1.0, _BARE) for n in (
        "arch_prctl", "brk", "chdir", "dup2", "fcntl", "futex", "getcwd", "getpid", "getppid",
        "getrandom", "getrusage", "getuid", "getgid", "geteuid", "getegid", "ioctl", "lseek", "mprotect",
        "munmap", "mmap", "pipe2", "prlimit64", "rseq", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn",
        "set_robust_list", "set_tid_address", "sysinfo", "setsockopt", "socket", "connect", "accept", "accept4",
        "bind", "listen", "pread64", "fadvise64", "getdents64", "umask", "uname", "close")},
    **{n: Price("stat", 1.0, _PATH) for n in ("newfstatat", "statx", "readlink", "readlinkat", "access",
                                              "faccessat", "faccessat2", "statfs", "unlink", "execve")},
    "openat": Price("open_close", 1.0, "an open (with its close: the pair is one probe operation)"),
    "creat": Price("open_close", 1.0, "an open (with its close)"),
    "fstat": Price("fstat", 1.0, "an fstat"),
    "read": Price("read_devzero", 1.0, "a read of a few bytes"),
    "write": Price("write_devnull", 1.0, "a write of a few bytes"),
    "clone": Price("fork_exec", 1.0, "a process created, run and waited for (fork + exec + exit + wait)"),
    "vfork": Price("fork_exec", 1.0, "a process created, run and waited for (fork + exec + exit + wait)"),
    "wait4": Price("null_syscall", 1.0, _BARE),
}
#: A workload whose calls mean something else than the name's usual: the key-value session's reads and
#: writes are TCP messages (a round trip: the client's write and read, the server's read and write).
OVERRIDES: dict[str, dict[str, Price]] = {
    "app_kv": {"read": Price("tcp_pingpong", 0.25, "a quarter of a TCP round trip"),
               "write": Price("tcp_pingpong", 0.25, "a quarter of a TCP round trip")},
}
#: Calls the fork_exec probe already contains (per process created), not priced again.
_IN_FORK_EXEC = ("execve", "wait4")
_IN_OPEN_CLOSE = ("close",)


#: A primitive not measured in an environment is priced as one bare crossing there (and said so).
FALLBACK = "null_syscall"


class SyscallMixError(OsbenchError):
    """The system-call counts cannot be read."""


def load_mix(directory: str | Path | None = None) -> tuple[pd.DataFrame, dict]:
    """(counts, provenance) of the newest record under `directory`: one row per (probe, syscall) with the
    median calls per operation; provenance has the host key and strace's version.  Empty when none."""
    d = Path(directory) if directory is not None else MIX_DIR
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    if not files:
        return pd.DataFrame(columns=["probe", "syscall", "calls"]), {}
    rec = json.loads(files[-1].read_text())
    if rec.get("kind") != "syscall_mix":
        raise SyscallMixError(f"{files[-1]}: kind {rec.get('kind')!r}, expected 'syscall_mix'")
    rows = [{"probe": r["probe"], "syscall": k, "calls": float(v["median"])}
            for r in rec["records"] for k, v in r["per_operation"].items() if float(v["median"]) > 0]
    return pd.DataFrame(rows, columns=["probe", "syscall", "calls"]), rec.get("provenance", {})


def priced_calls(counts: pd.DataFrame) -> pd.DataFrame:
    """Per (workload, priced probe): the probe operations its calls amount to, after the calls a probe
    operation already contains (an exec and a wait per process created, a close per open) are taken out;
    unpriced calls as probe None."""
    rows = []
    for app, g in counts.groupby("probe", sort=False):
        calls = dict(zip(g["syscall"], g["calls"]))
        forks = calls.get("clone", 0.0) + calls.get("vfork", 0.0)
        opens = calls.get("openat", 0.0) + calls.get("creat", 0.0)
        for name, n in calls.items():
            if name in _IN_FORK_EXEC:
                n = max(n - forks, 0.0)
            if name in _IN_OPEN_CLOSE:
                n = max(n - opens, 0.0)
            if n <= 0:
                continue
            price = OVERRIDES.get(app, {}).get(name) or MAPPING.get(name)
            rows.append({"workload": app, "syscall": name, "calls": n, "probe": price.probe if price else None,
                         "operations": n * price.per_call if price else float("nan")})
    return pd.DataFrame(rows, columns=["workload", "syscall", "calls", "probe", "operations"])


def coverage(counts: pd.DataFrame) -> pd.DataFrame:
    """Per workload: calls per operation counted, priced, unpriced, and the unpriced names."""
    p = priced_calls(counts)
    out = []
    for app, g in counts.groupby("probe", sort=False):
        total = float(g["calls"].sum())
        q = p[p["workload"] == app]
        un = q[q["probe"].isna()]
        out.append({"workload": app, "calls": total, "unpriced_calls": float(un["calls"].sum()),
                    "priced_calls": total - float(un["calls"].sum()), "unpriced": sorted(un["syscall"])})
    return pd.DataFrame(out, columns=["workload", "calls", "unpriced_calls", "priced_calls", "unpriced"])


def extra_costs(estimates: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per (environment, probe): its time minus the baseline's (ns), with a half-width from the two
    intervals' half-widths in quadrature (independent campaigns). `estimates`: environment, probe,
    estimate_ns, ci_low_ns, ci_high_ns (one host, one placement)."""
    e = estimates.assign(half=(estimates["ci_high_ns"] - estimates["ci_low_ns"]) / 2)
    base = e[e["environment"] == baseline][["probe", "estimate_ns", "half"]]
    out = e[e["environment"] != baseline].merge(base, on="probe", how="left", suffixes=("", "_base"))
    out = out.dropna(subset=["estimate_ns_base"])
    return pd.DataFrame({"environment": out["environment"], "probe": out["probe"],
                         "extra_ns": out["estimate_ns"] - out["estimate_ns_base"],
                         "half_ns": (out["half"] ** 2 + out["half_base"] ** 2) ** 0.5}).reset_index(drop=True)


def predict(counts: pd.DataFrame, native: dict[str, tuple[float, float]], extra: pd.DataFrame) -> pd.DataFrame:
    """Per (workload, environment): predicted time = native + sum(operations x extra cost), its half-width
    (native's and each term's in quadrature, counts fixed), the probes missing in that environment and
    those priced by FALLBACK instead (not measured there).
    `native`: workload -> (native time ns, half-width ns)."""
    p = priced_calls(counts).dropna(subset=["probe"])
    ops = p.groupby(["workload", "probe"])["operations"].sum()
    rows = []
    for env, g in extra.groupby("environment", sort=False):
        cost = g.set_index("probe")
        for app in ops.index.get_level_values(0).unique():
            if app not in native:
                continue
            t, h = native[app]
            var, missing, fallback = h ** 2, [], []
            for probe, n in ops[app].items():
                if probe not in cost.index:
                    if FALLBACK not in cost.index:
                        missing.append(probe)
                        continue
                    fallback.append(probe)
                    probe = FALLBACK
                t += n * float(cost.loc[probe, "extra_ns"])
                var += (n * float(cost.loc[probe, "half_ns"])) ** 2
            rows.append({"workload": app, "environment": env, "predicted_ns": t, "half_ns": math.sqrt(var),
                         "missing": sorted(missing), "fallback": sorted(fallback)})
    return pd.DataFrame(rows, columns=["workload", "environment", "predicted_ns", "half_ns", "missing", "fallback"])


def verdict(pred_lo: float, pred_hi: float, meas_lo: float, meas_hi: float) -> str:
    """'agrees' when the intervals overlap, else which side the prediction falls."""
    if pred_hi < meas_lo:
        return "under"
    if pred_lo > meas_hi:
        return "over"
    return "agrees"
