"""Campaigns survive what happens to long jobs (issue 11): a runner killed by
SIGKILL leaves no process and, after the next start, no folder; an interrupted
campaign resumes into one sealed campaign; one measurement at a time per host;
a full or read-only disk at sealing time keeps the journal."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from osbench_analysis.measure import hostlock
from osbench_analysis.measure import journal
from osbench_analysis.worker import launch
from osbench_analysis.store import owners
from osbench_analysis.measure import runner
from osbench_analysis.store import campaigns as store

# --- helpers -----------------------------------------------------------------


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except ProcessLookupError:
        return None


def _marked(mark: str) -> list[int]:
    """Live processes whose environment carries mark (a worker and all it forked)."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) != os.getpid() and mark.encode() in _read(f"/proc/{p}/environ"):
            if b"\nState:\tZ" not in _read(f"/proc/{p}/status"):
                out.append(int(p))
    return out


def _guards_of(runner_pid: int) -> list[int]:
    want = [str(launch.GUARD).encode(), str(runner_pid).encode()]
    return [int(p) for p in os.listdir("/proc")
            if p.isdigit() and _read(f"/proc/{p}/cmdline").split(b"\0")[:2] == want]


def _forks_of(pid: int) -> int:
    """Processes created on the host since pid (the newest pid in /proc/loadavg minus it): a
    fork-heavy worker's children, which live microseconds and are too brief to list."""
    return int(_read("/proc/loadavg").split()[-1]) - pid


def _probe_workers(mark: str, probe: str) -> list[int]:
    """The marked workers running `probe`: not the pre-flight's (null_syscall), which carries the same
    command_prefix and, on a loaded host, lives long enough to be taken for the worker asked for."""
    return [p for p in _marked(mark) if f'"probe": "{probe}"'.encode() in _read(f"/proc/{p}/cmdline")]


_RUNNERS: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def no_runner_left():
    """A runner a failed test did not kill holds the session's host lock (with a hung worker, for its
    600 s timeout): every later campaign of this pytest process would be refused, one failure becoming many."""
    yield
    while _RUNNERS:
        proc = _RUNNERS.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _start_runner(tmp_path: Path, **params) -> subprocess.Popen:
    """A runner in its own process, its scratch folders under tmp_path/tmp."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    code = f"from osbench_analysis.measure import runner; runner.measure('quick', progress=False, **{params!r})"
    _RUNNERS.append(subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    return _RUNNERS[-1]


def _wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _kill_runner_and_check_nothing_survives(proc: subprocess.Popen, mark: str) -> None:
    guards = _guards_of(proc.pid)
    assert guards, "the worker was not started under osbench-guard"
    proc.kill()  # SIGKILL: the runner gets no chance to clean up
    proc.wait(timeout=10)
    left = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = _marked(mark) + [g for g in guards if owners.start_ticks(g) is not None]
        if not left:
            break
        time.sleep(0.05)
    assert left == [], f"processes outlived their runner: {[_read(f'/proc/{p}/cmdline') for p in left]}"


def _next_start_sweeps(tmp_path: Path, workdir: Path, monkeypatch) -> store.Campaign:
    """The next runner (a tiny campaign) reclaims what the killed one left."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return runner.measure("quick", progress=False, output=str(tmp_path / "next"), workdir=str(workdir),
                          probes=["null_syscall"], runs=1, batches=1, min_batch_ms=1.0, precision_target=0,
                          placements=["same_cpu"], variants={})[0]


# --- no orphans --------------------------------------------------------------


@pytest.mark.slow
def test_sigkill_of_the_runner_during_a_hung_probe_leaves_no_process(tmp_path, monkeypatch):
    mark = f"OSBENCH_TEST_MARK={uuid.uuid4().hex}"
    proc = _start_runner(tmp_path, output=str(tmp_path / "c"), probes=["test_hang"], runs=1, batches=1,
                         min_batch_ms=1.0, precision_target=0, placements=["same_cpu"], variants={},
                         timeout_s=600, command_prefix=["env", mark])
    _wait_for(lambda: _probe_workers(mark, "test_hang"), 30, "the hung worker")
    time.sleep(0.3)
    _kill_runner_and_check_nothing_survives(proc, mark)
    scratch = list((tmp_path / "tmp").glob("osbench-campaign-*"))
    assert len(scratch) == 1  # the dead runner could not remove it; the next one does
    _next_start_sweeps(tmp_path, tmp_path / "tmp", monkeypatch)
    assert list((tmp_path / "tmp").glob("osbench-*")) == []


