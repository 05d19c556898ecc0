import os
import re
from pathlib import Path

import pytest

import hermetic


def pytest_configure(config):
    """Before collection: the suite reads none of this checkout's measurements (tests/hermetic.py)."""
    import tempfile

    config._osbench_default_root = tempfile.mkdtemp(prefix="osbench-tests-default-root-")
    hermetic.install(Path(config._osbench_default_root))


def pytest_unconfigure(config):
    import shutil

    if getattr(config, "_osbench_default_root", None):
        with hermetic.reading_the_checkout():   # the hook refuses to list the stand-in root: rmtree would leave it
            shutil.rmtree(config._osbench_default_root, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_live_data_read():
    """A read of the live data that the code under test caught and went on from still fails the test."""
    hermetic.take_violations()
    yield
    seen = hermetic.take_violations()
    if seen:
        pytest.fail("the test read the checkout's live data (tests/hermetic.py):\n  " + "\n  ".join(seen[:5]),
                    pytrace=False)


@pytest.fixture(scope="session")
def committed_root(tmp_path_factory):
    """A campaigns root holding a copy of the committed campaigns (git ls-files) and nothing else: the
    committed data as a store, for tests of it (never the checkout's data/campaigns, where a clone's
    own rounds land).  Read it; a test that changes campaigns makes a root of its own."""
    assert hermetic.committed_campaigns(), "no committed campaigns: the committed-data tests need a git checkout"
    return hermetic.copy_committed("data/campaigns", tmp_path_factory.mktemp("committed") / "campaigns")


@pytest.fixture(scope="session", autouse=True)
def committed_data_only(committed_root, tmp_path_factory):
    """What the package reads from the checkout by default, where measuring adds this machine's files,
    pointed at copies of the committed files alone: the counted crossings and system-call mixes
    (data/crossing_counts/, data/syscall_mix/: `make count`) and the synthetic campaigns' template
    (store/synthetic.py: the oldest campaign of data/campaigns)."""
    from osbench_analysis.analysis import crossing_counts, syscall_mix
    from osbench_analysis.store import synthetic

    saved = crossing_counts.COUNTS_DIR, syscall_mix.MIX_DIR, synthetic.CAMPAIGNS_DIR
    base = tmp_path_factory.mktemp("committed-data")
    crossing_counts.COUNTS_DIR = hermetic.copy_committed("data/crossing_counts", base / "crossing_counts")
    syscall_mix.MIX_DIR = hermetic.copy_committed("data/syscall_mix", base / "syscall_mix")
    synthetic.CAMPAIGNS_DIR = committed_root
    yield base
    crossing_counts.COUNTS_DIR, syscall_mix.MIX_DIR, synthetic.CAMPAIGNS_DIR = saved


@pytest.fixture(scope="session", autouse=True)
def private_host_lock(tmp_path_factory):
    """Tests take their own host lock: a researcher's campaign measuring on this
    machine must not make the suite fail, nor the suite's tiny campaigns hold
    up the researcher's (tests/test_reliability.py checks the lock itself)."""
    from osbench_analysis.measure import hostlock

    old = os.environ.get(hostlock.LOCK_ENV)
    os.environ[hostlock.LOCK_ENV] = str(tmp_path_factory.mktemp("lock") / "osbench-measure.lock")
    yield os.environ[hostlock.LOCK_ENV]
    if old is None:
        os.environ.pop(hostlock.LOCK_ENV, None)
    else:
        os.environ[hostlock.LOCK_ENV] = old


@pytest.fixture(scope="session", autouse=True)
def private_values_cache(tmp_path_factory):
    """The analysis' on-disk cache (store/values_cache.py) in a folder of the session's own: the suite's
    many temporary campaigns never reach the checkout's build/cache (the notebooks' kernels inherit it)."""
    from osbench_analysis.paths import CACHE_ENV

    old = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("values-cache"))
    yield os.environ[CACHE_ENV]
    if old is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = old


