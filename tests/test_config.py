"""Bad input gets a clear error before anything is measured."""
import pytest

from osbench_analysis.measure import config
from osbench_analysis.worker import launch
from osbench_analysis.catalog import registry
from osbench_analysis.measure import runner
from osbench_analysis.store import campaigns as store


@pytest.fixture(autouse=True)
def no_measuring(monkeypatch):
    def refuse(*a, **kw):
        raise AssertionError("a worker was started despite invalid input")
    monkeypatch.setattr(launch, "run", refuse)


@pytest.mark.parametrize("overrides,message", [
    (dict(probes=["forkexit"]), "probe 'forkexit' unknown; did you mean 'fork_exit'"),
    (dict(probes=[]), "at least one probe"),
    (dict(runs=0), r"runs must be an integer from 1 to 1000 \(got 0\)"),
    (dict(batches=-3), r"batches must be an integer from 1 to 10000 \(got -3\)"),
    (dict(runs=2.5), r"runs must be an integer from 1 to 1000 \(got 2.5\)"),
    (dict(warmup=-1), "warmup must be an integer from 0 to 1000"),
    (dict(min_batch_ms=0.0), "min_batch_ms must be between 0.1 and 10000"),
    (dict(min_batch_ms=3.6e6), "min_batch_ms must be between 0.1 and 10000"),
    (dict(placements=["sideways"]), "placements must be a non-empty subset"),
    (dict(command_prefix="nice"), "command_prefix must be a list of strings"),
    (dict(variants={"fork_exec": {"linkage": "static"}}, probes=["fork_exec"]), "must be a list of parameter dicts"),
    (dict(environment="my env"), "environment 'my env' unknown"),
    (dict(environment="natve"), "did you mean 'native'"),
    (dict(cpus=[0, 999]), r"cpus \[999\] are not available"),
    (dict(variants={"fork_exec": [{"linkage": "weird"}]}), r"fork_exec.linkage must be one of \['dynamic', 'static'\]"),
    (dict(variants={"fork_exec": [{"colour": 1}]}), "has no parameter 'colour'"),
    (dict(probes=["null_syscall"], variants={"fork_exec": [{}]}), "not among the probes"),
    (dict(probes=["null_syscall"], placements=["cross_cpu"]), "no condition to measure"),
    (dict(timeout_s=0), "timeout_s must be a number of seconds > 0"),
    # issue 31 (reliability review 2026-11-26): values that sealed empty or nonsense campaigns, exit 0
    (dict(batches=10 ** 9), r"batches must be an integer from 1 to 10000 \(got 1000000000\)"),          # B12
    (dict(guest_batches=0), r"guest_batches must be an integer from 1 to 10000 \(got 0\)"),
    (dict(guest_budget_s=0), r"guest_budget_s must be a number of seconds > 0 and <= 86400 \(got 0\)"),
    (dict(guest_budget_s=float("nan")), r"guest_budget_s must be a number of seconds .* \(got nan\)"),
    (dict(warmup=10 ** 9), r"warmup must be an integer from 0 to 1000 \(got 1000000000\)"),             # B14
    (dict(timed_warmup=-1), r"timed_warmup must be an integer from 0 to 1000 \(got -1\)"),
    (dict(timeout_s=float("inf")), r"timeout_s must be a number of seconds > 0 and <= 86400 \(got inf\)"),  # B20
    (dict(timeout_s=1e300), r"timeout_s .* \(got 1e\+300\)"),                                           # B21
    (dict(runs=10 ** 9), r"runs must be an integer from 1 to 1000 \(got 1000000000\)"),                 # B8
    (dict(runs=10 ** 9, precision_target=0), r"runs must be an integer from 1 to 1000"),                # B9
    (dict(precision_target=0.1, time_budget_s=float("inf")), r"time_budget_s .* \(got inf\)"),
    (dict(probes=["memcpy_bw"], variants={"memcpy_bw": [{"bytes": -1}]}),                               # B60
     r"memcpy_bw.bytes must be an integer from 1 to 1073741824 \(got -1\)"),
    (dict(probes=["memcpy_bw"], variants={"memcpy_bw": [{"bytes": "lots"}]}), r"\(got 'lots'\)"),       # B61
    (dict(probes=["select_fds"], variants={"select_fds": [{"fds": 1e30}]}),                             # B62
     r"select_fds.fds must be an integer from 1 to 1000 \(got 1e\+30\)"),
    (dict(probes=["fork_exit"], variants={"fork_exit": [{"parent_mb": 100000}]}), r"parent_mb .* 4096"),  # I27
    (dict(probes=["files_in_folder"], variants={"files_in_folder": [{"files": 10 ** 9}]}), r"files .* 100000"),
    (dict(environment="native", probes=["mach_null_trap"]),                                             # B64
     "environment 'native' serves none of the probes asked for"),
    (dict(probes="null_syscall"), r"probes must be a list of probe names.*got 'null_syscall'"),         # B98
    (dict(cpus="0,1"), "cpus must be a list of CPU numbers"),
    (dict(note="a\0b"), "note must be a string without NUL"),
])
@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_bad_parameters_are_refused(overrides, message, campaigns_root):
    cfg = runner.make_config("quick", output=str(campaigns_root), **overrides)
    with pytest.raises(runner.ConfigError, match=message):
        runner.run_campaign(cfg, progress=False)


def test_unknown_profile_and_parameter():
    with pytest.raises(runner.ConfigError, match=r"profile must be one of \['full', 'quick'\]"):
        runner.make_config("fast")
    with pytest.raises(runner.ConfigError, match="unknown campaign parameter"):
        runner.make_config("quick", rnus=3)


def test_missing_workdir(campaigns_root, tmp_path):
    cfg = runner.make_config("quick", output=str(campaigns_root), workdir=str(tmp_path / "nope"))
    with pytest.raises(runner.ConfigError, match="must be an existing, writable folder"):
        runner.run_campaign(cfg, progress=False)


def test_unwritable_output(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cfg = runner.make_config("quick", output=str(blocker / "campaigns"))
    with pytest.raises(store.StoreError, match="cannot create output folder"):
        runner.run_campaign(cfg, progress=False)


@pytest.mark.parametrize("bad_id", ["../escape", "", "has space", ".hidden"])
def test_bad_campaign_id(bad_id, campaigns_root):
    cfg = runner.make_config("quick", output=str(campaigns_root), campaign_id=bad_id)
    with pytest.raises(store.StoreError, match="campaign id must be"):
        runner.run_campaign(cfg, progress=False)


def test_quick_sizes_its_batches_to_what_runs_and_repeating_counts_need_and_full_keeps_its_own():
    """Issue 37: the quick profile's interval is over its 6-12 runs, so 5 batches of 10 ms a run; a guest keeps 10 a
    boot (some counts settle over a boot's first batches: the median depends on how many); the full profile's 30
    batches everywhere are unchanged."""
    quick, full = config.make_config("quick"), config.make_config("full")
    assert (quick.batches, quick.guest_batches, quick.min_batch_ms, quick.runs) == (5, 5, 10.0, 6)
    assert (full.batches, full.guest_batches) == (30, None)
    assert config.make_config("quick", guest_batches=3).guest_batches == 3
    # a worker's timeout covers the longer of the two plans
    assert config.make_config("quick", guest_batches=100).worker_timeout_s() > quick.worker_timeout_s()


def test_quick_warms_a_host_worker_up_with_its_calibration_only_and_a_guest_as_before():
    """Issue 37: a quick host worker's calibration ends with a full-size (flagged) batch, its one warm-up; the
    guests counting instructions keep one more; the full profile and an explicit timed_warmup are as asked."""
    from osbench_analysis import environments

    native, gvisor = environments.get("native"), environments.get("gvisor")
    guest = environments.get("linux-tcg")
    quick, full = config.make_config("quick"), config.make_config("full")
    assert (quick.warmup_in(native), quick.warmup_in(gvisor), quick.warmup_in(guest)) == (0, 0, 1)
    assert (full.warmup_in(native), full.warmup_in(guest)) == (2, 2)
    assert config.make_config("quick", timed_warmup=3).warmup_in(native) == 3
    assert config.make_config("full", timed_warmup=0).warmup_in(native) == 0
    # a warmup given alone is every environment's (the profile's timed_warmup does not override it)
    assert config.make_config("quick", warmup=2).warmup_in(native) == 2


def test_quick_measures_every_probe_natively_and_the_architecture_primitives_in_sandboxes():
    from osbench_analysis import environments

    cfg = config.make_config("quick")
    native, gvisor, fuse = (environments.get(n) for n in ("native", "gvisor", "fuse"))
    assert set(cfg.sandbox_probes) == set(registry.ARCHITECTURE_PROBES) < set(cfg.probes)
    # every probe natively but those that exist only inside a guest kernel (GNU Mach's task)
    host_probes = {p for p in cfg.probes if not registry.get_probe(p).guest}
    assert {p for p in cfg.probes if cfg.measures_in(native, p)} == host_probes
    assert {p for p in cfg.probes if cfg.measures_in(gvisor, p)} == set(registry.ARCHITECTURE_PROBES) & host_probes
    # a file server: the architecture primitives on its path only
    assert {p for p in cfg.probes if cfg.measures_in(fuse, p)} == {
        p for p in registry.ARCHITECTURE_PROBES if registry.get_probe(p).uses_workdir}
    # full, probes chosen by name, or 'all': every probe everywhere it is served
    assert config.make_config("full").sandbox_probes is None
    assert config.make_config("quick", probes=["tcp_pingpong"]).sandbox_probes is None
    assert config.make_config("quick", sandbox_probes="all").sandbox_probes is None
    cfg = config.make_config("quick", probes=["null_syscall", "stat"], sandbox_probes=["stat"])
    assert [p for p in cfg.probes if cfg.measures_in(gvisor, p)] == ["stat"]


def test_unknown_sandbox_probes_are_refused_with_a_hint():
    with pytest.raises(config.ConfigError, match="sandbox_probes: probe 'nul_syscall' unknown; did you mean"):
        config.validate(config.make_config("quick", sandbox_probes=["nul_syscall"]))
    with pytest.raises(config.ConfigError, match="list of probe names or 'all'"):
        config.validate(config.make_config("quick", sandbox_probes="stat"))


def test_every_probe_parameter_declares_its_type_and_range():
    """Issue 31: no parameter accepts anything; defaults, primitive variants and sweep points lie inside."""
    for probe in registry.PROBES.values():
        for param in probe.params:
            assert param.choices or param.hi is not None, f"{probe.name}.{param.name} has no declared range"
            param.check(probe.name, param.default)
        points = [{probe.sweep[0]: x} for x in probe.sweep[1]] if probe.sweep else []
        for params in [*probe.variants, *points]:
            registry.resolve_params(probe, params)


def test_a_probe_the_environment_does_not_serve_is_refused_by_name(campaigns_root):
    from osbench_analysis import environments

    if not environments.get("fuse").availability():
        pytest.skip("FUSE not available here")
    with pytest.raises(config.ConfigError, match="environment 'fuse' serves none of the probes asked for"):  # B63
        config.validate(config.make_config("quick", environment="fuse", probes=["null_syscall"]))
    with pytest.raises(config.ConfigError, match="probe 'null_syscall' is not served by environment"):
        config.validate(config.make_config("quick", environment="fuse", probes=["null_syscall", "stat"]))
    config.validate(config.make_config("quick", environment="native,fuse", probes=["null_syscall", "stat"]))


@pytest.mark.parametrize("params,message", [
    (dict(wait="maybe"), r"wait must be True or False \(got 'maybe'\)"),      # B112
    (dict(resume=["x"]), r"resume must be a campaign id"),
])
def test_front_end_switches_of_the_wrong_type_are_refused(params, message, campaigns_root):
    with pytest.raises(config.ConfigError, match=message):
        runner.measure("quick", progress=False, probes=["null_syscall"], output=str(campaigns_root), **params)


def test_quick_budgets_the_guests_repeat_boots_and_full_boots_every_guest_every_time():
    """Issue 37: make all's guests' phase is sized by the emulation speed measured in the run (rounds.py): the
    quick profile's repeat boots fit in 45 s of this machine's wall; the full profile has no budget."""
    quick, full = config.make_config("quick"), config.make_config("full")
    assert (quick.guest_boots, quick.guest_budget_s) == (2, 45.0)
    assert full.guest_budget_s is None
    assert config.make_config("quick", guest_budget_s=300).guest_budget_s == 300
