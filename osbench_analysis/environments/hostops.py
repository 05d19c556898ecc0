"""Host-side chores the sandbox environments share: where their tools live,
confining a whole sandbox to CPUs, finding and ending the processes and
mounts a session made.  Standard library only."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from osbench_analysis.store import owners
from osbench_analysis.paths import ENVS_BUILD_DIR, default_workdir

BIN = ENVS_BUILD_DIR / "bin"
INSTALL_HINT = "make envs  (as root: python -m osbench_analysis.environments.install)"


def tool(name: str) -> Path:
    """A tool the installer builds into the project-local, git-ignored bin folder."""
    return BIN / name


def which(name: str) -> str | None:
    # /usr/sbin holds some of these and is not on every user's PATH
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/local/sbin")


def pinned(argv: list[str], cpus: set[int] | None) -> list[str]:
    """argv confined (with everything it starts) to `cpus`; None: every CPU this process may use.

    The whole sandbox is pinned from outside because affinity set inside
    gVisor or UML is emulated, not the host's."""
    allowed = sorted(os.sched_getaffinity(0)) if cpus is None else sorted(cpus)
    return [which("taskset") or "taskset", "-c", ",".join(map(str, allowed)), *argv]


def worker_paths() -> list[str]:
    """The host folders a worker started by this interpreter reads: the
    checkout (the package, its probes and helpers), the virtualenv, the
    interpreter it links to and every folder on sys.path; nested ones left
    out (their parent covers them).  A sandbox mounts these explicitly, at the
    same path, read-only: a checkout under /tmp (a sandbox's own tmpfs) or
    under $HOME is then seen like one anywhere else."""
    import sys

    import osbench_analysis

    found = {Path(osbench_analysis.__file__).resolve().parent.parent, Path(sys.prefix), Path(sys.base_prefix),
             Path(sys.exec_prefix), Path(sys.base_exec_prefix), Path(os.path.realpath(sys.executable)).parent.parent,
             *(Path(p) for p in sys.path if p and os.path.isdir(p))}
    found = {Path(os.path.realpath(p)) for p in found} | found  # a symlinked venv: the link and its target
    found = sorted({p for p in found if p.is_dir() and p != Path("/") and p.is_absolute()}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for p in found:
        if not any(p.is_relative_to(k) for k in kept):
            kept.append(p)
    return [str(p) for p in sorted(kept)]


def private_shm_dir() -> Path:
    """A folder owned by this process on the same tmpfs native file probes use
    (swept by the next runner if this one dies)."""
    return owners.private_dir("osbench-", default_workdir())


def set_affinity_all_threads(pid: int, cpus: set[int] | None) -> None:
    """Confine every thread of a running process (threads it starts later inherit)."""
    allowed = set(os.sched_getaffinity(0)) if cpus is None else set(cpus)
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return
    for tid in tids:
        try:
            os.sched_setaffinity(tid, allowed)
        except OSError:
            pass  # a thread that just ended


def descendants(pid: int) -> list[int]:
    """Every live process below pid (children first found by ppid)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields and fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def stop_process(proc: subprocess.Popen, grace_s: float = 2.0) -> None:
    """SIGTERM, then SIGKILL to it and everything it started; reaped."""
    if proc.poll() is None:
        below = descendants(proc.pid)
        try:
            proc.terminate()
            proc.wait(timeout=grace_s)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        for pid in [proc.pid, *below]:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def kill_processes(exe: str | Path, cmdline_has: str) -> list[int]:
    """SIGKILL every process running `exe` whose command line contains
    `cmdline_has` (a session's own folder): what a session started and the
    runner could not reap.  Returns the pids signalled."""
    target, needle, killed = os.path.realpath(exe), cmdline_has.encode(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/exe").removesuffix(" (deleted)") != target:
                continue
            if needle in Path(f"/proc/{entry}/cmdline").read_bytes():
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
        except OSError:
            continue
    return killed


def mounts_under(folder: str | Path) -> list[tuple[str, str, str]]:
    """(source, mount point, type) of every mount at or below `folder`."""
    from osbench_analysis.hosts.facts import _unescape_mount, read_text

    root = os.path.realpath(folder).rstrip("/")
    found = []
    for line in read_text("/proc/self/mounts").splitlines():
        parts = line.split()
        if len(parts) >= 3:
            mp = _unescape_mount(parts[1])
            if mp == root or mp.startswith(root + "/"):
                found.append((parts[0], mp, parts[2]))
    return found


def lazy_unmount(mountpoint: str | Path) -> None:
    """Detach a mount now even if something still uses it (FUSE: fusermount3 -uz)."""
    for argv in ([which("fusermount3") or "fusermount3", "-uz", str(mountpoint)],
                 [which("umount") or "umount", "-l", str(mountpoint)]):
        try:
            if subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=10).returncode == 0:
                return
        except (OSError, subprocess.TimeoutExpired):
            continue


def remove_tree(path: str | Path) -> None:
    """Remove a folder, first detaching any mount left inside it."""
    path = Path(path)
    if not path.exists():
        return
    for _, mp, _ in sorted(mounts_under(path), key=lambda m: -len(m[1])):
        lazy_unmount(mp)
    shutil.rmtree(path, ignore_errors=True)


def wait_until(check, timeout_s: float, interval_s: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval_s)
    return check()


def command_output(argv: list[str], timeout_s: float = 20.0) -> str:
    """First line of a command's output, or '' when it cannot run."""
    try:
        out = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else ""


def deb_version(package: str) -> str:
    return command_output(["dpkg-query", "-W", "-f=${Version}", package]) if which("dpkg-query") else ""
