"""What the sandbox environments hand to runsc, UML and the FUSE server, and
what they say when they cannot run (fast: nothing is started here; the real
runs are in test_environments_real.py)."""
from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from osbench_analysis import environments
from osbench_analysis.environments import fuse, gvisor, hostops, uml

WORKER = ["/venv/bin/python", "-m", "osbench_analysis.worker.main", "--request", '{"probe": "stat", "x": "a b"}']


def test_status_table_has_one_row_per_environment_with_reason_and_hint():
    table = environments.status_table()
    assert list(table.columns) == ["name", "arch_class", "available", "reason", "install_hint", "description"]
    assert list(table["name"]) == environments.names()
    assert set(table["arch_class"]) >= {"monolithic", "user-space-kernel", "hosted-kernel", "user-space-server"}
    assert (table["reason"] != "").all() and (table["description"] != "").all()
    assert (table.loc[~table["available"], "install_hint"] != "").all()


def test_gvisor_sandbox_has_a_read_only_root_no_network_and_one_writable_volume(tmp_path):
    env = environments.get("gvisor-gofer")
    spec = env.oci_spec(WORKER, tmp_path)
    assert spec["process"]["args"] == WORKER
    assert spec["root"] == {"path": "/", "readonly": True}
    assert {"type": "network"} in spec["linux"]["namespaces"]
    writable = [m for m in spec["mounts"] if m["type"] == "bind" and "rw" in m["options"]]
    assert writable == [{"destination": str(tmp_path), "type": "bind", "source": str(tmp_path),
                         "options": ["rbind", "rw"]}]
    # what the worker reads is bound explicitly, read-only, at its own path (a checkout under /tmp)
    worker = [m["source"] for m in spec["mounts"] if m["type"] == "bind" and "ro" in m["options"]]
    assert worker == hostops.worker_paths()
    names = [m["destination"] for m in spec["mounts"]]
    assert names.index("/tmp") < names.index(worker[0])  # after the tmpfs that would hide it
    flags = env.runsc_flags(tmp_path)
    assert {"--network=none", "--rootless", "--platform=systrap", "--directfs=false"} <= set(flags)
    assert "--directfs=true" in environments.get("gvisor").runsc_flags(tmp_path)
    assert "--platform=ptrace" in environments.get("gvisor-ptrace").runsc_flags(tmp_path)


def test_sandboxes_are_pinned_from_outside():
    for name in ("gvisor", "uml"):
        env = environments.get(name)
        assert env.pins_inside is False and "cross_cpu" not in env.placements
    assert hostops.pinned(["x"], {1, 0})[-3:] == ["-c", "0,1", "x"]
    assert hostops.pinned(["x"], None)[-2] == ",".join(map(str, sorted(os.sched_getaffinity(0))))


def test_uml_mounts_the_host_root_read_only_and_only_the_output_folder_writable(tmp_path):
    env = environments.get("uml")
    args = env.kernel_args(Path("/s/init-0.sh"), Path("/s/uml"), "osbench1-0")
    assert {"rootfstype=hostfs", "rootflags=/", "ro", "init=/s/init-0.sh", "uml_dir=/s/uml"} <= set(args)
    rw, out = tmp_path / "rw", tmp_path / "rw" / "worker-0.jsonl"
    body = f"{shlex.join([*WORKER, '--out', str(out)])} 2>&1"
    script = env.init_script(body, rw)
    hostfs_mounts = [line for line in script.splitlines() if "-t hostfs" in line]
    assert hostfs_mounts[-1] == f"mkdir -p {rw} && mount -t hostfs -o {rw} hostfs {rw}"
    # the worker's folders, read-only at their own paths, after the guest's tmpfs on /tmp
    assert hostfs_mounts[:-1] == [f"mkdir -p {shlex.quote(p)} && mount -t hostfs -o ro,{shlex.quote(p)} hostfs "
                                  f"{shlex.quote(p)}" for p in hostops.worker_paths()]
    lines = script.splitlines()
    assert lines.index("mount -t tmpfs tmp /tmp") < lines.index(hostfs_mounts[0])
    worker_line = next(line for line in script.splitlines() if "osbench_analysis.worker.main" in line)
    assert shlex.split(worker_line) == [*WORKER, "--out", str(out), "2>&1"]
    assert lines.index("echo o > /proc/sysrq-trigger") > lines.index(worker_line)  # powers off after the worker
    # the loopback up before any worker: iproute2's ip, a Python start-up without site only where ip fails
    lo = next(line for line in lines if "ip link set lo up" in line)
    assert lo.startswith("ip link set lo up 2>/dev/null || ") and " -S -c " in lo
    assert lines.index(lo) < lines.index(worker_line)


