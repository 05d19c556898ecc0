"""The campaign loop: decides what to run (pyperf's runner role) and drives workers.

For every condition (probe x variant x placement) and every environment it
starts `runs` separate worker processes, interleaved round-robin across
conditions *and* environments, so slow drift of the machine spreads over
everything compared instead of landing on one side: each round gives every
open condition one run, an environment's conditions of one placement as one
group (`Session.run_round`; gVisor and UML boot once per group, a fresh
worker process per condition).  Before the first round every environment
runs one tiny pre-flight worker, and the guests that count instructions
(QEMU icount: their counts do not depend on the host's load) boot all their
runs side by side, one per CPU, while no timed worker runs.  Every batch comes back as
a raw sample; a worker that crashes, fails or hangs is recorded and the
campaign goes on.  Each environment's campaign is sealed atomically at the end
(store.py).

The straight line: validate -> resolve environments -> open sessions ->
measure rounds (adding runs while precision asks for them) -> seal one
campaign per environment.

Around that line, what makes long campaigns survive (issue 11): the host lock
(hostlock.py: one measurement at a time per host), a sweep of private folders
left by runners that died (owners.py), and the journal (journal.py): every
finished worker run is appended and fsync'd, so an interrupted campaign is
resumed with `osbench run --resume ID` and sealed as one campaign that
records its interruptions.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from osbench_analysis import host, hostlock, journal, launch, owners, registry, store
from osbench_analysis.config import (PROFILES, CampaignConfig, Condition, ConfigError, cpus_of, make_config,
                                     resolve_environments, validate)
from osbench_analysis.environments import Environment, RoundJob, Session
from osbench_analysis.paths import default_workdir
from osbench_analysis.records import Manifest, RunRecord
from osbench_analysis.schema import samples_frame
from osbench_analysis.worker import WorkerRequest

__all__ = ["measure", "run_campaign", "run_campaigns", "make_config", "validate", "CampaignConfig", "ConfigError",
           "PROFILES"]


def measure(profile: str | None = "quick", progress: bool = True, resume: str | None = None, wait: bool = False,
            **parameters) -> list[store.Campaign]:
    """The one entry point behind both the CLI (`osbench run`) and
    notebooks/run_campaign.ipynb: a parameter left as None takes the profile's
    value.  Returns one sealed campaign per environment measured.

    resume: the id of an interrupted campaign to continue; its parameters come
    from its journal, and any given here must equal them.  wait: queue behind a
    campaign already measuring on this host instead of refusing."""
    if resume:
        cfg = resume_config(resume, profile, parameters)
        return run_campaigns(cfg, progress=progress, resume=resume, wait=wait)
    return run_campaigns(make_config(profile or "quick", **parameters), progress=progress, wait=wait)


#: parameters that say where things go, not what is measured: a resume may not change them either,
#: but they are how the journal is found (output) or are fixed by it (campaign_id)
_NOT_COMPARED = {"output", "campaign_id"}


def _comparable(value):
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def resume_config(campaign_id: str, profile: str | None, parameters: dict) -> CampaignConfig:
    """The configuration an interrupted campaign was started with; refuses
    (ConfigError) when a parameter given now differs from it."""
    root = Path(parameters.get("output") or store.default_root())
    set_id = journal.find(root, campaign_id) or campaign_id
    stored = journal.Journal.open(root, set_id).state["config"]
    given = {k: v for k, v in parameters.items() if v is not None and k not in _NOT_COMPARED}
    if given.get("note") == "":
        given.pop("note")   # the notebook's "no note" is not a different note
    if profile is not None:
        given["profile"] = profile
    unknown = set(given) - set(stored)
    if unknown:
        raise ConfigError(f"unknown campaign parameter(s) {sorted(unknown)}")
    differ = [f"{k}={_comparable(v)!r} (interrupted campaign: {stored[k]!r})" for k, v in sorted(given.items())
              if _comparable(v) != stored[k]]
    if differ:
        raise ConfigError(f"cannot resume {campaign_id!r} with different parameters: {'; '.join(differ)}. "
                          "A resumed campaign is measured with the parameters it started with: give the same "
                          "values, or none (they are read from its journal)")
    return CampaignConfig(**stored)


def run_campaign(cfg: CampaignConfig, progress: bool = True) -> store.Campaign:
    """Measure and seal one environment's campaign (see run_campaigns for several)."""
    if len(resolve_environments(cfg.environment)) != 1:
        raise ConfigError(f"run_campaign measures one environment; {cfg.environment!r} names several: "
                          "use run_campaigns")
    return run_campaigns(cfg, progress=progress)[0]


