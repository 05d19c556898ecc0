"""What a campaign measures: its parameters, the profiles, and their
validation.  Everything a user can get wrong is refused here, before any
worker starts, with the value given and what is accepted."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from osbench_analysis import environments
from osbench_analysis.catalog import guests, registry, views
from osbench_analysis.environments import PLACEMENTS
from osbench_analysis.errors import ConfigError
from osbench_analysis.paths import default_workdir  # noqa: F401  (part of this module's API: __all__)

__all__ = ["CampaignConfig", "Condition", "ConfigError", "PROFILES", "make_config", "validate",
           "resolve_environments", "default_workdir"]


@dataclass
class CampaignConfig:
    probes: list[str] = field(default_factory=lambda: list(registry.DEFAULT_PROBES))
    runs: int = 5                       # worker processes per condition
    batches: int = 10                   # measured batches per worker
    warmup: int = 1                     # extra warm-up batches after calibration (kept, flagged)
    # warm-up batches after calibration in the environments timed in host ns (native, gVisor, UML, FUSE); None:
    # `warmup`.  The calibration's last batch is already one of full size (kept, flagged): the quick profile adds
    # no second one there (issue 37), the guests counting instructions keep `warmup`
    timed_warmup: int | None = None
    min_batch_ms: float = 10.0          # calibration target: one batch lasts at least this
    placements: list[str] = field(default_factory=lambda: ["same_cpu", "cross_cpu"])
    cpus: list[int] | None = None       # [first, second] CPU for pinning; None: first two allowed
    variants: dict[str, list[dict]] = field(default_factory=dict)  # probe -> list of parameter sets
    workdir: str | None = None          # where file probes make their private folder
    environment: str = "native"         # environments registry name, comma-separated names, "all", "all-guests", "all-timed"
    # What environments other than a monolithic kernel measure: None = every probe;
    # a list = those of `probes` in it (the quick profile: registry.ARCHITECTURE_PROBES,
    # because a sandbox worker pays a 1-2 s boot).  Native always measures `probes`.
    sandbox_probes: list[str] | None = None
    # Where file probes' private folder is inside a sandbox with a kernel of its own (gVisor, UML; issue #22):
    # "host-volume" (the host-backed folder: directfs/gofer, hostfs) and/or "guest-tmpfs" (a tmpfs the guest
    # kernel serves).  Both by default, so every file probe in a sandbox is measured on both and the crossing
    # to the host is separated from the guest's own VFS; native and FUSE always use their one folder.
    sandbox_fs: list[str] = field(default_factory=lambda: list(registry.WORKDIR_FS_CHOICES))
    # Boots of a guest that counts its instructions (QEMU -icount: mach, linux-tcg): its counts are
    # deterministic up to a few timer-interrupt instructions, so 3 boots show whether they repeat and
    # give the range; more cost ~10-20 s of emulation each and tell nothing new.  Capped by `runs`.
    guest_boots: int = 3
    # Wall seconds the guests' boots may take on this machine (None: no budget, every guest boots guest_boots
    # times).  Every guest's first boot always runs; a repeat boot (the check that its counts repeat) starts
    # only if, judged by the wall its first boot took here, it ends within the budget (rounds.py): the guests'
    # work is sized by the emulation speed measured in the run, and the manifest records what was left out
    # and that speed (config["guest_budget"])
    guest_budget_s: float | None = None
    # Measured batches per boot of such a guest; None: `batches`.  A count is the same boot after boot, but
    # some probes' counts settle over a boot's first batches: the median depends on how many are measured
    guest_batches: int | None = None
    # The guests' memory-system model (environments/memevents.py): "" off, "warm" (caches as the batch finds
    # them), "polluted" (emptied before each one-operation batch); one boot more, without it, checks the counts
    memory_events: str = ""
    profile: str = "custom"
    timeout_s: float | None = None      # per worker; None: derived from the batch plan
    command_prefix: list[str] = field(default_factory=list)  # wraps the worker inside its environment (e.g. nice)
    campaign_id: str | None = None      # with several environments: the id's prefix, "-<environment>" appended
    output: str | None = None           # campaigns root; None: data/campaigns of this checkout
    note: str = ""
    # Adaptive precision: with a target, `runs` is the minimum and runs are added
    # to each condition until its CI half-width <= target x estimate, max_runs,
    # or the time budget.  0: exactly `runs` runs.
    precision_target: float = 0.0       # relative CI half-width, e.g. 0.05
    max_runs: int = 10
    time_budget_s: float = 240.0        # measuring time the campaign may spend adding runs
    # Environments a selector ("all", "all-guests", ...) leaves out in this profile: measured when named, and
    # recorded as left out in every manifest (config["preflight"]).  The quick profile leaves out
    # linux-tcg-pti: its two boots were a quarter of the guests' emulation in a fresh `make all`, and what it
    # adds (page-table isolation's cost, analysis/memevents.py) is read from the full profile's memory events
    selectors_leave_out: list[str] = field(default_factory=list)
    # Host-state canaries (issue #20) in every round and environment: None = when the campaign measures
    # the default probes (a profile's campaign; a campaign of probes named by hand, e.g. a test's, skips them)
    canaries: bool | None = None

    def measures_in(self, env, probe: str) -> bool:
        """Whether this campaign measures `probe` in environment `env`: native takes
        every probe, other environments `sandbox_probes` of them (when set) that
        they serve (a file server serves only file probes)."""
        if probe in registry.CANARY_PROBES:
            # host-state canaries (issue #20): every environment timed in host ns, whatever it serves;
            # a guest counting its instructions (QEMU icount) is deterministic and host-blind
            return env.time_unit == "ns"
        if env.arch_class != "monolithic" and self.sandbox_probes is not None and probe not in self.sandbox_probes:
            return False
        return env.serves(registry.get_probe(probe))

    def measures_condition(self, env, cond: "Condition") -> bool:
        """`measures_in` for one condition: a file probe's folder on a file system this environment can give
        (env.workdir_filesystems) and this campaign asks sandboxes for (sandbox_fs)."""
        if not self.measures_in(env, cond.probe) or not env.serves_params(cond.probe, cond.params):
            return False
        fs = registry.workdir_fs(cond.params)
        if fs not in env.workdir_filesystems:
            return False
        # an environment with one folder (native, FUSE) measures it whatever sandbox_fs says
        return len(env.workdir_filesystems) == 1 or not cond.spec.uses_workdir or fs in self.sandbox_fs

    def precision(self):
        """The PrecisionTarget, or None for a fixed number of runs."""
        if not self.precision_target:
            return None
        from osbench_analysis.stats.precision import PrecisionTarget

        return PrecisionTarget(target_rel=self.precision_target, min_runs=self.runs, max_runs=self.max_runs,
                               budget_s=self.time_budget_s)

    def warmup_in(self, env) -> int:
        """The warm-up batches after calibration a worker of `env` measures (timed_warmup where it is timed in ns)."""
        return self.timed_warmup if env.time_unit == "ns" and self.timed_warmup is not None else self.warmup

    def worker_timeout_s(self, startup_s: float = 0.0) -> float:
        """Per worker: the explicit timeout, or a generous multiple of the batch plan
        plus the environment's start-up time."""
        if self.timeout_s is not None:
            return float(self.timeout_s)
        planned = (self.warmup + max(self.batches, self.guest_batches or 0) + 20) * self.min_batch_ms / 1000.0
        return 30.0 + 5.0 * planned + startup_s