def test_worker_paths_cover_the_package_the_venv_and_the_interpreter_without_nesting():
    import sys

    paths = [Path(p) for p in hostops.worker_paths()]
    for needed in (Path(environments.__file__).resolve(), Path(sys.prefix), Path(os.path.realpath(sys.executable))):
        assert any(needed == p or needed.is_relative_to(p) for p in paths), needed
    assert not any(a != b and a.is_relative_to(b) for a in paths for b in paths)
    assert Path("/") not in paths


def test_options_outside_what_is_accepted_are_refused():
    with pytest.raises(ValueError, match="xsave_shim must be 'auto', 'always' or 'never' \\(got 'yes'\\)"):
        uml.UML("u", xsave_shim="yes")
    with pytest.raises(ValueError, match="cache must be 'default' or 'never' \\(got 'always'\\)"):
        fuse.Fuse("f", cache="always")
    with pytest.raises(ValueError, match="threads must be 'single' or 'multi'"):
        fuse.Fuse("f", threads="many")


def test_missing_tools_give_the_reason_and_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setattr(uml, "UML_KERNEL", str(tmp_path / "linux.uml"))
    ok = uml.UML().availability()
    assert not ok and "user-mode-linux" in ok.reason and "apt-get install user-mode-linux" in ok.install_hint
    monkeypatch.setattr(fuse, "SERVER", tmp_path / "osbench-fuse")
    ok = fuse.Fuse().availability()
    assert not ok and "not built" in ok.reason and "make envs" in ok.install_hint
    monkeypatch.setattr(gvisor, "RUNSC", tmp_path / "runsc")
    ok = gvisor.GVisor().availability()
    assert not ok and str(tmp_path / "runsc") in ok.reason and "make envs" in ok.install_hint


def test_a_runsc_of_another_version_is_not_used(monkeypatch, tmp_path):
    fake = tmp_path / "runsc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    (tmp_path / "runsc.version").write_text("v0.0.0-20220101000000-000000000000\n")
    monkeypatch.setattr(gvisor, "RUNSC", fake)
    monkeypatch.setattr(gvisor, "VERSION_STAMP", tmp_path / "runsc.version")
    ok = gvisor.GVisor().availability()
    assert not ok and "v0.0.0-20220101000000-000000000000" in ok.reason and gvisor.RUNSC_VERSION in ok.reason


def test_a_file_server_serves_only_file_probes_and_the_others_serve_all():
    from osbench_analysis import environments
    from osbench_analysis.catalog import registry

    file_probes = {n for n in registry.DEFAULT_PROBES if registry.get_probe(n).uses_workdir}
    assert file_probes and file_probes != set(registry.DEFAULT_PROBES)
    mapping = {n for n in file_probes if registry.get_probe(n).maps_file}
    assert mapping and mapping < file_probes
    served = {name: {n for n in registry.DEFAULT_PROBES if environments.get(name).serves(registry.get_probe(n))}
              for name in ("fuse", "fuse-nocache")}
    assert served["fuse"] == file_probes
    # direct I/O files cannot be mapped shared: fuse-nocache leaves out the probes that map one
    assert served["fuse-nocache"] == file_probes - mapping
    # the gofer joins only the file path: elsewhere gvisor-gofer is gvisor again
    gofer = environments.get("gvisor-gofer")
    assert {n for n in registry.DEFAULT_PROBES if gofer.serves(registry.get_probe(n))} == file_probes
    # every probe but those that exist only inside a guest kernel (GNU Mach's task: the mach environment);
    # a crossing's native pieces (seccomp traps, ptrace stops) on the monolithic kernel alone
    host_probes = {n for n in registry.DEFAULT_PROBES if not registry.get_probe(n).guest}
    pieces = {n for n in host_probes if registry.get_probe(n).family == "mechanism"}
    assert pieces
    assert {n for n in registry.DEFAULT_PROBES if environments.get("native").serves(registry.get_probe(n))} == host_probes
    for name in ("gvisor", "gvisor-ptrace", "uml"):
        env = environments.get(name)
        assert {n for n in registry.DEFAULT_PROBES if env.serves(registry.get_probe(n))} == host_probes - pieces


