"""Faults and races (issue 31 part B; reliability review 2026-11-26): a full disk or a damaged journal is one
line and leaves nothing stuck (`osbench discard` drops an interrupted id), the same campaign id is never
measured twice (C3), a dead FUSE server is a failed run (F28), a campaign of no measured batch is not sealed,
the host lock follows no symlink and takes no file it does not own (I28), and `--out-dir` is checked first."""
import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from osbench_analysis import cli
from osbench_analysis.measure import hostlock, journal, runner
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import owners, synthetic
from osbench_analysis.worker import launch

TINY = dict(runs=1, batches=1, min_batch_ms=1.0, precision_target=0, placements=["same_cpu"], variants={})


def _no_workers(monkeypatch):
    def refuse(*a, **kw):
        raise AssertionError("a worker was started")
    monkeypatch.setattr(launch, "run", refuse)


def _state(set_id: str, **change) -> dict:
    cfg = runner.make_config("quick", probes=["null_syscall"], **TINY)
    from dataclasses import asdict

    state = {"config": runner._comparable(asdict(cfg)), "campaign_ids": [set_id], "code": {},
             "created_utc": "2026-11-26T00:00:00+00:00", "owner": "1.None", "interruptions": []}
    state.update(change)
    return state


# --- the journal: full disk, damage, discard ----------------------------------------------------------


def test_a_full_disk_before_the_run_is_one_line_and_leaves_no_stuck_id(tmp_path, monkeypatch):
    """B39: ENOSPC writing state.json left `.partial-<id>` behind, and the id could be neither resumed nor reused."""
    real = journal.write_atomic

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(journal, "write_atomic", full)
    with pytest.raises(journal.JournalError, match=r"cannot start the journal of 'fullid'.*ENOSPC"):
        journal.Journal.create(tmp_path, "fullid", _state("fullid"))
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(journal, "write_atomic", real)
    journal.Journal.create(tmp_path, "fullid", _state("fullid"))   # the id is free again


def test_a_full_disk_while_journaling_is_one_line(tmp_path, monkeypatch):
    """B40: an OSError from journal.append was a traceback."""
    jr = journal.Journal.create(tmp_path, "j", _state("j"))

    def full(*a):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "write", full)
    with pytest.raises(journal.JournalError, match=r"cannot write the journal .*No space left on device"):
        jr.append({"n": 1})


@pytest.mark.parametrize("damage,message", [
    (lambda s: s.pop("config"), "'config' is missing"),                                   # B75
    (lambda s: s["config"].update(turbo=True), r"unknown parameter\(s\) \['turbo'\]"),    # B76
    (lambda s: s.update(owner="garbage"), "'owner' must be '<pid>.<start ticks>'"),      # B79
    (lambda s: s.update(campaign_ids="cor"), "'campaign_ids' is missing or not a list"),
])
def test_a_damaged_journal_state_is_one_line_naming_the_discard_command(tmp_path, monkeypatch, damage, message):
    _no_workers(monkeypatch)
    jr = journal.Journal.create(tmp_path, "cor", _state("cor"))
    state = json.loads((jr.path / journal.STATE_FILE).read_text())
    damage(state)
    (jr.path / journal.STATE_FILE).write_text(json.dumps(state))
    with pytest.raises(journal.JournalError, match=message) as got:
        runner.measure(None, progress=False, resume="cor", output=str(tmp_path))
    assert "\n" not in str(got.value) and f"osbench discard cor --output {tmp_path}" in str(got.value)
    assert cli.main(["discard", "cor", "--output", str(tmp_path)]) == 0
    assert not jr.path.exists()


