"""What a kernel environment is: one class that knows how to run the
unchanged worker inside it (papermill's engines: a registry of small classes,
never `if environment == ...` branches elsewhere).

The runner's use of an environment, once per campaign::

    env = environments.get("gvisor")
    ok = env.availability()               # refused before measuring when not ok
    with env.session(scratch) as sess:    # mounts, boot files, ...; torn down on any exit
        launch = sess.launch(worker_argv, cpus={0}, output=host_path)
        # run launch.argv with launch.env; read the worker's JSON lines from
        # launch.output_file (or stdout when None); the process group is killed
        # on timeout, then launch.cleanup() runs.
        for outcome in sess.run_round(jobs, cpus={0}):   # what the runner calls: one round's
            ...                                           # workers of one placement, one outcome each

Placement under a sandbox: the runner passes the host CPUs the *whole*
environment is confined to (`cpus`); an environment whose guest cannot pin
its own processes (pins_inside=False) gets no worker_cpu/child_cpu in the
request, because sched_setaffinity inside gVisor or UML is emulated.
"""
from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

from osbench_analysis.catalog.registry import FS_HOST_VOLUME, ProbeError

if TYPE_CHECKING:
    from osbench_analysis.worker.launch import WorkerOutcome
    from osbench_analysis.worker.request import WorkerRequest

from osbench_analysis.worker.launch import Launch  # noqa: F401  (an environment returns one; re-exported)
from osbench_analysis.store.schema import ARCH_CLASSES, PLACEMENTS  # noqa: F401  (the vocabulary, re-exported)


@dataclass(frozen=True)
class Availability:
    available: bool
    reason: str = ""          # why not, or what was found ("runsc 2026-09-05, systrap")
    install_hint: str = ""    # the command that makes it available, e.g. "make envs"

    def __bool__(self) -> bool:
        return self.available


@dataclass
class RoundJob:
    """One worker of a round: what the runner asks of it and where its JSON lines go."""
    request: "WorkerRequest"
    worker_argv: list[str]        # launch.worker_argv(request, command_prefix)
    output: Path                  # host path for this worker's JSON lines (Launch.output_file)
    timeout_s: float              # for this worker alone


class Session:
    """An environment set up for one campaign (mounts made, files prepared).

    Subclasses override `launch` when the worker needs wrapping; paths are
    host paths unless a name says `inside`."""

    def __init__(self, env: "Environment", scratch: Path):
        self.env, self.scratch = env, Path(scratch)

    @property
    def workdir_root(self) -> str | None:
        """Host folder under which file probes get their private folder; None: the runner's default."""
        return None

    def guest_workdir(self, name: str) -> str:
        """A folder path, inside the environment, on a tmpfs its own kernel serves (registry.FS_GUEST_TMPFS):
        the host cannot see it, so the worker makes it and removes it (WorkerRequest.make_workdir), and it
        dies with the boot anyway.  Only for environments listing FS_GUEST_TMPFS in `workdir_filesystems`."""
        raise ProbeError(f"environment {self.env.name!r} has no guest tmpfs for file probes "
                         f"(its work folders: {list(self.env.workdir_filesystems)})")

    def inside(self, host_path: str | Path) -> str:
        """How a host path is seen by the worker inside the environment."""
        return str(host_path)

    def launch(self, worker_argv: Sequence[str], *, cpus: set[int] | None, output: Path) -> Launch:
        return Launch(list(worker_argv))

    def run_round(self, jobs: Sequence[RoundJob], *, cpus: set[int] | None) -> Iterator["WorkerOutcome"]:
        """Run one round's workers that share a placement (the same `cpus`), in
        order, one fresh worker process each, yielding each one's outcome as it
        finishes (in job order).  Default: one `launch` per job, so a sandbox
        is booted for every worker.  An environment that can boot once per
        round overrides this (one boot, a fresh worker process per job inside
        it; a guest that runs every job of the round in one boot parses its
        output into one outcome per job).  Each job keeps its own status,
        message and batches: one job's failure is not the others'.

        Deadlines: each job's timeout_s already holds the environment's
        startup_s; an override that boots once adds env.round_startup_s once,
        to its boot's first job.  The runner copes with an override that
        raises or stops early: the jobs it got no outcome for become failed
        runs carrying the reason."""
        from osbench_analysis.worker import launch

        for job in jobs:
            yield launch.run(self.launch(job.worker_argv, cpus=cpus, output=job.output), job.timeout_s)

    def facts(self) -> dict:
        """Facts of the running environment seen from the host (versions, flags, mount options)."""
        return self.env.facts()

    def dead(self) -> str:
        """Why this session can measure nothing more (a server it runs has died), '' while it can.  The
        runner asks between groups and skips the environment's remaining runs (issue 41, F28)."""
        return ""

    def open(self) -> None:
        """Set up (mounts, servers, folders); close() runs even when this fails halfway."""

    def close(self) -> None:
        """Undo everything the session made; must be safe to call after a partial set-up."""


