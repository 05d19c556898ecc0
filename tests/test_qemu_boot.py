"""The emulated-CPU guests for real: GNU Mach and Linux booted under QEMU
(seconds each, marked slow; skipped where `make envs` has not built them)."""
import os
from pathlib import Path

import pytest

from osbench_analysis import environments
from osbench_analysis.catalog import registry
from osbench_analysis.environments import RoundJob, mach
from osbench_analysis.environments.qemu import QEMU
from osbench_analysis.worker.main import WorkerRequest

pytestmark = pytest.mark.slow


def needs(name):
    ok = environments.get(name).availability()
    if not ok:
        pytest.skip(f"{name}: {ok.reason}")
    return environments.get(name)


def qemus_mentioning(text: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if QEMU.encode() in cmd and text.encode() in cmd:
            found.append(int(pid))
    return found


def round_of(env, probes, tmp_path, *, timeout_s=120.0, min_batch_ns=200_000, batches=2):
    jobs = [RoundJob(WorkerRequest(p, params, min_batch_ns, 1, batches, registry.PROBES[p].max_iterations), [],
                     tmp_path / f"job-{i}.jsonl", timeout_s / len(probes))
            for i, (p, params) in enumerate(probes)]
    scratch = tmp_path / "scratch"
    with env.session(scratch) as sess:
        res = list(sess.run_round(jobs, cpus=None))
    assert not scratch.exists(), "the session left its folder"
    assert not qemus_mentioning(str(scratch)), "a QEMU outlived its round"
    return res


def counts(outcome):
    return [(b["iterations"], b["elapsed_ns"], b["work_done"]) for b in outcome.batches]


MACH_SET = [(n, {}) for n, p in registry.PROBES.items() if p.guest == "mach"]


def test_mach_measures_every_primitive_with_its_work_and_two_boots_agree(tmp_path):
    env = needs("mach")
    first = round_of(env, MACH_SET, tmp_path / "a")
    second = round_of(env, MACH_SET, tmp_path / "b")
    for (name, _), o, o2 in zip(MACH_SET, first, second):
        assert o.status == "ok", (name, o.message)
        assert o.facts["time_unit"] == "guest instructions" and o.facts["guest_kernel"] == "mach"
        measured = [b for b in o.batches if not b["warmup"]]
        assert len(measured) == 2 and all(b["work_done"] == b["iterations"] > 0 for b in o.batches), name
        assert counts(o) == counts(o2), f"{name}: two boots differ"
    null = next(o for (n, _), o in zip(MACH_SET, first) if n == "mach_null_trap")
    per_op = null.batches[-1]["elapsed_ns"] / null.batches[-1]["iterations"]
    assert 20 < per_op < 1000   # a trap is tens to hundreds of instructions, never host ns of a busy host


def test_linux_guest_runs_our_probes_and_two_boots_agree(tmp_path):
    env = needs("linux-tcg")
    probes = [("null_syscall", {}), ("pipe_pingpong", {}), ("fork_exit", {})]
    first = round_of(env, probes, tmp_path / "a", timeout_s=240.0)
    second = round_of(env, probes, tmp_path / "b", timeout_s=240.0)
    for (name, _), o, o2 in zip(probes, first, second):
        assert o.status == "ok", (name, o.message)
        assert all(b["work_done"] == b["iterations"] for b in o.batches), name
        assert counts(o) == counts(o2), f"{name}: two boots differ"
    assert first[0].facts["guest_spectre_v2"].startswith("Mitigation")


def test_a_hung_guest_is_killed_at_its_timeout_and_leaves_nothing(tmp_path):
    env = needs("mach")
    res = round_of(env, [("mach_null_trap", {}), ("mach_port_alloc", {})], tmp_path, timeout_s=1.0)
    assert [o.status for o in res][0] == "timeout" and "killed after" in res[0].message
    assert res[1].status == "error" and "not run" in res[1].message


class BrokenMach(mach.Mach):
    """A bootstrap module that is no executable: GNU Mach panics loading it."""

    def boot_media(self, requests, folder):
        bogus = folder / "bogus.elf"
        bogus.write_bytes(b"not an executable\n" * 64)
        real, mach.TASK = mach.TASK, bogus
        try:
            return super().boot_media(requests, folder)
        finally:
            mach.TASK = real


def test_a_kernel_panic_is_a_failed_run_with_the_panic_line(tmp_path):
    needs("mach")
    res = round_of(BrokenMach("mach-broken"), [("mach_null_trap", {})], tmp_path, timeout_s=120.0)
    assert res[0].status == "crashed" and "panic" in res[0].message.lower(), res[0].message


def test_one_job_one_boot_through_launch_for_a_runner_without_rounds(tmp_path):
    from osbench_analysis.worker import launch

    env = needs("mach")
    req = WorkerRequest("mach_rpc_task", {}, 200_000, 0, 2, registry.PROBES["mach_rpc_task"].max_iterations)
    with env.session(tmp_path / "s") as sess:
        out = launch.run(sess.launch(launch.worker_argv(req), cpus=None, output=tmp_path / "o.jsonl"), 120)
    assert out.status == "ok", out.message
    assert out.facts["time_unit"] == "guest instructions"
    assert all(b["work_done"] == b["iterations"] for b in out.batches) and len(out.batches) >= 3
    assert not qemus_mentioning("osbench-guest-")


def test_the_mach_task_builds_from_a_checkout_whose_path_has_a_space(tmp_path, monkeypatch):
    """MIG is a shell script that evals its paths unquoted: the build must not hand it a path with a space."""
    import hashlib
    import shutil

    from osbench_analysis.environments import guest_install

    tree = mach.KERNEL.parent / "trixie"
    if not (tree / "usr/lib/mig").is_dir() or not mach.TASK.is_file():
        pytest.skip("GNU Mach's trixie tree is not unpacked here (make envs)")
    out = tmp_path / "a checkout with spaces" / "mach"
    shutil.copytree(tree, out / "trixie", symlinks=True)
    monkeypatch.setattr(mach, "TASK", out / "osbench-mach-task.elf")
    guest_install.build_mach_task(out / "trixie", out)
    # the same sources and tools give the same task as the one make envs built
    built = hashlib.sha256(mach.TASK.read_bytes()).hexdigest()
    monkeypatch.undo()
    assert built == hashlib.sha256(mach.TASK.read_bytes()).hexdigest()
