"""The runner over `Session.run_round` (issue 18): an environment's round that
raises or stops early fails only the workers it gave no outcome for; an
environment whose workers all fail is sealed, not a crash; the pre-flight
worker stops a named environment before anything is measured and leaves an
unusable one out of `all`, saying why and recording it."""
from __future__ import annotations

import os
import time

import pytest

from osbench_analysis import environments
from osbench_analysis.worker import launch
from osbench_analysis.report import run_report
from osbench_analysis.measure import config, rounds, runner
from osbench_analysis.store import campaigns as store
from osbench_analysis.environments import Environment, Launch, Session

pytestmark = pytest.mark.slow  # real native workers


class _Stops(Session):
    """Yields the first job's real outcome, then raises or just ends (env.mode)."""

    def run_round(self, jobs, *, cpus):
        for i, outcome in enumerate(super().run_round(jobs, cpus=cpus)):
            if i == 1 and len(jobs) > 1:
                if self.env.mode == "raise":
                    raise RuntimeError("guest driver lost")
                return
            yield outcome


class _FailsProbe(Session):
    """Every pipe_pingpong worker fails inside (the pre-flight's null_syscall works)."""

    def launch(self, worker_argv, *, cpus, output):
        if "pipe_pingpong" in worker_argv[-1]:
            return Launch(["sh", "-c", "echo 'pipe: not in this guest' >&2; exit 5"])
        return Launch(list(worker_argv))


class _NoGo(Session):
    def launch(self, worker_argv, *, cpus, output):
        return Launch(["sh", "-c", "echo 'failed to load /tmp/c/.venv/bin/python: no such file' >&2; exit 1"])


def _env(name: str, session: type[Session], mode: str = "") -> Environment:
    env = type(name.title(), (Environment,), {"name": name, "arch_class": "user-space-kernel",
                                                "session_class": session, "placements": ("same_cpu",),
                                                "fix_hint": "reinstall it"})()
    env.mode = mode
    return env


@pytest.fixture
def registered(monkeypatch):
    def add(*envs):
        for env in envs:
            monkeypatch.setitem(environments.REGISTRY._envs, env.name, env)
    return add


def _measure(tmp_path, environment, **kw):
    params = dict(probes=["null_syscall", "pipe_pingpong"], runs=2, batches=1, min_batch_ms=1.0, warmup=0,
                  precision_target=0, placements=["same_cpu"], variants={}, sandbox_probes="all")
    return runner.measure("quick", progress=True, environment=environment, output=str(tmp_path / "c"),
                          **{**params, **kw})


@pytest.mark.parametrize("mode, why", [("raise", "run_round failed: RuntimeError: guest driver lost"),
                                       ("stop", "run_round ended without an outcome for this worker")])
def test_a_round_that_raises_or_stops_early_fails_only_the_workers_without_an_outcome(tmp_path, registered,
                                                                                      mode, why):
    registered(_env("halfway", _Stops, mode))
    (c,) = _measure(tmp_path, "halfway")
    statuses = [(r.probe, r.run, r.status) for r in c.manifest.runs]
    assert statuses == [("null_syscall", 0, "ok"), ("pipe_pingpong", 0, "error"),
                        ("null_syscall", 1, "ok"), ("pipe_pingpong", 1, "error")]
    assert all(why in r.message for r in c.manifest.runs if r.status == "error")
    assert set(c.samples["probe"]) == {"null_syscall"}
    failed = run_report.failures([c])  # what the notebook's failures cell shows
    assert list(failed["environment"]) == ["halfway", "halfway"] and list(failed.index) == [0, 1]


def test_an_environment_whose_workers_all_fail_seals_nothing_and_fails_in_one_line(tmp_path, registered):
    """Issue 31: a campaign of no measured batch was sealed as a success (exit 0)."""
    registered(_env("nopipe", _FailsProbe))
    with pytest.raises(runner.NothingMeasured, match=r"measured no batch: all 2 worker run\(s\) failed, e.g. "
                                                     r"pipe_pingpong: .*pipe: not in this guest") as got:
        _measure(tmp_path, "nopipe", probes=["pipe_pingpong"], precision_target=0.05, max_runs=4)
    assert "\n" not in str(got.value)
    assert not (tmp_path / "c").exists() or list((tmp_path / "c").iterdir()) == []   # no campaign, no journal


