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

This module holds the entry points, the journal's opening and the sealing;
the parts live beside it: what each environment measures and the precision
projection (plan.py), the pre-flight and a resume's replay (preflight.py),
the loop over rounds and the guests' boots (rounds.py), and one group of
workers through `Session.run_round` (group.py).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from osbench_analysis.hosts import machine as host
from osbench_analysis.measure import hostlock
from osbench_analysis.measure import journal
from osbench_analysis.store import owners
from osbench_analysis.store import campaigns as store
from osbench_analysis.measure.config import (PROFILES, CampaignConfig, ConfigError, cpus_of, make_config,
                                     resolve_environments, validate)
from osbench_analysis.environments import Environment
# the parts; some names only for those who read them as runner.X (progress_bar, _count_side_by_side, ...)
from osbench_analysis.measure.plan import _EnvRun, _runs_to_go  # noqa: F401
from osbench_analysis.measure.preflight import (PREFLIGHT_PROBE, PREFLIGHT_TIMEOUT_S,  # noqa: F401
                                                PreflightError, _judge_first_boots, _preflight, _replay)
from osbench_analysis.measure.rounds import _count_side_by_side, _measure_rounds, progress_bar  # noqa: F401
from osbench_analysis.paths import default_workdir
from osbench_analysis.store.records import PARTIAL_KEY, Manifest  # PARTIAL_KEY: why a campaign is partial

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
    for name, value in (("wait", wait), ("progress", progress)):
        if not isinstance(value, bool):   # a notebook's wait = "maybe" is not True
            raise ConfigError(f"{name} must be True or False (got {value!r})")
    if resume is not None and not isinstance(resume, str):
        raise ConfigError(f"resume must be a campaign id (a string) or None (got {resume!r})")
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
    stored = journal.open_to_resume(root, campaign_id).state["config"]
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
    # resumed where its journal was found (--output, else the default root), never in the folder the
    # journal recorded: a journal copied or moved elsewhere is sealed beside it (FN6)
    return CampaignConfig(**{**stored, "output": parameters.get("output")})


def run_campaign(cfg: CampaignConfig, progress: bool = True) -> store.Campaign:
    """Measure and seal one environment's campaign (see run_campaigns for several)."""
    if len(resolve_environments(cfg.environment)) != 1:
        raise ConfigError(f"run_campaign measures one environment; {cfg.environment!r} names several: "
                          "use run_campaigns")
    return run_campaigns(cfg, progress=progress)[0]


