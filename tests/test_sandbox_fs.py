"""Issue #22: a sandbox's file probes on the guest kernel's own tmpfs and on the
host volume -- the condition key (registry.WORKDIR_FS), the campaign choice
(sandbox_fs), which environment measures which, and the worker that makes and
checks a folder only the guest sees.  The real sandboxes: test_environments_real.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from osbench_analysis import environments
from osbench_analysis.measure import config
from osbench_analysis.hosts import facts
from osbench_analysis.catalog import registry
from osbench_analysis.errors import ConfigError
from osbench_analysis.worker.main import ProbeFailed, WorkerRequest, run_request

GUEST = {registry.WORKDIR_FS: registry.FS_GUEST_TMPFS}


def test_workdir_fs_is_a_file_probes_condition_key_not_a_parameter():
    open_close, null = registry.get_probe("open_close"), registry.get_probe("null_syscall")
    assert registry.resolve_params(open_close, GUEST) == {**open_close.defaults(), **GUEST}
    # the host volume is the key's absence: older campaigns' params_json stay comparable
    assert registry.resolve_params(open_close, {registry.WORKDIR_FS: registry.FS_HOST_VOLUME}) == open_close.defaults()
    with pytest.raises(registry.ProbeError, match="only file probes"):
        registry.resolve_params(null, GUEST)
    with pytest.raises(registry.ProbeError, match=r"must be one of \['host-volume', 'guest-tmpfs'\]"):
        registry.resolve_params(open_close, {registry.WORKDIR_FS: "ext4"})
    # the variant names both where the folder is and the file system the worker saw; stripping fs= (how the
    # analysis compares environments) keeps the guest tmpfs apart from the host volume
    from osbench_analysis.analysis import pipeline as analysis  # pandas: not at collection time

    label = registry.variant_label(open_close, {**open_close.defaults(), **GUEST}, "tmpfs")
    assert label == "workdir_fs=guest-tmpfs,fs=tmpfs"
    assert analysis.without_fs(label) == "workdir_fs=guest-tmpfs"
    assert analysis.without_fs(registry.variant_label(open_close, open_close.defaults(), "9p")) == ""


def _conditions(**kw):
    cfg = config.make_config("quick", probes=["open_close", "null_syscall"], placements=["same_cpu"], **kw)
    return cfg, config.validate(cfg)


def test_a_campaign_yields_both_conditions_for_file_probes_by_default():
    cfg, conds = _conditions()
    assert sorted((c.probe, registry.workdir_fs(c.params)) for c in conds) == [
        ("null_syscall", "host-volume"), ("open_close", "guest-tmpfs"), ("open_close", "host-volume")]
    assert len({c.params_json for c in conds if c.probe == "open_close"}) == 2
    _, only_host = _conditions(sandbox_fs=["host-volume"])
    assert [registry.workdir_fs(c.params) for c in only_host] == ["host-volume", "host-volume"]


@pytest.mark.parametrize("bad", [[], "guest-tmpfs", ["tmpfs"], None])
def test_sandbox_fs_is_refused_with_what_is_accepted(bad):
    with pytest.raises(ConfigError, match=r"sandbox_fs must be a non-empty list of \['host-volume', 'guest-tmpfs'\]"):
        _conditions(sandbox_fs=bad) if bad is not None else config.validate(
            config.CampaignConfig(probes=["open_close"], sandbox_fs=None))


def test_each_environment_measures_the_file_systems_it_has():
    cfg, conds = _conditions()
    measured = {name: sorted((c.probe, registry.workdir_fs(c.params)) for c in conds
                             if cfg.measures_condition(environments.get(name), c))
                for name in ("native", "gvisor", "uml", "fuse")}
    both = [("null_syscall", "host-volume"), ("open_close", "guest-tmpfs"), ("open_close", "host-volume")]
    assert measured["gvisor"] == measured["uml"] == both
    # native's tmpfs is its own kernel's already; FUSE has one folder, its mount
    assert measured["native"] == [("null_syscall", "host-volume"), ("open_close", "host-volume")]
    assert measured["fuse"] == [("open_close", "host-volume")]
    cfg, conds = _conditions(sandbox_fs=["guest-tmpfs"])
    assert sorted((c.probe, registry.workdir_fs(c.params)) for c in conds
                  if cfg.measures_condition(environments.get("uml"), c)) == both[:2]
    assert environments.get("native").session_class(environments.get("native"), Path("/nonexistent")) \
        .guest_workdir.__func__ is environments.Session.guest_workdir


def _request(folder: Path) -> WorkerRequest:
    return WorkerRequest(probe="open_close", params={}, min_batch_ns=100_000, warmup=0, batches=1,
                         max_iterations=1000, workdir=str(folder), make_workdir=True)


def test_the_worker_makes_and_removes_a_folder_only_the_guest_sees(tmp_path):
    folder, lines = tmp_path / "guest-0-0", []
    run_request(_request(folder), lines.append)
    assert not folder.exists()
    env = lines[0]
    assert env["kind"] == "environment" and env["workdir"] == str(folder)
    assert env["workdir_fs_type"] == facts.filesystem_type(tmp_path)
    batches = lines[1:]
    assert {x["kind"] for x in batches} == {"batch"} and [x["warmup"] for x in batches].count(False) == 1
    assert all(x["work_done"] == x["iterations"] for x in batches)  # each open+close done in that folder


def test_the_worker_fails_a_probe_that_leaves_files_in_its_folder(tmp_path):
    folder = tmp_path / "guest-0-1"

    def emit(line):  # something appears in the folder while the probe runs
        if line["kind"] == "environment":
            (folder / "left-behind").write_text("x")

    with pytest.raises(ProbeFailed, match="probe left files in .*left-behind"):
        run_request(_request(folder), emit)
    assert not folder.exists()


def test_the_worker_names_its_libc_and_probe_binaries():
    seen = facts.environment_facts()
    assert seen["libc"].startswith("glibc ") and Path(seen["libc_path"]).name.startswith("libc")
    assert len(seen["libc_sha256"]) == 16 and seen["libc_sha256"] == facts.sha256_prefix(seen["libc_path"])
    assert Path(seen["probe_extension"]).name.startswith("_probes.")
    assert len(seen["probe_extension_sha256"]) == 16 and len(seen["probe_parent_sha256"]) == 16
