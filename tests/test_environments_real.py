"""The kernel environments for real (gVisor, User-mode Linux, FUSE), through
the runner: every probe does its work inside each, the facts seen from inside
are the environment's, file probes run on the guest's own tmpfs and on the
host volume with native's binaries and libc (issue #22), a system call costs
more where the architecture adds a crossing, and no sandbox process, mount or
folder survives success, failure, timeout or Ctrl-C.  Needs `make envs` (CI
runs it first).  One campaign of every probe in gVisor and UML serves every
test that reads them: their boots are the file's time."""
from __future__ import annotations

import json
import os
import platform
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from osbench_analysis import environments, stats
from osbench_analysis.catalog import registry, views
from osbench_analysis.measure import runner
from osbench_analysis.environments import fuse, gvisor, hostops, uml

pytestmark = pytest.mark.slow

FILE_PROBES = [n for n in registry.DEFAULT_PROBES if registry.get_probe(n).uses_workdir]
SANDBOXES = ["gvisor", "gvisor-ptrace", "gvisor-gofer", "uml", "fuse", "fuse-nocache"]
#: every probe where the environment changes every probe's path; file probes (+ one control) elsewhere
PROBES_FOR = {"gvisor": list(registry.DEFAULT_PROBES), "uml": list(registry.DEFAULT_PROBES),
              "fuse-nocache": list(registry.DEFAULT_PROBES),
              "gvisor-ptrace": ["null_syscall", "fork_exit", *FILE_PROBES],
              # a probe off the served path is refused by name when asked for (test_config), so not asked here
              "gvisor-gofer": list(FILE_PROBES), "fuse": list(FILE_PROBES)}


def first_points(probes: list[str]) -> dict[str, list[dict]]:
    """The quick profile's first parameter set of each probe (its variants are other points of the same paths)."""
    return {p: sets[:1] for p, sets in views.profile_variants("quick").items() if p in probes}


#: the profile's variants where every probe's path changes (gvisor, uml); a variant of gVisor only in its
#: platform or its gofer, or a file server, measures each probe at its first point, and gVisor's gofer only on
#: the host volume it serves (its guest tmpfs is the Sentry's, as in gvisor)
NARROWER = {"gvisor-ptrace": dict(variants=first_points(PROBES_FOR["gvisor-ptrace"])),
            "gvisor-gofer": dict(variants=first_points(PROBES_FOR["gvisor-gofer"]), sandbox_fs=["host-volume"]),
            "fuse": dict(variants=first_points(PROBES_FOR["fuse"])),
            "fuse-nocache": dict(variants=first_points(PROBES_FOR["fuse-nocache"]))}


def measure(tmp_path, environment, probes, **kw):
    params = dict(probes=probes, runs=1, batches=2, warmup=0, min_batch_ms=1, placements=["same_cpu"],
                  precision_target=0, environment=environment, output=str(tmp_path / "campaigns"), progress=False)
    return runner.measure(**{**params, **kw})


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def leftovers(owner_pid: int) -> dict[str, list]:
    """What an environment session of runner process `owner_pid` could leave behind."""
    tag = re.compile(rb"osbench-(?:campaign-)?%d\.\d+-|umid=osbench%d-" % (owner_pid, owner_pid))
    ours = {os.path.realpath(gvisor.RUNSC), os.path.realpath(fuse.SERVER)}
    procs = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            pid = int(entry)
            exe, cmd = _exe(pid).removesuffix(" (deleted)"), _cmdline(pid)
            try:     # a process may end between the listing and this read: gone is as good as a zombie
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
            except OSError:
                state = "Z"
            # only what carries this runner's tag: under pytest-xdist another test's runner may be
            # measuring now, and its runsc, FUSE server and mount are not this runner's leftovers
            if state != "Z" and tag.search(cmd) and (exe in ours or exe == os.path.realpath(uml.UML_KERNEL)
                                                     or b"osbench_analysis.worker.main" in cmd):
                procs.append((pid, exe, cmd[:200]))
    mounts = [m for m in hostops.mounts_under("/") if tag.search(m[1].encode())]
    folders = [str(p) for d in {"/tmp", "/dev/shm"} for p in Path(d).iterdir() if tag.match(p.name.encode())]
    return {"processes": procs, "mounts": mounts, "folders": folders}