@dataclass
class _EnvRun:
    """One environment's part of an interleaved campaign set."""
    env: Environment
    session: Session
    campaign_id: str
    rows: list[dict] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    report: object = None
    conditions: list[Condition] = field(default_factory=list)
    boots: int | None = None      # a guest counting instructions: stopped after this many boots (guest_boots)

    def samples(self):
        return samples_frame(self.rows, campaign_id=self.campaign_id, environment=self.env.name,
                             arch_class=self.env.arch_class)


def _campaign_ids(cfg: CampaignConfig, envs: list[Environment], root: Path) -> list[str]:
    now = dt.datetime.now(dt.timezone.utc)
    if cfg.campaign_id is None:
        ids = [store.new_campaign_id(e.name, now) for e in envs]
    elif len(envs) == 1:
        ids = [cfg.campaign_id]
    else:
        ids = [f"{cfg.campaign_id}-{e.name}" for e in envs]
    for cid in ids:
        store.check_can_create(root, cid)
    return ids


class SealError(store.StoreError):
    """Measured runs that could not be sealed; they stay in the journal for a resume."""


def _code_identity(host_info) -> dict:
    """What must not change between an interrupted campaign and its resume."""
    return {"probes_source_sha256": host_info.probes.get("source_sha256_now"),
            "probes_built_sha256": host_info.probes.get("source_sha256")}


def _open_journal(cfg: CampaignConfig, root: Path, ids: list[str], resume: str | None, host_info,
                  created: dt.datetime) -> journal.Journal:
    code = _code_identity(host_info)
    if resume is None:
        return journal.Journal.create(root, cfg.campaign_id if cfg.campaign_id and len(ids) > 1 else ids[0], {
            "config": _comparable(asdict(cfg)), "campaign_ids": ids, "code": code,
            "created_utc": created.isoformat(timespec="seconds"), "owner": owners.owner_tag(),
            "interruptions": []})
    jr = journal.Journal.open(root, journal.find(root, resume) or resume)
    owner_pid, _, ticks = jr.state["owner"].partition(".")
    if int(owner_pid) != os.getpid() and ticks != "None" and owners.is_alive(int(owner_pid), int(ticks)):
        raise journal.JournalError(f"campaign {resume!r} is being measured right now by pid {owner_pid}; "
                                   "it can be resumed only once that runner has stopped")
    if jr.state["code"] != code:
        then, now = jr.state["code"], code
        raise journal.JournalError(
            f"cannot resume {resume!r}: the probe code changed since it was interrupted (probes/ sha256 "
            f"{str(then['probes_source_sha256'])[:12]}… built {str(then['probes_built_sha256'])[:12]}… then, "
            f"{str(now['probes_source_sha256'])[:12]}… built {str(now['probes_built_sha256'])[:12]}… now); "
            "one campaign measures one version of the probes: restore that code, or start a new campaign")
    entries = jr.entries
    jr.state["interruptions"].append({
        "resumed_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "runs_kept": len(entries),
        "last_run_utc": entries[-1]["utc"] if entries else None,
        "torn_entry_dropped": jr.torn_bytes > 0,
        "interrupted_pid": int(owner_pid)})
    jr.drop_torn()
    jr.state["owner"] = owners.owner_tag()
    jr.save_state()
    return jr


