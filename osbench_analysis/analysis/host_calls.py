"""A sandbox's host system calls by name, priced by what they are (issue #42 item 5): the counts
measure/counting.py takes per system call name (``sc_<name>``, ``server_sc_<name>``: perf's
``syscalls:sys_enter_<name>`` tracepoints) differenced environment minus native per operation, and the
native probe that makes each call (``PRICES``).  A call no probe makes alone (``futex``, ``ptrace``,
``wait4``, ``writev``...) is *unpriced*: counted, named, left out of the priced events, never priced as
a getpid.  ``rt_sigreturn`` is inside a delivered signal's price (a native breakpoint signal handled
and returned from), at most one per signal.  The pieces that are not system calls (a context switch, a
signal) are priced by the same rule: a switch is half a native pipe round trip less its two reads and
two writes, priced as the reads and writes they are."""
from __future__ import annotations

import pandas as pd

PREFIX = "sc_"
SERVER_PREFIX = "server_sc_"
#: |calls per operation| below this count as none (mechanism.COUNT_FLOOR's rule)
FLOOR = 0.01
#: host call -> (native probe that makes it, its price in words)
PRICES: dict[str, tuple[str, str]] = {
    **{n: ("null_syscall", "a native getpid") for n in
       ("getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid")},
    "read": ("read_devzero", "a native read of 1 byte from /dev/zero"),
    "pread64": ("read_devzero", "a native read of 1 byte from /dev/zero"),
    "write": ("write_devnull", "a native write of 1 byte to /dev/null"),
    "pwrite64": ("write_devnull", "a native write of 1 byte to /dev/null"),
    "newfstatat": ("stat", "a native stat"), "statx": ("stat", "a native stat"),
    "fstat": ("fstat", "a native fstat"),
    "openat": ("open_close", "a native open + close"),
    "rt_sigaction": ("sigaction_install", "a native sigaction"),
}
#: calls inside another priced call or piece: name -> (what holds it, at most how many per one of it)
INSIDE = {"close": "openat", "rt_sigreturn": "signal delivered"}
#: a context switch priced by what a pipe round trip's calls are: (probe, coefficient) per switch
SWITCH_BY_NAME = (("pipe_pingpong", 0.5), ("read_devzero", -1.0), ("write_devnull", -1.0))
SWITCH_BY_NAME_WORDS = "half a native pipe round trip less its read and its write"
#: a delivered signal, its sigreturn inside
SIGNAL_BY_NAME = (("signal_trap_self", 1.0),)
SIGNAL_BY_NAME_WORDS = "a native breakpoint signal handled and returned from (its sigreturn inside)"


def has_names(counts: pd.DataFrame, host: str, environment: str, probe: str) -> bool:
    """Whether ``host`` counted ``environment``'s ``probe`` by system call name."""
    m = counts[(counts["host"] == host) & (counts["environment"] == environment) & (counts["probe"] == probe)]
    return bool(m["counter"].str.startswith(PREFIX).any()) if len(m) else False


def _named(counts: pd.DataFrame, host: str, environment: str, probe: str) -> pd.DataFrame:
    m = counts[(counts["host"] == host) & (counts["environment"] == environment) & (counts["probe"] == probe)]
    m = m[m["counter"].str.startswith(PREFIX) | m["counter"].str.startswith(SERVER_PREFIX)]
    name = m["counter"].str.replace(f"^({SERVER_PREFIX}|{PREFIX})", "", regex=True)
    return m.assign(name=name).groupby("name")[["median", "min", "max"]].sum()


def differences(counts: pd.DataFrame, host: str, environment: str, probe: str, baseline: str
                ) -> dict[str, tuple[float, float, float]] | None:
    """{call name: (median, min, max) per operation}, the environment's processes (and server) minus the
    baseline's, both counted by name on ``host``; a difference below FLOOR left out ({} when none is left);
    None when not counted by name."""
    if not (has_names(counts, host, environment, probe) and has_names(counts, host, baseline, probe)):
        return None
    e, b = _named(counts, host, environment, probe), _named(counts, host, baseline, probe)
    out = {}
    for name in sorted(set(e.index) | set(b.index)):
        theirs = float(b.loc[name, "median"]) if name in b.index else 0.0
        mine = [float(e.loc[name, c]) if name in e.index else 0.0 for c in ("median", "min", "max")]
        if abs(mine[0] - theirs) >= FLOOR:
            out[name] = tuple(v - theirs for v in mine)
    return out


def split(named: dict[str, tuple[float, float, float]], signals: float) -> dict:
    """The named calls sorted: {"priced": {name: n}, "inside": {name: n}, "unpriced": {name: n}} (n the
    median per operation); a call inside another is inside up to that one's count, the rest unpriced."""
    n = {k: v[0] for k, v in named.items()}
    priced = {k: v for k, v in n.items() if k in PRICES}
    holders = {"signal delivered": signals, **priced}
    inside, unpriced = {}, {}
    for k, v in n.items():
        if k in PRICES:
            continue
        if k in INSIDE and v > 0:
            held = max(0.0, min(v, holders.get(INSIDE[k], 0.0)))
            if held:
                inside[k] = held
            if v - held >= FLOOR:
                unpriced[k] = v - held
        else:
            unpriced[k] = v
    return {"priced": priced, "inside": inside, "unpriced": unpriced}


def words(calls: dict[str, float], k: int = 3, floor: float = 0.0) -> str:
    """'futex 4.07, nanosleep 0.05': the largest calls per operation first (by size, then name), those of at
    least ``floor`` per operation."""
    top = [kv for kv in sorted(calls.items(), key=lambda kv: (-abs(kv[1]), kv[0])) if abs(kv[1]) >= floor][:k]
    return ", ".join(f"{n} {v:.3g}" for n, v in top)
