"""Starting one worker process and getting its report back, whatever happens
to it: the worker runs in its own session (process group), so a timeout or an
interrupt kills it with everything it forked; a crash, a hang or an error is a
WorkerOutcome, never an exception in the caller.

Between the runner and the worker sits osbench-guard (probes/helpers/guard.c):
the kernel tells it when the runner dies, however it dies (SIGKILL included),
and it then kills the worker's process group and every descendant, sandboxes
that left the group included.  No worker outlives its runner."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from osbench_analysis.errors import OsbenchError
from osbench_analysis.worker.main import BIN_DIR
from osbench_analysis.worker.request import WorkerRequest

GUARD = BIN_DIR / "osbench-guard"
#: how long the guard gets to take a worker's processes down before the group is SIGKILLed directly
STOP_GRACE_S = 5.0


class GuardMissing(OsbenchError):
    """The guard program was not built."""


def guarded(argv: list[str]) -> list[str]:
    """argv run under osbench-guard, which dies with (and takes down everything
    below it when) this process dies."""
    if not os.access(GUARD, os.X_OK):
        raise GuardMissing(f"{GUARD} is missing: it keeps workers from outliving the runner; rebuild the "
                           "package with `pip install -e .` (or `make install`)")
    return [str(GUARD), str(os.getpid()), "--", *argv]


@dataclass
class Launch:
    """How to start one worker (an environment wraps the worker's argv: environments/base.py)."""
    argv: list[str]
    env: dict[str, str] | None = None         # None: inherit the runner's environment
    output_file: Path | None = None           # host path the worker's JSON lines land in; None: stdout
    cleanup: Callable[[], None] = lambda: None  # after the process (group) is gone, success or not


@dataclass
class WorkerOutcome:
    status: str          # ok | crashed | timeout | error
    returncode: int | None
    message: str
    batches: list[dict]
    wall_s: float
    facts: dict = field(default_factory=dict)   # the worker's {"kind": "environment"} record


def worker_paths() -> list[str]:
    """What a worker imports from outside the standard library: the folder holding the package, and the
    one holding cffi's backend, which the probe extension loads."""
    import _cffi_backend

    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    return list(dict.fromkeys([package_parent, os.path.dirname(os.path.realpath(_cffi_backend.__file__))]))


def worker_argv(req: WorkerRequest, command_prefix: list[str] = ()) -> list[str]:
    """The worker's command line, before an environment wraps it: the interpreter without `site` (-S),
    told where the package and cffi are.  `site` would process the virtualenv's .pth files, the editable
    install's import finder among them (pathlib, re, importlib.util, ...): a fifth of a native worker's
    start-up and more inside gVisor and UML (docs/environments.md, 'Where a worker's start-up goes').
    Same as ``python -m osbench_analysis.worker.main --request JSON``."""
    boot = (f"import sys; sys.path[:0] = {worker_paths()!r}; "
            "from osbench_analysis.worker.main import run; run()")
    return [*command_prefix, sys.executable, "-S", "-c", boot, "--request", req.to_json()]


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop(proc: subprocess.Popen) -> None:
    """Take a guarded process and everything below it down: the guard's SIGTERM
    path also finds descendants that left the process group; SIGKILL to the
    group is the backstop."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=STOP_GRACE_S)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    _kill_group(proc.pid)


def parse_lines(text: str) -> tuple[list[dict], dict, str, bool]:
    """Batches, environment facts, the probe's error message and whether the
    worker said it was done, from its JSON lines; other output (a wrapper's
    chatter, a torn last line) is ignored."""
    batches, facts, message, done = [], {}, "", False
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        kind = obj.pop("kind", None)
        if kind == "batch":
            batches.append(obj)
        elif kind == "environment":
            facts = obj
        elif kind == "error":
            message = obj.get("message", "")
        elif kind == "done":
            done = True
    return batches, facts, message, done


def run(launch: Launch, timeout_s: float) -> WorkerOutcome:
    """Run one launched worker to completion or timeout; never raises for the worker's faults."""
    t0 = time.monotonic()
    # Own session: a timeout kills the whole group (forked probe children,
    # a sandbox's processes), and Ctrl-C reaches only the runner, which cleans up.
    proc = subprocess.Popen(guarded(launch.argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, env=launch.env)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        stop(proc)
        out, err = proc.communicate()
        timed_out = True
    except BaseException:
        stop(proc)
        proc.communicate()
        launch.cleanup()
        raise
    _kill_group(proc.pid)  # anything the worker left behind in its group (a daemonised helper) goes too
    launch.cleanup()
    wall = time.monotonic() - t0
    if launch.output_file is not None:
        out = Path(launch.output_file).read_text(errors="replace") if Path(launch.output_file).exists() else ""
    return judge(proc.returncode, out, err, wall, timed_out=timed_out, timeout_s=timeout_s)


def judge(rc: int | None, out: str, err: str, wall_s: float, *, timed_out: bool = False,
          timeout_s: float = 0.0) -> WorkerOutcome:
    """The outcome of one worker from its exit status (negative: the signal
    that killed it), its JSON lines and its stderr."""
    batches, facts, message, done = parse_lines(out)
    tail = " | ".join(err.strip().splitlines()[-3:])
    if timed_out:
        status, message = "timeout", f"killed after {timeout_s:.0f} s without finishing"
    elif rc == 0 and done:
        status = "ok"
    elif rc == 0:  # e.g. a guest kernel that powers off with status 0 whatever its init did
        status, message = "error", message or "the worker ended without reporting done" + (
            f": {tail}" if tail else "")
    elif rc < 0:
        status, message = "crashed", f"worker killed by {_signal_name(rc)}" + (f": {tail}" if tail else "")
    else:
        status, message = "error", message or f"worker exited with status {rc}" + (f": {tail}" if tail else "")
    return WorkerOutcome(status, None if timed_out else rc, message, batches, wall_s, facts)


def with_request(argv: list[str], req: WorkerRequest) -> list[str]:
    """A worker command line (from worker_argv) asking for `req` instead."""
    i = argv.index("--request")
    return [*argv[:i + 1], req.to_json(), *argv[i + 2:]]


def run_worker(req: WorkerRequest, timeout_s: float, command_prefix: list[str] = ()) -> WorkerOutcome:
    """A native worker with no environment around it (tests, benchmarks)."""
    return run(Launch(worker_argv(req, command_prefix)), timeout_s)
