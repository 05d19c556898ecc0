"""gVisor: every system call of the probe is caught and served by the Sentry,
a kernel written in Go running as a separate host process (a user-space
kernel reached by one IPC-like trap per call).

Each round's workers of one placement run in one sandbox (`runsc run` of an
OCI bundle whose process is the round's shell driver, rounds.py; a fresh worker
process per condition): the host root read-only, /tmp and /dev/shm the
Sentry's own tmpfs, no network, the folders the worker reads (checkout,
virtualenv, interpreter: hostops.worker_paths) bound explicitly read-only at
their own paths, so a checkout under /tmp is seen too, and one read-write
volume, a host tmpfs folder, where file probes get their private folder and
the driver its workers' output.  With `directfs` (gVisor's default) the Sentry opens volume files
itself; with directfs off every file operation on the volume goes on to the
gofer, a second process (the multi-server pattern: file system as its own
server).  The sandbox is confined to the placement's CPUs from outside."""
from __future__ import annotations

import json
import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator, Sequence

from osbench_analysis.environments import hostops, rounds
from osbench_analysis.environments.base import Availability, Environment, Launch, RoundJob, Session
from osbench_analysis.catalog.registry import FS_GUEST_TMPFS, FS_HOST_VOLUME

#: the runsc module has no tags; this pseudo-version is what `@latest` resolved to on 2026-11-22
RUNSC_VERSION = "v0.0.0-20260905035102-160fafc42237"
RUNSC_MODULE = "gvisor.dev/gvisor/runsc"
RUNSC = hostops.tool("runsc")
VERSION_STAMP = hostops.tool("runsc.version")


def runsc_version_built() -> str:
    """The pseudo-version the installer built (go install leaves runsc's own version unset)."""
    try:
        return VERSION_STAMP.read_text().strip()
    except OSError:
        return ""


