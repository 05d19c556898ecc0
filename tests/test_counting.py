"""measure/counting.py: per-operation counts by differencing two run lengths (start-up cancels), the parser of
perf stat's CSV output (fixtures captured from real runs here: a FUSE (no cache) worker and its server doing
1000 stats, and a counter perf could not count), one slow count on native Linux and one sandbox, and one run
counted by system call name."""
from pathlib import Path

import pytest

from osbench_analysis.measure import counting

FIXTURES = Path(__file__).parent / "fixtures" / "perf"


def test_start_up_cancels_in_the_difference_of_two_run_lengths():
    per_op = {"syscalls": 4.25, "context_switches": 1.5, "signals_delivered": 1.0}
    start = {"syscalls": 91_337, "context_switches": 4_211, "signals_delivered": 17}   # a sandbox's boot

    def run(n):
        return {k: start[k] + round(v * n) for k, v in per_op.items()}

    got = counting.per_operation(run(2_000), run(22_000), 2_000, 22_000)
    assert got == pytest.approx(per_op)
    # a different boot each time moves the result by (difference of the boots) / (N2 - N1), no more
    noisy = counting.per_operation(run(2_000), {k: v + 200 for k, v in run(22_000).items()}, 2_000, 22_000)
    assert noisy["syscalls"] == pytest.approx(4.25 + 0.01)


def test_a_counter_either_run_lacks_stays_unknown_and_the_lengths_must_grow():
    got = counting.per_operation({"syscalls": 10, "ipis": None}, {"syscalls": 30, "ipis": 4}, 10, 20)
    assert got == {"syscalls": 2.0, "ipis": None}
    with pytest.raises(counting.CountingError, match="more iterations than the first .got 20 then 20"):
        counting.per_operation({}, {}, 20, 20)


def test_pairs_are_summarised_as_min_median_max():
    s = counting.summarize([{"syscalls": 4.0}, {"syscalls": 4.5}, {"syscalls": 4.1, "wakeups": None}])
    assert s == {"syscalls": {"min": 4.0, "median": 4.1, "max": 4.5, "n": 3}}


def test_perf_stat_output_of_a_fuse_worker_parses_counter_by_counter():
    c = counting.parse_perf_csv((FIXTURES / "fuse_nocache_stat_1000_worker.csv").read_text())
    assert list(c) == [x.name for x in counting.COUNTERS]
    # 1000 stats without a cache: 2 LOOKUP + 3 GETATTR requests each (plus the probe's own file's set-up)
    assert c["fuse_lookup"] == 2006 and c["fuse_getattr"] == 3012 and c["fuse_requests"] == 5025
    assert c["context_switches"] == 5041 and c["switches_voluntary"] == 5024 and c["syscalls"] == 2302
    assert counting.with_derived(c)["switches_involuntary"] == 17


def test_perf_stat_output_of_the_fuse_server_attached_by_pid_parses():
    c = counting.with_derived(counting.parse_perf_csv((FIXTURES / "fuse_nocache_stat_1000_server.csv").read_text()))
    assert c["syscalls"] > 3 * 5000            # a read and a reply per request, and its own lstat/openat
    assert c["fuse_requests"] == 0             # the kernel sends requests in the worker's context, not the server's
    assert c["switches_involuntary"] == c["context_switches"] - c["switches_voluntary"] >= 0


def test_a_counter_perf_cannot_count_is_none_and_a_mismatch_is_refused():
    extra = (counting.Counter("instructions", "instructions"), *counting.COUNTERS[:2])
    text = (FIXTURES / "stat_not_supported.csv").read_text()
    c = counting.parse_perf_csv(text, extra)
    assert c["instructions"] is None and c["syscalls"] == 29 and c["context_switches"] == 1
    with pytest.raises(counting.CountingError, match="printed 3 counters, 2 were asked"):
        counting.parse_perf_csv(text, extra[:2])
    with pytest.raises(counting.CountingError, match="'instructions' where 'raw_syscalls:sys_enter' was expected"):
        counting.parse_perf_csv(text, (counting.COUNTERS[0], counting.COUNTERS[0], counting.COUNTERS[1]))


def test_perf_is_asked_one_event_per_counter_with_its_filter():
    argv = counting.perf_argv(Path("/x.csv"))
    assert argv[:6] == ["perf", "stat", "-x", ",", "-o", "/x.csv"]
    assert argv.count("-e") == len(counting.COUNTERS)
    i = argv.index("sched:sched_switch")
    assert argv[i + 1:i + 3] == ["--filter", "prev_state & 0xff"]
    assert "opcode == 3" in argv     # GETATTR counted on its own


