"""One measurement at a time per host: a host-wide advisory lock (flock).

Two campaigns measuring at once disturb each other and nothing in either's
data says so.  The runner holds this lock from before the first worker until
its campaigns are sealed; analysis, listing and the paper never take it.  The
lock file names the holder (campaigns, pid, since when) so a refused or
waiting runner can say who has the host.  flock locks vanish with the process
holding them, however it dies: there is no stale lock to clean up."""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import sys
from pathlib import Path

from osbench_analysis.errors import OsbenchError

LOCK_ENV = "OSBENCH_LOCK_FILE"


class HostBusy(OsbenchError):
    """Another campaign is measuring on this host."""


def lock_path() -> Path:
    """$OSBENCH_LOCK_FILE, else /run/lock/osbench-measure.lock (shared by every
    checkout and user of the host), else one in the temporary folder."""
    if os.environ.get(LOCK_ENV):
        return Path(os.environ[LOCK_ENV])
    run_lock = Path("/run/lock")
    if run_lock.is_dir() and os.access(run_lock, os.W_OK):
        return run_lock / "osbench-measure.lock"
    import tempfile

    return Path(tempfile.gettempdir()) / "osbench-measure.lock"


def holder(path: Path | None = None) -> dict:
    """What the lock file says about its holder ({} if nothing readable)."""
    try:
        return json.loads(Path(path or lock_path()).read_text() or "{}")
    except (OSError, ValueError):
        return {}


def describe(info: dict) -> str:
    if not info:
        return "another osbench campaign (holder unknown)"
    return (f"campaign {', '.join(info.get('campaigns', [])) or '?'} (pid {info.get('pid', '?')} on "
            f"{info.get('hostname', '?')}, since {info.get('since_utc', '?')})")


@contextlib.contextmanager
def measuring(campaigns: list[str], wait: bool = False, path: Path | None = None, say=None):
    """Hold the host for `campaigns`; refuse (HostBusy) or, with wait, block until it is free."""
    import socket

    path = Path(path or lock_path())
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as e:
        raise HostBusy(f"cannot open the host lock {path}: {e.strerror}; set {LOCK_ENV} to a writable "
                       "file shared by every osbench on this host") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            busy = describe(holder(path))
            if not wait:
                raise HostBusy(f"this host is busy measuring {busy}: a second campaign would disturb it; "
                               f"wait for it to finish, or pass --wait (notebooks: wait = True) to start "
                               f"right after it (lock: {path})") from None
            (say or (lambda m: print(m, file=sys.stderr, flush=True)))(f"waiting for {busy} to finish ...")
            fcntl.flock(fd, fcntl.LOCK_EX)
        info = {"campaigns": list(campaigns), "pid": os.getpid(), "hostname": socket.gethostname(),
                "since_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        try:
            yield info
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the flock