class GVisorSession(Session):
    env: "GVisor"

    def __init__(self, env: "GVisor", scratch: Path):
        super().__init__(env, scratch)
        self.state = self.scratch / "runsc-state"
        self.bundles = self.scratch / "bundles"
        self.volume: Path | None = None
        self._ids = itertools.count()

    def open(self) -> None:
        self.state.mkdir(parents=True)
        self.bundles.mkdir()
        self.volume = hostops.private_shm_dir()

    @property
    def workdir_root(self) -> str:
        return str(self.volume)

    def guest_workdir(self, name: str) -> str:
        # /tmp is a tmpfs mount of the OCI spec: the Sentry's own tmpfs, no host file behind it
        return f"/tmp/osbench-guest-{name}"

    def launch(self, worker_argv: Sequence[str], *, cpus: set[int] | None, output: Path) -> Launch:
        return self._sandbox(list(worker_argv), cpus)

    def run_round(self, jobs: Sequence[RoundJob], *, cpus: set[int] | None) -> Iterator:
        """One sandbox for the round's jobs: its process is the driver running them in turn."""
        def boot(script: str, folder: Path) -> Launch:
            driver = folder / "driver.sh"
            driver.write_text(script)
            return self._sandbox(["/bin/sh", str(driver)], cpus)

        return rounds.run_booted(jobs, self.volume / f"round-{next(self._ids)}", boot, self.env.round_startup_s)

    def _sandbox(self, argv: list[str], cpus: set[int] | None) -> Launch:
        cid = f"osbench-{os.getpid()}-{next(self._ids)}"
        bundle = self.bundles / cid
        bundle.mkdir()
        (bundle / "config.json").write_text(json.dumps(self.env.oci_spec(argv, self.volume), indent=1))
        runsc = hostops.pinned([str(RUNSC), *self.env.runsc_flags(self.state), "run", "--bundle", str(bundle), cid],
                               cpus)

        def cleanup() -> None:
            # the process group is gone by now; this drops the container's state
            try:
                subprocess.run([str(RUNSC), f"--root={self.state}", "delete", "--force", cid],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                pass  # close() removes the whole state folder anyway
            hostops.remove_tree(bundle)

        return Launch(runsc, env=self.env.runsc_env(), output_file=None, cleanup=cleanup)

    def facts(self) -> dict:
        return {**self.env.facts(), "volume": str(self.volume)}

    def close(self) -> None:
        # a sandbox the runner could not reap (it should have) must not survive the session
        hostops.kill_processes(RUNSC, f"--root={self.state}")
        hostops.remove_tree(self.state)
        if self.volume is not None:
            hostops.remove_tree(self.volume)


class GVisor(Environment):
    arch_class = "user-space-kernel"
    pins_inside = False
    # sched_setaffinity inside the sandbox is emulated, and a second CPU given to
    # the sandbox is not a second party's CPU: one CPU, or none.
    placements = ("same_cpu", "unpinned")
    # gVisor's vDSO clock becomes active some time after the sandbox starts (0.8 s measured here, 1-2 s reported)
    settle_s = 1.5
    startup_s = 5.0
    round_startup_s = 5.0   # one sandbox boot per round: 0.5-1 s here, more on a busy host
    session_class = GVisorSession
    workdir_filesystems = (FS_HOST_VOLUME, FS_GUEST_TMPFS)

    def __init__(self, name: str = "gvisor", platform: str = "systrap", directfs: bool = True, description: str = ""):
        self.name, self.platform, self.directfs = name, platform, directfs
        self.description = description or (
            f"gVisor runsc ({platform} platform): the Sentry serves every system call in user space; "
            + ("file probes on a volume the Sentry reaches directly (directfs)" if directfs else
               "file probes on a volume served by the gofer process (--directfs=false); file probes only"))

    def runsc_flags(self, state: Path) -> list[str]:
        return [f"--root={state}", "--rootless", "--network=none", f"--platform={self.platform}",
                f"--directfs={'true' if self.directfs else 'false'}",
                "--overlay2=none",  # the root is mounted read-only: nothing to overlay
                "--ignore-cgroups",
                "--gofer-network-namespace=new"]  # the default (null) bind-mounts a namespace file into the state folder

    @staticmethod
    def runsc_env() -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR")
        return {k: v for k, v in os.environ.items() if k in keep}

    def oci_spec(self, argv: list[str], volume: Path) -> dict:
        env = [f"PATH={os.environ.get('PATH', '/usr/bin:/bin')}", "HOME=/tmp", "LANG=C.UTF-8",
               "PYTHONDONTWRITEBYTECODE=1"]
        return {
            "ociVersion": "1.0.0",
            "process": {"user": {"uid": os.getuid(), "gid": os.getgid()}, "args": argv, "env": env,
                        "cwd": "/", "terminal": False},
            "root": {"path": "/", "readonly": True},
            "hostname": f"osbench-{self.name}",
            "mounts": [
                {"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"},
                {"destination": "/dev/shm", "type": "tmpfs", "source": "tmpfs"},
                # what the worker reads, wherever it lives (under /tmp it would be hidden by the tmpfs above)
                *({"destination": p, "type": "bind", "source": p, "options": ["rbind", "ro"]}
                  for p in hostops.worker_paths()),
                {"destination": str(volume), "type": "bind", "source": str(volume), "options": ["rbind", "rw"]},
            ],
            "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")]},
        }

    def serves(self, probe) -> bool:
        # without directfs only the file path changes (the gofer joins it); every
        # other probe would measure the plain gVisor environment again
        return super().serves(probe) and (self.directfs or bool(probe.uses_workdir))

    def availability(self) -> Availability:
        if not os.access(RUNSC, os.X_OK):
            return Availability(False, f"runsc not built ({RUNSC} missing)", hostops.INSTALL_HINT)
        built = runsc_version_built()
        if built != RUNSC_VERSION:
            return Availability(False, f"runsc in {RUNSC} is {built or 'of unknown version'}, not the pinned "
                                       f"{RUNSC_VERSION}", hostops.INSTALL_HINT)
        if not hostops.which("taskset"):
            return Availability(False, "taskset (util-linux) missing: the sandbox cannot be pinned",
                                "apt-get install util-linux")
        if sys.platform != "linux":
            return Availability(False, f"gVisor runs on Linux only (this is {sys.platform})")
        return Availability(True, f"runsc {RUNSC_VERSION}, {self.platform}, directfs={self.directfs}")

    def facts(self) -> dict:
        return {
            "runsc_version": runsc_version_built(),
            "runsc_module": RUNSC_MODULE,
            "runsc_version_output": hostops.command_output([str(RUNSC), "--version"]),
            "platform": self.platform,
            "directfs": self.directfs,
            "flags": self.runsc_flags(Path("STATE"))[1:],
            "root_mount": "host / read-only (gofer), /tmp and /dev/shm: Sentry tmpfs",
            "worker_mounts": "checkout, virtualenv and interpreter bound read-only at their own paths",
            **rounds.boot_facts(self),
            "workdir_mount": ("bind volume on host tmpfs, Sentry opens files itself (directfs)" if self.directfs
                              else "bind volume on host tmpfs, every file operation served by the gofer"),
            "guest_tmpfs_workdir": "/tmp: the Sentry's own tmpfs (workdir_fs=guest-tmpfs), no host file behind it",
            "file_access_mounts": "shared (gVisor default: volume dentries revalidated against the host)",
            "network": "none",
            "pinned": "whole sandbox with taskset from outside (pins_inside=False)",
            "settle_s": self.settle_s,
        }
