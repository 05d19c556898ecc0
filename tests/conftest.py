import os

import pytest

from osbench_analysis import runner


@pytest.fixture(scope="session", autouse=True)
def private_host_lock(tmp_path_factory):
    """Tests take their own host lock: a researcher's campaign measuring on this
    machine must not make the suite fail, nor the suite's tiny campaigns hold
    up the researcher's (tests/test_reliability.py checks the lock itself)."""
    from osbench_analysis import hostlock

    old = os.environ.get(hostlock.LOCK_ENV)
    os.environ[hostlock.LOCK_ENV] = str(tmp_path_factory.mktemp("lock") / "osbench-measure.lock")
    yield os.environ[hostlock.LOCK_ENV]
    if old is None:
        os.environ.pop(hostlock.LOCK_ENV, None)
    else:
        os.environ[hostlock.LOCK_ENV] = old


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