NOTHING = {"processes": [], "mounts": [], "folders": []}


def test_every_environment_is_available_here():
    table = environments.status_table()
    # the kernel-version sweep's guests are built by `make kernels`, not `make envs`
    swept = {e.name for e in environments.REGISTRY if not e.in_all}
    missing = table[~table["available"] & ~table["name"].isin(swept)]
    assert missing.empty, "not available (run `make envs`):\n" + missing.to_string()
    assert set(SANDBOXES) <= set(table["name"])


#: the two sandboxes where every probe's path changes, measured in one campaign that the tests of
#: their file systems and binaries (issue #22) read too: one pre-flight, no second set of boots
SHARED = ("gvisor", "uml")


@pytest.fixture(scope="module")
def gvisor_and_uml(tmp_path_factory):
    """Every default probe (and its variants) in gVisor and UML, one campaign each, measured once."""
    root = tmp_path_factory.mktemp("gvisor-and-uml")
    campaigns = measure(root, ",".join(SHARED), list(registry.DEFAULT_PROBES))
    assert leftovers(os.getpid()) == NOTHING
    return {c.manifest.environment: c for c in campaigns}


@pytest.mark.parametrize("name", SANDBOXES)
def test_every_probe_does_its_work_inside(name, tmp_path, request):
    if name in SHARED:
        assert PROBES_FOR[name] == list(registry.DEFAULT_PROBES)
        c = request.getfixturevalue("gvisor_and_uml")[name]
    else:
        (c,) = measure(tmp_path, name, PROBES_FOR[name], **NARROWER[name])
    bad = [r for r in c.manifest.runs if r.status != "ok"]
    assert not bad, bad
    s = c.samples
    # a file server measures only the probes whose path it is on (the others would be native again)
    served = {p for p in PROBES_FOR[name] if environments.get(name).serves(registry.get_probe(p))}
    # plus the host-state canaries (issue #20), measured wherever the default probes are
    assert set(s["probe"]) - set(registry.CANARY_PROBES) == served and served
    if name.startswith("fuse"):
        mappable = {p for p in FILE_PROBES if name != "fuse-nocache" or not registry.get_probe(p).maps_file}
        assert served == mappable & set(PROBES_FOR[name])
    expected = [registry.get_probe(p).expected_work(n, json.loads(pj))
                for p, n, pj in zip(s["probe"], s["iterations"], s["params_json"])]
    assert (s["work_done"] == expected).all()
    assert (s["iterations"] > 0).all() and (s["elapsed_ns"] > 0).all()
    inside, host = c.manifest.environment_facts, platform.uname()
    info = c.manifest.environment_info
    fs = set(s.loc[s["probe"].isin(FILE_PROBES), "fs_type"])
    if name.startswith("gvisor"):
        # the Sentry's emulated kernel, not the host's
        assert inside["kernel_release"].endswith("gvisor") and inside["kernel_release"] != host.release
        # the volume, as gVisor mounts it, and the Sentry's own tmpfs
        assert fs == {"9p", "tmpfs"} - ({"tmpfs"} if name == "gvisor-gofer" else set()), fs
        assert info["platform"] == {"gvisor": "systrap", "gvisor-ptrace": "ptrace"}.get(name, "systrap")
        assert info["directfs"] is (name != "gvisor-gofer")
        assert info["runsc_version"] == gvisor.RUNSC_VERSION
    elif name == "uml":
        assert inside["kernel_release"] == info["uml_kernel_version"] != host.release
        assert inside["cpu_count"] == 1
        assert fs == {"hostfs", "tmpfs"}, fs  # the host volume and the guest's own tmpfs
    else:
        # FUSE: the host kernel, file probes on the server's mount
        assert inside["kernel_release"] == host.release
        assert fs == {"fuse.osbench"}, fs
        assert info["cache"] == ("never" if name == "fuse-nocache" else "default")
        assert "default_permissions" in info["mount_options"]
    assert leftovers(os.getpid()) == NOTHING


