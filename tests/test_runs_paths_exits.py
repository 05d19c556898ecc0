"""Issue 41 items 2-5 (reliability review 2026-11-28): one worker process is one run (a repeated probe,
placement or variant set is refused before measuring: N3/N4), every path a command deletes is inside its
root (N12, N5) and `--resume` honours `--output` (FN6), exit codes a script can trust (verify and list on
damage, Ctrl-C, N1, N10, N13, N14b, N23, N29), and an environment whose server died stops (F28)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from osbench_analysis import cli, environments
from osbench_analysis.analysis import pipeline
from osbench_analysis.catalog import registry
from osbench_analysis.environments import Launch, Session
from osbench_analysis.environments.native import Native
from osbench_analysis.measure import config, journal, runner
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import synthetic

TINY = dict(runs=1, batches=1, min_batch_ms=1.0, precision_target=0, placements=["same_cpu"])


def _refused(capsys, argv: list[str], code: int = 2) -> str:
    """cli.main's exit code for argv (argparse's own refusals included), and its one-line error."""
    try:
        got = cli.main(argv)
    except SystemExit as e:     # argparse: usage, then one error line
        got = e.code
    assert got == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


# --- item 2: one worker process is one run -------------------------------------------------------------


@pytest.mark.parametrize("given,message", [
    (dict(probes=["null_syscall", "null_syscall"]), "probes names 'null_syscall' twice"),                  # N4
    (dict(probes=["null_syscall"], variants={"null_syscall": [{}, {}, {}]}), r"asks for one parameter set twice"),  # N3
    (dict(probes=["fork_exit"], variants={"fork_exit": [{}, {"parent_mb": 0}]}), r"are both \{"),     # a default
    (dict(probes=["null_syscall"], placements=["same_cpu", "same_cpu"]), "placements names 'same_cpu' twice"),
])
def test_a_repeated_probe_placement_or_variant_set_is_refused_before_measuring(given, message):
    cfg = runner.make_config("quick", **{**TINY, **given})
    with pytest.raises(config.ConfigError, match=message):
        config.validate(cfg)


def test_the_sandboxes_own_tmpfs_control_is_not_a_second_copy_of_a_set_given(tmp_path):
    """The guest-tmpfs twin of each file-probe set is added once, also when the set is given by hand."""
    cfg = runner.make_config("quick", **{**TINY, "probes": ["stat"], "workdir": str(tmp_path),
                                         "variants": {"stat": [{}, {registry.WORKDIR_FS: registry.FS_GUEST_TMPFS}]}})
    conds = config.validate(cfg)
    keys = [(c.probe, c.params_json, c.placement) for c in conds]
    assert len(keys) == len(set(keys)) == 2


# --- item 3: inside the root ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["x/../../victim", "../victim", "/abs/victim", "a/b", "abc\n", ".."])
def test_discard_refuses_an_id_that_is_not_one_folder_name_and_deletes_nothing(tmp_path, capsys, bad):
    root, victim = tmp_path / "R", tmp_path / "victim"
    (root / ".partial-x").mkdir(parents=True)
    victim.mkdir()
    (victim / "keep").write_text("mine")
    line = _refused(capsys, ["discard", bad, "--output", str(root)])
    assert "is not a campaign id" in line
    assert (victim / "keep").read_text() == "mine" and (root / ".partial-x").is_dir()


def test_an_id_with_a_trailing_newline_is_no_id(tmp_path):
    """N5: `$` matched before the newline and a folder 'abc\\n' was sealed."""
    assert not store.ID_PATTERN.match("abc\n") and store.ID_PATTERN.match("abc")
    with pytest.raises(store.StoreError):
        store.check_can_create(tmp_path, "abc\n")


def _journal_state(cfg) -> dict:
    return {"config": runner._comparable(asdict(cfg)), "campaign_ids": ["cor"],
            "code": {k: "x" for k in journal.CODE_KEYS}, "created_utc": "2026-11-28T00:00:00+00:00",
            "owner": "1.None", "interruptions": []}


def test_resume_honours_output_and_never_seals_in_the_folder_the_journal_recorded(tmp_path):
    """FN6: a journal copied from R1 to R2 and resumed with --output R2 sealed R1's copy in R1."""
    r1, r2 = tmp_path / "R1", tmp_path / "R2"
    r1.mkdir()
    r2.mkdir()
    cfg = runner.make_config("quick", **{**TINY, "probes": ["null_syscall"], "output": str(r1), "campaign_id": "cor"})
    jr = journal.Journal.create(r1, "cor", _journal_state(cfg))
    shutil.copytree(jr.path, r2 / jr.path.name)
    assert runner.resume_config("cor", None, {"output": str(r2)}).output == str(r2)
    shutil.rmtree(r1)                                  # a moved folder: resumed where it is now
    assert runner.resume_config("cor", None, {"output": str(r2)}).output == str(r2)


