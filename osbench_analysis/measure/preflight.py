"""Before anything is measured: one tiny worker end to end in every
environment (`_preflight`), and, for a resumed campaign, its journaled runs
put back (`_replay`).  An environment asked for by name that cannot run a
worker stops the command (PreflightError); a selector (`environment="all"`,
"all-guests", "all-timed") leaves it out.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

from osbench_analysis.catalog import registry
from osbench_analysis.environments import RoundJob
from osbench_analysis.measure import journal
from osbench_analysis.measure.config import SELECTORS, CampaignConfig, ConfigError, is_selector
from osbench_analysis.measure.group import _outcomes
from osbench_analysis.measure.plan import _EnvRun
from osbench_analysis.store.records import RunRecord
from osbench_analysis.worker import launch
from osbench_analysis.worker.request import WorkerRequest


class PreflightError(ConfigError):
    """An environment asked for by name cannot run a worker: nothing was measured."""


#: the pre-flight worker: the cheapest probe, one short batch, no settling
PREFLIGHT_PROBE = "null_syscall"
PREFLIGHT_TIMEOUT_S = 20.0


def _first_boot_checks(p: _EnvRun, cfg: CampaignConfig) -> bool:
    """Whether this environment's first measured boot is its pre-flight: a guest counting its instructions,
    asked for by a selector ("all", "all-guests"): a boot of its own before its measured boots cost up to a
    minute of emulation (xen-linux: 53-55 s) and told what its first measured boot tells.  One none of whose
    boots measured anything is left out after them (`_judge_first_boots`), as a failed pre-flight leaves it
    out; one asked for by name still boots a pre-flight first, so that nothing is measured when it fails."""
    return p.env.time_unit != "ns" and is_selector(cfg.environment)


def _preflight(parts: list[_EnvRun], cfg: CampaignConfig, jr: journal.Journal, progress: bool,
               scratch: Path) -> list[_EnvRun]:
    """One tiny worker end to end in every environment, through the same
    `run_round` as the campaign, before anything is measured.  With a
    selector (`environment="all"`, "all-guests", "all-timed") one that fails is left out (one line: which, the
    worker's own message, how to fix it); one asked for by name stops the
    command (PreflightError).  The result per environment goes into the
    journal and every manifest (config["preflight"])."""
    import concurrent.futures

    spec = registry.get_probe(PREFLIGHT_PROBE)
    results, kept, failed = {}, [], []

    def preflight(p: _EnvRun):
        req = WorkerRequest(probe=spec.name, params=registry.resolve_params(spec, {}), min_batch_ns=1_000_000,
                            warmup=0, batches=1, max_iterations=spec.max_iterations)
        job = RoundJob(req, launch.worker_argv(req, cfg.command_prefix),
                       scratch / p.env.name / "preflight.jsonl", PREFLIGHT_TIMEOUT_S + p.env.startup_s)
        with contextlib.closing(_outcomes(p.session, [job], None)) as outcomes:
            outcome = next(outcomes)
        job.output.unlink(missing_ok=True)
        return outcome

    # the guests' boots (seconds each) go on in the background, side by side, while the others run their
    # workers: nothing is measured yet
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="osbench-preflight")
    # the longest boot first (xen-linux's ~20 s), so that the others' boots go on beside it, not after it
    guests = sorted((p for p in parts if p.env.time_unit != "ns" and not _first_boot_checks(p, cfg)),
                    key=lambda p: -p.env.round_startup_s)
    booting = {id(p): pool.submit(preflight, p) for p in guests}
    try:
        for p in parts:
            if _first_boot_checks(p, cfg):   # judged by its first measured boot (_judge_first_boots)
                results[p.env.name] = {"status": "first_boot", "wall_s": 0.0, "left_out": False,
                                       "message": "its first measured boot is its pre-flight"}
                kept.append(p)
                continue
            outcome = booting[id(p)].result() if id(p) in booting else preflight(p)
            results[p.env.name] = {"status": outcome.status, "wall_s": round(outcome.wall_s, 3),
                                   "message": outcome.message, "left_out": outcome.status != "ok"}
            if outcome.status == "ok":
                kept.append(p)
                if progress:
                    from osbench_analysis.measure import progress as progress_mod

                    progress_mod.say(f"{p.env.name}: pre-flight worker ok in {outcome.wall_s:.1f} s")
                continue
            failed.append(p)
            # B65: a --command-prefix the guard cannot start is the user's, not the probes' build
            fix = (f"give a command_prefix that exists here (got {' '.join(cfg.command_prefix)!r})"
                   if cfg.command_prefix and "osbench-guard: cannot run" in (outcome.message or "") else p.env.fix_hint)
            line = (f"{p.env.name}: its pre-flight worker failed ({outcome.status}): "
                    f"{outcome.message or 'no message'}. To fix: {fix}")
            if not is_selector(cfg.environment):
                raise PreflightError(f"nothing measured: environment {line}")
            if progress:
                from osbench_analysis.measure import progress as progress_mod

                progress_mod.say(f"leaving out {line}")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)   # on an error the sessions' close() ends the boots
    if is_selector(cfg.environment):  # those the selector left out before any worker: not installed here
        from osbench_analysis import environments

        for env in environments.REGISTRY:
            # the kernel-version sweep's (Environment.in_all False) are measured when named, never by a selector
            if env.name in results or not env.in_all or not SELECTORS[cfg.environment.strip()](env):
                continue
            if env.name in cfg.selectors_leave_out:
                results[env.name] = {"status": "profile", "wall_s": 0.0, "left_out": True,
                                     "message": f"the {cfg.profile} profile leaves it out (selectors_leave_out); "
                                                f"measured when named or by the full profile"}
                if progress:
                    from osbench_analysis.measure import progress as progress_mod

                    progress_mod.say(f"leaving out {env.name}: {results[env.name]['message']}")
                continue
            ok = env.availability()
            results[env.name] = {"status": "unavailable", "wall_s": 0.0, "message": ok.reason, "left_out": True}
            if progress:
                from osbench_analysis.measure import progress as progress_mod

                progress_mod.say(f"leaving out {env.name}: not available here: {ok.reason}"
                                 + (f". To install: {ok.install_hint}" if ok.install_hint else ""))
    jr.state["preflight"] = results
    jr.save_state()
    if not kept:
        raise PreflightError(f"nothing measured: no environment passed its pre-flight worker "
                             f"({', '.join(p.env.name for p in failed)}; see the lines above)")
    return kept


def _judge_first_boots(parts: list[_EnvRun], cfg: CampaignConfig, jr: journal.Journal,
                       progress: bool) -> list[_EnvRun]:
    """After the rounds: a guest whose first measured boot was its pre-flight (`_first_boot_checks`) and of
    which no boot measured anything is left out, as a failed pre-flight would have left it out: one line
    (which, its first worker's message, how to fix it), and its result in the journal and every manifest
    (config["preflight"]); one that measured is recorded as passed, with its first boot's wall time.
    PreflightError when no environment is left."""
    results = jr.state.setdefault("preflight", {})
    kept = []
    for p in parts:
        if not _first_boot_checks(p, cfg):
            kept.append(p)
            continue
        first = next((r for r in p.runs if r.status == "ok"), None)
        if first is not None:
            results[p.env.name] = {"status": "ok", "wall_s": round(first.wall_s, 3), "left_out": False,
                                   "message": "its first measured boot"}
            kept.append(p)
            continue
        failed = p.runs[0] if p.runs else None
        status, message = (failed.status, failed.message) if failed else ("error", "no worker ran")
        results[p.env.name] = {"status": status, "wall_s": round(failed.wall_s, 3) if failed else 0.0,
                               "message": message, "left_out": True}
        if progress:
            from osbench_analysis.measure import progress as progress_mod

            progress_mod.say(f"leaving out {p.env.name}: its first boot failed ({status}): "
                             f"{message or 'no message'}. To fix: {p.env.fix_hint}")
    jr.save_state()
    if not kept:
        raise PreflightError(f"nothing measured: no environment passed its pre-flight worker or first boot "
                             f"({', '.join(p.env.name for p in parts)}; see the lines above)")
    return kept


def _replay(parts: list[_EnvRun], jr: journal.Journal) -> None:
    """Put the journaled runs of an interrupted campaign back, in the order they were measured."""
    by_env = {p.env.name: p for p in parts}
    for e in jr.entries:
        if e["env"] not in by_env:
            raise PreflightError(f"cannot resume: environment {e['env']!r} measured runs before the interruption "
                                 "but fails its pre-flight worker now; fix it (see the line above) and resume again")
        p = by_env[e["env"]]
        p.rows.extend(e["rows"])
        p.runs.append(RunRecord.from_dict(e["run"]))
        if e["facts"] and not p.facts:
            p.facts = e["facts"]
