"""User-mode Linux: a Linux kernel running as an ordinary host process, its
guest processes ptraced by it (Linux hosted as a process, as L4Linux and
MkLinux were).

Each round's workers of one placement share one UML boot (rounds.py): the
host's root through hostfs, read-only; the folders the worker reads
(checkout, virtualenv, interpreter: hostops.worker_paths) mounted again
explicitly through hostfs at their own paths, after the guest's own tmpfs on
/tmp, so a checkout under /tmp is seen too; one host tmpfs folder read-write
through another hostfs, holding the workers' output and the file probes'
folders; an init script that runs the round's driver (a fresh worker process
per condition, with --out into that folder) and powers the guest off.  The UML
process and everything it starts are pinned from outside.  On hosts whose
XSAVE area is larger than the 832 bytes Debian's UML assumes, a small
LD_PRELOAD shim (probes/environments/uml_xsave_shim.c) makes its FPU-state
ptrace calls at full size, where the host's kernel refuses the short ones."""
from __future__ import annotations

import ctypes
import functools
import itertools
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Iterator, Sequence

from osbench_analysis.environments import hostops, rounds
from osbench_analysis.environments.base import Availability, Environment, Launch, RoundJob, Session
from osbench_analysis.catalog.registry import FS_GUEST_TMPFS, FS_HOST_VOLUME

UML_KERNEL = "/usr/bin/linux.uml"
XSAVE_SHIM = hostops.tool("osbench-uml-xsave.so")
UML_XSTATE_BYTES = 832
#: keep the guest's glibc off the AVX-512/AMX code paths whose state the shim only carries over
GLIBC_TUNABLES = ("glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,-AVX512ER,-AVX512PF,"
                  "-AMX_BF16,-AMX_TILE,-AMX_INT8")
#: the guest's loopback up (the kernel then gives it 127.0.0.1): SIOCSIFFLAGS IFF_UP|IFF_LOOPBACK|IFF_RUNNING
LO_UP = ("import fcntl, socket, struct; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
         "fcntl.ioctl(s, 0x8914, struct.pack('16sh22x', b'lo', 0x1 | 0x8 | 0x40))")
INSTALL = "apt-get install user-mode-linux  (or: make envs)"


def xsave_size() -> int:
    """The host's XSAVE area for enabled features (CPUID 0xD.0 EBX), read by the shim; 0 if unknown."""
    try:
        return int(ctypes.CDLL(str(XSAVE_SHIM)).osbench_xsave_size())
    except OSError:
        return 0


@functools.lru_cache(maxsize=1)
def short_xstate_set_refused() -> bool:
    """Whether this host's kernel refuses UML's 832-byte PTRACE_SETREGSET(NT_X86_XSTATE), tried on a
    stopped child by the shim's own code; True where it cannot tell (the shim is then loaded to be safe).
    A host with a larger XSAVE area may still accept it (this 2-vCPU Intel VM's 6.18 kernel does)."""
    try:
        return int(ctypes.CDLL(str(XSAVE_SHIM)).osbench_short_xstate_set_refused()) != 0
    except (OSError, AttributeError):
        return True


def _split_by_ld_so(path) -> bool:
    """Whether ld.so would split this path in LD_PRELOAD (it separates entries at spaces and colons)."""
    return any(c in str(path) for c in " :")


def preload_path(shim: Path, folder: Path) -> str:
    """The shim as LD_PRELOAD can name it: ld.so splits LD_PRELOAD at spaces and colons, so a shim under
    a checkout whose path has one is copied into ``folder`` (the session's private tmpfs folder) first.
    (Before this, a checkout under '/tmp/x y' ran UML without the shim, silently.)"""
    if not _split_by_ld_so(shim):
        return str(shim)
    if _split_by_ld_so(folder):
        raise ValueError(f"no folder without spaces or colons to preload the XSAVE shim from (got {folder})")
    copy = folder / shim.name
    shutil.copyfile(shim, copy)
    return str(copy)


def measured_configuration(facts: dict, info: dict) -> str:
    """What a sealed UML campaign's numbers depend on beyond the host and the probe code, for
    pooling (reproducibility.comparable_key): '' for UML as it should run, or a name for a
    configuration that makes its system calls dearer.  The XSAVE shim as first built executed
    CPUID (a trap to the hypervisor on a VM) on every ptrace call UML makes: about 34 us more per
    guest system call on this host (getpid 41 us instead of 7 us).  Campaigns sealed before the
    fix lack ``xsave_shim_reads_cpuid``; in them the shim was loaded unless the checkout's path had
    a space or a colon, where ld.so split LD_PRELOAD and UML ran without it."""
    if not info.get("xsave_shim") or info.get("xsave_shim_reads_cpuid") == "once":
        return ""
    return "" if _split_by_ld_so(facts.get("probe_extension", "")) else "xsave shim reading CPUID on every ptrace call"