def run_campaigns(cfg: CampaignConfig, progress: bool = True, resume: str | None = None,
                  wait: bool = False) -> list[store.Campaign]:
    """Validate, measure every environment interleaved, seal one campaign per
    environment and return them (loaded back from disk).  resume: the id of an
    interrupted campaign whose journal holds cfg (see measure)."""
    conditions = validate(cfg)
    envs = resolve_environments(cfg.environment)
    root = Path(cfg.output) if cfg.output else store.default_root()
    if resume:
        ids = journal.Journal.open(root, journal.find(root, resume) or resume).state["campaign_ids"]
        for cid in ids:
            if not _sealed(root, cid):
                store.check_can_create(root, cid)
    else:
        ids = _campaign_ids(cfg, envs, root)
    cpus = cpus_of(cfg)
    with hostlock.measuring(ids, wait=wait):
        swept = owners.sweep_stale([tempfile.gettempdir(), default_workdir(), cfg.workdir, root])
        if swept and progress:
            print(f"removed {len(swept)} folder(s) left by runners that died: {', '.join(map(str, swept))}",
                  file=sys.stderr)
        host_info = host.collect_host_info()
        if progress and host.busy_warning(host_info):
            print(host.busy_warning(host_info), file=sys.stderr)   # issue #20: campaigns pool only if comparable
        if host_info.probes.get("stale"):
            print("warning: probes/ changed since the extension was built; rebuild with `pip install -e .`",
                  file=sys.stderr)
        created = dt.datetime.now(dt.timezone.utc)
        jr = _open_journal(cfg, root, ids, resume, host_info, created)
        created = dt.datetime.fromisoformat(jr.state["created_utc"])
        try:
            return _measure_and_seal(cfg, conditions, envs, ids, root, cpus, host_info, created, jr, progress)
        except SealError:
            raise
        except PreflightError:
            if resume is None:  # nothing was measured: no campaign to resume
                jr.remove()
            raise
        except BaseException:
            if jr.path.is_dir():
                print(f"campaign {jr.set_id} interrupted with {len(jr.entries)} finished worker run(s) kept in "
                      f"{jr.path}; continue it with `osbench run --resume {jr.set_id}"
                      f"{'' if cfg.output is None else ' --output ' + str(root)}`", file=sys.stderr)
            raise


def _sealed(root: Path, campaign_id: str) -> bool:
    return (root / campaign_id / store.SEAL_FILE).is_file()


def bytecode_for_workers() -> None:
    """Write the package's bytecode once, before any worker starts.  Every
    worker is a fresh interpreter; with PYTHONDONTWRITEBYTECODE (the sandboxes
    set it, and so do some hosts) nothing writes the bytecode, and each worker
    compiled the same modules from source again: 60 ms of a native worker's
    start-up, half a second of one inside UML.  Workers only read it (also
    through a sandbox's read-only mount); a checkout that cannot be written
    simply keeps compiling."""
    import compileall
    import py_compile

    compileall.compile_dir(str(Path(__file__).resolve().parent), maxlevels=1, quiet=2)
    # an editable install's finder, which every interpreter of this venv imports at start-up
    for name, module in list(sys.modules.items()):
        if name.startswith("__editable__") and getattr(module, "__file__", None):
            try:
                py_compile.compile(module.__file__, doraise=True)
            except (OSError, py_compile.PyCompileError):
                pass


def _measure_and_seal(cfg, conditions, envs, ids, root, cpus, host_info, created, jr, progress):
    bytecode_for_workers()
    scratch_root = owners.private_dir("osbench-campaign-")
    try:
        with contextlib.ExitStack() as stack:
            parts = []
            for env, cid in zip(envs, ids):
                sess = stack.enter_context(env.session(scratch_root / env.name))
                conds = [c for c in conditions if c.placement in env.placements and cfg.measures_condition(env, c)]
                parts.append(_EnvRun(env, sess, cid, conditions=conds))
            parts = _preflight(parts, cfg, jr, progress, scratch_root)
            _replay(parts, jr)
            measuring_s = _measure_rounds(parts, cfg, cpus, progress, scratch_root, jr)
            infos = {p.env.name: p.session.facts() for p in parts}
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)

    finished = dt.datetime.now(dt.timezone.utc)
    if progress:
        from osbench_analysis import progress as progress_mod

        progress_mod.say(f"sealing {len(parts)} campaign(s) in {root} ({', '.join(p.env.name for p in parts)})")
    sealed = []
    for p in parts:
        if _sealed(root, p.campaign_id):  # sealed before an earlier attempt failed on the next one
            sealed.append(store.load_campaign(root / p.campaign_id))
            continue
        manifest = Manifest(
            campaign_id=p.campaign_id,
            created_utc=created.isoformat(timespec="seconds"),
            finished_utc=finished.isoformat(timespec="seconds"),
            environment=p.env.name, arch_class=p.env.arch_class,
            config={**asdict(cfg), "cpus": cpus, "workdir": cfg.workdir or default_workdir(),
                    "campaign_id": p.campaign_id, "environment": p.env.name,
                    "campaign_set": ids, "preflight": jr.state.get("preflight", {})},
            conditions=[asdict(c) for c in p.conditions],
            measuring_seconds=round(measuring_s, 3),
            precision=p.report.to_manifest() if p.report is not None else
            {"target": None, "stop_reason": "guest_boots", "runs": p.boots} if p.boots else
            {"target": None, "stop_reason": "fixed_runs", "runs": cfg.runs},
            host=host_info.as_dict(), runs=p.runs,
            environment_facts=p.facts, environment_info=infos[p.env.name],
            interruptions=list(jr.state["interruptions"]))
        try:
            path = store.write_campaign(root, p.campaign_id, p.samples(), manifest)
        except (OSError, store.StoreError) as e:
            why = (f"{e.strerror} ({errno.errorcode.get(e.errno, e.errno)})"
                   if isinstance(e, OSError) and e.strerror else str(e))
            raise SealError(f"could not seal campaign {p.campaign_id!r} in {root}: {why}. Nothing was "
                            f"published; the {len(jr.entries)} measured worker run(s) are kept in {jr.path}: "
                            f"make room (or make {root} writable) and run `osbench run --resume {jr.set_id}"
                            f"{'' if cfg.output is None else ' --output ' + str(root)}` to seal them") from e
        sealed.append(store.load_campaign(path))
    jr.remove()
    return sealed


