"""Each probe does the work it claims: counted by the probe, checked from outside."""
import os

import pytest

from osbench_analysis.catalog import registry
from osbench_analysis.worker.launch import run_worker
from osbench_analysis.worker.main import Batcher, ProbeFailed, WorkerRequest, helper_path
from conftest import child_pids

# Every test here starts worker processes.
pytestmark = pytest.mark.slow


def request(probe, iterations, **kw):
    return WorkerRequest(probe=probe, params=kw.pop("params", {}), min_batch_ns=1, warmup=0, batches=2,
                         max_iterations=10**6, iterations=iterations, **kw)




@pytest.fixture(autouse=True)
def children_before():
    # Other tests may leave long-lived helpers of their own (multiprocessing's
    # resource tracker); a probe is judged only on the children it made.
    global _BEFORE
    _BEFORE = child_pids()


def no_children_left():
    """Every child a probe forked was reaped: none alive, none a zombie."""
    assert child_pids() <= _BEFORE


@pytest.mark.parametrize("probe,n", [
    ("null_syscall", 20_000), ("syscall_mix", 5_000), ("thread_create_join", 50),
    ("mmap_touch", 2_000), ("malloc_free_small", 20_000),
])
def test_work_done_equals_iterations_in_a_worker(probe, n):
    out = run_worker(request(probe, n), timeout_s=60)
    assert out.status == "ok", out.message
    assert len(out.batches) == 2
    for b in out.batches:
        assert b["iterations"] == n and b["work_done"] == n
        assert b["elapsed_ns"] > 0


@pytest.mark.parametrize("probe", ["open_close", "stat", "file_create_delete"])
def test_file_probes_do_their_work_and_leave_the_folder_empty(probe, tmp_path):
    out = run_worker(request(probe, 500, workdir=str(tmp_path)), timeout_s=60)
    assert out.status == "ok", out.message
    assert [b["work_done"] for b in out.batches] == [500, 500]
    assert os.listdir(tmp_path) == []


def test_file_create_delete_really_creates_files(tmp_path):
    # A leftover file with a probe's name makes O_EXCL creation fail: proof the
    # probe creates real directory entries, and that it reports the failure.
    (tmp_path / "f3").write_text("in the way")
    with pytest.raises(ProbeFailed, match="create f3 failed"):
        Batcher(request("file_create_delete", 10, workdir=str(tmp_path))).run(10)
    assert os.listdir(tmp_path) == ["f3"]  # its own files were removed even on error


@pytest.mark.parametrize("parent", ["native", "python"])
def test_fork_exit_reaps_every_child(parent):
    with Batcher(request("fork_exit", 30, params={"parent": parent})) as b:
        r = b.run(30)
    assert r["work_done"] == 30
    no_children_left()


@pytest.mark.parametrize("linkage", ["dynamic", "static"])
@pytest.mark.parametrize("parent", ["native", "python"])
def test_fork_exec_runs_the_helper_each_time(linkage, parent):
    params = {"linkage": linkage, "parent": parent}
    assert os.access(helper_path(params), os.X_OK)
    with Batcher(request("fork_exec", 20, params=params)) as b:
        r = b.run(20)
    assert r["work_done"] == 20
    no_children_left()


def test_fork_exec_reports_a_missing_helper():
    b = Batcher(request("fork_exec", 5, params={"parent": "python"}))
    b._keep[1] = b.ffi.new("char[]", b"/nonexistent/helper")
    b.params.helper_path = b._keep[1]
    with pytest.raises(ProbeFailed, match="helper program not executable"):
        b.run(5)


@pytest.mark.parametrize("parent", ["native", "python"])
def test_pipe_pingpong_moves_every_token_and_reaps_its_echo_child(parent):
    with Batcher(request("pipe_pingpong", 1_000, params={"parent": parent})) as b:
        r = b.run(1_000)
    assert r["work_done"] == 1_000          # each reply was the token + 1
    no_children_left()


def test_timings_are_ordered_syscall_fork_exec():
    def median_ns(probe, n):
        out = run_worker(request(probe, n, worker_cpu=sorted(os.sched_getaffinity(0))[0]), timeout_s=60)
        per_op = sorted(b["elapsed_ns"] / b["iterations"] for b in out.batches)
        return per_op[len(per_op) // 2]

    syscall, fork, fork_exec = median_ns("null_syscall", 50_000), median_ns("fork_exit", 50), median_ns("fork_exec", 30)
    assert 0 < syscall < fork < fork_exec


def _compiled(module) -> set[str]:
    return {module.ffi.string(module.lib.osb_probe_name(i)).decode() for i in range(module.lib.osb_probe_count())}


def test_every_registered_probe_exists_in_its_extension_and_test_probes_are_not_shipped():
    from osbench_analysis import _probes, _probes_test

    test_only = {n for n, p in registry.PROBES.items() if p.family == "testonly"}
    assert test_only, "the isolation tests need their crash/hang probes"
    guest_only = {n for n, p in registry.PROBES.items() if p.guest}   # GNU Mach's task: built for the guest alone
    assert guest_only and not guest_only & _compiled(_probes)
    assert _compiled(_probes) == set(registry.PROBES) - test_only - guest_only
    assert _compiled(_probes_test) == test_only - guest_only   # a guest's test probe (sel4_test_fault) is in its task


def test_batches_of_a_grouped_probe_are_whole_groups():
    """osbench's 100 threads (or 1,000,000 blocks) outstanding: a batch is whole groups,
    so a batch calibrated short never measures a smaller group than the one asked for."""
    from osbench_analysis.worker.main import next_iterations, run_request

    assert next_iterations(100, 1_000, 10_000, 10**6, multiple=100) == 1200
    assert next_iterations(100, 1_000, 10**9, 250, multiple=100) == 200      # cap: whole groups
    assert next_iterations(1, 1_000, 10_000, 10**6) == 12                    # ungrouped: unchanged
    assert registry.PROBES["malloc_free_small"].batch_multiple({"blocks": 1000}) == 1000
    assert registry.PROBES["malloc_free_small"].batch_multiple({"blocks": 0}) == 1   # blocks=0: the whole batch
    assert registry.PROBES["malloc_free_small"].batch_multiple() == 1000     # the default: a fixed group
    assert registry.PROBES["null_syscall"].batch_multiple() == 1
    for probe, group in (("malloc_free_small", {"blocks": 1000}), ("thread_create_join", {"outstanding": 10})):
        out = []
        # 50 ms: one group (10 threads) stays far below it even on a loaded CI core, so the
        # calibration must grow the batch (to whole groups)
        run_request(WorkerRequest(probe=probe, params=group, min_batch_ns=50_000_000, warmup=1, batches=2,
                                  max_iterations=10**6), out.append)
        sizes = [o["iterations"] for o in out if o["kind"] == "batch"]
        g = next(iter(group.values()))
        assert sizes[0] == g                                   # calibration starts at one group
        assert all(n % g == 0 for n in sizes) and max(sizes) > g, sizes
        work = [o["work_done"] for o in out if o["kind"] == "batch"]
        assert work == sizes                                   # every block freed, every thread joined