def _precision_settings(profile: str) -> dict:
    """A profile's precision target, from precision.PROFILES (calibrated there)."""
    from osbench_analysis.stats.precision import PROFILES as TARGETS

    t = TARGETS[profile]
    return dict(runs=t.min_runs, precision_target=t.target_rel, max_runs=t.max_runs, time_budget_s=t.budget_s)


#: what the quick profile's selectors leave out (CampaignConfig.selectors_leave_out): the full profile measures it
QUICK_LEAVES_OUT = (guests.LINUX_PTI,)

PROFILES: dict[str, dict] = {
    # Both derive their parameter sets from the registry (views.profile_variants):
    # quick: every primitive (each probe's variants) at the first point of each
    # sweep, both placements; measuring stays under 5 minutes on 2 cores
    # 5 batches of 10 ms per run: within a run batches agree to ~1 %, run medians differ by ~15 % (CV,
    # stats/precision.py), so the interval is over runs (6 to 12): 10 batches narrowed a run median's own noise only
    # from ~0.4 % to ~0.3 %, far below the runs' spread
    # timed_warmup 0: a host worker's calibration ends with a full-size batch (flagged), which is then its one
    # warm-up; the explicit second one cost ~12 ms of every host worker (~14 s of make all's host round).  Taking
    # that batch as the first measured one instead moved 66 of 568 estimates of three rounds by over 1 %, where
    # swapping one measured batch for its later neighbour moved 77 (benchmarks/quick_batches.py --mode warmup0
    # and --mode shift, 2026-11-28); the median CI half-width stayed 3.0 %
    "quick": dict(batches=5, warmup=1, timed_warmup=0, min_batch_ms=10.0, **_precision_settings("quick"),
                  variants=views.profile_variants("quick"),
                  # in sandboxes, the architecture primitives only: all environments stay ~10 minutes
                  sandbox_probes=list(registry.ARCHITECTURE_PROBES),
                  # two boots show whether a guest's counts repeat (xen-linux's differ by up to 0.1 %: one
                  # boot gives no range); the five guests' third boots cost ~30 s of a fresh machine's `make all`
                  # and tell nothing new.  The repeat boots within guest_budget_s only (make all's guests'
                  # phase, issue 37: ~60 s on a 2-vCPU Zen 4, at most 150 s where emulation is 2.5x slower):
                  # in a fresh clone's make all on a quiet Zen 4 (runsc's build beside) the first boots took
                  # 46 s (xen-linux's) and 58 s (the five others', in turn): no repeat fitted, every guest booted
                  # once (57 s); where emulation is slower none fits either.  The full profile boots every guest
                  # guest_boots times
                  # guest_batches 5, as the host's: a guest's count repeats from boot to boot but not from batch
                  # to batch for every probe (thread_create_join, mmap_touch, fork_exit settle over the first
                  # batches): the median of the first 5 of 10 moved 7 of 80 medians by 0.1-0.74 % (none of mach's
                  # or seL4's), that of 3 13 of 80 by 0.1-1.9 % (2026-11-28, benchmarks/quick_batches.py); a round
                  # measured with 5 beside one with 10 on one host: 5 of 66 moved, by 0.15-0.96 %; while
                  # 10 cost about 40 % more emulation per boot (xen-linux's two boots are the guests' longest path)
                  guest_boots=2, guest_batches=5, guest_budget_s=45.0,
                  selectors_leave_out=list(QUICK_LEAVES_OUT)),
    # full: every sweep point too, and the unpinned placement
    # full: the guests' memory events too (one boot more per guest, the model's boots 4-6x slower)
    "full": dict(batches=30, warmup=2, min_batch_ms=20.0, **_precision_settings("full"), memory_events="warm",
                 placements=["same_cpu", "cross_cpu", "unpinned"],
                 variants=views.profile_variants("full")),
}


