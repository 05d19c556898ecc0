"""A probe that crashes or hangs is recorded; the caller and the campaign go on."""
import os
import signal

import pytest

from osbench_analysis.worker import launch
from osbench_analysis.measure import runner
from osbench_analysis.store import campaigns as store
from osbench_analysis.worker.main import WorkerRequest

# Every test here starts worker processes.
pytestmark = pytest.mark.slow


def test_crash_is_recorded_and_the_caller_survives():
    req = WorkerRequest(probe="test_crash_segv", params={}, min_batch_ns=10**6, warmup=0, batches=1,
                        max_iterations=10)
    out = launch.run_worker(req, timeout_s=30)
    assert out.status == "crashed"
    assert out.returncode == -signal.SIGSEGV
    assert "SIGSEGV" in out.message


def test_hang_is_killed_at_the_timeout():
    req = WorkerRequest(probe="test_hang", params={}, min_batch_ns=10**6, warmup=0, batches=1, max_iterations=10)
    out = launch.run_worker(req, timeout_s=1.5)
    assert out.status == "timeout"
    assert 1.5 <= out.wall_s < 15


def test_campaign_goes_on_after_crash_and_hang(campaigns_root):
    cfg = runner.make_config("quick", output=str(campaigns_root), runs=1, batches=2, min_batch_ms=1.0, precision_target=0,
                             probes=["test_crash_segv", "test_hang", "null_syscall", "fstat", "write_devnull"],
                             variants={}, placements=["same_cpu"], timeout_s=2)
    c = runner.run_campaign(cfg, progress=False)   # 2 of 5 runs failed: complete (most failed: partial, test_runs_paths_exits)
    status = dict(zip(c.runs["probe"], c.runs["status"]))
    assert status == {"test_crash_segv": "crashed", "test_hang": "timeout", "null_syscall": "ok", "fstat": "ok",
                      "write_devnull": "ok"}
    assert set(c.samples["probe"]) == {"null_syscall", "fstat", "write_devnull"}
    assert len(c.errors) == 2


def test_timeout_kills_grandchildren_too(tmp_path):
    # pipe_pingpong's echo child lives in the worker's process group: a killed
    # worker must not leave it behind.  A 0.3 s timeout cuts a long batch short.
    req = WorkerRequest(probe="pipe_pingpong", params={}, min_batch_ns=10**6, warmup=0, batches=1,
                        max_iterations=10**9, iterations=10**9)
    out = launch.run_worker(req, timeout_s=0.3)
    assert out.status == "timeout"
    leftover = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).find("osbench_analysis.worker.main") >= 0
                and "pipe_pingpong" in _cmdline(p) and str(10**9) in _cmdline(p)]  # this request, not another test's
    assert leftover == []


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def test_command_prefix_wraps_the_worker():
    req = WorkerRequest(probe="null_syscall", params={}, min_batch_ns=10**5, warmup=0, batches=2, max_iterations=10**6)
    wrapped = launch.run_worker(req, timeout_s=30, command_prefix=["env", "OSBENCH_WRAPPED=1"])
    assert wrapped.status == "ok" and len(wrapped.batches) >= 3
    refused = launch.run_worker(req, timeout_s=30, command_prefix=["false"])
    assert refused.status == "error" and refused.batches == []


def test_ctrl_c_during_a_campaign_leaves_nothing_behind(tmp_path):
    import subprocess
    import sys
    import time

    root, work = tmp_path / "campaigns", tmp_path / "work"
    work.mkdir()
    code = ("from osbench_analysis.measure import runner; runner.measure('quick', progress=False, output=%r, workdir=%r, "
            "probes=['file_create_delete'], runs=50, min_batch_ms=200, precision_target=0)"
            % (str(root), str(work)))
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(p.name.startswith("osbench-") for p in work.iterdir()):
        time.sleep(0.02)  # interrupt while a worker is creating files in its private folder
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert list(work.iterdir()) == []
    # no campaign: only the hidden journal a resume continues from
    assert [p.name[:9] for p in root.iterdir()] == [".partial-"] and store.catalog(root).empty
    assert "--resume" in err