class PreflightError(ConfigError):
    """An environment asked for by name cannot run a worker: nothing was measured."""


#: the pre-flight worker: the cheapest probe, one short batch, no settling
PREFLIGHT_PROBE = "null_syscall"
PREFLIGHT_TIMEOUT_S = 20.0


def _preflight(parts: list[_EnvRun], cfg: CampaignConfig, jr: journal.Journal, progress: bool,
               scratch: Path) -> list[_EnvRun]:
    """One tiny worker end to end in every environment, through the same
    `run_round` as the campaign, before anything is measured.  With
    `environment="all"` one that fails is left out (one line: which, the
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
    booting = {id(p): pool.submit(preflight, p) for p in parts if p.env.time_unit != "ns"}
    try:
        for p in parts:
            outcome = booting[id(p)].result() if id(p) in booting else preflight(p)
            results[p.env.name] = {"status": outcome.status, "wall_s": round(outcome.wall_s, 3),
                                   "message": outcome.message, "left_out": outcome.status != "ok"}
            if outcome.status == "ok":
                kept.append(p)
                if progress:
                    from osbench_analysis import progress as progress_mod

                    progress_mod.say(f"{p.env.name}: pre-flight worker ok in {outcome.wall_s:.1f} s")
                continue
            failed.append(p)
            line = (f"{p.env.name}: its pre-flight worker failed ({outcome.status}): "
                    f"{outcome.message or 'no message'}. To fix: {p.env.fix_hint}")
            if cfg.environment.strip() != "all":
                raise PreflightError(f"nothing measured: environment {line}")
            if progress:
                from osbench_analysis import progress as progress_mod

                progress_mod.say(f"leaving out {line}")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)   # on an error the sessions' close() ends the boots
    if cfg.environment.strip() == "all":  # those `all` left out before any worker: not installed here
        from osbench_analysis import environments

        for env in environments.REGISTRY:
            if env.name in results:
                continue
            ok = env.availability()
            results[env.name] = {"status": "unavailable", "wall_s": 0.0, "message": ok.reason, "left_out": True}
            if progress:
                from osbench_analysis import progress as progress_mod

                progress_mod.say(f"leaving out {env.name}: not available here: {ok.reason}"
                                 + (f". To install: {ok.install_hint}" if ok.install_hint else ""))
    jr.state["preflight"] = results
    jr.save_state()
    if not kept:
        raise PreflightError(f"nothing measured: no environment passed its pre-flight worker "
                             f"({', '.join(p.env.name for p in failed)}; see the lines above)")
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


def _run_key(env: str, probe: str, params_json: str, placement: str, run: int) -> tuple:
    return env, probe, params_json, placement, run


def _measure_rounds(parts: list[_EnvRun], cfg: CampaignConfig, cpus: list[int], progress: bool,
                    scratch: Path, jr: journal.Journal) -> float:
    """Round-robin: every open condition of every environment gets one more
    worker per round; with a precision target, rounds go on while some
    condition of some environment still needs runs.  Within a round, each
    environment gets its open conditions of one placement as one group
    (`Session.run_round`: a sandbox may boot once for the group), groups
    interleaved across environments.  Runs already in the journal are not
    measured again.  Returns the measuring seconds (those of earlier,
    interrupted attempts included)."""
    target = cfg.precision()
    max_runs = target.max_runs if target else cfg.runs
    done = {_run_key(e["env"], e["run"]["probe"], e["run"]["params_json"], e["run"]["placement"], e["run"]["run"])
            for e in jr.entries}
    open_ = {id(p): list(p.conditions) for p in parts}
    # a guest counting its instructions repeats its counts: it boots cfg.guest_boots times at most
    boots = {id(p): min(max_runs, cfg.guest_boots) if p.env.time_unit != "ns" else max_runs for p in parts}
    # the bar's total is what is planned: every condition's first cfg.runs runs and the guests' boots, grown
    # when precision asks for more (by its projection), so that its remaining time is an estimate and not the
    # worst case (max_runs everywhere)
    planned = {id(p): boots[id(p)] if p.env.time_unit != "ns" else min(cfg.runs, boots[id(p)]) for p in parts}
    bar = progress_bar(sum(planned[k] * len(v) for k, v in open_.items()), len(done), progress)
    earlier_s = jr.entries[-1]["measuring_s"] if jr.entries else 0.0
    run, t0 = 0, time.monotonic() - earlier_s
    started: dict[str, float] = {}

    def keep(p: _EnvRun, placement: str, run: int, cond: Condition, rows, record, facts) -> None:
        # durable before it counts: a kill from here on loses nothing measured
        jr.append({"env": p.env.name, "run": asdict(record), "rows": rows, "facts": facts,
                   "measuring_s": round(time.monotonic() - t0, 3),
                   "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
        p.rows.extend(rows)
        p.runs.append(record)
        if facts and not p.facts:
            p.facts = facts
        bar.set_postfix_str(f"{p.env.name} {placement} run {run + 1}: {cond.probe}", refresh=False)
        bar.update(1)

    try:
        counting = [p for p in parts if p.env.time_unit != "ns" and open_[id(p)]]
        if counting:
            for p in counting:
                started[p.env.name] = time.monotonic()
                bar.write(f"{p.env.name}: measuring {len(p.conditions)} condition(s), {boots[id(p)]} boot(s)")
            _count_side_by_side(counting, boots, done, cfg, cpus, scratch, keep, bar)
            for p in counting:   # p.boots set: this guest has booted its last time
                p.boots, open_[id(p)] = boots[id(p)], []
            _say_finished(bar, parts, counting, started)
        t_rounds = time.monotonic()
        while any(open_.values()):
            for placement in dict.fromkeys(c.placement for v in open_.values() for c in v):
                for p in parts:
                    group = [c for c in open_[id(p)] if c.placement == placement
                             and _run_key(p.env.name, c.probe, c.params_json, c.placement, run) not in done]
                    if not group:
                        continue
                    if p.env.name not in started:
                        started[p.env.name] = time.monotonic()
                        bar.write(f"{p.env.name}: measuring {len(p.conditions)} condition(s)")
                    bar.set_postfix_str(f"{p.env.name} {placement} run {run + 1}", refresh=True)
                    with contextlib.closing(_measure_group(p, group, run, cfg, cpus, scratch)) as results:
                        for result in results:
                            keep(p, placement, run, *result)
            run += 1
            if target is None or run < cfg.runs:
                if run >= cfg.runs:
                    _say_finished(bar, parts, [p for p in parts if open_[id(p)]], started)
                    open_ = {k: [] for k in open_}
                continue
            elapsed = time.monotonic() - t0
            for p in parts:
                if p.boots is not None:
                    continue
                was_open = bool(open_[id(p)])
                p.report = _precision_report(p, target, elapsed, (time.monotonic() - t_rounds) / run)
                needs = [] if p.report.stop else [c for c in p.conditions if c.probe not in registry.CANARY_PROBES
                                                   and _needs_more(p, c)]
                # the canaries go on with every round that measures something else (they watch the host)
                open_[id(p)] = needs and [c for c in p.conditions if c in needs or c.probe in registry.CANARY_PROBES]
                if was_open and not open_[id(p)]:
                    _say_finished(bar, parts, [p], started)
            bar.total = bar.n + sum(_runs_to_go(p, open_[id(p)], run, max_runs) for p in parts)
            bar.refresh()
    finally:
        bar.close()
    return time.monotonic() - t0


def _count_side_by_side(parts: list[_EnvRun], boots: dict, done: set, cfg: CampaignConfig, cpus: list[int],
                        scratch: Path, keep, bar) -> None:
    """Every boot of the guests that count their instructions, before the timed
    rounds, side by side: each guest boots its runs one after another in a
    thread of its own, and a boot takes one of the campaign's CPUs for itself
    (pinned to it): at most one boot per CPU, a freed CPU going to the waiting
    guest with the most work left (boots left x conditions), so that no long
    guest is left to boot alone at the end.  Under QEMU's icount the count is
    the guest's own whatever else the host runs (docs/environments.md), so
    running them together changes no number, and no timed worker runs
    meanwhile.  Each boot is still a run of its own.  Only this thread journals
    (`keep`): the guests' threads hand over what they measured through a queue."""
    import queue
    import threading

    free, results, stop = list(cpus), queue.Queue(), threading.Event()
    turn = threading.Condition()
    left = {id(p): boots[id(p)] * len(p.conditions) for p in parts}
    waiting: set[int] = set()

    def take_cpu(p: _EnvRun) -> int:
        with turn:
            waiting.add(id(p))
            turn.wait_for(lambda: free and max(waiting, key=left.get) == id(p))
            waiting.discard(id(p))
            left[id(p)] -= len(p.conditions)
            return free.pop(0)

    def give_back(cpu: int) -> None:
        with turn:
            free.append(cpu)
            turn.notify_all()

    def boot_all(p: _EnvRun) -> None:
        try:
            for run in range(boots[id(p)]):
                cpu = take_cpu(p)
                try:
                    if stop.is_set():
                        return
                    for placement in dict.fromkeys(c.placement for c in p.conditions):
                        group = [c for c in p.conditions if c.placement == placement
                                 and _run_key(p.env.name, c.probe, c.params_json, c.placement, run) not in done]
                        if not group:
                            continue
                        pinned = [cpu, *(c for c in cpus if c != cpu)]
                        with contextlib.closing(_measure_group(p, group, run, cfg, pinned, scratch)) as got:
                            for result in got:
                                results.put((p, placement, run, *result))
                finally:
                    give_back(cpu)
        except BaseException as e:   # a guest's fault reaches the runner, which stops the campaign
            results.put(e)
        finally:
            results.put(None)

    threads = [threading.Thread(target=boot_all, args=(p,), name=f"osbench-boots-{p.env.name}", daemon=True)
               for p in parts]
    bar.set_postfix_str(f"{', '.join(p.env.name for p in parts)}: {min(len(cpus), len(parts))} side by side",
                        refresh=True)
    for t in threads:
        t.start()
    ended = 0
    try:
        while ended < len(threads):
            got = results.get()
            if got is None:
                ended += 1
            elif isinstance(got, BaseException):
                raise got
            else:
                keep(*got)
    finally:
        # on an error or Ctrl-C the sessions' close() takes the QEMUs down, and the threads end with them
        stop.set()


