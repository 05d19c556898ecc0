"""Ctrl-C during `make all`'s measuring step (issue 41 item 4, the gap left): SIGINT to the terminal's
foreground process group reached papermill, which gave up at once ("Aborted!", exit 1) while the kernel, in a
session of its own, died without cleaning up (its scratch folder left behind).  Now the interrupt is passed
on to the kernel, the runner stops as `osbench run` does, and the last line says what was interrupted and
how to resume.  A real process group, a real SIGINT, a tiny native campaign."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ours(marker: str) -> dict[int, str]:
    """pid -> command line of every process whose environment holds ``marker``."""
    got = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker.encode() in (d / "environ").read_bytes():
                    got[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                pass
    return got


def _kernel(marker: str) -> list[int]:
    """The notebook's kernel: the ipykernel process whose parent is not one too (the kernel forking a worker
    leaves a child with the kernel's command line until it execs; the full suite once saw two)."""
    def ppid(pid: int) -> int | None:
        try:
            return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return None                          # gone meanwhile: a fork that exited, not the kernel
    ipk = [pid for pid, cmd in _ours(marker).items() if "ipykernel" in cmd]
    parents = {pid: ppid(pid) for pid in ipk}
    return [pid for pid, parent in parents.items() if parent is not None and parent not in ipk]


@pytest.mark.slow
def test_ctrl_c_while_the_notebook_measures_ends_in_one_line_leaving_nothing_running(tmp_path):
    root, lock = tmp_path / "campaigns", tmp_path / "lock"
    marker = f"OSBENCH_LOCK_FILE={lock}"
    params = {"probes": ["null_syscall"], "runs": 40, "batches": 3, "warmup": 0, "min_batch_ms": 5,
              "precision_target": 0, "placements": ["same_cpu"], "output": str(root)}
    p = subprocess.Popen([sys.executable, "-m", "osbench_analysis.papermill_run", "--log-level", "WARNING",
                          "-k", "python3", "--no-progress-bar", str(REPO / "notebooks" / "run_campaign.ipynb"),
                          str(tmp_path / "run.ipynb"), "-y", json.dumps(params)],
                         cwd=REPO, env={**os.environ, "OSBENCH_LOCK_FILE": str(lock)}, start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        while not any(j.stat().st_size for j in root.glob(".partial-*/journal.jsonl")):   # a run measured
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.1)
        kernel = _kernel(marker)
        assert len(kernel) == 1, kernel
        os.killpg(p.pid, signal.SIGINT)             # Ctrl-C: the foreground group (the kernel has its own)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130, err
    (journal,) = root.glob(".partial-*")
    cid = journal.name[len(".partial-"):]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"{REPO / 'notebooks' / 'run_campaign.ipynb'}: interrupted: campaign {cid} interrupted")
    assert f"osbench run --resume {cid} --output {root}" in last
    assert "Traceback" not in err + out and "KeyboardInterrupt" not in err + out and "Aborted" not in err
    deadline = time.monotonic() + 10
    while _ours(marker) and time.monotonic() < deadline:    # the kernel, its guards and workers all gone
        time.sleep(0.2)
    assert _ours(marker) == {}
    assert not list(Path(tempfile.gettempdir()).glob(f"osbench-campaign-{kernel[0]}.*"))   # its scratch removed
    assert str(tmp_path) not in Path("/proc/mounts").read_text()
