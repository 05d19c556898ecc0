"""The runner: decides what to run (pyperf's runner role) and drives workers.

For every condition (probe × variant × placement) it starts `runs` separate
worker processes, interleaved round-robin so slow drift of the machine spreads
over all conditions instead of landing on one.  Every batch comes back as a
raw sample; a worker that crashes, fails or hangs is recorded and the campaign
goes on.  Nothing is written until the end, and then atomically (store.py).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pandas as pd

from osbench_analysis import host, registry, store
from osbench_analysis.schema import ARCH_CLASSES, PLACEMENTS, SAMPLE_COLUMNS
from osbench_analysis.worker import WorkerRequest


class ConfigError(ValueError):
    """A campaign parameter that cannot work; raised before anything is measured."""


def _default_workdir() -> str:
    # tmpfs: ext4 create/delete here swings 7-45x between runs an hour apart.
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


@dataclass
class CampaignConfig:
    probes: list[str] = field(default_factory=lambda: list(registry.DEFAULT_PROBES))
    runs: int = 5                       # worker processes per condition
    batches: int = 10                   # measured batches per worker
    warmup: int = 1                     # extra warm-up batches after calibration (kept, flagged)
    min_batch_ms: float = 10.0          # calibration target: one batch lasts at least this
    placements: list[str] = field(default_factory=lambda: ["same_cpu", "cross_cpu"])
    cpus: list[int] | None = None       # [first, second] CPU for pinning; None: first two allowed
    variants: dict[str, list[dict]] = field(default_factory=dict)  # probe -> list of parameter sets
    workdir: str | None = None          # where file probes make their private folder
    environment: str = "native"         # label of where this runs: native, gvisor, uml, fuse, ...
    arch_class: str = "monolithic"      # monolithic | microkernel | hybrid | user-space-kernel
    profile: str = "custom"
    timeout_s: float | None = None      # per worker; None: derived from the batch plan
    command_prefix: list[str] = field(default_factory=list)  # e.g. a sandbox runner wrapping the worker
    campaign_id: str | None = None
    output: str | None = None           # campaigns root; None: data/campaigns of this checkout
    note: str = ""
    # Adaptive precision: with a target, `runs` is the minimum and runs are added
    # to each condition until its CI half-width <= target x estimate, max_runs,
    # or the time budget.  0: exactly `runs` runs.
    precision_target: float = 0.0       # relative CI half-width, e.g. 0.05
    max_runs: int = 10
    time_budget_s: float = 240.0        # measuring time the campaign may spend adding runs

    def precision(self):
        """The PrecisionTarget, or None for a fixed number of runs."""
        if not self.precision_target:
            return None
        from osbench_analysis.precision import PrecisionTarget

        return PrecisionTarget(target_rel=self.precision_target, min_runs=self.runs, max_runs=self.max_runs,
                               budget_s=self.time_budget_s)

    def worker_timeout_s(self) -> float:
        if self.timeout_s is not None:
            return float(self.timeout_s)
        planned = (self.warmup + self.batches + 20) * self.min_batch_ms / 1000.0
        return 30.0 + 5.0 * planned


def _precision_settings(profile: str) -> dict:
    """A profile's precision target, from precision.PROFILES (calibrated there)."""
    from osbench_analysis.precision import PROFILES as TARGETS

    t = TARGETS[profile]
    return dict(runs=t.min_runs, precision_target=t.target_rel, max_runs=t.max_runs, time_budget_s=t.budget_s)


PROFILES: dict[str, dict] = {
    # quick: every probe, both placements, in well under 5 minutes on 2 cores
    # quick: every probe, both placements; measuring stays well under 5 minutes on 2 cores
    "quick": dict(batches=10, warmup=1, min_batch_ms=10.0, **_precision_settings("quick"),
                  variants={"fork_exec": [{"linkage": "dynamic"}, {"linkage": "static"}]}),
    "full": dict(batches=30, warmup=2, min_batch_ms=20.0, **_precision_settings("full"),
                 placements=["same_cpu", "cross_cpu", "unpinned"],
                 variants={"fork_exec": [{"linkage": "dynamic"}, {"linkage": "static"}]}),
}