# Issue #22: file probes in gVisor and UML on a file system the guest kernel serves itself and on the
# host-backed volume, named in the fs_type column; the probes run with the same binaries and libc as native.

#: what each sandbox's worker sees: guest tmpfs, host volume
EXPECTED_FS = {"gvisor": {registry.FS_GUEST_TMPFS: "tmpfs", registry.FS_HOST_VOLUME: "9p"},
               "uml": {registry.FS_GUEST_TMPFS: "tmpfs", registry.FS_HOST_VOLUME: "hostfs"}}
FS_PROBES = ["open_close", "file_create_delete", "null_syscall"]


@pytest.fixture(scope="module")
def native_fs_probes(tmp_path_factory):
    (c,) = measure(tmp_path_factory.mktemp("native"), "native", FS_PROBES)
    return c


def test_file_probes_run_on_the_guest_tmpfs_and_the_host_volume(gvisor_and_uml, native_fs_probes):
    for name, expected in EXPECTED_FS.items():
        c = gvisor_and_uml[name]
        assert all(r.status == "ok" for r in c.manifest.runs), c.manifest.runs
        files = c.samples[c.samples["probe"].isin(FS_PROBES[:2])]
        seen = {(p, registry.workdir_fs(json.loads(pj)), fs)
                for p, pj, fs in zip(files["probe"], files["params_json"], files["fs_type"])}
        assert seen == {(p, where, fs) for p in FS_PROBES[:2] for where, fs in expected.items()}, (name, seen)
        # every table names the file system: the variant says it, so the two are two conditions
        for where, fs in expected.items():
            named = f"fs={fs}" if where == registry.FS_HOST_VOLUME else f"workdir_fs={where},fs={fs}"
            assert set(files.loc[files["fs_type"] == fs, "variant"]) == {named}
        expected_work = [registry.get_probe(p).expected_work(n, json.loads(pj))
                         for p, n, pj in zip(files["probe"], files["iterations"], files["params_json"])]
        assert (files["work_done"] == expected_work).all()
        assert set(c.samples.loc[c.samples["probe"] == "null_syscall", "fs_type"]) == {""}
    # native has one folder, its own kernel's: no guest-tmpfs condition there
    native = native_fs_probes.samples
    assert {registry.workdir_fs(json.loads(pj)) for pj in native["params_json"]} == {registry.FS_HOST_VOLUME}
    assert set(native.loc[native["probe"] != "null_syscall", "fs_type"]) == {"tmpfs"}
    assert set(native["probe"]) == set(FS_PROBES)
    assert leftovers(os.getpid()) == NOTHING


def test_the_same_probe_binaries_and_libc_run_in_every_sandbox(gvisor_and_uml, native_fs_probes):
    seen = {name: c.manifest.environment_facts for name, c in {**gvisor_and_uml, "native": native_fs_probes}.items()}
    keys = ("libc", "libc_path", "libc_sha256", "probe_extension", "probe_extension_sha256", "probe_parent_sha256")
    native = {k: seen["native"][k] for k in keys}
    assert all(native.values()), native
    for name in ("gvisor", "uml"):
        assert {k: seen[name][k] for k in keys} == native, name
    # the guest kernels are theirs, the host's is recorded beside them
    for name in ("gvisor", "uml"):
        assert seen[name]["kernel_release"] != gvisor_and_uml[name].manifest.host["kernel_release"]