class UMLSession(Session):
    env: "UML"

    def __init__(self, env: "UML", scratch: Path):
        super().__init__(env, scratch)
        self.shm: Path | None = None
        self._ids = itertools.count()

    def open(self) -> None:
        # The read-write hostfs folder sits on host tmpfs, like native file probes'
        # folders.  Its guest path equals its host path (the guest's devtmpfs at
        # /dev is writable, so the mount point can be made there).
        self.shm = hostops.private_shm_dir()
        for sub in ("rw", "tmp", "uml"):
            (self.shm / sub).mkdir()

    @property
    def rw(self) -> Path:
        return self.shm / "rw"

    @property
    def workdir_root(self) -> str:
        return str(self.rw)

    def guest_workdir(self, name: str) -> str:
        # init mounts a tmpfs on /tmp inside the guest: served by the guest kernel (Linux 6.1), not hostfs
        return f"/tmp/osbench-guest-{name}"

    def launch(self, worker_argv: Sequence[str], *, cpus: set[int] | None, output: Path) -> Launch:
        n = next(self._ids)
        out = self.rw / f"worker-{n}.jsonl"
        how = self._boot(n, f"{shlex.join([*worker_argv, '--out', str(out)])} 2>&1", cpus)
        how.output_file = out
        return how

    def run_round(self, jobs: Sequence[RoundJob], *, cpus: set[int] | None) -> Iterator:
        """One guest boot for the round's jobs: its init runs the driver, then powers off."""
        n = next(self._ids)
        return rounds.run_booted(jobs, self.rw / f"round-{n}", lambda script, _: self._boot(n, script, cpus),
                                 self.env.round_startup_s)

    def _boot(self, n: int, body: str, cpus: set[int] | None) -> Launch:
        # not under /dev: the guest mounts its own devtmpfs there before running init
        init = self.scratch / f"init-{n}.sh"
        init.write_text(self.env.init_script(body, self.rw))
        init.chmod(0o755)
        argv = hostops.pinned([UML_KERNEL, *self.env.kernel_args(init, self.shm / "uml", f"osbench{os.getpid()}-{n}")],
                              cpus)
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "HOME")}
        env["TMPDIR"] = str(self.shm / "tmp")  # UML's guest memory is a file here: keep it on tmpfs
        env["GLIBC_TUNABLES"] = GLIBC_TUNABLES
        if self.env.shim_needed():
            env["LD_PRELOAD"] = preload_path(XSAVE_SHIM, self.shm)
            if self.env.xsave_shim == "always":
                env["OSBENCH_XSAVE_SHIM_FORCE"] = "1"

        def cleanup() -> None:
            init.unlink(missing_ok=True)
            hostops.remove_tree(self.shm / "uml" / f"osbench{os.getpid()}-{n}")

        return Launch(argv, env=env, output_file=None, cleanup=cleanup)

    def facts(self) -> dict:
        return {**self.env.facts(), "rw_folder": str(self.rw)}

    def close(self) -> None:
        if self.shm is not None:
            # a guest the runner could not reap (it should have) must not survive the session
            hostops.kill_processes(UML_KERNEL, f"uml_dir={self.shm}")
            hostops.remove_tree(self.shm)