# --- item 4: exit codes -------------------------------------------------------------------------------------


def _damages(root: Path) -> dict:
    """Kinds of damage the review counted (T2-T14), each in its own campaign folder."""
    def flip(d):
        f = d / store.SAMPLES_FILE
        st, data = f.stat(), bytearray(f.read_bytes())
        data[len(data) // 2] ^= 1
        f.write_bytes(bytes(data))
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))

    def manifest_id(d):
        m = json.loads((d / store.MANIFEST_FILE).read_text())
        m["campaign_id"] = "another"
        (d / store.MANIFEST_FILE).write_text(json.dumps(m))
    return {"no-seal": lambda d: (d / store.SEAL_FILE).unlink(),
            "foreign-file": lambda d: (d / "notes.txt").write_text("x"),
            "flipped": flip,
            "no-samples": lambda d: (d / store.SAMPLES_FILE).unlink(),
            "renamed-id": manifest_id}


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_verify_and_list_exit_1_on_every_damaged_folder_and_name_it(tmp_path, capsys):
    root, base = tmp_path / "R", synthetic.template()
    synthetic.write_synthetic(root, "whole", base, seed=0)
    assert cli.main(["verify", "--root", str(root)]) == 0 and cli.main(["list", "--root", str(root)]) == 0
    capsys.readouterr()
    for i, (name, damage) in enumerate(_damages(root).items()):
        synthetic.write_synthetic(root, name, base, seed=i + 1)
        damage(root / name)
        for command in ("verify", "list"):
            assert cli.main([command, "--root", str(root)]) == 1, (command, name)
            out = capsys.readouterr()
            assert name in out.err.strip().splitlines()[-1], (command, name, out.err)
        assert cli.main(["verify", name, "--root", str(root)]) == 1
        capsys.readouterr()
        shutil.rmtree(root / name)


def test_an_unreadable_campaigns_folder_or_campaign_is_one_line(tmp_path, capsys, monkeypatch):
    """N10 (as root without DAC override): a PermissionError traceback, and one such folder blocked the root."""
    root = tmp_path / "R"
    synthetic.write_synthetic(root, "ok", synthetic.template(), seed=0)
    (root / "locked").mkdir()
    real = os.listdir
    locked = {str(root / "locked")}

    def listdir(path="."):
        if str(path) in locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)
    monkeypatch.setattr(os, "listdir", listdir)
    assert "locked" in _refused(capsys, ["verify", "--root", str(root)], code=1)
    assert "locked" in _refused(capsys, ["list", "--root", str(root)], code=1)
    locked.add(str(root))
    for command in ("list", "verify", "analyze"):
        line = _refused(capsys, [command, "--root", str(root), *(["--out-dir", str(tmp_path / "g")]
                                                                 if command == "analyze" else [])])
        assert "cannot read the campaigns folder" in line and "Permission denied" in line
    assert not (tmp_path / "g").exists()


def test_bad_values_are_one_line_and_write_nothing(tmp_path, capsys):
    deep = "[" * 5000 + "]" * 5000
    assert "nested too deeply" in _refused(capsys, ["run", "--variants", deep, "--output", str(tmp_path / "o")])  # N1
    assert "days" in _refused(capsys, ["fleet", "certs", "--hosts", "h1", "--out", str(tmp_path / "tls"),
                                       "--days", "1000000000"])                                                   # N13
    (tmp_path / "ca.pem").write_text("not a certificate")
    assert "not a PEM certificate" in _refused(capsys, ["verify", "--root", str(tmp_path), "--ca",
                                                        str(tmp_path / "ca.pem")])                                 # N29
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ca.pem"]
    with pytest.raises(pipeline.AnalysisError, match="from 100 to 1,000,000"):                                  # N14b
        pipeline.AnalysisSettings(n_resamples=1_000_000_000, ci_method="hier-percentile")