def test_a_system_call_costs_more_under_gvisor_and_uml(tmp_path):
    campaigns = measure(tmp_path, "native,gvisor,uml", ["null_syscall"], runs=3, batches=3, min_batch_ms=2)
    samples = pd.concat([c.samples for c in campaigns], ignore_index=True)
    table = stats.ratio_table(samples, baseline="native").set_index("environment")
    for env in ("gvisor", "uml"):
        r = table.loc[env]
        assert r["n_runs"] == 3 and r["baseline_n_runs"] == 3
        assert r["ratio"] > 1 and r["ci_low"] > 1, r.to_dict()   # the CI excludes 1
    assert leftovers(os.getpid()) == NOTHING


def test_uml_boots_with_the_xsave_shim_forced(tmp_path):
    # this host's XSAVE area may be 832 bytes (no shim needed): force the
    # full-size path so the shim's own code is exercised on every host
    env = uml.UML("uml-shim-forced", xsave_shim="always")
    environments.register(env)
    try:
        (c,) = measure(tmp_path, env.name, ["null_syscall", "fork_exit"])
    finally:
        environments.REGISTRY._envs.pop(env.name)
    assert [r.status for r in c.manifest.runs] == ["ok", "ok"], c.manifest.runs
    assert c.manifest.environment_info["xsave_shim"] is True


def test_an_unavailable_environment_says_why_and_how(monkeypatch, tmp_path):
    monkeypatch.setattr(gvisor, "RUNSC", tmp_path / "no-runsc")
    ok = environments.get("gvisor").availability()
    assert not ok and "runsc not built" in ok.reason and "make envs" in ok.install_hint
    with pytest.raises(runner.ConfigError, match="not available here.*to install: make envs"):
        measure(tmp_path, "gvisor", ["null_syscall"])


CLEANUP_ENVS = ["gvisor", "uml", "fuse-nocache"]
#: each worker's deadline: a worker's start inside a booted sandbox, and for a round's first worker in gVisor
#: (no boot allowance of its own, unlike UML's round_startup_s) the boot and the vDSO clock's settling too
HUNG_TIMEOUT_S = {"gvisor": 8, "uml": 5, "fuse-nocache": 4}


@pytest.mark.parametrize("name", CLEANUP_ENVS)
def test_a_failing_and_a_hung_probe_leave_nothing_and_the_round_goes_on(name, tmp_path):
    """A crashing worker is recorded and the next one in its boot runs; a hung one is killed with its sandbox
    at its deadline, and the round's remaining worker gets a boot of its own; nothing is left behind.
    One hung worker, on the host-backed folder only (a sandbox would also give it a guest tmpfs)."""
    t0, timeout_s = time.monotonic(), HUNG_TIMEOUT_S[name]
    (c,) = measure(tmp_path, name, ["test_crash_segv", "stat", "test_hang", "open_close"], timeout_s=timeout_s,
                   sandbox_fs=["host-volume"])
    runs = {r.probe: r for r in c.manifest.runs}
    assert [r.probe for r in c.manifest.runs] == ["test_crash_segv", "stat", "test_hang", "open_close"]
    assert runs["test_crash_segv"].status in ("crashed", "error"), c.manifest.runs
    hung = runs["test_hang"]
    assert (hung.status, hung.returncode) == ("timeout", None), hung
    assert hung.message == f"killed after {timeout_s} s without finishing" and hung.wall_s < timeout_s + 5, hung
    # the worker after the hung one, in a fresh boot: measured like the one before it
    assert runs["stat"].status == runs["open_close"].status == "ok", c.manifest.runs
    assert set(c.samples["probe"]) == {"stat", "open_close"}
    assert time.monotonic() - t0 < 60
    assert leftovers(os.getpid()) == NOTHING


SIGINT_SCRIPT = textwrap.dedent("""
    import sys
    from osbench_analysis.measure import runner
    runner.measure(probes=["stat", "test_hang"], runs=1, batches=2, warmup=0, min_batch_ms=1,
                   placements=["same_cpu"], precision_target=0, environment=sys.argv[1],
                   output=sys.argv[2], progress=False, timeout_s=120)
""")


