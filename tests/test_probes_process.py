"""The process and thread probes do the work they claim, fork from the parent
they say (osbench-parent by default, the worker with parent=python), and leave
no process behind."""
import os
import signal
import subprocess
import sys
import time

import pytest

from osbench_analysis.catalog import registry
from osbench_analysis.worker.launch import run_worker
from osbench_analysis.worker.main import PARENT, Batcher, ProbeFailed, WorkerRequest
from conftest import child_pids

pytestmark = pytest.mark.slow  # every test starts processes


def request(probe, iterations, **params):
    return WorkerRequest(probe=probe, params=params, min_batch_ns=1, warmup=0, batches=2,
                         max_iterations=10**6, iterations=iterations)




def descendants(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids = {int(k) for k in f.read().split()}
                todo.extend(kids - out)
                out |= kids
        except OSError:
            pass
    return out


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.fixture(autouse=True)
def nothing_left_behind():
    before = child_pids()
    yield
    assert child_pids() <= before, "a probe left a child (alive or zombie)"


def run_batch(probe, n, **params):
    with Batcher(request(probe, n, **params)) as b:
        return b.run(n)


def test_every_forking_probe_runs_in_the_native_parent_by_default():
    forking = [n for n, p in registry.PROBES.items() if p.forks]
    assert {"fork_exit", "fork_exec", "pipe_pingpong", "posix_spawn", "fork_shell", "exec_only",
            "proc_terminate", "fork_alive"} <= set(forking)
    for name in forking:
        assert registry.resolve_params(registry.PROBES[name], {})["parent"] == "native"
        assert registry.parent_of(name, {}) == "python"  # a campaign from before the parent: the worker forked
    assert registry.parent_of("null_syscall", {}) == ""


def test_the_native_parent_is_small_and_parent_mb_grows_it():
    with Batcher(request("fork_exit", 10)) as small, Batcher(request("fork_exit", 10, parent_mb=64)) as big:
        assert small.run(10)["work_done"] == 10 and big.run(10)["work_done"] == 10
        pids = small.native.proc.pid, big.native.proc.pid
        assert os.path.realpath(f"/proc/{pids[0]}/exe") == str(PARENT.resolve())
        # the interpreter is > 10 MB resident; the parent a few MB, + 64 MB touched when asked
        assert rss_kb(pids[0]) < 6_000 < 10_000 < rss_kb(os.getpid())
        assert rss_kb(pids[1]) > rss_kb(pids[0]) + 60_000
        # the probe's children are the parent's, not this process's
        assert pids[0] in child_pids()
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}")  # closed: exited and reaped