def test_an_environment_named_that_fails_its_preflight_stops_before_measuring(tmp_path, registered):
    registered(_env("nogo", _NoGo))
    with pytest.raises(runner.PreflightError) as e:
        _measure(tmp_path, "native,nogo")
    msg = str(e.value)
    assert "nogo" in msg and "failed to load /tmp/c/.venv/bin/python" in msg and "To fix: reinstall it" in msg
    assert "\n" not in msg
    assert not (tmp_path / "c").exists() or store.catalog(tmp_path / "c").empty
    assert not list((tmp_path / "c").glob("*")) if (tmp_path / "c").exists() else True


def test_all_leaves_out_an_environment_that_fails_its_preflight_and_records_why(tmp_path, registered, monkeypatch,
                                                                                capsys):
    monkeypatch.setattr(environments.REGISTRY, "_envs", {"native": environments.get("native")})
    registered(_env("nogo", _NoGo))
    campaigns = _measure(tmp_path, "all", probes=["null_syscall"], runs=1)
    assert [c.environment for c in campaigns] == ["native"]
    pre = campaigns[0].manifest.config["preflight"]
    assert pre["native"]["status"] == "ok" and pre["nogo"]["left_out"] is True
    assert "failed to load" in pre["nogo"]["message"]
    err = capsys.readouterr().err
    assert "leaving out nogo: its pre-flight worker failed (error): worker exited with status 1: failed to load" in err
    assert "To fix: reinstall it" in err
    assert "native: measuring 1 condition(s)" in err and "native: finished, 1 worker run(s), 0 failed" in err
    assert launch.GUARD.exists()


def _counting(name: str) -> Environment:
    """A native worker standing in for a guest that counts its instructions (QEMU -icount)."""
    env = _env(name, Session)
    env.time_unit = "guest instructions"
    return env


@pytest.mark.parametrize("target", [0, 0.05])
def test_a_guest_counting_instructions_boots_guest_boots_times_while_the_host_goes_on(tmp_path, registered,
                                                                                       capsys, target):
    registered(_counting("counting"))
    host, guest = _measure(tmp_path, "native,counting", probes=["null_syscall"], runs=4, guest_boots=2,
                           precision_target=target, max_runs=4)
    assert sorted(r.run for r in host.manifest.runs if r.probe == "null_syscall") == [0, 1, 2, 3]
    assert [r.run for r in guest.manifest.runs] == [0, 1] and all(r.status == "ok" for r in guest.manifest.runs)
    assert guest.manifest.precision == {"target": None, "stop_reason": "guest_boots", "runs": 2}
    assert guest.manifest.config["guest_boots"] == 2
    assert "counting: finished, 2 worker run(s), 0 failed" in capsys.readouterr().err


def test_a_guest_counting_instructions_measures_guest_batches_per_boot_and_the_host_batches(tmp_path, registered):
    registered(_counting("counting"))
    host, guest = _measure(tmp_path, "native,counting", probes=["null_syscall"], batches=4, guest_batches=2,
                           guest_boots=2)
    for c, want in ((host, 4), (guest, 2)):
        s = c.samples[(c.samples["probe"] == "null_syscall") & ~c.samples["warmup"].astype(bool)]
        assert s.groupby("run").size().to_dict() == {0: want, 1: want}
    assert guest.manifest.config["guest_batches"] == 2 and host.manifest.config["batches"] == 4