def progress_bar(total: int, initial: int, progress: bool):
    """The measuring bar: a widget in Jupyter, text on a terminal (tqdm.auto);
    under papermill, whose kernel's output goes into the output notebook, a
    second, text bar goes to the terminal papermill runs in (progress.py)."""
    from osbench_analysis import progress as progress_mod

    return progress_mod.bar(total=total, initial=initial, desc="measuring", unit="worker", disable=not progress)


def _say_finished(bar, parts: list[_EnvRun], finished: list[_EnvRun], started: dict[str, float]) -> None:
    for p in finished:
        failed = sum(r.status != "ok" for r in p.runs)
        took = time.monotonic() - started.get(p.env.name, time.monotonic())
        bar.write(f"{p.env.name}: finished, {len(p.runs)} worker run(s), {failed} failed, {took:.0f} s")


def _precision_report(p: _EnvRun, target, elapsed_s: float, seconds_per_round: float):
    import numpy as np
    import pandas as pd

    from osbench_analysis import precision

    samples = p.samples()
    # Only batches of workers that finished: a crashed worker's partial batches are not a run.
    ok = {(r.probe, r.variant, r.placement, r.run) for r in p.runs if r.status == "ok"}
    # The host-state canaries are controls measured alongside every round: they never decide the stop.
    keep = np.array([k in ok and k[0] not in registry.CANARY_PROBES
                     for k in zip(samples["probe"], samples["variant"], samples["placement"], samples["run"])],
                    dtype=bool)
    if not keep.any():  # every worker failed: nothing to judge, nothing more to add
        return precision.CampaignPrecision(target, pd.DataFrame(columns=[*precision.CONDITION_KEYS, *_STATUS_COLUMNS]),
                                           True, "no_successful_run", elapsed_s)
    return precision.campaign_precision(samples[keep], target, elapsed_s=elapsed_s,
                                        seconds_per_round=seconds_per_round)