@pytest.mark.slow
def test_sigkill_of_the_runner_during_a_fork_heavy_probe_leaves_no_process(tmp_path, monkeypatch):
    mark = f"OSBENCH_TEST_MARK={uuid.uuid4().hex}"
    proc = _start_runner(tmp_path, output=str(tmp_path / "c"), probes=["fork_exit"], runs=1, batches=50,
                         min_batch_ms=2000.0, precision_target=0, placements=["same_cpu"], variants={},
                         timeout_s=600, command_prefix=["env", mark])
    (worker,) = _wait_for(lambda: _probe_workers(mark, "fork_exit"), 30, "the worker")
    # well into its forking batches (children live microseconds: count the worker's forks, not them)
    _wait_for(lambda: _forks_of(worker) > 1000, 30, "the worker forking")
    _kill_runner_and_check_nothing_survives(proc, mark)
    _next_start_sweeps(tmp_path, tmp_path / "tmp", monkeypatch)
    assert list((tmp_path / "tmp").glob("osbench-*")) == []


@pytest.mark.slow
def test_sigkill_of_the_runner_during_an_environment_run_leaves_no_process_and_no_folder(tmp_path, monkeypatch):
    # Only native is registered in this tree: a wrapper plays the sandbox, with a
    # helper that leaves the process group (setsid) the way sandbox daemons do.
    mark = f"OSBENCH_TEST_MARK={uuid.uuid4().hex}"
    work = tmp_path / "work"
    work.mkdir()
    wrapper = ["env", mark, "sh", "-c", 'setsid sleep 3001 & exec "$@"', "sandbox"]
    proc = _start_runner(tmp_path, output=str(tmp_path / "c"), probes=["file_create_delete"], runs=1, batches=50,
                         min_batch_ms=2000.0, precision_target=0, placements=["same_cpu"], variants={},
                         timeout_s=600, workdir=str(work), command_prefix=wrapper)
    # the helper really leaves the worker's session (setsid runs a moment after its fork: wait for it)
    _wait_for(lambda: list(work.glob("osbench-*")) and len({_sid(p) for p in _marked(mark)} - {None}) == 2, 30,
              "the wrapped worker and the helper in its own session")
    time.sleep(0.5)
    _kill_runner_and_check_nothing_survives(proc, mark)
    assert len(list(work.glob("osbench-*"))) == 1  # the probe's private folder, left by the dead runner
    _next_start_sweeps(tmp_path, work, monkeypatch)
    assert list(work.iterdir()) == [] and list((tmp_path / "tmp").glob("osbench-*")) == []


def test_sweep_removes_only_folders_whose_owner_is_gone(tmp_path):
    mine = owners.private_dir("osbench-", tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = tmp_path / f"osbench-{dead.pid}.{12345}-abc"   # pid recycled or not: start time differs
    gone_campaign = tmp_path / f"osbench-campaign-{dead.pid}.1-abc"
    gone_tmp = tmp_path / f".tmp-some-campaign-{dead.pid}.7"
    unowned = tmp_path / "osbench-legacy"
    for d in (gone, gone_campaign, gone_tmp, unowned):
        (d / "sub").mkdir(parents=True)
    (gone_tmp / "sub").chmod(0o555)
    removed = owners.sweep_stale([tmp_path])
    assert sorted(removed) == sorted([gone, gone_campaign, gone_tmp])
    assert mine.is_dir() and unowned.is_dir()


# --- resume ------------------------------------------------------------------

RESUMABLE = dict(probes=["null_syscall", "pipe_pingpong"], runs=4, batches=2, min_batch_ms=20.0, precision_target=0,
                 placements=["same_cpu"], variants={}, campaign_id="resumable")


@pytest.mark.slow
def test_a_campaign_killed_after_k_runs_resumes_into_one_sealed_campaign(tmp_path):
    root = tmp_path / "campaigns"
    proc = _start_runner(tmp_path, output=str(root), **RESUMABLE)
    jfile = journal.folder(root, "resumable") / journal.JOURNAL_FILE
    _wait_for(lambda: jfile.exists() and jfile.read_bytes().count(b"\n") >= 3, 60, "three journaled runs")
    proc.kill()
    proc.wait(timeout=10)
    kept = journal.Journal.open(root, "resumable").entries
    k = len(kept)
    assert 3 <= k < 8
    assert store.catalog(root).empty  # an interrupted campaign is not a campaign
    with open(jfile, "ab") as f:  # a write cut short: half a line, no newline
        f.write(b"0123abcd {\"env\": \"native\", \"rows\": [")

    with pytest.raises(runner.ConfigError, match="runs=5 .*interrupted campaign: 4"):
        runner.measure("quick", progress=False, resume="resumable", output=str(root), runs=5)
    c = runner.measure(None, progress=False, resume="resumable", output=str(root))[0]

    assert c.id == "resumable" and not journal.folder(root, "resumable").exists()
    keys = sorted(zip(c.runs["probe"], c.runs["run"]))
    assert keys == sorted((p, r) for p in RESUMABLE["probes"] for r in range(4))  # every run, once
    (interruption,) = c.manifest.interruptions
    assert interruption["runs_kept"] == k and interruption["torn_entry_dropped"] is True
    assert interruption["interrupted_pid"] == proc.pid
    # the runs measured before the kill are sealed exactly as journaled
    for e in kept:
        r = e["run"]
        sealed = c.samples[(c.samples["probe"] == r["probe"]) & (c.samples["run"] == r["run"])]
        assert list(sealed["elapsed_ns"]) == [row["elapsed_ns"] for row in e["rows"]]
        assert set(sealed["worker_pid"]) == {row["worker_pid"] for row in e["rows"]}
    # and the rest were measured by the resumed runner's workers
    later = c.runs.iloc[k:]
    assert (later["status"] == "ok").all() and len(later) == 8 - k
    assert c.manifest.measuring_seconds >= kept[-1]["measuring_s"]


def _journal_with(tmp_path, lines: bytes) -> Path:
    j = journal.Journal.create(tmp_path, "j", {"config": {}, "campaign_ids": ["j"]})
    (j.path / journal.JOURNAL_FILE).write_bytes(lines)
    return j.path


def test_journal_drops_a_torn_last_line_and_refuses_a_damaged_middle(tmp_path):
    j = journal.Journal.create(tmp_path, "a", {"config": {}, "campaign_ids": ["a"]})
    j.append({"n": 1})
    j.append({"n": 2})
    good = (j.path / journal.JOURNAL_FILE).read_bytes()
    for torn in (b"0" * 64 + b' {"n": 3}', good.splitlines()[0] + b"x\n"):  # no newline; bad checksum
        (j.path / journal.JOURNAL_FILE).write_bytes(good + torn)
        again = journal.Journal.open(tmp_path, "a")
        assert [e["n"] for e in again.entries] == [1, 2] and again.torn_bytes == len(torn)
        again.drop_torn()
        again.append({"n": 3})
        assert [e["n"] for e in journal.Journal.open(tmp_path, "a").entries] == [1, 2, 3]
        (j.path / journal.JOURNAL_FILE).write_bytes(good)
    lines = good.splitlines(keepends=True)
    (j.path / journal.JOURNAL_FILE).write_bytes(lines[0].replace(b'"n":1', b'"n":9') + lines[1])
    with pytest.raises(journal.JournalError, match="line 1 fails its checksum"):
        journal.Journal.open(tmp_path, "a")
    with pytest.raises(journal.JournalError, match="interrupted campaign 'a' is waiting"):
        journal.Journal.create(tmp_path, "a", {})
    with pytest.raises(journal.JournalError, match="no interrupted campaign 'zz'.*there: a"):
        journal.Journal.open(tmp_path, "zz")


@pytest.mark.slow
def test_resume_is_refused_when_the_probe_code_changed(tmp_path):
    root = tmp_path / "campaigns"
    state = {"config": runner.asdict(runner.make_config("quick", **{**RESUMABLE, "output": str(root)})),
             "campaign_ids": ["resumable"], "owner": "1.None", "interruptions": [], "created_utc":
             "2026-01-01T00:00:00+00:00", "code": {"probes_source_sha256": "0" * 64, "probes_built_sha256": "0" * 64}}
    root.mkdir()
    journal.Journal.create(root, "resumable", json.loads(json.dumps(state)))
    with pytest.raises(journal.JournalError, match="probe code changed"):
        runner.measure(None, progress=False, resume="resumable", output=str(root))


# --- one measurement at a time ------------------------------------------------


def test_a_second_holder_is_refused_with_who_holds_the_host(tmp_path):
    path = tmp_path / "lock"
    with hostlock.measuring(["first-campaign"], path=path):
        with pytest.raises(hostlock.HostBusy, match=rf"campaign first-campaign \(pid {os.getpid()}.*--wait"):
            with hostlock.measuring(["second"], path=path):
                pass
    with hostlock.measuring(["second"], path=path):  # free again once released
        assert hostlock.holder(path)["campaigns"] == ["second"]


@pytest.mark.slow
def test_a_second_campaign_refuses_or_waits_while_the_host_is_measuring(tmp_path):
    lock = tmp_path / "host.lock"
    env = {**os.environ, hostlock.LOCK_ENV: str(lock)}
    tiny = ["--probes", "null_syscall", "--runs", "1", "--batches", "1", "--min-batch-ms", "1", "--placements",
            "same_cpu", "--precision-target", "0", "--output", str(tmp_path / "c"), "--no-progress"]
    cli = [sys.executable, "-m", "osbench_analysis.cli"]
    with hostlock.measuring(["holding-campaign"], path=lock):
        refused = subprocess.run([*cli, "run", *tiny], env=env, capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2
        assert "busy measuring campaign holding-campaign" in refused.stderr and "--wait" in refused.stderr
        listing = subprocess.run([*cli, "list", "--root", str(tmp_path / "c")], env=env, capture_output=True,
                                 text=True, timeout=60)
        assert listing.returncode == 0  # listing never takes the lock
        waiting = subprocess.Popen([*cli, "run", "--wait", *tiny], env=env, stderr=subprocess.PIPE, text=True,
                                   stdout=subprocess.PIPE)
        import threading

        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(waiting.stderr.readline, "")), daemon=True)
        reader.start()
        # queued behind the holder (its start-up alone takes seconds on a loaded machine: wait for its line)
        _wait_for(lambda: any("waiting for" in line for line in lines), 60, "the second run to wait")
        assert waiting.poll() is None
    out = waiting.stdout.read()
    waiting.wait(timeout=60)
    reader.join(timeout=10)
    err = "".join(lines)
    assert waiting.returncode == 0, err
    assert "waiting for campaign holding-campaign" in err and "sealed campaign" in out