def make_config(profile: str = "quick", **overrides) -> CampaignConfig:
    """A profile's settings with explicit overrides (None means: keep the profile's)."""
    if profile not in PROFILES:
        raise ConfigError(f"profile must be one of {sorted(PROFILES)} (got {profile!r})")
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(given) - set(CampaignConfig.__dataclass_fields__)
    if unknown:
        raise ConfigError(f"unknown campaign parameter(s) {sorted(unknown)}; "
                          f"known: {sorted(CampaignConfig.__dataclass_fields__)}")
    settings = {**PROFILES[profile], "profile": profile, **given}
    if "variants" not in given:  # a profile's variants follow its probes, not the user's selection
        probes = settings.get("probes", registry.DEFAULT_PROBES)
        settings["variants"] = {k: v for k, v in settings["variants"].items() if k in probes}
    if "warmup" in given and "timed_warmup" not in given:
        settings["timed_warmup"] = None     # a warm-up asked for is every environment's, the host's too
    if "probes" in given and "sandbox_probes" not in given:
        settings["sandbox_probes"] = None   # probes chosen by name are measured wherever asked
    if settings.get("sandbox_probes") in ("all", ["all"]):
        settings["sandbox_probes"] = None
    return CampaignConfig(**settings)


@dataclass(frozen=True)
class Condition:
    probe: str
    params: dict
    placement: str

    @property
    def spec(self) -> registry.Probe:
        return registry.get_probe(self.probe)

    @property
    def params_json(self) -> str:
        return json.dumps(self.params, sort_keys=True)