def _campaign_ids(cfg: CampaignConfig, envs: list[Environment], root: Path) -> list[str]:
    now = dt.datetime.now(dt.timezone.utc)
    if cfg.campaign_id is None:
        # an id made here names its start to the second: a campaign of the same environment sealed in the
        # same second (two short runs back to back) takes the next free second, never a clash
        ids = [store.new_campaign_id(e.name, now) for e in envs]
        for _ in range(60):
            if not any((root / cid).exists() for cid in ids):
                break
            now += dt.timedelta(seconds=1)
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
    jr = journal.open_to_resume(root, resume)
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
    envs = resolve_environments(cfg.environment, cfg.selectors_leave_out)
    root = Path(cfg.output) if cfg.output else store.default_root()
    if resume:
        ids = journal.open_to_resume(root, resume).state["campaign_ids"]
        for cid in ids:
            if not _sealed(root, cid):
                store.check_can_create(root, cid)
    else:
        ids = _campaign_ids(cfg, envs, root)
    cpus = cpus_of(cfg)
    with hostlock.measuring(ids, wait=wait):
        # checked again under the lock (C3): a runner that waited may find its id sealed by the one before it
        for cid in ids:
            if not (resume and _sealed(root, cid)):
                store.check_can_create(root, cid)
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
        except BaseException as e:
            if jr.path.is_dir():
                hint = (f"campaign {jr.set_id} interrupted with {len(jr.entries)} finished worker run(s) kept in "
                        f"{jr.path}; continue it with `osbench run --resume {jr.set_id}"
                        f"{'' if cfg.output is None else ' --output ' + str(root)}`, or drop them with `osbench "
                        f"discard {jr.set_id}{'' if cfg.output is None else ' --output ' + str(root)}`")
                if type(e) is KeyboardInterrupt and not e.args:   # Ctrl-C: the hint is its one line (cli.main)
                    raise KeyboardInterrupt(hint) from None
                print(hint, file=sys.stderr)
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

    compileall.compile_dir(str(Path(__file__).resolve().parents[1]), maxlevels=2, quiet=2)   # the package, every layer
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
            parts = _judge_first_boots(parts, cfg, jr, progress)
            infos = {p.env.name: p.session.facts() for p in parts}
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)

    finished = dt.datetime.now(dt.timezone.utc)
    if progress:
        from osbench_analysis.measure import progress as progress_mod

        progress_mod.say(f"sealing {len(parts)} campaign(s) in {root} ({', '.join(p.env.name for p in parts)})")
    sealed, empty, partial = [], [], []
    for p in parts:
        if _sealed(root, p.campaign_id):  # sealed before an earlier attempt failed on the next one ...
            earlier = store.load_campaign(root / p.campaign_id)
            if earlier.manifest.created_utc != created.isoformat(timespec="seconds"):  # ... of this campaign
                raise store.CampaignExists(f"campaign {p.campaign_id!r} was sealed by another run while this one "
                                           f"measured; its {len(jr.entries)} measured worker run(s) stay in "
                                           f"{jr.path}")
            sealed.append(earlier)
            continue
        if not any(not r.get("warmup") for r in p.rows):   # a campaign of no measured batch is no campaign
            empty.append(p)
            continue
        why_partial = _partial(p)
        if why_partial:
            partial.append(f"{p.campaign_id} ({why_partial})")
        manifest = Manifest(
            campaign_id=p.campaign_id,
            created_utc=created.isoformat(timespec="seconds"),
            finished_utc=finished.isoformat(timespec="seconds"),
            environment=p.env.name, arch_class=p.env.arch_class,
            config={**asdict(cfg), "cpus": cpus, "workdir": cfg.workdir or default_workdir(),
                    "campaign_id": p.campaign_id, "environment": p.env.name,
                    "campaign_set": ids, "preflight": jr.state.get("preflight", {}),
                    # the guests' budget: the repeat boots it left out and the emulation speed it judged by
                    **({"guest_budget": jr.state["guest_budget"]} if "guest_budget" in jr.state else {})},
            conditions=[asdict(c) for c in p.conditions],
            measuring_seconds=round(measuring_s, 3),
            precision=p.report.to_manifest() if p.report is not None else
            {"target": None, "stop_reason": "guest_boots", "runs": p.boots, **_left_out(jr, p)} if p.boots else
            {"target": None, "stop_reason": "fixed_runs", "runs": cfg.runs},
            host=host_info.as_dict(), runs=p.runs,
            environment_facts=p.facts,
            environment_info={**infos[p.env.name], **({PARTIAL_KEY: why_partial} if why_partial else {})},
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
    if empty:
        raise NothingMeasured(_nothing_measured(empty, sealed) + (f"; partial: {'; '.join(partial)}" if partial else ""))
    if partial:
        whole = [c.id for c in sealed if not c.manifest.environment_info.get(PARTIAL_KEY)]
        raise PartialCampaign(f"sealed as partial, not complete: {'; '.join(partial)}"
                              f"{'; sealed complete: ' + ', '.join(whole) if whole else ''}. "
                              "Measure again for a complete campaign")
    return sealed


def _left_out(jr, p) -> dict:
    """{"left_out": n} when the guests' budget left n of this guest's repeat boots out, else {}."""
    n = jr.state.get("guest_budget", {}).get("guests", {}).get(p.env.name, {}).get("left_out", 0)
    return {"left_out": n} if n else {}


def _partial(p) -> str:
    """Why an environment's campaign is partial, '' when it is not: its runs were stopped (its server
    died) or most of its worker runs failed (F28: 1 good run of 12 was sealed with exit 0)."""
    failed = sum(r.status != "ok" for r in p.runs)
    if p.stopped:
        return f"{p.stopped}; {failed} of {len(p.runs)} worker runs failed, the rest skipped"
    if failed * 2 > len(p.runs):
        return f"{failed} of {len(p.runs)} worker runs failed"
    return ""


class PartialCampaign(store.StoreError):
    """Every campaign is sealed, but one or more are partial (most runs failed, or its environment stopped):
    named, recorded in the manifest (environment_info["partial"]), and the run fails (exit non-zero)."""


class NothingMeasured(SealError):
    """Every worker of an environment failed: no campaign is sealed for it, and the run fails."""


def _nothing_measured(empty: list, sealed: list) -> str:
    p = empty[0]
    failed = [r for r in p.runs if r.status != "ok"]
    why = next(((r.message or "").strip().splitlines()[-1][:200] for r in failed if (r.message or "").strip()),
               "no message")
    more = f" ({len(empty) - 1} more environment(s) likewise)" if len(empty) > 1 else ""
    kept = f"; sealed: {', '.join(c.id for c in sealed)}" if sealed else ""
    return (f"campaign {p.campaign_id!r} measured no batch: all {len(p.runs)} worker run(s) failed, e.g. "
            f"{failed[0].probe if failed else '?'}: {why}; nothing was sealed for it{more}{kept}")
