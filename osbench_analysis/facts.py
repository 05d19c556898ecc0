"""Facts of the running system as seen by the process that reads them
(pyperf's _collect_metadata).  The worker calls `environment_facts()` first
thing, inside whatever sandbox it runs in, so a campaign records the kernel
the probes really talked to (gVisor's emulated release, UML's guest kernel)
beside the host's view that host.py gathers.  Standard library only: this
runs inside sandboxes before anything else is imported."""
from __future__ import annotations

import os
import platform
import socket
from pathlib import Path


def read_text(path: str | Path, default: str = "") -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def _unescape_mount(field: str) -> str:
    # /proc/mounts escapes space, tab, newline and backslash as octal
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def filesystem_type(path: str | Path) -> str:
    """Type of the filesystem holding `path` (longest mount-point prefix in /proc/self/mounts)."""
    real = os.path.realpath(path)
    best, fstype = "", "unknown"
    for line in read_text("/proc/self/mounts").splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mp = _unescape_mount(parts[1])
        if (real == mp or real.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best):
            best, fstype = mp, parts[2]
    return fstype


def current_cpu() -> int:
    """The CPU this process last ran on (field 39 of /proc/self/stat), -1 if unknown."""
    stat = read_text("/proc/self/stat")
    try:
        return int(stat.rsplit(")", 1)[1].split()[36])
    except (IndexError, ValueError):
        return -1


def environment_facts(workdir: str | None = None) -> dict:
    u = platform.uname()
    facts = {
        "kernel_release": u.release,
        "kernel_version": u.version,
        "proc_version": read_text("/proc/version", "unavailable"),
        "machine": u.machine,
        "hostname": socket.gethostname(),
        "clocksource": read_text("/sys/devices/system/clocksource/clocksource0/current_clocksource", "unavailable"),
        "cpu": current_cpu(),
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "cpu_count": os.cpu_count() or 0,
        "pid": os.getpid(),
        "python": platform.python_version(),
    }
    if workdir:
        facts["workdir"] = workdir
        facts["workdir_fs_type"] = filesystem_type(workdir)
    return facts