def test_a_journal_whose_code_is_empty_is_one_line(tmp_path, capsys):
    """N23: state.json with "code": {} gave a KeyError traceback."""
    cfg = runner.make_config("quick", **{**TINY, "probes": ["null_syscall"], "output": str(tmp_path)})
    journal.Journal.create(tmp_path, "cor", {**_journal_state(cfg), "code": {}})
    line = _refused(capsys, ["run", "--resume", "cor", "--output", str(tmp_path), "--no-progress"])
    assert "'code' lacks 'probes_source_sha256'" in line and "osbench discard cor" in line


def _sigint_default():
    signal.signal(signal.SIGINT, signal.SIG_DFL)    # a suite started in the background inherits it ignored


@pytest.mark.slow
def test_ctrl_c_is_one_line_naming_the_resume(tmp_path):
    """F2: the resume line, then a 38-line KeyboardInterrupt traceback."""
    root = tmp_path / "c"
    env = {**os.environ, "OSBENCH_LOCK_FILE": str(tmp_path / "lock")}
    proc = subprocess.Popen([sys.executable, "-m", "osbench_analysis.cli", "run", "--probes", "null_syscall,clock_gettime",
                             "--runs", "40", "--batches", "3", "--min-batch-ms", "5", "--precision-target", "0",
                             "--placements", "same_cpu", "--no-progress", "--output", str(root), "--campaign-id", "cc"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_sigint_default)
    jfile = journal.folder(root, "cc") / journal.JOURNAL_FILE
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (jfile.exists() and jfile.read_bytes().count(b"\n") >= 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("osbench run: interrupted: campaign cc interrupted with") and "--resume cc" in err


# --- item 5: a dead server stops its environment --------------------------------------------------------------


class _ServedSession(Session):
    """A native worker beside a 'server' process of the session's own (as osbench-fuse is FUSE's), which
    dies (SIGKILL) while the third worker runs; dead() asks the process, as FuseSession's does."""

    def open(self) -> None:
        self.server, self.launches = subprocess.Popen(["sleep", "600"]), 0

    def launch(self, worker_argv, *, cpus, output):
        self.launches += 1
        if self.launches == 3:
            self.server.kill()
        return Launch(list(worker_argv))

    def dead(self) -> str:
        return f"its server exited (status {self.server.returncode})" if self.server.poll() is not None else ""

    def close(self) -> None:
        self.server.kill()
        self.server.wait()


class _BrokenSession(Session):
    """A sandbox that stops starting after the pre-flight and the first group: every worker fails."""

    def open(self) -> None:
        self.launches = 0

    def launch(self, worker_argv, *, cpus, output):
        self.launches += 1
        return Launch(list(worker_argv) if self.launches <= 3 else ["/nonexistent/sandbox", *worker_argv])


def _env(name: str, session):
    env = Native()
    env.name, env.session_class = name, session
    environments.register(env)
    return env


@pytest.mark.slow
@pytest.mark.parametrize("session,why", [(_ServedSession, "its server exited"),
                                         (_BrokenSession, "every worker of its last 2 groups failed")])
def test_an_environment_that_died_is_stopped_and_its_campaign_sealed_as_partial(tmp_path, session, why):
    env = _env(f"test-dies-{session.__name__.lower()}", session)
    try:
        with pytest.raises(runner.PartialCampaign, match=f"sealed as partial.*{why}") as got:
            runner.measure("quick", progress=False, environment=env.name, probes=["null_syscall", "clock_gettime"],
                           output=str(tmp_path), campaign_id="dies", **{**TINY, "runs": 8})
    finally:
        environments.REGISTRY._envs.pop(env.name)
    assert "\n" not in str(got.value)
    c = store.load_campaign("dies", tmp_path)
    assert why in c.manifest.environment_info[runner.PARTIAL_KEY]
    assert len(c.manifest.runs) < 16                     # the remaining runs skipped, not 14 more failures
    assert not list(tmp_path.glob(".partial-*"))        # sealed: the journal gone
