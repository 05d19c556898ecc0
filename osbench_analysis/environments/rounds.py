"""One sandbox boot per round: the part of `Session.run_round` that gVisor and
UML share.

Booting a sandbox costs 1-3 s; a worker inside a booted one 0.2-0.4 s.  So a
round's workers of one placement run in ONE boot, one after the other, each a
fresh worker process started by a small shell driver, the sandbox's only work:

    worker 0 --out DIR/out-0 2> DIR/err-0; echo $? > DIR/rc-0   (rc written last, by rename)
    worker 1 ...

DIR is a host folder the sandbox sees at the same path (gVisor's volume,
UML's read-write hostfs).  The host watches for each rc file and yields that
worker's outcome as soon as it appears, so the runner journals every worker
as before.  A worker that overruns its deadline takes its boot down with it:
it is a timeout, and the round's remaining workers get a fresh boot.  A boot
that ends early (the sandbox could not start, the guest died) fails the
workers that had not finished, with the sandbox's own last lines.

Only the boot's first worker waits for the environment to settle (gVisor's
vDSO clock); later ones start in a settled sandbox.  Runs of one condition
still come from different boots (one boot per round), so they stay
independent; the conditions of one round share a boot (docs/environments.md).
"""
from __future__ import annotations

import dataclasses
import shlex
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

from osbench_analysis.environments import hostops
from osbench_analysis.environments.base import Launch, RoundJob

#: how often the host looks for a finished worker (a stat of one file)
POLL_S = 0.005
#: after the last worker, how long the sandbox gets to power off by itself
SHUTDOWN_S = 5.0


def driver_script(jobs: Sequence[RoundJob], folder: Path) -> str:
    """The shell lines that run each job's worker in turn inside the boot."""
    lines = ["cd /"]
    for i, job in enumerate(jobs):
        d = lambda name: shlex.quote(str(folder / f"{name}-{i}"))  # noqa: E731 (one line per file)
        lines.append(f"{shlex.join(job.worker_argv)} --out {d('out')} 2> {d('err')}")
        lines.append(f"echo $? > {d('rcpart')} && mv {d('rcpart')} {d('rc')}")
    return "\n".join(lines) + "\n"


def settled_after_first(jobs: Sequence[RoundJob]) -> list[RoundJob]:
    """The round's jobs with no settling wait after the boot's first worker."""
    from osbench_analysis.worker import launch

    out = list(jobs[:1])
    for job in jobs[1:]:
        if not job.request.settle_s or "--request" not in job.worker_argv:
            out.append(job)
            continue
        req = dataclasses.replace(job.request, settle_s=0.0)
        out.append(dataclasses.replace(job, request=req, worker_argv=launch.with_request(job.worker_argv, req)))
    return out


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _exit_status(text: str) -> int | None:
    """The shell's $? as an exit status; 128+n (killed by signal n) as -n."""
    try:
        rc = int(text.strip())
    except ValueError:
        return None
    return -(rc - 128) if rc > 128 else rc


def run_booted(jobs: Sequence[RoundJob], folder: Path, boot: Callable[[str, Path], Launch],
               startup_s: float) -> Iterator:
    """Run `jobs` in one boot made by `boot(driver_script_text, folder)`; yield
    one launch.WorkerOutcome per job, in order.  `folder` (made here, removed
    at the end) is seen at the same path inside; `startup_s` is added once, to
    the first job's deadline."""
    from osbench_analysis.worker import launch

    if not jobs:
        return
    jobs = settled_after_first(jobs)
    folder.mkdir(parents=True)
    how: Launch | None = None
    proc = None
    log = folder / "boot.log"
    try:
        how = boot(driver_script(jobs, folder), folder)
        t_prev = time.monotonic()
        with open(log, "wb") as log_fd:
            proc = subprocess.Popen(launch.guarded(how.argv), stdin=subprocess.DEVNULL, stdout=log_fd,
                                    stderr=subprocess.STDOUT, start_new_session=True, env=how.env)
        for i, job in enumerate(jobs):
            deadline = t_prev + job.timeout_s + (startup_s if i == 0 else 0.0)
            rc_file = folder / f"rc-{i}"
            while not rc_file.exists():
                if proc.poll() is not None and not rc_file.exists():
                    tail = " | ".join(_read(log).strip().splitlines()[-3:])
                    why = (f"the sandbox ended (status {proc.returncode}) before this worker finished"
                           + (f": {tail}" if tail else ""))
                    for _ in jobs[i:]:
                        now = time.monotonic()
                        yield launch.WorkerOutcome("error", proc.returncode, why, [], now - t_prev)
                        t_prev = now
                    return
                if time.monotonic() > deadline:
                    launch.stop(proc)
                    now = time.monotonic()
                    yield launch.judge(None, _read(folder / f"out-{i}"), "", now - t_prev, timed_out=True,
                                       timeout_s=deadline - t_prev)
                    # the rest of the round gets a boot of its own
                    yield from run_booted(jobs[i + 1:], folder.with_name(folder.name + "+"), boot, startup_s)
                    return
                time.sleep(POLL_S)
            if i == len(jobs) - 1:  # the sandbox's shutdown belongs to the round's time
                try:
                    proc.wait(timeout=SHUTDOWN_S)
                except subprocess.TimeoutExpired:
                    pass
            now = time.monotonic()
            yield launch.judge(_exit_status(_read(rc_file)), _read(folder / f"out-{i}"),
                               _read(folder / f"err-{i}"), now - t_prev)
            t_prev = now
    finally:
        if proc is not None:
            launch.stop(proc)
            proc.wait()
        if how is not None:
            how.cleanup()
        hostops.remove_tree(folder)


def boot_facts(env) -> dict:
    """What the manifest says about the boot level (environment_info)."""
    return {"boot_per": "round: one boot per round and placement, a fresh worker process per condition",
            "round_startup_s": env.round_startup_s}


__all__ = ["run_booted", "driver_script", "settled_after_first", "boot_facts", "POLL_S"]