def test_timed_warmup_is_a_host_workers_warm_up_and_a_guest_keeps_warmup(tmp_path, registered):
    """Issue 37: the batches at the calibrated size flagged as warm-ups: the calibration's last, then timed_warmup
    more in an environment timed in ns, warmup more in a guest counting its instructions."""
    registered(_counting("counting"))
    host, guest = _measure(tmp_path, "native,counting", probes=["null_syscall"], batches=2, guest_batches=2,
                           guest_boots=2, warmup=2, timed_warmup=0)
    for c, want in ((host, 1), (guest, 3)):
        s = c.samples[c.samples["probe"] == "null_syscall"]
        for _, run in s.groupby("run"):
            n = run.loc[~run["warmup"].astype(bool), "iterations"].iloc[0]
            assert int((run["warmup"].astype(bool) & (run["iterations"] == n)).sum()) == want
    assert host.manifest.config["timed_warmup"] == 0 and host.manifest.config["warmup"] == 2


def test_a_selectors_guest_is_checked_by_its_first_boot_and_left_out_when_no_boot_measured(tmp_path, registered,
                                                                                         monkeypatch, capsys):
    """Issue 37: in a selector's round a guest counting its instructions boots no pre-flight of its own (xen-linux's
    cost about 55 s): its first measured boot is the check; one of which no boot measured is left out after its
    boots, said in one line and recorded in every manifest, like a failed pre-flight; the others are sealed."""
    monkeypatch.setattr(environments.REGISTRY, "_envs", {"native": environments.get("native")})
    broken = _env("broken", _NoGo)
    broken.time_unit = "guest instructions"
    registered(_counting("counting"), broken)
    (c,) = _measure(tmp_path, "all-guests", probes=["null_syscall"], runs=2)
    assert c.environment == "counting" and [r.status for r in c.manifest.runs] == ["ok", "ok"]
    pre = c.manifest.config["preflight"]
    assert pre["counting"]["status"] == "ok" and pre["counting"]["left_out"] is False
    assert pre["broken"]["left_out"] is True and "failed to load" in pre["broken"]["message"]
    err = capsys.readouterr().err
    assert "pre-flight worker" not in err
    assert "leaving out broken: its first boot failed (error): worker exited with status 1: failed to load" in err
    assert "To fix: reinstall it" in err
    # every guest failing: nothing sealed, said as a failed pre-flight says it
    with pytest.raises(runner.PreflightError, match="nothing measured: no environment passed"):
        _broken_only(tmp_path, monkeypatch, broken)
    # asked for by name, a guest still boots a pre-flight first: nothing is measured when it fails
    with pytest.raises(runner.PreflightError, match="nothing measured: environment broken: its pre-flight worker"):
        _measure(tmp_path / "named", "broken", probes=["null_syscall"], runs=2)


def _broken_only(tmp_path, monkeypatch, broken):
    monkeypatch.setattr(environments.REGISTRY, "_envs", {"native": environments.get("native"), "broken": broken})
    return _measure(tmp_path / "again", "all-guests", probes=["null_syscall"], runs=2)


def test_all_guests_then_all_timed_measure_every_environment_in_two_rounds_by_kind(tmp_path, registered,
                                                                                   monkeypatch, capsys):
    """make all: the guests counting instructions first (while the set-up still builds), the environments
    timed in ns after it; each selector leaves out the other kind and says nothing of it."""
    monkeypatch.setattr(environments.REGISTRY, "_envs", {"native": environments.get("native")})
    registered(_counting("counting"), _env("sandbox", Session))
    guests = _measure(tmp_path, "all-guests", probes=["null_syscall"], runs=2)
    assert [c.environment for c in guests] == ["counting"]
    assert set(guests[0].manifest.config["preflight"]) == {"counting"}
    timed = _measure(tmp_path, "all-timed", probes=["null_syscall"], runs=2)
    assert [c.environment for c in timed] == ["native", "sandbox"]
    assert set(timed[0].manifest.config["preflight"]) == {"native", "sandbox"}
    assert timed[0].manifest.config["campaign_set"] == [c.id for c in timed]
    assert "leaving out" not in capsys.readouterr().err
    # a selector with nothing available here is refused before any worker
    monkeypatch.setattr(environments.REGISTRY, "_envs", {"native": environments.get("native")})
    with pytest.raises(runner.ConfigError, match="environment 'all-guests': no such environment is available here"):
        _measure(tmp_path, "all-guests", probes=["null_syscall"])