class UML(Environment):
    arch_class = "hosted-kernel"
    pins_inside = False
    # the guest kernel has one CPU: a second host CPU is no second party's CPU
    placements = ("same_cpu", "unpinned")
    startup_s = 10.0   # boot + power-off: 1.3-1.9 s pinned, more on a busy host
    round_startup_s = 10.0  # the same boot, once per round
    session_class = UMLSession
    workdir_filesystems = (FS_HOST_VOLUME, FS_GUEST_TMPFS)

    def __init__(self, name: str = "uml", mem_mb: int = 512, xsave_shim: str = "auto", description: str = ""):
        if xsave_shim not in ("auto", "always", "never"):
            raise ValueError(f"xsave_shim must be 'auto', 'always' or 'never' (got {xsave_shim!r})")
        self.name, self.mem_mb, self.xsave_shim = name, mem_mb, xsave_shim
        self.description = description or (
            "User-mode Linux (Debian's linux.uml): a guest Linux kernel as a host process; hostfs root read-only, "
            "file probes on a read-write hostfs folder on host tmpfs")

    def shim_needed(self) -> bool:
        return self.shim_reason()[0]

    def shim_reason(self) -> tuple[bool, str]:
        """Whether UML runs with the XSAVE shim, and why (the facts record both)."""
        if self.xsave_shim in ("never", "always"):
            return self.xsave_shim == "always", f"xsave_shim={self.xsave_shim!r}"
        size = xsave_size()
        if size <= UML_XSTATE_BYTES:
            return False, f"the host's XSAVE area is {size} B, no larger than UML's {UML_XSTATE_BYTES} B"
        if not short_xstate_set_refused():
            return False, (f"the host's XSAVE area is {size} B, but its kernel accepts UML's {UML_XSTATE_BYTES}-byte "
                           f"XSTATE set")
        return True, f"the host's kernel refuses UML's {UML_XSTATE_BYTES}-byte XSTATE set ({size} B XSAVE area)"

    def kernel_args(self, init: Path, uml_dir: Path, umid: str) -> list[str]:
        return [f"mem={self.mem_mb}M", "rootfstype=hostfs", "rootflags=/", "ro", f"init={init}",
                f"uml_dir={uml_dir}", f"umid={umid}",
                "con0=null,fd:2", "con=null", "ssl=null", "quiet"]

    @staticmethod
    def init_script(body: str, rw: Path) -> str:
        """The guest's PID 1: mount what the worker needs, run `body` (shell
        lines starting workers), power off (if init exits, the guest kernel panics)."""
        q = shlex.quote
        python = sys.executable
        return "\n".join([
            "#!/bin/sh",
            "mount -t proc proc /proc",
            "mount -t sysfs sys /sys",
            "mount -t tmpfs tmp /tmp",
            "mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm",
            # what the worker reads, wherever it lives (under /tmp the tmpfs above hides it)
            *(f"mkdir -p {q(p)} && mount -t hostfs -o ro,{q(p)} hostfs {q(p)}" for p in hostops.worker_paths()),
            f"mkdir -p {q(str(rw))} && mount -t hostfs -o {q(str(rw))} hostfs {q(str(rw))}",
            f"export PATH={q(os.environ.get('PATH', '/usr/bin:/bin'))} HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8",
            f"export PYTHONDONTWRITEBYTECODE=1 GLIBC_TUNABLES={q(GLIBC_TUNABLES)}",
            # iproute2's ip where the host has it: a Python start-up inside UML costs ~0.2-0.3 s of every boot
            f"ip link set lo up 2>/dev/null || {q(python)} -S -c {q(LO_UP)}",
            "cd /",
            body,
            "echo o > /proc/sysrq-trigger",
            "sleep 60",
            "",
        ])

    def availability(self) -> Availability:
        if not os.access(UML_KERNEL, os.X_OK):
            return Availability(False, f"{UML_KERNEL} missing (Debian package user-mode-linux)", INSTALL)
        if not hostops.which("taskset"):
            return Availability(False, "taskset (util-linux) missing: UML cannot be pinned",
                                "apt-get install util-linux")
        if self.xsave_shim != "never" and not XSAVE_SHIM.is_file():
            return Availability(False, f"the XSAVE shim {XSAVE_SHIM} is not built", hostops.INSTALL_HINT)
        size = xsave_size()
        shim = "with" if self.shim_needed() else "without"
        return Availability(True, f"linux.uml {self.kernel_version()}, XSAVE {size} B, {shim} the XSAVE shim")

    @staticmethod
    def kernel_version() -> str:
        return hostops.command_output([UML_KERNEL, "--version"]) or "unknown"

    def facts(self) -> dict:
        shim, why = self.shim_reason()
        return {
            "uml_kernel": UML_KERNEL,
            "uml_kernel_version": self.kernel_version(),
            "package_version": hostops.deb_version("user-mode-linux"),
            "mem_mb": self.mem_mb,
            "kernel_args": self.kernel_args(Path("INIT"), Path("UML_DIR"), "UMID"),
            "root_mount": "hostfs / read-only",
            "worker_mounts": "checkout, virtualenv and interpreter: hostfs read-only at their own paths",
            **rounds.boot_facts(self),
            "workdir_mount": "hostfs read-write on a host tmpfs folder (guest path = host path)",
            "guest_tmpfs_workdir": "/tmp: a tmpfs inside the guest, served by the guest kernel (workdir_fs=guest-tmpfs)",
            "host_xsave_bytes": xsave_size(),
            "xsave_shim": shim,
            "xsave_shim_why": why,
            "xsave_shim_reads_cpuid": "once",
            "glibc_tunables": GLIBC_TUNABLES,
            "pinned": "whole UML instance with taskset from outside (pins_inside=False)",
        }