def test_host_system_calls_by_name_parse_beside_the_counters_and_sum_to_their_total():
    # captured here: perf_argv(by_name=True) around `ls /usr` (every syscalls:sys_enter_<name> after COUNTERS)
    argv = counting.perf_argv(Path("/x.csv"), by_name=True)
    assert argv[-2:] == ["-e", counting.BY_NAME_EVENTS] and argv.count("-e") == len(counting.COUNTERS) + 1
    text, named = counting._split_by_name((FIXTURES / "ls_by_name.csv").read_text())
    c = counting.parse_perf_csv(text)                 # the counters alone, in their order
    assert sum(named.values()) == c["syscalls"] == 145
    assert named["sc_openat"] == 34 and named["sc_close"] == 23 and named["sc_getpid"] == 0
    rows = [{"low": {"sc_getpid": 0, "sc_read": 1, "syscalls": 3}, "high": {"sc_getpid": 0, "sc_read": 5, "syscalls": 9}}]
    assert counting._by_name_zero("sc_getpid", rows) and not counting._by_name_zero("sc_read", rows)
    assert not counting._by_name_zero("syscalls", [{"low": {}, "high": {}}])


def _perf_or_skip():
    ok, why = counting.perf_available()
    if not ok:
        pytest.skip(why)


# Counting by name (perf_argv(by_name=True): ~360 tracepoints) costs ~14 s a run, nearly all of it the kernel
# unregistering each tracepoint when perf closes it (an RCU grace period each): one run counts by name below,
# the differenced counts are counted without it.
@pytest.mark.slow
def test_counted_on_native_and_under_fuse_without_a_cache():
    _perf_or_skip()
    from osbench_analysis import environments

    native = counting.count_environment("native", "null_syscall", n_low=1_000, n_high=11_000, pairs=1, by_name=False)
    assert native["per_operation"]["syscalls"]["median"] == pytest.approx(1.0, abs=0.01)   # one getpid
    assert abs(native["per_operation"]["switches_voluntary"]["median"]) < 0.01
    if not environments.get("fuse-nocache").availability():
        pytest.skip("fuse-nocache not available here")
    fuse = counting.count_environment("fuse-nocache", "stat", n_low=1_000, n_high=6_000, pairs=1,
                                      by_name=False)["per_operation"]
    assert fuse["syscalls"]["median"] == pytest.approx(1.0, abs=0.01)            # the worker's stat
    assert fuse["fuse_lookup"]["median"] == pytest.approx(2.0, abs=0.01)
    assert fuse["fuse_getattr"]["median"] == pytest.approx(3.0, abs=0.01)
    assert fuse["server_syscalls"]["median"] >= 2 * fuse["fuse_requests"]["median"] - 0.01   # read + reply each


@pytest.mark.slow
def test_a_counted_run_by_name_counts_every_system_call_once_under_its_name(tmp_path):
    _perf_or_skip()
    from osbench_analysis import environments

    with environments.get("native").session(tmp_path / "session") as sess:
        counts = counting.counted_run(sess, "null_syscall", 10_000, by_name=True)
    named = {k: v for k, v in counts.items() if k.startswith("sc_")}
    assert len(named) > 300 and named.keys() >= {"sc_getpid", "sc_read", "sc_openat"}
    assert sum(named.values()) == counts["syscalls"]          # every system call, each under one name
    assert 10_000 <= named["sc_getpid"] < 10_100               # the probe's getpid, plus the worker's own few
    assert counts["fuse_requests"] == 0 and counts["rusage_user_us"] >= 0


def test_a_pair_that_cannot_be_counted_is_kept_saying_why():
    logged = []
    out = counting.count_plan({"vmware": ("null_syscall",)}, log=logged.append)
    assert out[0]["environment"] == "vmware" and "environment 'vmware' unknown" in out[0]["error"]
    assert logged and "vmware null_syscall: environment 'vmware' unknown" in logged[0]


def test_the_kernels_own_counters_of_the_reaped_children_are_differenced():
    from types import SimpleNamespace as R

    before = R(ru_utime=1.0, ru_stime=2.0, ru_nvcsw=10, ru_nivcsw=3)
    after = R(ru_utime=1.25, ru_stime=2.5, ru_nvcsw=50, ru_nivcsw=4)
    assert counting.rusage_delta(before, after) == {"rusage_user_us": 250_000, "rusage_system_us": 500_000,
                                                    "rusage_nvcsw": 40, "rusage_nivcsw": 1}