def test_a_profiles_selectors_leave_out_an_environment_measured_when_named(tmp_path, registered, monkeypatch,
                                                                           capsys):
    """Issue 37: the quick profile's selectors leave out linux-tcg-pti (a quarter of the guests' emulation in a
    fresh make all; the full profile measures it): left out in one line and in every manifest, measured when
    named."""
    assert config.make_config("quick").selectors_leave_out == ["linux-tcg-pti"]
    assert config.make_config("full").selectors_leave_out == []
    monkeypatch.setattr(environments.REGISTRY, "_envs", {"native": environments.get("native")})
    registered(_counting("counting"), _counting("costly"))
    (c,) = _measure(tmp_path, "all-guests", probes=["null_syscall"], selectors_leave_out=["costly"])
    assert c.environment == "counting"
    pre = c.manifest.config["preflight"]["costly"]
    assert (pre["status"], pre["left_out"]) == ("profile", True) and "measured when named" in pre["message"]
    assert c.manifest.config["selectors_leave_out"] == ["costly"]
    assert "leaving out costly: the quick profile leaves it out" in capsys.readouterr().err
    (named,) = _measure(tmp_path, "costly", probes=["null_syscall"], selectors_leave_out=["costly"])
    assert named.environment == "costly" and all(r.status == "ok" for r in named.manifest.runs)
    with pytest.raises(runner.ConfigError, match="selectors_leave_out must be a list of environment names"):
        _measure(tmp_path, "all-guests", probes=["null_syscall"], selectors_leave_out="costly")


def test_a_guest_whose_boots_repeat_only_roughly_boots_as_often_as_it_needs(tmp_path, registered):
    """xen-linux's boots_needed: two boots give its range; guest_boots=3 does not make it boot a third time."""
    env = _counting("roughly")
    env.boots_needed = 2
    registered(env, _counting("exactly"))
    rough, exact = _measure(tmp_path, "roughly,exactly", probes=["null_syscall"], runs=3, guest_boots=3)
    assert [r.run for r in rough.manifest.runs] == [0, 1]
    assert [r.run for r in exact.manifest.runs] == [0, 1, 2]


class _Booting(Session):
    """Records when each of its rounds ran and on which CPUs it was confined; a guest's boot is stood in
    for by a pause (env.boot_s) before the round's real native workers."""

    def run_round(self, jobs, *, cpus):
        t0 = time.monotonic()
        time.sleep(self.env.boot_s)
        try:
            yield from super().run_round(jobs, cpus=cpus)
        finally:   # the runner closes a round once it has every outcome
            self.env.spans.append((t0, time.monotonic(), tuple(sorted(cpus or ()))))


def _recording(env: Environment, boot_s: float) -> Environment:
    env.session_class, env.spans, env.boot_s = _Booting, [], boot_s
    return env


def test_guests_counting_instructions_boot_side_by_side_one_per_cpu_before_the_timed_rounds(tmp_path, registered):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the guests have one lane")
    a, b = _recording(_counting("count-a"), 0.4), _recording(_counting("count-b"), 0.4)
    timed = _recording(_env("timed", Session), 0.0)
    registered(a, b, timed)
    host, ca, cb = _measure(tmp_path, "timed,count-a,count-b", probes=["null_syscall"], runs=3, guest_boots=3)
    boots = {}
    for c, env in ((ca, a), (cb, b)):
        assert sorted(r.run for r in c.manifest.runs) == [0, 1, 2] and all(r.status == "ok" for r in c.manifest.runs)
        assert c.manifest.precision == {"target": None, "stop_reason": "guest_boots", "runs": 3}
        boots[env.name] = sorted(env.spans[1:])            # the first span is the pre-flight's
        assert len(boots[env.name]) == 3
        assert all(len(cpus) == 1 for *_, cpus in boots[env.name])
    # the two guests boot at the same time; any two boots at once (of one guest or two) on CPUs of their own
    every = boots["count-a"] + boots["count-b"]
    assert [(x, y) for x in boots["count-a"] for y in boots["count-b"] if x[0] < y[1] and y[0] < x[1]]
    assert all(x[2] != y[2] for i, x in enumerate(every) for y in every[i + 1:] if x[0] < y[1] and y[0] < x[1])
    # no timed worker runs meanwhile: the timed environment's rounds all come after the last boot
    assert len(host.manifest.runs) == 3 and len(timed.spans) == 4
    assert min(start for start, *_ in timed.spans[1:]) >= max(end for _, end, _ in boots["count-a"] + boots["count-b"])


