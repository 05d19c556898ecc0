"""Facts of the running system as seen by the process that reads them
(pyperf's _collect_metadata).  The worker calls `environment_facts()` first
thing, inside whatever sandbox it runs in, so a campaign records the kernel
the probes really talked to (gVisor's emulated release, UML's guest kernel)
beside the host's view that host.py gathers.  Standard library only: this
runs inside sandboxes before anything else is imported, and imports nothing
it can do without (hashlib, platform, socket, pathlib): inside UML every module a
worker imports costs milliseconds."""
from __future__ import annotations

import os
import sys


def read_text(path: str | os.PathLike, default: str = "") -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def _unescape_mount(field: str) -> str:
    # /proc/mounts escapes space, tab, newline and backslash as octal
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def filesystem_type(path: str | os.PathLike) -> str:
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


def sha256_prefix(path: str | os.PathLike, chars: int = 16) -> str:
    """The first `chars` hex digits of a file's SHA-256 ('' if unreadable): enough to tell two builds apart."""
    import hashlib

    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return ""
    return h.hexdigest()[:chars]


def mapped_libc() -> str:
    """The C library file this process has mapped (from /proc/self/maps), '' if none is named there."""
    for line in read_text("/proc/self/maps").splitlines():
        parts = line.split(None, 5)
        path = parts[5] if len(parts) == 6 else ""
        name = os.path.basename(path)
        if name.startswith("libc.so") or (name.startswith("libc-") and name.endswith(".so")):
            return path
    return ""


def binaries_facts() -> dict:
    """Which probe binaries and C library the probes run with, as this process sees them (issue #22: the
    same files in every environment; the sandboxes mount the host's / read-only, so the checkout's
    compiled extension and the host's libc are the very files native uses).  Comparing these between
    environments' manifests proves it, or shows a guest with binaries of its own."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))   # the package folder: extension, _bin/
    libc = mapped_libc()
    ext = sorted(os.path.join(here, n) for n in os.listdir(here) if n.startswith("_probes.") and n.endswith("so"))
    return {
        "libc": libc_version(),
        "libc_path": os.path.realpath(libc) if libc else "",
        "libc_sha256": sha256_prefix(libc) if libc else "",
        "probe_extension": str(ext[0]) if ext else "",
        "probe_extension_sha256": sha256_prefix(ext[0]) if ext else "",
        "probe_parent_sha256": sha256_prefix(os.path.join(here, "_bin", "osbench-parent")),
    }


def libc_version() -> str:
    """'glibc 2.36' (what platform.libc_ver() gives for this interpreter, without reading its binary)."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        return ""


def environment_facts(workdir: str | None = None, binaries: bool = True) -> dict:
    """What this process sees.  `binaries`: also which probe binaries and C library it runs with,
    with their hashes (binaries_facts; a campaign keeps the first worker's facts, so the runner asks
    for them until an environment has reported them)."""
    u = os.uname()
    facts = {
        "kernel_release": u.release,
        "kernel_version": u.version,
        "proc_version": read_text("/proc/version", "unavailable"),
        "machine": u.machine,
        "hostname": u.nodename,
        "clocksource": read_text("/sys/devices/system/clocksource/clocksource0/current_clocksource", "unavailable"),
        "cpu": current_cpu(),
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "cpu_count": os.cpu_count() or 0,
        "pid": os.getpid(),
        "python": sys.version.split()[0],
        **(binaries_facts() if binaries else {}),
    }
    if workdir:
        facts["workdir"] = workdir
        facts["workdir_fs_type"] = filesystem_type(workdir)
    return facts
