"""Issue #22: UML's malloc_free_small read 0.36x native because, with the old
default blocks=0, a group was the whole calibrated batch: UML calibrated to
~5,000 blocks (heap kept, no page fault), native to ~100,000 (heap trimmed and
faulted back, one minor fault per ~46 blocks): not the same work.  The default
is now a fixed group, so the work per block does not follow the batch size."""
from __future__ import annotations

from osbench_analysis.catalog import registry
from osbench_analysis.worker.main import WorkerRequest, run_request


def faults_per_block(params: dict, iterations: int) -> float:
    """Minor page faults per block of the measured batches (osbench-parent, fixed batch size)."""
    out = []
    run_request(WorkerRequest(probe="malloc_free_small", params=params, min_batch_ns=0, warmup=1, batches=3,
                              max_iterations=10**6, iterations=iterations), out.append)
    batches = [o for o in out if o["kind"] == "batch" and not o["warmup"]]
    assert batches and all(b["work_done"] == iterations for b in batches)
    return max(b["minflt"] for b in batches) / iterations


def test_the_default_group_does_the_same_work_whatever_the_batch_size():
    default = registry.resolve_params(registry.get_probe("malloc_free_small"), {})
    assert default["blocks"] == 1000
    small, large = faults_per_block(default, 5_000), faults_per_block(default, 100_000)
    # the heap of one group is kept between groups and batches: no fault per block, small batch or large
    assert small < 1e-3 and large < 1e-3, (small, large)


def test_the_whole_batch_as_one_group_does_not():
    # what made UML read faster than native: the work per block follows the batch size
    small = faults_per_block({"blocks": 0, "parent": "native"}, 5_000)
    large = faults_per_block({"blocks": 0, "parent": "native"}, 100_000)
    assert small < 1e-3 and large > 0.01, (small, large)
