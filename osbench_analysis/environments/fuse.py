"""FUSE: a file server in user space on the monolithic kernel (MINIX 3's
VFS/FS split): the kernel's VFS forwards each file request over /dev/fuse to
osbench-fuse (probes/environments/fuse_passthrough.c), a native C server
against libfuse3 that passes it on to a host tmpfs folder.

The session mounts the server over a private folder; file probes get their
folders inside the mount.  Only file probes are measured here (`serves`):
the file server is not on any other probe's path, so those would measure
native Linux again.  The server's threads are pinned to the
same CPUs as the probe for each worker."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Sequence

from osbench_analysis.store import owners
from osbench_analysis.environments import hostops
from osbench_analysis.environments.base import Availability, Environment, Launch, Session

SERVER = hostops.tool("osbench-fuse")
FSNAME = "osbench-fuse"
INSTALL = "apt-get install fuse3 libfuse3-dev pkg-config && make envs"


def libfuse_version() -> str:
    return hostops.deb_version("libfuse3-3") or hostops.command_output(["pkg-config", "--modversion", "fuse3"])


def sweep_stale_mounts() -> list[str]:
    """Detach osbench-fuse mounts whose owning runner is gone (a runner killed
    outright cannot unmount; its server died with it, leaving a dead mount)."""
    detached = []
    for source, mp, fstype in hostops.mounts_under("/"):
        if source != FSNAME or not fstype.startswith("fuse"):
            continue
        owners_in_path = [owners.owner_of(part) for part in Path(mp).parts]
        owner = next((o for o in owners_in_path if o), None)
        if owner is not None and not owners.is_alive(*owner):
            hostops.lazy_unmount(mp)
            detached.append(mp)
    return detached


class FuseSession(Session):
    env: "Fuse"

    def __init__(self, env: "Fuse", scratch: Path):
        super().__init__(env, scratch)
        self.shm: Path | None = None
        self.mountpoint = self.scratch / "mnt"
        self.server: subprocess.Popen | None = None
        self.log = self.scratch / "osbench-fuse.log"

    def open(self) -> None:
        sweep_stale_mounts()
        self.shm = hostops.private_shm_dir()
        backing = self.shm / "backing"
        backing.mkdir()
        self.mountpoint.mkdir()
        with open(self.log, "wb") as log:
            self.server = subprocess.Popen(
                [str(SERVER), str(backing), str(self.mountpoint), f"--cache={self.env.cache}",
                 f"--threads={self.env.threads}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        if not hostops.wait_until(lambda: self._mounted() or self.server.poll() is not None, 10.0) \
                or not self._mounted():
            from osbench_analysis.errors import OsbenchError

            raise OsbenchError(f"the FUSE server did not mount {self.mountpoint}: "
                               f"{self.log.read_text(errors='replace').strip() or 'no message'}")

    def _mounted(self) -> bool:
        return any(mp == str(self.mountpoint) and src == FSNAME for src, mp, _ in hostops.mounts_under(self.mountpoint))

    @property
    def workdir_root(self) -> str:
        return str(self.mountpoint)

    def launch(self, worker_argv: Sequence[str], *, cpus: set[int] | None, output: Path) -> Launch:
        # the server shares the probe's CPUs (same_cpu: one CPU for both, as a
        # kernel path would); threads it starts later inherit this affinity
        hostops.set_affinity_all_threads(self.server.pid, cpus)
        return Launch(list(worker_argv))

    def dead(self) -> str:
        if self.server is not None and self.server.poll() is not None:
            return f"its FUSE server osbench-fuse exited (status {self.server.returncode})"
        try:
            mounted = self._mounted()
        except OSError as e:
            return f"its FUSE mount cannot be read: {e.strerror or e}"
        return "" if mounted else f"its FUSE mount {self.mountpoint} is gone"

    def facts(self) -> dict:
        return {**self.env.facts(), "mountpoint": str(self.mountpoint),
                "mount_options": next((line.split()[3] for line in Path("/proc/self/mounts").read_text().splitlines()
                                       if line.split()[1] == str(self.mountpoint)), "")}

    def close(self) -> None:
        try:
            mounted = self.mountpoint.exists()
        except OSError:   # a server that died leaves its mount answering ENOTCONN (F28): still mounted
            mounted = True
        if mounted:
            hostops.lazy_unmount(self.mountpoint)
        if self.server is not None:
            hostops.stop_process(self.server)
        if self.shm is not None:
            hostops.remove_tree(self.shm)


class Fuse(Environment):
    arch_class = "user-space-server"
    pins_inside = True        # the worker is a native process
    startup_s = 0.0
    session_class = FuseSession

    def __init__(self, name: str = "fuse", cache: str = "default", threads: str = "multi", description: str = ""):
        if cache not in ("default", "never"):
            raise ValueError(f"cache must be 'default' or 'never' (got {cache!r})")
        if threads not in ("single", "multi"):
            raise ValueError(f"threads must be 'single' or 'multi' (got {threads!r})")
        self.name, self.cache, self.threads = name, cache, threads
        self.description = description or (
            f"FUSE passthrough server in user space ({threads}-threaded libfuse3, "
            + ("kernel caches entries and attributes for 1 s" if cache == "default" else
               "no kernel caching: every lookup, stat and read reaches the server") + "); file probes only")

    def serves(self, probe) -> bool:
        # cache=never opens every file with direct I/O, and the kernel refuses a
        # shared map of such a file (ENODEV) unless the server grants
        # FUSE_DIRECT_IO_ALLOW_MMAP, which needs libfuse >= 3.16 (Debian 12: 3.14)
        return bool(probe.uses_workdir) and not (self.cache == "never" and probe.maps_file)

    def availability(self) -> Availability:
        if not os.access(SERVER, os.X_OK):
            return Availability(False, f"the FUSE server is not built ({SERVER} missing)", INSTALL)
        if not os.path.exists("/dev/fuse"):
            return Availability(False, "/dev/fuse missing (no FUSE support in this kernel or container)",
                                "modprobe fuse")
        if not hostops.which("fusermount3"):
            return Availability(False, "fusermount3 missing", "apt-get install fuse3")
        if os.geteuid() != 0 and not os.access("/dev/fuse", os.R_OK | os.W_OK):
            return Availability(False, "mounting FUSE needs root or access to /dev/fuse here",
                                "run as root, or make /dev/fuse accessible")
        return Availability(True, f"libfuse {libfuse_version()}, cache={self.cache}, {self.threads}-threaded")

    def facts(self) -> dict:
        timeouts = ({"entry_timeout_s": 0, "attr_timeout_s": 0, "negative_timeout_s": 0, "direct_io": True}
                    if self.cache == "never" else
                    {"entry_timeout_s": 1, "attr_timeout_s": 1, "negative_timeout_s": 0, "direct_io": False})
        return {
            "libfuse_version": libfuse_version(),
            "fuse3_package": hostops.deb_version("fuse3"),
            "server": "osbench-fuse (probes/environments/fuse_passthrough.c, libfuse3 high-level API)",
            "threads": self.threads,
            "cache": self.cache,
            **timeouts,
            "backing": "host tmpfs folder",
            "non_file_probes": "not measured: no file server on their path (native Linux)",
            "pinned": "server threads confined to the probe's CPUs for each worker",
        }