@pytest.fixture(scope="session", autouse=True)
def ctrl_c_not_ignored():
    """A suite started in the background (`make test &` from a script) inherits SIGINT ignored, and so would
    every runner a test interrupts: Python then never raises KeyboardInterrupt, and the Ctrl-C tests wait
    for a runner that goes on measuring.  A terminal's Ctrl-C is what those tests mean."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield


@pytest.fixture(scope="session", autouse=True)
def no_widget_teardown_at_exit():
    """Widgets a test made (the explorer, the table filter) have no kernel to close their comms with; left
    to Widget.__del__ at interpreter exit, each printed an ImportError traceback under a passing run."""
    yield
    import sys

    if "ipywidgets" in sys.modules:
        sys.modules["ipywidgets"].Widget.__del__ = lambda self: None


@pytest.fixture
def campaigns_root(tmp_path):
    return tmp_path / "campaigns"


@pytest.fixture(scope="session")
def tiny_campaign(tmp_path_factory):
    """One real, small campaign over the probes the store and analysis tests need."""
    from osbench_analysis.measure import runner  # pandas and scipy: not in the controller of `pytest -n`

    root = tmp_path_factory.mktemp("campaigns")
    cfg = runner.make_config("quick", output=str(root), runs=2, batches=3, min_batch_ms=2.0, precision_target=0,
                             probes=["null_syscall", "fork_exit", "fork_exec", "pipe_pingpong", "test_crash_segv"],
                             variants={})
    return runner.run_campaign(cfg, progress=False)


def relabel(c, root, new_id: str, environment: str, *, slower: float = 1.0, minutes: int = 1):
    """A sealed copy of campaign c, written by the real store, as if measured in
    another environment `slower` times slower (never a sealed folder edited)."""
    import dataclasses
    import datetime as dt

    from osbench_analysis.store import campaigns as store

    s = c.samples.copy()
    s["campaign_id"], s["environment"] = new_id, environment
    s["arch_class"] = "monolithic" if environment == "native" else "user-space-kernel"
    s["elapsed_ns"] = (s["elapsed_ns"] * slower).round().astype("int64")
    s["per_op_ns"] = s["elapsed_ns"] / s["iterations"]
    created = dt.datetime.fromisoformat(c.manifest.created_utc) + dt.timedelta(minutes=minutes)
    m = dataclasses.replace(c.manifest, campaign_id=new_id, environment=environment,
                            arch_class=s["arch_class"].iloc[0], created_utc=created.isoformat())
    return store.load_campaign(store.write_campaign(root, new_id, s, m))


@pytest.fixture(scope="session")
def tiny_root(tiny_campaign, tmp_path_factory):
    """A campaigns folder holding only a copy of tiny_campaign, for tests that list or select."""
    root = tmp_path_factory.mktemp("tiny-root")
    relabel(tiny_campaign, root, tiny_campaign.id, "native", minutes=0)
    return root


def two_cpus() -> bool:
    return len(os.sched_getaffinity(0)) >= 2


# Fixtures that start worker processes: every test using one is in the slow tier.
_WORKER_FIXTURES = {"tiny_campaign", "tiny_root", "notebook_campaign", "three", "two_environments"}


# The files of `make test` with the most CPU seconds, the longest first (a full run with per-test CPU
# times, 2026-11-28): with `--dist loadfile` a worker takes the next file when it is done, so the long
# ones start at once and the short ones fill the end instead of one long file running alone on one core.
# The sandbox tests (the longest chain) stay first, so the worker they land on starts them at once.
_LONGEST_FIRST = ("test_environments_real.py", "test_paper_layouts.py", "test_fleet.py",
                  "test_qemu_boot_kernels.py", "test_notebooks.py", "test_qemu_boot.py", "test_runner_rounds.py",
                  "test_reliability.py", "test_counting.py", "test_reference_notebook.py",
                  "test_analysis_paper.py", "test_fleet_security.py")


_SLOW_MODULE = re.compile(r"^pytestmark\s*=.*\bpytest\.mark\.slow\b", re.M)


def pytest_ignore_collect(collection_path, config):
    """The fast tier (-m "not slow") does not import a test module marked slow as a whole (its
    `pytestmark`): none of its tests would run, and its imports (dask's, the notebooks') cost each worker."""
    if (config.getoption("markexpr", "") or "").strip() != "not slow" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    try:
        return True if _SLOW_MODULE.search(collection_path.read_text()) else None
    except OSError:
        return None


def pytest_collection_finish(session):
    """What the imports and the collection made (pandas, SciPy, Matplotlib: over a million objects) is moved
    out of the garbage collector's sight: its full collections during the run, and pytest's own at the
    end, then scan only what the tests make."""
    import gc

    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _WORKER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


def child_pids() -> set[int]:
    """Live and zombie children of this process (all its threads'): what a probe leaves behind."""
    pids = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids
