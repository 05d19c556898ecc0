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
    (dict(runs=0), r"runs must be an integer >= 1 \(got 0\)"),
    (dict(batches=-3), r"batches must be an integer >= 1 \(got -3\)"),
    (dict(runs=2.5), r"runs must be an integer >= 1 \(got 2.5\)"),
    (dict(warmup=-1), "warmup must be an integer >= 0"),
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
    (dict(timeout_s=0), "timeout_s must be > 0"),
])
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
