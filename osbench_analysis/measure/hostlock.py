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
import errno
import fcntl
import json
import os
import stat
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


def open_lock(path: Path) -> int:
    """The lock file opened for writing without following a symlink (I28: in the world-writable /run/lock
    another user could point the name at a file of root's, which the holder truncates and rewrites), and
    refused unless it is a regular file with one link, owned by root or by this user."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except OSError as e:
        why = "it is a symlink" if e.errno == errno.ELOOP or os.path.islink(path) else e.strerror
        raise HostBusy(f"cannot open the host lock {path}: {why}; remove it, or set {LOCK_ENV} to a file of "
                       "your own shared by every osbench on this host") from None
    st = os.fstat(fd)
    problem = ("is not a regular file" if not stat.S_ISREG(st.st_mode) else
               f"has {st.st_nlink} hard links" if st.st_nlink != 1 else
               f"is owned by uid {st.st_uid}, not by root or this user (uid {os.geteuid()})"
               if st.st_uid not in (0, os.geteuid()) else "")
    if problem:
        os.close(fd)
        raise HostBusy(f"refusing the host lock {path}: it {problem}; remove it, or set {LOCK_ENV} to a file of "
                       "your own shared by every osbench on this host")
    return fd


@contextlib.contextmanager
def measuring(campaigns: list[str], wait: bool = False, path: Path | None = None, say=None):
    """Hold the host for `campaigns`; refuse (HostBusy) or, with wait, block until it is free."""
    import socket

    path = Path(path or lock_path())
    fd = open_lock(path)
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
