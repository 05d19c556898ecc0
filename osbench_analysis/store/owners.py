"""Private folders that name the process owning them, and the sweep that
reclaims the ones whose owner is gone.

A runner killed by SIGKILL cannot remove its folders; the next runner does.
The owner (pid and the process's start time in clock ticks since boot, so a
recycled pid is not mistaken for the owner) is part of the folder's name, set
atomically by mkdtemp: there is no moment when a folder exists without it."""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

#: osbench-<pid>.<start>-XXXX (a probe's private folder), osbench-campaign-<pid>.<start>-XXXX
#: (a campaign's scratch folder), .tmp-<id>-<pid>.<start> (a campaign being sealed by the store)
_OWNED = re.compile(r"^(?:osbench-(?:campaign-)?(\d+)\.(\d+)-|\.tmp-.+-(\d+)\.(\d+)$)")


def start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks after boot), or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 and fields[0] != "Z" else None


def owner_tag(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{start_ticks(pid)}"


def is_alive(pid: int, ticks: int) -> bool:
    return start_ticks(pid) == ticks


def private_dir(prefix: str, parent: str | Path | None = None) -> Path:
    """A new folder `<prefix><pid>.<start>-XXXXXXXX` owned by this process."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{owner_tag()}-", dir=parent))


def owner_of(name: str) -> tuple[int, int] | None:
    m = _OWNED.match(name)
    if not m:
        return None
    pid, ticks = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return int(pid), int(ticks)


def sweep_stale(parents) -> list[Path]:
    """Remove osbench's private folders under `parents` whose owning process is
    gone; folders of a live owner, and anything not named by an owner, are left
    alone.  Returns what was removed."""
    removed = []
    for parent in {Path(p) for p in parents if p}:
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        for e in entries:
            owner = owner_of(e.name)
            if owner is None or is_alive(*owner) or not e.is_dir(follow_symlinks=False):
                continue
            path = Path(e.path)
            for sub in (path, *path.rglob("*")):  # sealed files are read-only; so may be a dead probe's
                try:
                    if sub.is_dir() and not sub.is_symlink():
                        sub.chmod(0o755)
                except OSError:
                    pass
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                removed.append(path)
    return removed