# --- disk full / unwritable at sealing time -------------------------------------


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "osbench-test", str(mnt)], capture_output=True,
                       text=True)
    assert r.returncode == 0, f"mounting a tmpfs needs root: {r.stderr}"
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt: Path) -> Path:
    filler = mnt / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        except OSError:
            pass
    return filler


@pytest.mark.slow
def test_disk_full_or_read_only_at_sealing_keeps_the_journal_and_publishes_nothing(tiny_tmpfs, monkeypatch):
    root = tiny_tmpfs / "campaigns"
    real_write = store.write_campaign
    sabotage = {"how": "fill"}

    def write_after_sabotage(*a, **kw):
        if sabotage["how"] == "fill":
            _fill(tiny_tmpfs)
        elif sabotage["how"] == "ro":
            subprocess.run(["mount", "-o", "remount,ro", str(tiny_tmpfs)], check=True)
        return real_write(*a, **kw)

    monkeypatch.setattr(store, "write_campaign", write_after_sabotage)
    params = dict(probes=["null_syscall"], runs=2, batches=2, min_batch_ms=1.0, precision_target=0,
                  placements=["same_cpu"], variants={}, campaign_id="sealme", output=str(root))
    with pytest.raises(runner.SealError, match=r"No space left on device \(ENOSPC\).*2 measured worker run"):
        runner.measure("quick", progress=False, **params)
    names = sorted(p.name for p in root.iterdir())
    assert names == [".partial-sealme"]  # no campaign, no half-sealed .tmp- folder
    assert len(journal.Journal.open(root, "sealme").entries) == 2

    (tiny_tmpfs / "filler").unlink()
    sabotage["how"] = "ro"
    with pytest.raises(runner.SealError, match="not writable|Read-only file system"):
        runner.measure(None, progress=False, resume="sealme", output=str(root))
    subprocess.run(["mount", "-o", "remount,rw", str(tiny_tmpfs)], check=True)
    assert sorted(p.name for p in root.iterdir()) == [".partial-sealme"]
    assert len(journal.Journal.open(root, "sealme").entries) == 2

    sabotage["how"] = None
    c = runner.measure(None, progress=False, resume="sealme", output=str(root))[0]
    assert sorted(p.name for p in root.iterdir()) == ["sealme"]
    assert len(c.runs) == 2 and len(c.manifest.interruptions) == 2
    store.verify_seal(c.path)
