"""Bad input gets a clear error before anything is measured."""
import pytest

from osbench_analysis import launch, runner, store


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