def test_native_fork_is_cheaper_than_forking_the_interpreter():
    cpu = sorted(os.sched_getaffinity(0))[0]

    def median_us(parent):
        req = WorkerRequest(probe="fork_exit", params={"parent": parent}, min_batch_ns=1, warmup=1, batches=5,
                            max_iterations=10**6, iterations=100, worker_cpu=cpu)
        out = run_worker(req, timeout_s=120)
        assert out.status == "ok", out.message
        per_op = sorted(b["elapsed_ns"] / b["iterations"] / 1e3 for b in out.batches if not b["warmup"])
        assert all(b["parent"] == parent for b in out.batches)
        return per_op[len(per_op) // 2]

    assert median_us("native") < median_us("python")


def test_the_parent_dies_with_its_worker(tmp_path):
    code = ("import sys,time\n"
            "from osbench_analysis.worker.main import Batcher, WorkerRequest\n"
            "b = Batcher(WorkerRequest('fork_alive', {'alive': 5}, 1, 0, 1, 10**6, iterations=1))\n"
            "b.run(1)\n"
            "print(b.native.proc.pid, flush=True)\n"
            "time.sleep(60)\n")
    worker = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        parent = int(worker.stdout.readline())
        assert os.path.exists(f"/proc/{parent}")
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{parent}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{parent}"), "osbench-parent outlived its worker"
    finally:
        worker.kill()
        worker.wait()


@pytest.mark.parametrize("probe,n,params", [
    ("fork_exit", 250, {"outstanding": 100}),   # osbench: 100 forked, then all waited for
    ("fork_exec", 120, {"outstanding": 100}),
    ("posix_spawn", 30, {}),
    ("posix_spawn", 30, {"linkage": "static"}),
    ("fork_shell", 10, {}),
    ("exec_only", 50, {}),
    ("exec_only", 50, {"parent": "python", "linkage": "static"}),
    ("proc_terminate", 40, {}),
    ("fork_alive", 30, {"alive": 50}),
    ("fork_exit", 20, {"parent": "python", "parent_mb": 16}),
])
def test_process_probes_count_their_work(probe, n, params):
    assert run_batch(probe, n, **params)["work_done"] == n


def test_sleeping_children_live_only_within_a_batch():
    # fork_alive and proc_terminate fork sleepers in setup; after the batch none is left
    with Batcher(request("fork_alive", 5, alive=40)) as b:
        b.run(5)
        assert descendants(b.native.proc.pid) == set()
    with Batcher(request("proc_terminate", 30, parent="python")) as b:
        assert b.run(30)["work_done"] == 30     # each of the 30 sleepers died of SIGTERM


def test_fork_shell_really_runs_the_program_through_the_shell():
    b = Batcher(request("fork_shell", 5, parent="python"))
    b._keep[1] = b.ffi.new("char[]", b"/bin/false")  # the shell runs it: exit 1, so no run counts
    b.params.helper_path = b._keep[1]
    with pytest.raises(ProbeFailed, match="0 of 5|5 of 5 shell runs did not exit 0"):
        b.run(5)


@pytest.mark.parametrize("probe,n,params", [
    ("thread_create_join", 300, {"outstanding": 100}),
    ("thread_create_join", 300, {}),
    ("mutex_uncontested", 100_000, {}),
    ("condvar_pingpong", 5_000, {}),
    ("thread_pingpong_game", 5_000, {"experiment": 1}),
    ("thread_pingpong_game", 5_000, {"experiment": 2}),
    ("thread_pingpong_game", 5_000, {"experiment": 3}),
    ("malloc_free_small", 2_500_000, {"blocks": 1_000_000}),
])
def test_thread_and_malloc_probes_count_their_work(probe, n, params):
    r = run_batch(probe, n, **params)
    assert r["work_done"] == n and r["elapsed_ns"] > 0


def test_games_create_their_players_before_the_batch_and_join_them_after():
    # experiment 3: 500 games, 1000 player threads with 32 KiB stacks, all in this process
    threads_before = len(os.listdir("/proc/self/task"))
    from osbench_analysis._probes import ffi, lib
    p = ffi.new("osb_params *")
    p.child_cpu, p.size = -1, 3
    p.workdir = p.helper_path = ffi.NULL
    out = ffi.new("osb_result *")
    assert lib.osb_run(b"thread_pingpong_game", p, 2_000, out) == 0
    assert out.work_done == 2_000
    assert len(os.listdir("/proc/self/task")) == threads_before


def test_a_worker_run_of_a_forking_probe_leaves_no_process():
    out = run_worker(request("fork_alive", 20, alive=10), timeout_s=60)
    assert out.status == "ok", out.message
    assert [b["work_done"] for b in out.batches] == [20, 20]
    assert {b["parent"] for b in out.batches} == {"native"}


def test_heap_and_thread_probes_run_in_the_native_parent():
    """malloc and thread creation depend on the process they run in (the interpreter's heap
    does not give memory back between rounds as a small C process does): osbench-parent runs
    them, parent=python keeps the old way, and the recorded parent says which."""
    for name, n, params in (("malloc_free_small", 2000, {"blocks": 1000}), ("thread_create_join", 20, {"outstanding": 10})):
        spec = registry.PROBES[name]
        assert spec.in_native_parent and not spec.forks
        assert registry.resolve_params(spec, {})["parent"] == "native"
        with Batcher(request(name, n, **params)) as b:
            r = b.run(n)
            assert b.parent == "native" and b.native is not None
            assert os.path.realpath(f"/proc/{b.native.proc.pid}/exe") == str(PARENT.resolve())
            assert r["work_done"] == n
        with Batcher(request(name, n, parent="python", **params)) as b:
            assert b.parent == "python" and b.native is None and b.run(n)["work_done"] == n
    assert registry.parent_of("malloc_free_small", {}) == "python"   # recorded before: the worker ran it