def test_the_uml_xsave_shim_is_preloaded_from_a_path_ld_so_does_not_split(tmp_path, monkeypatch):
    """ld.so splits LD_PRELOAD at spaces and colons: a checkout under '/tmp/x y' once ran UML
    without its shim, silently.  The session preloads a copy from its own tmpfs folder instead."""
    spaced = tmp_path / "a checkout" / "osbench-uml-xsave.so"
    spaced.parent.mkdir()
    spaced.write_bytes(b"\x7fELF shim")
    monkeypatch.setattr(uml, "XSAVE_SHIM", spaced)
    monkeypatch.setattr(uml.UML, "shim_reason", lambda self: (True, "test"))
    sess = uml.UMLSession(uml.UML(), tmp_path / "scratch")
    (tmp_path / "scratch").mkdir()
    sess.open()
    try:
        how = sess.launch(["true"], cpus=None, output=tmp_path / "out")
        pre = how.env["LD_PRELOAD"]
        assert " " not in pre and ":" not in pre and Path(pre).read_bytes() == b"\x7fELF shim"
        how.cleanup()
    finally:
        sess.close()
    plain = tmp_path / "plain.so"
    assert uml.preload_path(plain, tmp_path) == str(plain)          # nothing to avoid: used where it is
    with pytest.raises(ValueError, match="no folder without spaces or colons"):
        uml.preload_path(spaced, spaced.parent)


def test_a_uml_campaign_under_the_first_shim_build_does_not_pool_with_the_others():
    from types import SimpleNamespace

    from osbench_analysis.analysis import reproducibility

    def manifest(info, worker="/work/main/osbench_analysis/_probes.abi3.so"):
        return SimpleNamespace(host={"host_id": "h", "probes": {"source_sha256": "s"}}, hostname="h",
                               environment="uml", environment_info={"uml_kernel": "/usr/bin/linux.uml", **info},
                               environment_facts={"probe_extension": worker})
    slow = manifest({"xsave_shim": True})                                           # before the fix, shim loaded
    split = manifest({"xsave_shim": True}, "/tmp/fresh clone/osbench/osbench_analysis/_probes.abi3.so")
    fixed = manifest({"xsave_shim": True, "xsave_shim_reads_cpuid": "once"})
    none = manifest({"xsave_shim": False})
    keys = {n: reproducibility.comparable_key(m) for n, m in
            (("slow", slow), ("split", split), ("fixed", fixed), ("none", none))}
    assert keys["split"] == keys["fixed"] == keys["none"] != keys["slow"]
    assert "CPUID on every ptrace call" in keys["slow"][3]


def test_whether_uml_needs_the_shim_is_asked_of_the_host(monkeypatch):
    monkeypatch.setattr(uml, "xsave_size", lambda: 2688)
    monkeypatch.setattr(uml, "short_xstate_set_refused", lambda: False)
    assert uml.UML().shim_reason() == (False, "the host's XSAVE area is 2688 B, but its kernel accepts UML's "
                                              "832-byte XSTATE set")
    monkeypatch.setattr(uml, "short_xstate_set_refused", lambda: True)
    assert uml.UML().shim_reason()[0] and not uml.UML("u", xsave_shim="never").shim_reason()[0]
    monkeypatch.setattr(uml, "xsave_size", lambda: 832)
    assert not uml.UML().shim_reason()[0] and uml.UML("u", xsave_shim="always").shim_reason()[0]


def test_the_set_up_steps_beside_pip_need_only_the_standard_library():
    """`make setup` runs the packages and runsc steps with the system's Python while pip fills the venv."""
    import subprocess
    import sys

    code = ("import sys; before = set(sys.modules); import osbench_analysis.environments.install; "
            "print('\\n'.join(sorted({m.split('.')[0] for m in set(sys.modules) - before})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(environments.__file__).parents[2]).stdout.split()
    assert "osbench_analysis" in out
    third_party = [m for m in out if m not in sys.stdlib_module_names and m != "osbench_analysis" and not m.startswith("_")]
    assert third_party == []


def test_packages_dpkg_lacks_are_told_from_those_it_has():
    from osbench_analysis.environments import install

    if not hostops.which("dpkg-query"):
        pytest.skip("no dpkg here")
    assert install.not_installed(["dpkg", "osbench-no-such-package"]) == ["osbench-no-such-package"]
    assert install.not_installed([]) == []
