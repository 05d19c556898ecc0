"""The campaign loop: decides what to run (pyperf's runner role) and drives workers.

For every condition (probe x variant x placement) and every environment it
starts `runs` separate worker processes, interleaved round-robin across
conditions *and* environments, so slow drift of the machine spreads over
everything compared instead of landing on one side.  Every batch comes back as
a raw sample; a worker that crashes, fails or hangs is recorded and the
campaign goes on.  Each environment's campaign is sealed atomically at the end
(store.py).

The straight line: validate -> resolve environments -> open sessions ->
measure rounds (adding runs while precision asks for them) -> seal one
campaign per environment.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from osbench_analysis import host, launch, registry, store
from osbench_analysis.config import (PROFILES, CampaignConfig, Condition, ConfigError, cpus_of, default_workdir,
                                     make_config, resolve_environments, validate)
from osbench_analysis.environments import Environment, Session
from osbench_analysis.records import Manifest, RunRecord
from osbench_analysis.schema import samples_frame
from osbench_analysis.worker import WorkerRequest

__all__ = ["measure", "run_campaign", "run_campaigns", "make_config", "validate", "CampaignConfig", "ConfigError",
           "PROFILES"]


def measure(profile: str = "quick", progress: bool = True, **parameters) -> list[store.Campaign]:
    """The one entry point behind both the CLI (`osbench run`) and
    notebooks/run_campaign.ipynb: a parameter left as None takes the profile's
    value.  Returns one sealed campaign per environment measured."""
    return run_campaigns(make_config(profile, **parameters), progress=progress)


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


def run_campaigns(cfg: CampaignConfig, progress: bool = True) -> list[store.Campaign]:
    """Validate, measure every environment interleaved, seal one campaign per
    environment and return them (loaded back from disk)."""
    conditions = validate(cfg)
    envs = resolve_environments(cfg.environment)
    root = Path(cfg.output) if cfg.output else store.default_root()
    ids = _campaign_ids(cfg, envs, root)
    cpus = cpus_of(cfg)
    host_info = host.collect_host_info()
    if host_info.probes.get("stale"):
        print("warning: probes/ changed since the extension was built; rebuild with `pip install -e .`",
              file=sys.stderr)
    created = dt.datetime.now(dt.timezone.utc)
    scratch_root = Path(tempfile.mkdtemp(prefix="osbench-campaign-"))
    try:
        with contextlib.ExitStack() as stack:
            parts = []
            for env, cid in zip(envs, ids):
                sess = stack.enter_context(env.session(scratch_root / env.name))
                conds = [c for c in conditions if c.placement in env.placements]
                parts.append(_EnvRun(env, sess, cid, conditions=conds))
            t0 = time.monotonic()
            _measure_rounds(parts, cfg, cpus, progress, scratch_root)
            measuring_s = time.monotonic() - t0
            infos = {p.env.name: p.session.facts() for p in parts}
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)

    finished = dt.datetime.now(dt.timezone.utc)
    sealed = []
    for p in parts:
        manifest = Manifest(
            campaign_id=p.campaign_id,
            created_utc=created.isoformat(timespec="seconds"),
            finished_utc=finished.isoformat(timespec="seconds"),
            environment=p.env.name, arch_class=p.env.arch_class,
            config={**asdict(cfg), "cpus": cpus, "workdir": cfg.workdir or default_workdir(),
                    "campaign_id": p.campaign_id, "environment": p.env.name,
                    "campaign_set": ids},
            conditions=[asdict(c) for c in p.conditions],
            measuring_seconds=round(measuring_s, 3),
            precision=p.report.to_manifest() if p.report is not None else
            {"target": None, "stop_reason": "fixed_runs", "runs": cfg.runs},
            host=host_info.as_dict(), runs=p.runs,
            environment_facts=p.facts, environment_info=infos[p.env.name])
        sealed.append(store.load_campaign(store.write_campaign(root, p.campaign_id, p.samples(), manifest)))
    return sealed


def _measure_rounds(parts: list[_EnvRun], cfg: CampaignConfig, cpus: list[int], progress: bool,
                    scratch: Path) -> None:
    """Round-robin: every open condition of every environment gets one more
    worker per round; with a precision target, rounds go on while some
    condition of some environment still needs runs."""
    from tqdm import tqdm

    target = cfg.precision()
    max_runs = target.max_runs if target else cfg.runs
    open_ = {id(p): list(p.conditions) for p in parts}
    bar = tqdm(total=max_runs * sum(len(v) for v in open_.values()), desc="measuring", unit="worker",
               disable=not progress, file=sys.stderr, dynamic_ncols=True)
    run, t0 = 0, time.monotonic()
    try:
        while any(open_.values()):
            n_conditions = max(len(v) for v in open_.values())
            for i in range(n_conditions):  # interleave environments condition by condition
                for p in parts:
                    if i < len(open_[id(p)]):
                        cond = open_[id(p)][i]
                        bar.set_postfix_str(f"{p.env.name} {cond.probe} {cond.placement} run {run + 1}")
                        _measure_one(p, cond, run, cfg, cpus, scratch)
                        bar.update(1)
            run += 1
            if target is None or run < cfg.runs:
                if run >= cfg.runs:
                    open_ = {k: [] for k in open_}
                continue
            elapsed = time.monotonic() - t0
            for p in parts:
                p.report = _precision_report(p, target, elapsed, elapsed / run)
                open_[id(p)] = [] if p.report.stop else [c for c in p.conditions if _needs_more(p, c)]
            bar.total = bar.n + sum(len(v) for v in open_.values()) * (target.max_runs - run)
            bar.refresh()
    finally:
        bar.close()


def _precision_report(p: _EnvRun, target, elapsed_s: float, seconds_per_round: float):
    from osbench_analysis import precision

    samples = p.samples()
    # Only batches of workers that finished: a crashed worker's partial batches are not a run.
    ok = {(r.probe, r.variant, r.placement, r.run) for r in p.runs if r.status == "ok"}
    keep = [k in ok for k in zip(samples["probe"], samples["variant"], samples["placement"], samples["run"])]
    return precision.campaign_precision(samples[keep], target, elapsed_s=elapsed_s,
                                        seconds_per_round=seconds_per_round)


def _needs_more(p: _EnvRun, cond: Condition) -> bool:
    """Another run for this condition?  Never for one without a successful run:
    more of what always fails would not help."""
    ok_variants = {r.variant for r in p.runs if r.status == "ok" and r.probe == cond.probe
                   and r.placement == cond.placement and r.params_json == cond.params_json}
    return any(p.report.needs_more(cond.probe, v, cond.placement) for v in ok_variants)


def _placement_cpus(placement: str, cpus: list[int]) -> tuple[int | None, int, set[int] | None]:
    """(worker CPU, second party's CPU, CPUs the whole environment is confined to)."""
    if placement == "same_cpu":
        return cpus[0], -1, {cpus[0]}
    if placement == "cross_cpu":
        return cpus[0], cpus[1], {cpus[0], cpus[1]}
    return None, -1, None


def _measure_one(p: _EnvRun, cond: Condition, run: int, cfg: CampaignConfig, cpus: list[int],
                 scratch: Path) -> None:
    spec, env, sess = cond.spec, p.env, p.session
    worker_cpu, child_cpu, env_cpus = _placement_cpus(cond.placement, cpus)
    if not env.pins_inside:  # affinity inside a sandbox is emulated: confine the sandbox instead
        worker_cpu, child_cpu = None, -1
    workdir_root = sess.workdir_root or cfg.workdir or default_workdir()
    private = tempfile.mkdtemp(prefix="osbench-", dir=workdir_root) if spec.uses_workdir else None
    host_fs = host.filesystem_type(private) if private else ""
    output = scratch / env.name / f"worker-{cond.probe}-{cond.placement}-{run}.jsonl"
    how = None
    try:
        req = WorkerRequest(probe=cond.probe, params=cond.params, min_batch_ns=int(cfg.min_batch_ms * 1e6),
                            warmup=cfg.warmup, batches=cfg.batches, max_iterations=spec.max_iterations,
                            worker_cpu=worker_cpu, child_cpu=child_cpu,
                            workdir=sess.inside(private) if private else None, settle_s=env.settle_s)
        how = sess.launch(launch.worker_argv(req, cfg.command_prefix), cpus=env_cpus, output=output)
        outcome = launch.run(how, cfg.worker_timeout_s(env.startup_s))
        if private and os.listdir(private) and outcome.status == "ok":
            outcome = replace(outcome, status="error", message=f"probe left files in {private}")
    finally:
        if private:
            shutil.rmtree(private, ignore_errors=True)
        for f in {output, how.output_file if how and how.output_file else output}:
            Path(f).unlink(missing_ok=True)
    if outcome.facts and not p.facts:
        p.facts = outcome.facts
    # The filesystem as the probe saw it (inside a sandbox it is not the host's).
    fs_type = (outcome.facts.get("workdir_fs_type") or host_fs) if private else ""
    variant = registry.variant_label(spec, cond.params, fs_type)
    for b in outcome.batches:
        p.rows.append({**b, "probe": cond.probe, "variant": variant, "params_json": cond.params_json,
                       "placement": cond.placement, "fs_type": fs_type, "run": run})
    p.runs.append(RunRecord(probe=cond.probe, variant=variant, params_json=cond.params_json,
                            placement=cond.placement, run=run, status=outcome.status,
                            returncode=outcome.returncode, message=outcome.message,
                            n_batches=len(outcome.batches), wall_s=round(outcome.wall_s, 4)))