def make_config(profile: str = "quick", **overrides) -> CampaignConfig:
    """A profile's settings with explicit overrides (None means: keep the profile's)."""
    if profile not in PROFILES:
        raise ConfigError(f"profile must be one of {sorted(PROFILES)} (got {profile!r})")
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(given) - set(CampaignConfig.__dataclass_fields__)
    if unknown:
        raise ConfigError(f"unknown campaign parameter(s) {sorted(unknown)}")
    settings = {**PROFILES[profile], "profile": profile, **given}
    if "variants" not in given:  # a profile's variants follow its probes, not the user's selection
        settings["variants"] = {k: v for k, v in settings["variants"].items() if k in settings.get("probes", registry.DEFAULT_PROBES)}
    return CampaignConfig(**settings)


def measure(profile: str = "quick", progress: bool = True, **parameters) -> store.Campaign:
    """The one entry point behind both the CLI (`osbench run`) and
    notebooks/run_campaign.ipynb: a parameter left as None takes the profile's value."""
    return run_campaign(make_config(profile, **parameters), progress=progress)


@dataclass(frozen=True)
class Condition:
    probe: str
    params: dict
    placement: str

    @property
    def spec(self) -> registry.Probe:
        return registry.get_probe(self.probe)


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum} (got {value!r})")


def validate(cfg: CampaignConfig) -> list[Condition]:
    """Check every parameter; return the conditions to measure.  Raises ConfigError."""
    if not cfg.probes:
        raise ConfigError("probes must name at least one probe")
    try:
        specs = [registry.get_probe(p) for p in cfg.probes]
    except registry.ProbeError as e:
        raise ConfigError(str(e)) from None
    _check_int("runs", cfg.runs, 1)
    _check_int("batches", cfg.batches, 1)
    _check_int("warmup", cfg.warmup, 0)
    if not isinstance(cfg.min_batch_ms, (int, float)) or not 0.1 <= cfg.min_batch_ms <= 10_000:
        raise ConfigError(f"min_batch_ms must be between 0.1 and 10000 (got {cfg.min_batch_ms!r})")
    if not isinstance(cfg.precision_target, (int, float)) or not 0 <= cfg.precision_target < 1:
        raise ConfigError(f"precision_target must be in [0, 1): a relative CI half-width such as 0.05, "
                          f"or 0 for a fixed number of runs (got {cfg.precision_target!r})")
    if cfg.precision_target:
        _check_int("max_runs", cfg.max_runs, max(cfg.runs, 2))
        if cfg.runs < 2:
            raise ConfigError(f"runs must be >= 2 with a precision target: one run says nothing about "
                              f"run-to-run variation (got {cfg.runs})")
        if not isinstance(cfg.time_budget_s, (int, float)) or not cfg.time_budget_s > 0:
            raise ConfigError(f"time_budget_s must be > 0 (got {cfg.time_budget_s!r})")
    if cfg.timeout_s is not None and not cfg.timeout_s > 0:
        raise ConfigError(f"timeout_s must be > 0 (got {cfg.timeout_s!r})")
    if not cfg.placements or any(p not in PLACEMENTS for p in cfg.placements):
        raise ConfigError(f"placements must be a non-empty subset of {list(PLACEMENTS)} (got {cfg.placements!r})")
    if cfg.arch_class not in ARCH_CLASSES:
        raise ConfigError(f"arch_class must be one of {list(ARCH_CLASSES)} (got {cfg.arch_class!r})")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", cfg.environment or ""):
        raise ConfigError(f"environment must be a short label of letters, digits, '.', '_', '-' (got {cfg.environment!r})")
    allowed = sorted(os.sched_getaffinity(0))
    cpus = cfg.cpus if cfg.cpus is not None else allowed[:2]
    bad = [c for c in cpus if c not in allowed]
    if bad:
        raise ConfigError(f"cpus {bad} are not available to this process (allowed: {allowed})")
    if "cross_cpu" in cfg.placements and len(set(cpus)) < 2:
        raise ConfigError(f"cross_cpu placement needs two distinct CPUs (have {cpus})")
    for name in cfg.variants:
        if name not in cfg.probes:
            raise ConfigError(f"variants given for {name!r}, which is not among the probes {cfg.probes}")
    if any(s.uses_workdir for s in specs):
        wd = cfg.workdir or _default_workdir()
        if not os.path.isdir(wd) or not os.access(wd, os.W_OK | os.X_OK):
            raise ConfigError(f"workdir {wd!r} must be an existing, writable folder")
    conditions = []
    for spec in specs:
        try:
            param_sets = [registry.resolve_params(spec, v) for v in cfg.variants.get(spec.name, [{}])]
        except registry.ProbeError as e:
            raise ConfigError(str(e)) from None
        for params in param_sets:
            for placement in cfg.placements:
                if placement == "cross_cpu" and not spec.two_party:
                    continue  # one-process probes have no second party to put elsewhere
                conditions.append(Condition(spec.name, params, placement))
    if not conditions:
        raise ConfigError("no condition to measure: cross_cpu applies only to two-party probes "
                          f"({[n for n, p in registry.PROBES.items() if p.two_party and not p.hidden]})")
    return conditions