def test_a_budget_leaves_out_the_repeat_boots_that_would_end_past_it_judged_by_each_first_boot(tmp_path,
                                                                                                 registered):
    """Issue 37: with guest_budget_s every guest boots once; a repeat starts only once its first boot has ended and
    only if, at that guest's first boot's wall, it ends within the budget.  A slow guest (1.5 s a boot) loses its
    repeat under a 2 s budget; a fast one keeps it; each manifest records what was left out and the speed."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the guests have one lane")
    slow, fast = _recording(_counting("slow"), 1.5), _recording(_counting("fast"), 0.0)
    registered(slow, fast)
    s, f = _measure(tmp_path, "slow,fast", probes=["null_syscall"], runs=2, guest_boots=2, guest_budget_s=2.0)
    assert [r.run for r in s.manifest.runs] == [0] and sorted(r.run for r in f.manifest.runs) == [0, 1]
    assert s.manifest.precision == {"target": None, "stop_reason": "guest_boots", "runs": 1, "left_out": 1}
    assert f.manifest.precision == {"target": None, "stop_reason": "guest_boots", "runs": 2}
    assert run_report.stop_words(s.manifest.precision) == ("1 boot(s) of the guest, whose counts repeat: no precision target; "
                                                "1 repeat boot(s) left out by the guests' budget (config guest_budget)")
    assert len(slow.spans) == 2 and len(fast.spans) == 3          # the pre-flight's span, then the boots
    # the fast guest's repeat began after its own first boot ended
    assert sorted(fast.spans[1:])[1][0] >= sorted(fast.spans[1:])[0][1]
    budget = s.manifest.config["guest_budget"]
    assert budget == f.manifest.config["guest_budget"] and budget["budget_s"] == 2.0
    assert budget["guests"]["slow"]["boots"] == 1 and budget["guests"]["slow"]["left_out"] == 1
    assert budget["guests"]["fast"] == {**budget["guests"]["fast"], "boots": 2, "left_out": 0}
    assert budget["guests"]["slow"]["first_boot_s"] >= 1.5
    # the speed it judged by: the instructions (here ns) its first boot's batches counted per second of that boot
    counted = sum(int(x) for x in s.samples.query("run == 0")["elapsed_ns"])
    assert budget["guests"]["slow"]["counted_instructions_per_s"] == pytest.approx(
        counted / budget["guests"]["slow"]["first_boot_s"], rel=0.01)


def test_with_a_budget_the_longest_guest_boots_first_whichever_thread_asks_first(tmp_path, registered):
    """xen-linux's boot is the round's longest path (issue 37): under a budget the first boots go by their start-up
    allowance (round_startup_s), so the long guest, named last, is among the first two to boot on two CPUs."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the guests have one lane")
    a, b, long = (_recording(_counting(n), 0.3) for n in ("short-a", "short-b", "long"))
    long.round_startup_s = 150.0
    registered(a, b, long)
    _measure(tmp_path, "short-a,short-b,long", probes=["null_syscall"], runs=2, guest_boots=2, guest_budget_s=100.0)
    first_starts = sorted((min(s[0] for s in env.spans[1:]), env.name) for env in (a, b, long))
    assert "long" in [name for _, name in first_starts[:2]]
    assert all(len(env.spans) == 3 for env in (a, b, long))       # the budget fits every repeat


