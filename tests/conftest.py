import os

import pytest

from osbench_analysis import runner


@pytest.fixture
def campaigns_root(tmp_path):
    return tmp_path / "campaigns"


@pytest.fixture(scope="session")
def tiny_campaign(tmp_path_factory):
    """One real, small campaign over the probes the store and analysis tests need."""
    root = tmp_path_factory.mktemp("campaigns")
    cfg = runner.make_config("quick", output=str(root), runs=2, batches=3, min_batch_ms=2.0, precision_target=0,
                             probes=["null_syscall", "fork_exit", "fork_exec", "pipe_pingpong", "test_crash_segv"],
                             variants={})
    return runner.run_campaign(cfg, progress=False)


def two_cpus() -> bool:
    return len(os.sched_getaffinity(0)) >= 2