@dataclass
class WorkerOutcome:
    status: str          # ok | crashed | timeout | error
    returncode: int | None
    message: str
    batches: list[dict]
    wall_s: float


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def run_worker(req: WorkerRequest, timeout_s: float, command_prefix: list[str] = ()) -> WorkerOutcome:
    """Run one worker process to completion or timeout; never raises for the worker's faults."""
    argv = [*command_prefix, sys.executable, "-m", "osbench_analysis.worker", "--request", req.to_json()]
    t0 = time.monotonic()
    # Own session: a timeout kills the whole group (forked probe children too),
    # and Ctrl-C in the notebook reaches the runner, which then cleans up.
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    wall = time.monotonic() - t0
    batches, message = [], ""
    for line in out.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue  # a wrapper's chatter on stdout is not ours
        if obj.get("kind") == "batch":
            batches.append(obj)
        elif obj.get("kind") == "error":
            message = obj.get("message", "")
    tail = " | ".join(err.strip().splitlines()[-3:])
    rc = proc.returncode
    if timed_out:
        status, message = "timeout", f"killed after {timeout_s:.0f} s without finishing"
    elif rc == 0:
        status = "ok"
    elif rc < 0:
        status, message = "crashed", f"worker killed by {_signal_name(rc)}" + (f": {tail}" if tail else "")
    else:
        status, message = "error", message or f"worker exited with status {rc}" + (f": {tail}" if tail else "")
    return WorkerOutcome(status, None if timed_out else rc, message, batches, wall)


def _placement_cpus(placement: str, cpus: list[int]) -> tuple[int | None, int]:
    if placement == "same_cpu":
        return cpus[0], -1
    if placement == "cross_cpu":
        return cpus[0], cpus[1]
    return None, -1


def run_campaign(cfg: CampaignConfig, progress: bool = True) -> store.Campaign:
    """Validate, measure, seal and return the campaign (loaded back from disk)."""
    conditions = validate(cfg)
    root = Path(cfg.output) if cfg.output else store.default_root()
    campaign_id = store.new_campaign_id(cfg.environment) if cfg.campaign_id is None else cfg.campaign_id
    store.check_can_create(root, campaign_id)
    cpus = cfg.cpus if cfg.cpus is not None else sorted(os.sched_getaffinity(0))[:2]
    workdir_root = cfg.workdir or _default_workdir()
    host_info = host.collect_host_info()
    if host_info.probes.get("stale"):
        print("warning: probes/ changed since the extension was built; rebuild with `pip install -e .`",
              file=sys.stderr)

    created = dt.datetime.now(dt.timezone.utc)
    target = cfg.precision()
    rows, runs_log = [], []
    t0 = time.monotonic()
    from tqdm import tqdm

    max_runs = target.max_runs if target else cfg.runs
    bar = tqdm(total=max_runs * len(conditions), desc="measuring", unit="worker", disable=not progress,
               file=sys.stderr, dynamic_ncols=True)
    open_conditions, run, report = list(conditions), 0, None
    try:
        while open_conditions:
            for cond in open_conditions:
                bar.set_postfix_str(f"{cond.probe} {cond.placement} run {run + 1}")
                rows_, log = _measure(cond, run, cfg, cpus, workdir_root)
                rows.extend(rows_)
                runs_log.append(log)
                bar.update(1)
            run += 1
            if target is None or run < cfg.runs:
                open_conditions = open_conditions if run < cfg.runs else []
                continue
            elapsed = time.monotonic() - t0
            report = _precision_report(rows, runs_log, target, elapsed, elapsed / run)
            open_conditions = [] if report.stop else [c for c in conditions if _needs_more(report, c, runs_log)]
            bar.total = bar.n + len(open_conditions) * (target.max_runs - run)
            bar.refresh()
    finally:
        bar.close()
    measuring_s = time.monotonic() - t0

    samples = pd.DataFrame(rows, columns=list(SAMPLE_COLUMNS))
    samples["campaign_id"] = campaign_id
    samples["environment"] = cfg.environment
    samples["arch_class"] = cfg.arch_class
    samples = samples.astype(SAMPLE_COLUMNS)
    manifest = {
        "created_utc": created.isoformat(timespec="seconds"),
        "finished_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "environment": cfg.environment,
        "arch_class": cfg.arch_class,
        "config": {**asdict(cfg), "cpus": cpus, "workdir": workdir_root, "campaign_id": campaign_id},
        "conditions": [asdict(c) for c in conditions],
        "measuring_seconds": round(measuring_s, 3),
        "precision": report.to_manifest() if report is not None else
        {"target": None, "stop_reason": "fixed_runs", "runs": cfg.runs},
        "host": host_info.as_dict(),
        "runs": runs_log,
    }
    path = store.write_campaign(root, campaign_id, samples, manifest)
    return store.load_campaign(path)