def test_guest_boots_below_two_is_refused_before_anything_runs(tmp_path, registered):
    registered(_counting("counting"))
    with pytest.raises(runner.ConfigError, match=r"guest_boots must be a whole number from 2 to 100: .* \(got 1\)"):
        _measure(tmp_path, "native,counting", guest_boots=1)
    assert not (tmp_path / "c").exists()


class _RecordedBar:
    """The runner's real bar, with every total it is given recorded (whichever display tqdm.auto picked:
    a widget once some test has started IPython, text on stderr otherwise)."""

    def __init__(self, bar):
        self.__dict__.update(_bar=bar, totals=[bar.total])

    def __getattr__(self, name):
        return getattr(self._bar, name)

    def __setattr__(self, name, value):
        if name == "total":
            self.totals.append(value)
        setattr(self._bar, name, value)


def test_the_bar_plans_each_conditions_first_runs_and_ends_full(tmp_path, monkeypatch):
    """Its remaining time is an estimate, not the worst case: the total starts at the runs every condition
    gets (here 2 of at most 6) and grows only by what precision projects; at the end it is the runs made."""
    bars = []

    def recording(total, initial, progress, real=rounds.progress_bar):
        bars.append(_RecordedBar(real(total, initial, progress)))
        return bars[-1]

    monkeypatch.setattr(rounds, "progress_bar", recording)
    (c,) = _measure(tmp_path, "native", runs=2, precision_target=0.5, max_runs=6)
    (bar,) = bars
    assert bar.totals[0] == 2 * 2                   # null_syscall and pipe_pingpong, 2 runs each
    assert bar.n == bar.totals[-1] == len(c.manifest.runs)


@pytest.mark.slow
def test_the_bar_starts_at_what_this_hosts_last_campaign_needed(tmp_path, monkeypatch):
    """Issue 30: `runs` is only the first round.  After a campaign whose conditions needed max_runs, the next
    one with the same target starts its bar there (plan.projected_runs), not at the first round, so the
    total does not jump mid-run; the run summary says in words why adding runs stopped."""
    bars = []

    def recording(total, initial, progress, real=rounds.progress_bar):
        bars.append(_RecordedBar(real(total, initial, progress)))
        return bars[-1]

    monkeypatch.setattr(rounds, "progress_bar", recording)
    (first,) = _measure(tmp_path, "native", runs=2, precision_target=0.001, max_runs=3)
    assert {r["n_runs"] for r in first.manifest.precision["conditions"]} == {3}    # unreachable: max_runs
    (second,) = _measure(tmp_path, "native", runs=2, precision_target=0.001, max_runs=3)
    assert bars[0].totals[0] == 2 * 2 and bars[1].totals[0] == 2 * 3
    (third,) = _measure(tmp_path, "native", runs=2, precision_target=0.5, max_runs=3)   # another target
    assert bars[2].totals[0] == 2 * 2
    shown = run_report.precision_summary([second])
    assert shown.loc[0, "first round"] == 2 and shown.loc[0, "runs per condition"] == "3"
    assert shown.loc[0, "why it stopped"].startswith("max_runs (3) reached: 0 of 2 conditions")


def test_a_made_up_id_whose_second_is_taken_moves_to_the_next_free_second(tmp_path):
    """Two campaigns of one environment started in the same second (short runs back to back) got the same id and
    the second failed with CampaignExists; a made-up id now takes the next free second, a given one still fails."""
    from osbench_analysis.measure.config import make_config, resolve_environments

    envs = resolve_environments("native")
    cfg = make_config("quick", environment="native")
    (first,) = runner._campaign_ids(cfg, envs, tmp_path)
    (tmp_path / first).mkdir()
    (second,) = runner._campaign_ids(cfg, envs, tmp_path)
    assert second != first and second.split("-", 1)[1] == first.split("-", 1)[1]
    assert second[:16] > first[:16]                       # a later second, the same host and label
    (tmp_path / second).mkdir()
    with pytest.raises(store.CampaignExists):
        runner._campaign_ids(make_config("quick", environment="native", campaign_id=first), envs, tmp_path)
