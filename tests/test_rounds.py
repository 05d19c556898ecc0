"""One boot per round (environments/rounds.py), with /bin/sh playing the
sandbox: the driver runs real workers in turn, each outcome comes back as the
worker finishes, an overrunning worker takes only its boot down, and a boot
that dies early fails the rest with its own words."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from osbench_analysis.worker import launch
from osbench_analysis.environments import Launch, RoundJob, rounds
from osbench_analysis.worker.main import WorkerRequest


def _job(tmp_path: Path, probe: str = "null_syscall", timeout_s: float = 60.0, settle_s: float = 0.0) -> RoundJob:
    req = WorkerRequest(probe=probe, params={}, min_batch_ns=1_000_000, warmup=0, batches=1,
                        max_iterations=10**8, settle_s=settle_s)
    return RoundJob(req, launch.worker_argv(req), tmp_path / "unused.jsonl", timeout_s)


def _sh_boot(boots: list):
    """A 'sandbox' that is a plain shell running the driver; records each boot's folder."""
    def boot(script: str, folder: Path) -> Launch:
        (folder / "driver.sh").write_text(script)
        boots.append(folder)
        return Launch(["/bin/sh", str(folder / "driver.sh")])
    return boot


def test_the_driver_starts_each_worker_with_its_own_output_and_status_files(tmp_path):
    jobs = [_job(tmp_path), _job(tmp_path)]
    text = rounds.driver_script(jobs, Path("/v/round 0"))
    lines = text.splitlines()
    assert lines[0] == "cd /" and len(lines) == 1 + 2 * len(jobs)
    assert lines[1].endswith("--out '/v/round 0/out-0' 2> '/v/round 0/err-0'")
    assert lines[2] == "echo $? > '/v/round 0/rcpart-0' && mv '/v/round 0/rcpart-0' '/v/round 0/rc-0'"


def test_only_the_first_worker_of_a_boot_waits_for_the_environment_to_settle(tmp_path):
    jobs = rounds.settled_after_first([_job(tmp_path, settle_s=1.5) for _ in range(3)])
    assert [j.request.settle_s for j in jobs] == [1.5, 0.0, 0.0]
    assert ['"settle_s": 0.0' in j.worker_argv[-1] for j in jobs] == [False, True, True]


@pytest.mark.slow
def test_one_boot_runs_every_worker_and_yields_each_outcome_as_it_finishes(tmp_path):
    boots: list[Path] = []
    folder = tmp_path / "round-0"
    seen = [(o.status, len(o.batches) >= 2)  # calibration + 1 measured
            for o in rounds.run_booted([_job(tmp_path) for _ in range(3)], folder, _sh_boot(boots), 5.0)]
    assert seen == [("ok", True)] * 3
    assert len(boots) == 1
    assert not folder.exists()  # the round's folder goes with the round


@pytest.mark.slow
def test_an_overrunning_worker_takes_its_boot_down_and_the_rest_get_a_new_boot(tmp_path):
    boots: list[Path] = []
    jobs = [_job(tmp_path), _job(tmp_path, "test_hang", timeout_s=1.0), _job(tmp_path)]
    t0 = time.monotonic()
    outcomes = list(rounds.run_booted(jobs, tmp_path / "round-0", _sh_boot(boots), 5.0))
    assert [o.status for o in outcomes] == ["ok", "timeout", "ok"]
    assert "killed after 1 s" in outcomes[1].message
    assert len(boots) == 2 and time.monotonic() - t0 < 30
    assert list(tmp_path.glob("round-*")) == []


def test_a_boot_that_dies_fails_every_worker_it_did_not_finish_with_its_own_last_words(tmp_path):
    def boot(script: str, folder: Path) -> Launch:
        return Launch(["/bin/sh", "-c", "echo 'runsc: failed to load /tmp/x/python: no such file' >&2; exit 7"])

    outcomes = list(rounds.run_booted([_job(tmp_path), _job(tmp_path)], tmp_path / "r", boot, 5.0))
    assert [o.status for o in outcomes] == ["error", "error"]
    assert all("status 7" in o.message and "failed to load /tmp/x/python" in o.message for o in outcomes)


@pytest.mark.slow
def test_closing_the_round_early_stops_the_boot_and_removes_its_folder(tmp_path):
    boots: list[Path] = []
    gen = rounds.run_booted([_job(tmp_path), _job(tmp_path, "test_hang")], tmp_path / "r", _sh_boot(boots), 5.0)
    assert next(gen).status == "ok"
    gen.close()  # what the runner does on Ctrl-C
    assert not (tmp_path / "r").exists()