#: the environments a selector names, among those installed here: "all" native and every available one;
#: "all-guests" the guests that count their instructions (QEMU icount: their counts do not depend on the
#: host's load, so `make all` measures them while the rest of the set-up still builds); "all-timed" native
#: and every available environment timed in host nanoseconds (what needs a quiet host)
SELECTORS = {"all": lambda e: True, "all-guests": lambda e: e.time_unit != "ns",
             "all-timed": lambda e: e.time_unit == "ns"}


def is_selector(spec: str) -> bool:
    """Whether `spec` picks environments by kind (an unavailable or failing one is left out) rather than by name
    (an unavailable or failing one stops the command)."""
    return isinstance(spec, str) and spec.strip() in SELECTORS


def resolve_environments(spec: str, leave_out=()) -> list[environments.Environment]:
    """'native', 'gvisor,uml', or a selector (SELECTORS): 'all' (native and every available environment),
    'all-guests' (every available guest counting instructions), 'all-timed' (native and every available
    environment timed in ns).  A selector never picks the kernel-version sweep's guests (Environment.in_all:
    measured when named, by make kernels), nor those named in `leave_out` (a profile's selectors_leave_out)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"environment must name an environment or one of {', '.join(map(repr, SELECTORS))} "
                          f"(got {spec!r}; known: {', '.join(environments.names())})")
    if is_selector(spec):
        kind = SELECTORS[spec.strip()]
        return [e for e in environments.REGISTRY if kind(e) and e.in_all and e.name not in leave_out
                and (e.name == "native" or e.availability())]
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if len(set(names)) != len(names):
        raise ConfigError(f"environment lists a name twice: {spec!r}")
    envs = [environments.get(n) for n in names]
    for env in envs:
        ok = env.availability()
        if not ok:
            hint = f"; to install: {ok.install_hint}" if ok.install_hint else ""
            raise ConfigError(f"environment {env.name!r} is not available here: {ok.reason}{hint}")
    return envs


#: Upper bounds (issue 31): a value beyond them is a typo or an attack, never a campaign; refused before any
#: worker starts, where an unbounded one sealed an empty campaign (every worker's timeout overflowed)
LIMITS = {"runs": 1000, "max_runs": 1000, "batches": 10_000, "guest_batches": 10_000, "warmup": 1000,
          "timed_warmup": 1000,
          "guest_boots": 100}
MAX_TIMEOUT_S = 86_400.0            # one worker: one day
MAX_TIME_BUDGET_S = 7 * 86_400.0    # adding runs: one week


def _check_int(name: str, value, minimum: int) -> None:
    top = LIMITS.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (top and value > top):
        span = f"from {minimum} to {top}" if top else f">= {minimum}"
        raise ConfigError(f"{name} must be an integer {span} (got {value!r})")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_seconds(name: str, value, top: float) -> None:
    if not _number(value) or not 0 < value <= top:   # nan, inf and 1e300 fail here
        raise ConfigError(f"{name} must be a number of seconds > 0 and <= {top:.0f} (got {value!r})")


def _check_numbers(cfg: CampaignConfig) -> None:
    _check_int("runs", cfg.runs, 1)
    _check_int("batches", cfg.batches, 1)
    if cfg.guest_batches is not None:
        _check_int("guest_batches", cfg.guest_batches, 1)
    _check_int("warmup", cfg.warmup, 0)
    if cfg.timed_warmup is not None:
        _check_int("timed_warmup", cfg.timed_warmup, 0)
    if not _number(cfg.min_batch_ms) or not 0.1 <= cfg.min_batch_ms <= 10_000:
        raise ConfigError(f"min_batch_ms must be between 0.1 and 10000 (got {cfg.min_batch_ms!r})")
    if not _number(cfg.precision_target) or not 0 <= cfg.precision_target < 1:
        raise ConfigError(f"precision_target must be in [0, 1): a relative CI half-width such as 0.05, "
                          f"or 0 for a fixed number of runs (got {cfg.precision_target!r})")
    if cfg.precision_target:
        _check_int("max_runs", cfg.max_runs, max(cfg.runs, 2))
        if cfg.runs < 2:
            raise ConfigError(f"runs must be >= 2 with a precision target: one run says nothing about "
                              f"run-to-run variation (got {cfg.runs})")
        _check_seconds("time_budget_s", cfg.time_budget_s, MAX_TIME_BUDGET_S)
    if cfg.timeout_s is not None:
        _check_seconds("timeout_s", cfg.timeout_s, MAX_TIMEOUT_S)
    if cfg.guest_budget_s is not None:
        _check_seconds("guest_budget_s", cfg.guest_budget_s, MAX_TIMEOUT_S)


def _check_types(cfg: CampaignConfig) -> None:
    """Values of the wrong kind (a notebook's string where a list is meant is refused, never iterated)."""
    if isinstance(cfg.probes, str) or not isinstance(cfg.probes, (list, tuple)) \
            or not all(isinstance(p, str) for p in cfg.probes):
        raise ConfigError(f"probes must be a list of probe names, e.g. ['null_syscall'] (got {cfg.probes!r}; "
                          f"papermill: -y \"probes: [null_syscall]\")")
    if cfg.cpus is not None and (not isinstance(cfg.cpus, (list, tuple))
                                 or not all(isinstance(c, int) and not isinstance(c, bool) for c in cfg.cpus)):
        raise ConfigError(f"cpus must be a list of CPU numbers, e.g. [0, 1] (got {cfg.cpus!r})")
    if isinstance(cfg.placements, str) or not isinstance(cfg.placements, (list, tuple)):
        raise ConfigError(f"placements must be a non-empty subset of {list(PLACEMENTS)} (got {cfg.placements!r})")
    for name in ("campaign_id", "output", "workdir"):
        value = getattr(cfg, name)
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ConfigError(f"{name} must be a string (got {value!r})")
    if not isinstance(cfg.note, str) or "\0" in cfg.note:
        raise ConfigError(f"note must be a string without NUL characters (got {cfg.note!r})")
    if cfg.canaries is not None and not isinstance(cfg.canaries, bool):
        raise ConfigError(f"canaries must be True, False or None (got {cfg.canaries!r})")


def check_served(cfg: CampaignConfig, conditions: list[Condition], envs) -> None:
    """Refuse (ConfigError), by name, what the environments asked for cannot measure: an environment left
    with nothing of the campaign's probes (it sealed an empty campaign), and a probe named by hand that no
    environment asked for serves (FUSE serves file probes only; GNU Mach's probes run in the mach guest)."""
    by_env = {e.name: {c.probe for c in conditions if c.placement in e.placements and cfg.measures_condition(e, c)
                       and c.probe not in registry.CANARY_PROBES} for e in envs}
    empty = [name for name, probes in by_env.items() if not probes]
    if empty:
        raise ConfigError(f"environment {empty[0]!r} serves none of the probes asked for "
                          f"({', '.join(p for p in cfg.probes if p not in registry.CANARY_PROBES)}): "
                          f"{environments.get(empty[0]).description or 'see osbench envs'}")
    if set(cfg.probes) != set(registry.DEFAULT_PROBES):
        served = set().union(*by_env.values())
        unserved = [p for p in cfg.probes if p not in served and p not in registry.CANARY_PROBES]
        if unserved:
            raise ConfigError(f"probe {unserved[0]!r} is not served by environment(s) "
                              f"{', '.join(by_env)}: leave it out, or measure it where it runs")


def cpus_of(cfg: CampaignConfig) -> list[int]:
    allowed = sorted(os.sched_getaffinity(0))
    cpus = list(cfg.cpus) if cfg.cpus is not None else allowed[:2]
    bad = [c for c in cpus if c not in allowed]
    if bad:
        raise ConfigError(f"cpus {bad} are not available to this process (allowed: {allowed})")
    return cpus


def _check_repeats(name: str, values) -> None:
    """One worker process is one run (issue 41): a probe or placement named twice would be measured by two
    workers sealed as one run, so it is refused."""
    twice = [v for i, v in enumerate(values) if v in list(values)[:i]]
    if twice:
        raise ConfigError(f"{name} names {twice[0]!r} twice: each condition is measured once, its runs "
                          f"separate worker processes (more runs: runs/--runs)")


def _check_repeated_sets(probe: str, given: list, resolved: list[dict]) -> None:
    """A variant set repeated (also after the defaults are filled in) is refused, like a repeated probe."""
    for i, params in enumerate(resolved):
        if params in resolved[:i]:
            j = resolved.index(params)
            raise ConfigError(f"variants[{probe!r}] asks for one parameter set twice ({given[j]!r} and "
                              f"{given[i]!r} are both {json.dumps(params, sort_keys=True)}): each condition is "
                              f"measured once, its runs separate worker processes (more runs: runs/--runs)")


def validate(cfg: CampaignConfig) -> list[Condition]:
    """Check every parameter; return the conditions to measure.  Raises ConfigError."""
    _check_types(cfg)
    if not cfg.probes:
        raise ConfigError("probes must name at least one probe")
    _check_repeats("probes", cfg.probes)
    if cfg.memory_events not in ("", "warm", "polluted"):
        raise ConfigError(f"memory_events must be '', 'warm' or 'polluted' (got {cfg.memory_events!r})")
    if isinstance(cfg.guest_boots, bool) or not isinstance(cfg.guest_boots, int) or not 2 <= cfg.guest_boots <= 100:
        raise ConfigError(f"guest_boots must be a whole number from 2 to 100: two boots show whether a guest's "
                          f"counts repeat (got {cfg.guest_boots!r})")
    try:
        specs = [registry.get_probe(p) for p in cfg.probes]
    except registry.ProbeError as e:
        raise ConfigError(str(e)) from None
    if cfg.sandbox_probes is not None:
        if isinstance(cfg.sandbox_probes, str) or not all(isinstance(p, str) for p in cfg.sandbox_probes):
            raise ConfigError(f"sandbox_probes must be a list of probe names or 'all' (got {cfg.sandbox_probes!r})")
        try:
            [registry.get_probe(p) for p in cfg.sandbox_probes]
        except registry.ProbeError as e:
            raise ConfigError(f"sandbox_probes: {e}") from None
    _check_numbers(cfg)
    if not cfg.placements or any(p not in PLACEMENTS for p in cfg.placements):
        raise ConfigError(f"placements must be a non-empty subset of {list(PLACEMENTS)} (got {cfg.placements!r})")
    _check_repeats("placements", cfg.placements)
    if not isinstance(cfg.command_prefix, (list, tuple)) or not all(isinstance(a, str) for a in cfg.command_prefix):
        raise ConfigError(f"command_prefix must be a list of strings (got {cfg.command_prefix!r})")
    cpus = cpus_of(cfg)
    if "cross_cpu" in cfg.placements and len(set(cpus)) < 2:
        raise ConfigError(f"cross_cpu placement needs two distinct CPUs (have {cpus})")
    if not isinstance(cfg.variants, dict):
        raise ConfigError(f"variants must map a probe name to a list of parameter sets (got {cfg.variants!r})")
    for name, sets in cfg.variants.items():
        if name not in cfg.probes:
            raise ConfigError(f"variants given for {name!r}, which is not among the probes {cfg.probes}")
        if not isinstance(sets, list) or not all(isinstance(v, dict) for v in sets):
            raise ConfigError(f"variants[{name!r}] must be a list of parameter dicts (got {sets!r})")
    if (isinstance(cfg.sandbox_fs, str) or not isinstance(cfg.sandbox_fs, (list, tuple)) or not cfg.sandbox_fs
            or any(fs not in registry.WORKDIR_FS_CHOICES for fs in cfg.sandbox_fs)):
        raise ConfigError(f"sandbox_fs must be a non-empty list of {list(registry.WORKDIR_FS_CHOICES)} "
                          f"(got {cfg.sandbox_fs!r})")
    if any(s.uses_workdir for s in specs):
        wd = cfg.workdir or default_workdir()
        if not os.path.isdir(wd) or not os.access(wd, os.W_OK | os.X_OK):
            raise ConfigError(f"workdir {wd!r} must be an existing, writable folder")
    # host-state canaries (issue #20): measured in every round, whatever else the campaign measures
    if cfg.canaries or (cfg.canaries is None and set(registry.DEFAULT_PROBES) <= set(cfg.probes)):
        specs += [registry.get_probe(p) for p in registry.CANARY_PROBES if p not in cfg.probes]
    conditions = []
    for spec in specs:
        given = cfg.variants.get(spec.name, [{}])
        try:
            param_sets = [registry.resolve_params(spec, v) for v in given]
        except registry.ProbeError as e:
            raise ConfigError(str(e)) from None
        _check_repeated_sets(spec.name, given, param_sets)
        if spec.uses_workdir and registry.FS_GUEST_TMPFS in cfg.sandbox_fs:  # the sandboxes' own-kernel control
            param_sets += [q for q in ({**p, registry.WORKDIR_FS: registry.FS_GUEST_TMPFS} for p in param_sets
                                       if registry.WORKDIR_FS not in p) if q not in param_sets]
        for params in param_sets:
            for placement in cfg.placements:
                if placement == "cross_cpu" and not spec.two_party:
                    continue  # one-process probes have no second party to put elsewhere
                conditions.append(Condition(spec.name, params, placement))
    if not conditions:
        raise ConfigError("no condition to measure: cross_cpu applies only to two-party probes "
                          f"({[n for n, p in registry.PROBES.items() if p.two_party and not p.hidden]})")
    if isinstance(cfg.selectors_leave_out, str) or not isinstance(cfg.selectors_leave_out, (list, tuple)) \
            or not all(isinstance(n, str) for n in cfg.selectors_leave_out):
        raise ConfigError(f"selectors_leave_out must be a list of environment names (got {cfg.selectors_leave_out!r})")
    envs = resolve_environments(cfg.environment, cfg.selectors_leave_out)
    if not envs:
        raise ConfigError(f"environment {cfg.environment.strip()!r}: no such environment is available here "
                          "(`osbench envs` says why; `make envs` installs them)")
    check_served(cfg, conditions, envs)
    return conditions
