"""The probe catalog: what each probe measures, its unit, parameters and the
seed measurement it mirrors.  The C side lives in probes/probe_<family>.c."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from osbench_analysis.errors import OsbenchError


@dataclass(frozen=True)
class Param:
    name: str
    default: object
    choices: tuple = ()
    help: str = ""


@dataclass(frozen=True)
class Probe:
    name: str
    family: str             # syscall | file | process | thread | memory | testonly
    unit: str               # what one iteration is
    two_party: bool         # a second process/thread takes part: placement can be cross_cpu
    mirrors: str            # the seed measurement it corresponds to
    params: tuple[Param, ...] = field(default=())
    uses_workdir: bool = False
    hidden: bool = False    # test-only probes, left out of default campaigns
    max_iterations: int = 10_000_000  # keeps a batch's memory/files bounded

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}


LINKAGE = Param("linkage", "dynamic", ("dynamic", "static"),
                "how the launched helper program is linked (NetBSD/FreeBSD paper: static vs dynamic)")

PROBES: dict[str, Probe] = {p.name: p for p in [
    Probe("null_syscall", "syscall", "one getpid() via syscall(2)", False,
          "lmbench 'null call'; NetBSD/FreeBSD 'system call' (getpid)"),
    Probe("syscall_mix", "syscall", "close(dup(0)) + getpid + getuid + umask (5 system calls)", False,
          "UnixBench 'System Call Overhead' loop; MINIX 3 vs Linux Table 1/2"),
    Probe("open_close", "file", "open(2) + close(2) of an existing file", False,
          "lmbench 'open/close'", uses_workdir=True),
    Probe("stat", "file", "stat(2) of an existing file", False,
          "lmbench 'stat'", uses_workdir=True),
    Probe("fork_exit", "process", "fork + child _exit + waitpid", True,
          "lmbench 'fork proc'; osbench 'create processes'; NetBSD/FreeBSD process creation"),
    Probe("fork_exec", "process", "fork + execve of an empty program + waitpid", True,
          "lmbench 'exec proc'; osbench 'launch program'; UnixBench execl; NetBSD/FreeBSD program load",
          params=(LINKAGE,)),
    Probe("pipe_pingpong", "process", "one round trip of a 1-byte token over two pipes (two context switches)", True,
          "lmbench 'ctxsw'/'pipe latency'; UnixBench pipe-based context switching; NetBSD/FreeBSD context switch"),
    Probe("thread_create_join", "thread", "pthread_create + pthread_join of an empty thread", True,
          "osbench 'create threads'; NetBSD/FreeBSD thread creation"),
    Probe("mmap_touch", "memory", "mmap 4 KiB anonymous + write one byte + munmap", False,
          "lmbench 'mmap latency' / page fault; NetBSD/FreeBSD mmap sweep"),
    Probe("file_create_delete", "file", "create + write 32 B + close + unlink of one file", False,
          "osbench 'create files' (>65,000 files of 32 B in one folder)", uses_workdir=True,
          max_iterations=200_000),
    Probe("malloc_free_small", "memory", "malloc + free of one 4-128 B block", False,
          "osbench 'allocate memory' (1,000,000 blocks of 4-128 B)", max_iterations=5_000_000),
    Probe("test_crash_segv", "testonly", "raises SIGSEGV", False, "none (tests worker isolation)", hidden=True),
    Probe("test_hang", "testonly", "blocks forever", False, "none (tests timeouts)", hidden=True),
]}

DEFAULT_PROBES: tuple[str, ...] = tuple(n for n, p in PROBES.items() if not p.hidden)


class ProbeError(OsbenchError, ValueError):
    """A probe name or parameter the catalog does not know."""


def get_probe(name: str) -> Probe:
    try:
        return PROBES[name]
    except KeyError:
        close = difflib.get_close_matches(name, PROBES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ProbeError(f"probe {name!r} unknown{hint} (known: {', '.join(DEFAULT_PROBES)})") from None


def resolve_params(probe: Probe, given: dict | None) -> dict:
    """Defaults overlaid with the given parameters, each checked against the catalog."""
    params = probe.defaults()
    for key, value in (given or {}).items():
        spec = next((p for p in probe.params if p.name == key), None)
        if spec is None:
            known = ", ".join(p.name for p in probe.params) or "none"
            raise ProbeError(f"probe {probe.name!r} has no parameter {key!r} (parameters: {known})")
        if spec.choices and value not in spec.choices:
            raise ProbeError(f"{probe.name}.{key} must be one of {list(spec.choices)} (got {value!r})")
        params[key] = value
    return params


def variant_label(probe: Probe, params: dict, fs_type: str = "") -> str:
    """Short label of what distinguishes this condition: non-default parameters
    and, for file probes, the filesystem (results differ by orders of magnitude)."""
    parts = [f"{k}={v}" for k, v in sorted(params.items()) if v != probe.defaults().get(k)]
    if probe.uses_workdir and fs_type:
        parts.append(f"fs={fs_type}")
    return ",".join(parts)
