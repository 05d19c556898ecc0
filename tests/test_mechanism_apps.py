"""The application workloads (issue #22) run the real programs and prove it:
a compile leaves an object file, a tar an archive at least as large as its
tree, a key-value session gets back every value it stored; the work dir is
left empty and the server reaped."""
import os

import pytest

from osbench_analysis.catalog import registry
from osbench_analysis.worker.main import Batcher, ProbeFailed, WorkerRequest
from conftest import child_pids

pytestmark = pytest.mark.slow  # each iteration runs a program (a compile: tens of ms)


def request(probe, iterations, workdir, **params):
    return WorkerRequest(probe=probe, params=params, min_batch_ns=1, warmup=0, batches=2,
                         max_iterations=10**6, iterations=iterations, workdir=str(workdir))


@pytest.fixture(autouse=True)
def nothing_left_behind():
    before = child_pids()
    yield
    assert child_pids() <= before, "a workload left a child (alive or zombie)"


@pytest.mark.parametrize("probe,n,params,work_per_iteration", [
    ("app_compile", 2, {}, 1),
    ("app_tar", 3, {}, 1),
    ("app_tar", 2, {"files": 500}, 1),
    ("app_kv", 5, {}, 100),
    ("app_kv", 3, {"requests": 7}, 7),   # odd: the last SET has no GET after it, and still counts
])
def test_each_iteration_is_one_whole_run_of_the_program(probe, n, params, work_per_iteration, tmp_path):
    with Batcher(request(probe, n, tmp_path, **params)) as b:
        for _ in range(2):
            r = b.run(n)
            assert r["work_done"] == n * work_per_iteration
            assert r["work_done"] == registry.PROBES[probe].expected_work(n, params)
    assert os.listdir(tmp_path) == []


def test_the_tar_tree_is_bounded(tmp_path):
    with pytest.raises(ProbeFailed, match="files 20000 > 10000"):
        with Batcher(request("app_tar", 1, tmp_path, files=20000)) as b:
            b.run(1)
    assert os.listdir(tmp_path) == []


def test_the_applications_are_a_list_of_their_own_outside_the_quick_sandbox_set():
    assert set(registry.APPLICATION_PROBES) == {"app_compile", "app_tar", "app_kv"}
    assert not set(registry.APPLICATION_PROBES) & set(registry.ARCHITECTURE_PROBES)
