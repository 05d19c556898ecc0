"""Issue #22: file probes in gVisor and UML on a file system the guest kernel serves
itself and on the host-backed volume, named in the fs_type column; the probes run
with the same binaries and libc as native.  Real sandboxes: slow."""
from __future__ import annotations

import json
import os

import pytest

from osbench_analysis.catalog import registry
from osbench_analysis.measure import runner
from test_environments_real import NOTHING, leftovers

pytestmark = pytest.mark.slow

#: what each sandbox's worker sees: guest tmpfs, host volume
EXPECTED_FS = {"gvisor": {registry.FS_GUEST_TMPFS: "tmpfs", registry.FS_HOST_VOLUME: "9p"},
               "uml": {registry.FS_GUEST_TMPFS: "tmpfs", registry.FS_HOST_VOLUME: "hostfs"}}
PROBES = ["open_close", "file_create_delete", "null_syscall"]


def _measure(tmp_path, environment, **kw):
    return runner.measure(probes=PROBES, runs=1, batches=2, warmup=0, min_batch_ms=1, placements=["same_cpu"],
                          precision_target=0, environment=environment, output=str(tmp_path / "campaigns"),
                          progress=False, **kw)


def test_file_probes_run_on_the_guest_tmpfs_and_the_host_volume(tmp_path):
    campaigns = {c.manifest.environment: c for c in _measure(tmp_path, "native,gvisor,uml")}
    for name, expected in EXPECTED_FS.items():
        c = campaigns[name]
        assert all(r.status == "ok" for r in c.manifest.runs), c.manifest.runs
        files = c.samples[c.samples["probe"] != "null_syscall"]
        seen = {(p, registry.workdir_fs(json.loads(pj)), fs)
                for p, pj, fs in zip(files["probe"], files["params_json"], files["fs_type"])}
        assert seen == {(p, where, fs) for p in PROBES[:2] for where, fs in expected.items()}, (name, seen)
        # every table names the file system: the variant says it, so the two are two conditions
        for where, fs in expected.items():
            named = f"fs={fs}" if where == registry.FS_HOST_VOLUME else f"workdir_fs={where},fs={fs}"
            assert set(files.loc[files["fs_type"] == fs, "variant"]) == {named}
        expected_work = [registry.get_probe(p).expected_work(n, json.loads(pj))
                         for p, n, pj in zip(files["probe"], files["iterations"], files["params_json"])]
        assert (files["work_done"] == expected_work).all()
        assert set(c.samples.loc[c.samples["probe"] == "null_syscall", "fs_type"]) == {""}
    # native has one folder, its own kernel's: no guest-tmpfs condition there
    native = campaigns["native"].samples
    assert {registry.workdir_fs(json.loads(pj)) for pj in native["params_json"]} == {registry.FS_HOST_VOLUME}
    assert set(native.loc[native["probe"] != "null_syscall", "fs_type"]) == {"tmpfs"}
    assert leftovers(os.getpid()) == NOTHING


def test_the_same_probe_binaries_and_libc_run_in_every_sandbox(tmp_path):
    campaigns = _measure(tmp_path, "native,gvisor,uml", sandbox_fs=["host-volume"])
    seen = {c.manifest.environment: c.manifest.environment_facts for c in campaigns}
    keys = ("libc", "libc_path", "libc_sha256", "probe_extension", "probe_extension_sha256", "probe_parent_sha256")
    native = {k: seen["native"][k] for k in keys}
    assert all(native.values()), native
    for name in ("gvisor", "uml"):
        assert {k: seen[name][k] for k in keys} == native, name
    # the guest kernels are theirs, the host's is recorded beside them
    assert seen["uml"]["kernel_release"] != campaigns[0].manifest.host["kernel_release"]
    assert seen["gvisor"]["kernel_release"] != campaigns[0].manifest.host["kernel_release"]