class Environment:
    """One kernel environment.  Subclass, set the class attributes, override
    what differs from native, and `register()` an instance."""

    name: str = ""
    arch_class: str = "monolithic"
    description: str = ""
    placements: tuple[str, ...] = PLACEMENTS
    pins_inside: bool = True      # False: sched_setaffinity inside is not real; the runner pins from outside
    settle_s: float = 0.0         # the worker waits this long before calibrating (e.g. gVisor's vDSO clock)
    startup_s: float = 0.0        # expected start-up time of one worker launched on its own (boot included), added
                                  # to every worker's timeout
    # An environment whose run_round boots once for a whole round: that boot's start-up, added once to the
    # deadline of the boot's first job (the runner adds startup_s to every job; a preflight adds both).
    round_startup_s: float = 0.0
    # Where its file probes' private folder can be (registry.WORKDIR_FS_CHOICES): the host-backed folder the
    # runner makes (workdir_root), and for a sandbox with a kernel of its own, a tmpfs that kernel serves
    # (Session.guest_workdir), so a campaign separates the crossing to the host from the guest's own VFS.
    workdir_filesystems: tuple[str, ...] = (FS_HOST_VOLUME,)
    time_unit: str = "ns"         # what elapsed_ns counts: host ns, or "guest instructions" (QEMU icount)
    # what to do when the environment is available but its pre-flight worker fails (runner._preflight)
    fix_hint: str = ("reinstall the sandboxes with `make envs`; see docs/environments.md, "
                     "'When the pre-flight fails'")
    session_class: type[Session] = Session
    # False: measured only when named (`--environment all` leaves it out): the kernel-version sweep's guests
    # (environments/kernels.py), which `make kernels` measures, so that `make all` keeps its time
    in_all: bool = True

    def availability(self) -> Availability:
        return Availability(True, "always")

    def facts(self) -> dict:
        """Host-side facts about the environment: version, platform, flags."""
        return {}

    def serves(self, probe) -> bool:
        """Whether measuring this probe (a registry.Probe) here tells anything
        native does not: an environment that changes only part of the kernel's
        path (a file server) says False for the probes that never take it.
        A guest-only probe (registry.Probe.guest: GNU Mach's task) runs only in its guest, and
        a crossing's native pieces (family "mechanism": seccomp traps, ptrace stops) only on a
        monolithic kernel: inside a sandbox they would nest one interception in another."""
        return not probe.guest and (self.arch_class == "monolithic" or probe.family != "mechanism")

    def serves_params(self, probe: str, params: dict) -> bool:
        """Whether a served probe is measured at these parameters here (every one, but in a guest that
        measures only what a comparison asks for: xen-linux)."""
        return True

    @contextlib.contextmanager
    def session(self, scratch: Path) -> Iterator[Session]:
        scratch = Path(scratch)
        scratch.mkdir(parents=True, exist_ok=True)
        sess = self.session_class(self, scratch)
        try:
            sess.open()
            yield sess
        finally:
            try:
                sess.close()
            finally:
                shutil.rmtree(scratch, ignore_errors=True)

    def __repr__(self) -> str:
        return f"<environment {self.name}: {self.arch_class}>"


@dataclass
class EnvironmentRegistry:
    """name -> Environment, in registration order (papermill's engines registry)."""
    _envs: dict[str, Environment] = field(default_factory=dict)

    def register(self, env: Environment) -> Environment:
        if not env.name:
            raise ValueError(f"{type(env).__name__} has no name")
        if env.arch_class not in ARCH_CLASSES:
            raise ValueError(f"{env.name}: arch_class {env.arch_class!r} not one of {ARCH_CLASSES}")
        self._envs[env.name] = env
        return env

    def get(self, name: str) -> Environment:
        from osbench_analysis.errors import ConfigError
        import difflib

        try:
            return self._envs[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._envs, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"environment {name!r} unknown{hint} (known: {', '.join(self._envs)})") from None

    def names(self) -> list[str]:
        return list(self._envs)

    def __iter__(self):
        return iter(self._envs.values())

    def __contains__(self, name: str) -> bool:
        return name in self._envs