def _precision_report(rows: list[dict], runs_log: list[dict], target, elapsed_s: float, seconds_per_round: float):
    from osbench_analysis import precision

    samples = pd.DataFrame(rows, columns=list(SAMPLE_COLUMNS))
    # Only batches of workers that finished: a crashed worker's partial batches are not a run.
    ok = {(r["probe"], r["variant"], r["placement"], r["run"]) for r in runs_log if r["status"] == "ok"}
    keep = [k in ok for k in zip(samples["probe"], samples["variant"], samples["placement"], samples["run"])]
    return precision.campaign_precision(samples[keep], target, elapsed_s=elapsed_s,
                                        seconds_per_round=seconds_per_round)


def _needs_more(report, cond: Condition, runs_log: list[dict]) -> bool:
    """Another run for this condition?  Never for one without a successful run:
    more of what always fails would not help."""
    params_json = json.dumps(cond.params, sort_keys=True)
    ok_variants = {r["variant"] for r in runs_log if r["status"] == "ok" and r["probe"] == cond.probe
                   and r["placement"] == cond.placement and r["params_json"] == params_json}
    return any(report.needs_more(cond.probe, v, cond.placement) for v in ok_variants)


def _measure(cond: Condition, run: int, cfg: CampaignConfig, cpus: list[int], workdir_root: str):
    spec = cond.spec
    worker_cpu, child_cpu = _placement_cpus(cond.placement, cpus)
    private = tempfile.mkdtemp(prefix="osbench-", dir=workdir_root) if spec.uses_workdir else None
    fs_type = host.filesystem_type(private) if private else ""
    try:
        req = WorkerRequest(probe=cond.probe, params=cond.params, min_batch_ns=int(cfg.min_batch_ms * 1e6),
                            warmup=cfg.warmup, batches=cfg.batches, max_iterations=spec.max_iterations,
                            worker_cpu=worker_cpu, child_cpu=child_cpu, workdir=private)
        outcome = run_worker(req, cfg.worker_timeout_s(), cfg.command_prefix)
        if private and os.listdir(private) and outcome.status == "ok":
            outcome = replace(outcome, status="error", message=f"probe left files in {private}")
    finally:
        if private:
            shutil.rmtree(private, ignore_errors=True)
    variant = registry.variant_label(spec, cond.params, fs_type)
    params_json = json.dumps(cond.params, sort_keys=True)
    rows = []
    for b in outcome.batches:
        rows.append({
            "probe": cond.probe, "variant": variant, "params_json": params_json, "placement": cond.placement,
            "fs_type": fs_type, "run": run, "batch": b["batch"], "warmup": b["warmup"],
            "iterations": b["iterations"], "elapsed_ns": b["elapsed_ns"], "work_done": b["work_done"],
            "per_op_ns": b["elapsed_ns"] / b["iterations"], "cpu_start": b["cpu_start"], "cpu_end": b["cpu_end"],
            "nvcsw": b["nvcsw"], "nivcsw": b["nivcsw"], "minflt": b["minflt"], "loadavg_1m": b["loadavg_1m"],
            "worker_pid": b["worker_pid"], "started_unix_ns": b["started_unix_ns"],
        })
    log = {"probe": cond.probe, "variant": variant, "params_json": params_json, "placement": cond.placement, "run": run,
           "status": outcome.status, "returncode": outcome.returncode, "message": outcome.message,
           "n_batches": len(outcome.batches), "wall_s": round(outcome.wall_s, 4)}
    return rows, log