#: the per-condition columns CampaignPrecision.to_manifest reads
_STATUS_COLUMNS = ("n_runs", "n_batches", "estimate_ns", "halfwidth_rel", "met", "reason", "runs_needed",
                   "heterogeneous", "runs_needed_heterogeneity", "stop")


def _ok_variants(p: _EnvRun, cond: Condition) -> set[str]:
    """The variant labels a condition's successful runs were recorded under (the label names the file
    system the worker found, so it is known only from the runs): how the precision report keys it."""
    return {r.variant for r in p.runs if r.status == "ok" and r.probe == cond.probe
            and r.placement == cond.placement and r.params_json == cond.params_json}


def _needs_more(p: _EnvRun, cond: Condition) -> bool:
    """Another run for this condition?  Never for one without a successful run:
    more of what always fails would not help."""
    return any(p.report.needs_more(cond.probe, v, cond.placement) for v in _ok_variants(p, cond))


def _runs_to_go(p: _EnvRun, open_conditions: list[Condition], run: int, max_runs: int) -> int:
    """How many more worker runs an environment's open conditions are projected to need, each at
    least one more and at most max_runs in all: the precision report's runs_needed (and the runs that
    would include a slow minority); the canaries go on as long as the environment's longest."""
    table = p.report.conditions if p.report is not None else None
    rounds: list[int] = []
    for cond in open_conditions:
        if cond.probe in registry.CANARY_PROBES:
            continue
        need = run + 1
        if table is not None and len(table):
            rows = table[(table["probe"] == cond.probe) & (table["placement"] == cond.placement)
                         & table["variant"].isin(_ok_variants(p, cond))]
            for col in ("runs_needed", "runs_needed_heterogeneity"):
                if col in rows and rows[col].notna().any():
                    need = max(need, int(rows[col].max()))
        rounds.append(min(max(need - run, 1), max_runs - run))
    return sum(rounds) + max(rounds, default=0) * sum(c.probe in registry.CANARY_PROBES for c in open_conditions)


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
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            else:
                privates.append(None)
            req = WorkerRequest(probe=cond.probe, params=cond.params, min_batch_ns=int(cfg.min_batch_ms * 1e6),
                                warmup=cfg.warmup, batches=cfg.batches, max_iterations=cond.spec.max_iterations,
                                worker_cpu=worker_cpu, child_cpu=child_cpu,
                                workdir=sess.inside(private) if private else inside, make_workdir=bool(inside),
                                settle_s=env.settle_s, binaries_facts=not p.facts)
            jobs.append(RoundJob(req, launch.worker_argv(req, cfg.command_prefix),
                                 scratch / env.name / f"worker-{i}-{cond.probe}-{cond.placement}-{run}.jsonl",
                                 cfg.worker_timeout_s(env.startup_s)))
        with contextlib.closing(_outcomes(sess, jobs, env_cpus)) as outcomes:
            for cond, private, outcome in zip(conds, privates, outcomes):
                host_fs = host.filesystem_type(private) if private else ""
                if private and os.listdir(private) and outcome.status == "ok":
                    outcome = replace(outcome, status="error", message=f"probe left files in {private}")
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
