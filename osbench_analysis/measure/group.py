"""One group of workers: an environment's conditions of one placement in one
round, measured through `Session.run_round`.

`_measure_group` gives each worker its CPUs (`_placement_cpus`), a private
working folder when its probe needs one, and its request; `_outcomes`
guarantees exactly one outcome per worker whatever the environment does;
`_record` turns an outcome into sample rows and a run record.  Used by the
pre-flight (preflight.py) and the rounds (rounds.py).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
from dataclasses import replace
from pathlib import Path

from osbench_analysis.catalog import registry
from osbench_analysis.environments import RoundJob, Session
from osbench_analysis.hosts import machine as host
from osbench_analysis.measure.config import CampaignConfig, Condition
from osbench_analysis.measure.plan import _EnvRun
from osbench_analysis.paths import default_workdir
from osbench_analysis.store import owners
from osbench_analysis.store.records import RunRecord
from osbench_analysis.worker import launch
from osbench_analysis.worker.request import WorkerRequest


def _placement_cpus(placement: str, cpus: list[int]) -> tuple[int | None, int, set[int] | None]:
    """(worker CPU, second party's CPU, CPUs the whole environment is confined to)."""
    if placement == "same_cpu":
        return cpus[0], -1, {cpus[0]}
    if placement == "cross_cpu":
        return cpus[0], cpus[1], {cpus[0], cpus[1]}
    return None, -1, None


def _measure_group(p: _EnvRun, conds: list[Condition], run: int, cfg: CampaignConfig, cpus: list[int],
                   scratch: Path):
    """One round's workers of one environment and placement, through
    `Session.run_round`; yields (condition, sample rows, run record, facts)
    per worker as each finishes.  A `run_round` that raises or stops early
    never takes the runner down: the workers it gave no outcome for are
    failed runs that say why."""
    env, sess = p.env, p.session
    worker_cpu, child_cpu, env_cpus = _placement_cpus(conds[0].placement, cpus)
    if not env.pins_inside:  # affinity inside a sandbox is emulated: confine the sandbox instead
        worker_cpu, child_cpu = None, -1
    workdir_root = sess.workdir_root or cfg.workdir or default_workdir()
    privates: list[str | None] = []
    jobs: list[RoundJob] = []
    lost: list[tuple[Condition, str]] = []     # conditions whose worker could not even be prepared
    try:
        for i, cond in enumerate(conds):
            private, inside = None, None
            if registry.workdir_fs(cond.params) == registry.FS_GUEST_TMPFS:  # made by the worker, in the guest
                inside = sess.guest_workdir(f"{run}-{i}")
                privates.append(None)
            elif cond.spec.uses_workdir:
                # Ctrl-C waits until `privates` holds the new folder, so the finally below removes it
                # (no moment where it exists and this function does not know it)
                blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
                try:
                    private = str(owners.private_dir("osbench-", workdir_root))
                    privates.append(private)
                except OSError as e:   # F28: a file server that died (ENOTCONN): a failed run, not a crash
                    lost.append((cond, f"cannot make its work folder in {workdir_root}: {e.strerror or e}"))
                    continue
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            else:
                privates.append(None)
            # memory events (a guest's memory-system model): every boot but the first, which runs without the
            # model so that the campaign itself shows the counts unchanged by it; a polluted model's batches are
            # one operation each (the first boot's too, to compare like with like)
            events = cfg.memory_events if env.time_unit != "ns" else ""
            # a guest counting its instructions: its own (fewer) batches, the count repeating batch after batch
            batches = cfg.batches if env.time_unit == "ns" else cfg.guest_batches or cfg.batches
            req = WorkerRequest(probe=cond.probe, params=cond.params, min_batch_ns=int(cfg.min_batch_ms * 1e6),
                                warmup=cfg.warmup_in(env), batches=batches, max_iterations=cond.spec.max_iterations,
                                worker_cpu=worker_cpu, child_cpu=child_cpu,
                                workdir=sess.inside(private) if private else inside, make_workdir=bool(inside),
                                settle_s=env.settle_s, binaries_facts=not p.facts,
                                iterations=cond.spec.batch_multiple(cond.params) if events == "polluted" else None,
                                memory_events=events if run > 0 else "")
            jobs.append(RoundJob(req, launch.worker_argv(req, cfg.command_prefix),
                                 scratch / env.name / f"worker-{i}-{cond.probe}-{cond.placement}-{run}.jsonl",
                                 cfg.worker_timeout_s(env.startup_s)))
        for cond, why in lost:
            yield (cond, *_record(cond, run, launch.WorkerOutcome("error", None, why, [], 0.0), None, ""))
        ran = [c for c in conds if not any(c is c_ for c_, _ in lost)]
        if not jobs:
            return
        with contextlib.closing(_outcomes(sess, jobs, env_cpus)) as outcomes:
            for cond, private, outcome in zip(ran, privates, outcomes):
                host_fs = ""
                try:   # a dead file server's mount answers ENOTCONN (F28): the worker's run failed, not the runner
                    host_fs = host.filesystem_type(private) if private else ""
                    if private and os.listdir(private) and outcome.status == "ok":
                        outcome = replace(outcome, status="error", message=f"probe left files in {private}")
                except OSError as e:
                    outcome = replace(outcome, status="error",
                                      message=f"{outcome.message + '; ' if outcome.message else ''}its work folder "
                                              f"{private} became unreadable: {e.strerror or e}")
                if private:
                    shutil.rmtree(private, ignore_errors=True)
                yield (cond, *_record(cond, run, outcome, private, host_fs))
    finally:
        for private in privates:
            if private:
                shutil.rmtree(private, ignore_errors=True)
        for job in jobs:
            job.output.unlink(missing_ok=True)


def _outcomes(sess: Session, jobs: list[RoundJob], cpus: set[int] | None):
    """Exactly one outcome per job, whatever `run_round` does."""
    got, why = 0, "the environment's run_round ended without an outcome for this worker"
    rounds = None
    try:
        rounds = sess.run_round(jobs, cpus=cpus)
        for outcome in rounds:
            if got == len(jobs):
                break
            got += 1
            yield outcome
    except Exception as e:  # an environment's fault, not the campaign's: its workers fail, the runner goes on
        why = f"the environment's run_round failed: {type(e).__name__}: {e}"
    finally:
        close = getattr(rounds, "close", None)
        if close is not None:
            close()
    for _ in jobs[got:]:
        yield launch.WorkerOutcome("error", None, why, [], 0.0)


def _record(cond: Condition, run: int, outcome, private: str | None, host_fs: str
            ) -> tuple[list[dict], RunRecord, dict]:
    """A worker's sample rows, its run record and the facts it saw."""
    spec = cond.spec
    # The filesystem as the probe saw it (inside a sandbox it is not the host's).
    fs_type = (outcome.facts.get("workdir_fs_type") or host_fs) if spec.uses_workdir else ""
    variant = registry.variant_label(spec, cond.params, fs_type)
    rows = [{**b, "probe": cond.probe, "variant": variant, "params_json": cond.params_json,
             "placement": cond.placement, "fs_type": fs_type, "run": run} for b in outcome.batches]
    record = RunRecord(probe=cond.probe, variant=variant, params_json=cond.params_json,
                       placement=cond.placement, run=run, status=outcome.status,
                       returncode=outcome.returncode, message=outcome.message,
                       n_batches=len(outcome.batches), wall_s=round(outcome.wall_s, 4))
    return rows, record, outcome.facts