@pytest.mark.parametrize("name", CLEANUP_ENVS)
def test_ctrl_c_leaves_nothing(name, tmp_path):
    root = tmp_path / "campaigns"
    proc = subprocess.Popen([sys.executable, "-c", SIGINT_SCRIPT, name, str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the journal records the finished stat run: the next worker, test_hang, is starting
        def stat_done() -> bool:
            return any('"stat"' in p.read_text(errors="replace") for p in root.glob(".partial-*/journal.jsonl"))

        assert hostops.wait_until(stat_done, 90, 0.1), "the first worker never finished"
        assert hostops.wait_until(lambda: leftovers(proc.pid)["processes"] or name.startswith("fuse"), 30)
        time.sleep(environments.get(name).settle_s + 2.0)  # well inside the hung probe
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]
    assert hostops.wait_until(lambda: leftovers(proc.pid) == NOTHING, 10), leftovers(proc.pid)


ROUND_FROM_CLONE = textwrap.dedent("""
    import json, sys, tempfile
    from pathlib import Path
    import osbench_analysis
    from osbench_analysis import environments
    from osbench_analysis.worker import launch
    from osbench_analysis.environments import RoundJob, hostops
    from osbench_analysis.worker.main import WorkerRequest
    env = environments.get(sys.argv[1])
    req = WorkerRequest(probe="null_syscall", params={}, min_batch_ns=1_000_000, warmup=0, batches=1,
                        max_iterations=10**8, settle_s=env.settle_s)
    with env.session(Path(tempfile.mkdtemp()) / "s") as sess:
        jobs = [RoundJob(req, launch.worker_argv(req), Path("unused"), 60) for _ in range(2)]
        out = [[o.status, o.message, len(o.batches)] for o in sess.run_round(jobs, cpus=None)]
    print(json.dumps({"package": osbench_analysis.__file__, "mounted": hostops.worker_paths(), "outcomes": out}))
""")


@pytest.fixture(scope="module")
def clone_under_tmp(tmp_path_factory):
    """This checkout's package and a virtualenv of its own, under /tmp in a folder with a space
    (what gVisor and UML hide behind their own tmpfs), the interpreter the venv links to elsewhere."""
    import shutil

    root = Path(tempfile_mkdtemp(prefix="osbench clone ", dir="/tmp"))
    checkout = root / "x y" / "osbench"
    shutil.copytree(Path(environments.__file__).resolve().parents[1], checkout / "osbench_analysis",
                    ignore=shutil.ignore_patterns("__pycache__"), symlinks=True)
    # the sandboxes' own binaries (runsc, the shim) are the runner's, not the worker's: shared
    (checkout / "build").symlink_to(hostops.BIN.parent.parent)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(checkout / ".venv")], check=True)
    site = next((checkout / ".venv" / "lib").glob("python*/site-packages"))
    # the clone first; the third-party packages (cffi) from this venv, without its editable finder
    here = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "cffi").exists())
    (site / "osbench_clone.pth").write_text(f"{checkout}\n{here}\n")
    yield checkout
    shutil.rmtree(root, ignore_errors=True)


def tempfile_mkdtemp(**kw) -> str:
    import tempfile

    return tempfile.mkdtemp(**kw)


@pytest.mark.parametrize("name", ["gvisor", "uml"])
def test_a_checkout_under_tmp_in_a_path_with_a_space_runs_inside(name, clone_under_tmp):
    python = clone_under_tmp / ".venv" / "bin" / "python"
    done = subprocess.run([str(python), "-c", ROUND_FROM_CLONE, name], capture_output=True, text=True, timeout=180,
                          cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["package"].startswith(str(clone_under_tmp) + "/")
    assert str(clone_under_tmp) in got["mounted"]
    assert [o[0] for o in got["outcomes"]] == ["ok", "ok"], got["outcomes"]