def test_discard_refuses_a_campaign_being_measured_and_an_unknown_id(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        journal.Journal.create(tmp_path, "live", _state("live", owner=owners.owner_tag(sleeper.pid)))
        with pytest.raises(journal.JournalError, match="being measured right now"):
            journal.discard(tmp_path, "live")
    finally:
        sleeper.kill()
        sleeper.wait()
    journal.discard(tmp_path, "live")
    with pytest.raises(journal.JournalError, match="no interrupted campaign 'live' to discard"):
        journal.discard(tmp_path, "live")


# --- the same id twice (C3) ----------------------------------------------------------------------------


def test_an_id_sealed_while_this_runner_waited_for_the_host_is_refused_before_measuring(tmp_path, monkeypatch):
    """C3: two runs with one --campaign-id, the second with --wait: the second measured everything, dropped it
    and reported the first's campaign as its own, exit 0.  The id is now checked again under the lock."""
    import contextlib

    _no_workers(monkeypatch)
    real = hostlock.measuring

    @contextlib.contextmanager
    def first_one_seals_meanwhile(ids, wait=False, **kw):
        synthetic.write_synthetic(tmp_path, "dup", seed=1)    # the run holding the host seals 'dup' ...
        with real(ids, wait=wait, **kw) as info:              # ... and then this one gets the lock
            yield info
    monkeypatch.setattr(hostlock, "measuring", first_one_seals_meanwhile)
    with pytest.raises(store.CampaignExists, match="campaign 'dup' already exists"):
        runner.measure("quick", progress=False, probes=["null_syscall"], campaign_id="dup", output=str(tmp_path),
                       wait=True, **TINY)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup"]   # no journal left either


# --- the host lock (I28) --------------------------------------------------------------------------------


def test_the_host_lock_follows_no_symlink_and_takes_no_file_it_does_not_own(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("secret")
    lock = tmp_path / "osbench-measure.lock"
    lock.symlink_to(victim)
    with pytest.raises(hostlock.HostBusy, match="it is a symlink"):
        with hostlock.measuring(["x"], path=lock):
            pass
    assert victim.read_text() == "secret"
    lock.unlink()
    os.link(victim, lock)                                        # a hard link to someone's file
    with pytest.raises(hostlock.HostBusy, match="2 hard links"):
        with hostlock.measuring(["x"], path=lock):
            pass
    assert victim.read_text() == "secret"
    lock.unlink()
    lock.write_text("")
    if os.geteuid() == 0:
        os.chown(lock, 65534, 65534)                             # made by another user
        with pytest.raises(hostlock.HostBusy, match="owned by uid 65534"):
            with hostlock.measuring(["x"], path=lock):
                pass
        os.chown(lock, 0, 0)
    with hostlock.measuring(["x"], path=lock) as info:          # its own file: taken as before
        assert info["campaigns"] == ["x"]


# --- analyze --out-dir ----------------------------------------------------------------------------------


def test_out_dir_that_is_a_file_is_refused_before_the_analysis(tmp_path, monkeypatch, capsys):
    """B95: the whole analysis ran, then a FileExistsError traceback."""
    from osbench_analysis.analysis import pipeline

    def never(*a, **kw):
        raise AssertionError("the analysis ran")
    monkeypatch.setattr(pipeline, "analyze", never)
    afile = tmp_path / "afile"
    afile.write_text("")
    assert cli.main(["analyze", "--out-dir", str(afile), "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and err.count("\n") == 1


# --- measured: a dead file server, a campaign that measured nothing --------------------------------------


@pytest.mark.slow
def test_a_work_folder_that_cannot_be_made_is_a_failed_run_and_the_campaign_goes_on(tmp_path, monkeypatch):
    """F28's cause: a dead FUSE mount answers ENOTCONN to the runner's own calls, outside the round's try."""
    real = owners.private_dir

    def dead_mount(prefix, parent=None):
        if prefix == "osbench-":     # a probe's work folder, not the campaign's scratch
            raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
        return real(prefix, parent)
    monkeypatch.setattr(owners, "private_dir", dead_mount)
    (c,) = runner.measure("quick", progress=False, probes=["null_syscall", "stat"], output=str(tmp_path),
                          campaign_id="dead", **TINY)
    runs = c.runs.set_index("probe")
    assert runs.loc["null_syscall", "status"] == "ok"
    assert runs.loc["stat", "status"] == "error"
    assert "Transport endpoint is not connected" in runs.loc["stat", "message"]


@pytest.mark.slow
def test_a_campaign_of_no_measured_batch_is_not_sealed_and_fails_in_one_line(tmp_path):
    """B12/B20/B61/B62/B63 sealed campaigns of 0 batches with exit 0."""
    with pytest.raises(runner.NothingMeasured, match=r"campaign 'empty' measured no batch: all 1 worker run\(s\) "
                                                     r"failed, e.g. test_crash_segv") as got:
        runner.measure("quick", progress=False, probes=["test_crash_segv"], output=str(tmp_path),
                       campaign_id="empty", **TINY)
    assert "\n" not in str(got.value)
    assert list(tmp_path.iterdir()) == []      # no campaign, no journal


def _cmdline(pid: str) -> bytes:
    """A process's command line, or nothing when it exited between listing /proc and reading it."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def _fuse_ready() -> bool:
    from osbench_analysis import environments

    return bool(environments.get("fuse").availability())


@pytest.mark.slow
@pytest.mark.skipif(not _fuse_ready(), reason="FUSE not available here")
def test_killing_the_fuse_server_is_a_failed_run_and_the_campaign_goes_on(tmp_path):
    """F28: SIGKILL of osbench-fuse took the runner down (OSError ENOTCONN traceback, exit 1); then every later
    run failed and 1 good run of 12 was sealed with exit 0."""
    (tmp_path / "tmp").mkdir()
    params = dict(environment="fuse", probes=["file_create_delete", "stat"], runs=6, batches=10, min_batch_ms=30.0,
                  precision_target=0, placements=["same_cpu"], output=str(tmp_path / "c"), campaign_id="kfuse")
    code = f"from osbench_analysis.measure import runner; runner.measure('quick', progress=False, **{params!r})"
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    jfile = journal.folder(tmp_path / "c", "kfuse") / journal.JOURNAL_FILE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (jfile.exists() and jfile.read_bytes().count(b"\n") >= 2):
        time.sleep(0.1)
    try:
        servers = [int(p) for p in os.listdir("/proc") if p.isdigit()
                   and f"osbench-campaign-{proc.pid}.".encode() in _cmdline(p) and b"osbench-fuse" in _cmdline(p)]
        assert servers, "no FUSE server found"
        for pid in servers:
            os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:          # a failed assertion must not leave the campaign holding the host lock
            proc.kill()
            proc.communicate()
    # issue 41: the dead server stops the environment (its remaining runs skipped, not 11 failures) and the
    # campaign is sealed as partial, named, the run failing
    assert proc.returncode != 0 and "PartialCampaign" in err and "osbench-fuse exited" in err, err[-2000:]
    c = store.load_campaign("kfuse", tmp_path / "c")
    assert "osbench-fuse exited" in c.manifest.environment_info[runner.PARTIAL_KEY]
    assert (c.runs["status"] == "ok").sum() >= 2 and len(c.runs) < 12
    assert not any("osbench-fuse" in line and str(tmp_path) in line
                   for line in Path("/proc/mounts").read_text().splitlines())


@pytest.mark.slow
def test_a_command_prefix_that_cannot_run_is_blamed_not_the_probes_build(tmp_path):
    """B65: the hint said 'rebuild the probes with make install'."""
    from osbench_analysis.measure.preflight import PreflightError

    with pytest.raises(PreflightError, match="To fix: give a command_prefix that exists here") as got:
        runner.measure("quick", progress=False, probes=["null_syscall"], output=str(tmp_path),
                       command_prefix=["no-such-wrapper-xyz"], **TINY)
    assert "make install" not in str(got.value)
