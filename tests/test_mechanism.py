"""mechanism.py: a crossing as an accounting of its counted host events priced natively, with intervals
that come from the runs, a rest that is the crossing minus the priced events (native getpid counted once),
and an excess that is a marked finding, never a negative rest."""
import math

import numpy as np
import pandas as pd
import pytest

from osbench_analysis import stats
from osbench_analysis.analysis import architectures, crossing_counts
from osbench_analysis.analysis import mechanism

RUNS, BATCHES = 6, 5
NATIVE, GV = "20261124T000000Z-h-native", "20261124T000000Z-h-gvisor"


def condition(env, probe, ns, *, campaign, placement="same_cpu", variant="", sigma=0.02, seed=0, host="h"):
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(RUNS):
        run_factor = math.exp(rng.normal(0, sigma))
        for batch in range(BATCHES):
            per_op = ns * run_factor * math.exp(rng.normal(0, sigma / 4))
            rows.append({"campaign_id": campaign, "environment": env, "probe": probe, "variant": variant,
                         "placement": placement, "run": run, "batch": batch, "warmup": False, "host": host,
                         "iterations": 1000, "elapsed_ns": per_op * 1000})
    return rows


def samples(gvisor_ns, *, native_null=100.0, seed=0, prices=True, host="h"):
    """gVisor's getpid at gvisor_ns; native: getpid, a pipe round trip of 2600 ns (a switch: 2600/2 - 2 * 100 =
    1100 ns), a breakpoint signal of 1500 ns (a signal: 1500 - 100 = 1400 ns)."""
    rows = condition("gvisor", "null_syscall", gvisor_ns, campaign=GV, seed=seed, host=host)
    rows += condition("native", "null_syscall", native_null, campaign=NATIVE, seed=seed + 1, host=host)
    if prices:
        rows += condition("native", "pipe_pingpong", 2600.0 - 4 * (100.0 - native_null), campaign=NATIVE,
                          seed=seed + 2, host=host)
        rows += condition("native", "signal_trap_self", 1500.0 - (100.0 - native_null), campaign=NATIVE,
                          seed=seed + 3, host=host)
    return pd.DataFrame(rows)


def counts(env_counts=None, *, host="h", env="gvisor", probe="null_syscall", started="2026-11-26T18:00:00Z"):
    """A counts table (crossing_counts.COLUMNS) of gVisor's getpid: 4 system calls, 2 switches, 1 signal per
    operation against native's 1 system call (defaults)."""
    env_counts = env_counts or {"syscalls": 4.0, "context_switches": 2.0, "signals_delivered": 1.0,
                                "switches_voluntary": 1.7, "switches_involuntary": 0.3}
    native = {"syscalls": 1.0, "context_switches": 0.0, "signals_delivered": 0.0}
    rows = [{"host": host, "host_label": f"label of {host}", "environment": e, "probe": probe, "counter": k,
             "median": v, "min": v * 0.99, "max": v * 1.01, "n_pairs": 3, "n_low": 2000, "n_high": 22000,
             "source": "test.json", "started_utc": started}
            for e, cs in ((env, env_counts), ("native", native)) for k, v in cs.items()]
    return pd.DataFrame(rows, columns=crossing_counts.COLUMNS)


def row_of(summary, env="gvisor"):
    return summary[summary["environment"] == env].iloc[0]


def test_counted_events_priced_natively_leave_a_rest_that_is_said_and_not_named():
    # crossing 10000 - 100 = 9900; events: 3 system calls (x100) + 2 switches (x1100) + 1 signal (x1400) = 3900
    summary, terms = mechanism.decompose(samples(10_000.0), counts())
    r = row_of(summary)
    assert r["crossing_ns"] == pytest.approx(9900, rel=0.05)
    assert r["pieces_ns"] == pytest.approx(3900, rel=0.03)
    assert r["unexplained_ns"] == pytest.approx(r["crossing_ns"] - r["pieces_ns"])
    assert r["unexplained_low_ns"] < r["unexplained_ns"] < r["unexplained_high_ns"]
    assert r["status"] == "rest" and "unexplained" in r["verdict"] and "Sentry" not in r["verdict"]
    t = terms.set_index("piece")
    assert t.loc["host system call", "count"] == pytest.approx(3.0)
    assert t.loc["context switch", "count"] == pytest.approx(2.0)
    assert t.loc["context switch", "price_ns"] == pytest.approx(1100, rel=0.03)
    assert t.loc["signal delivered", "price_ns"] == pytest.approx(1400, rel=0.03)
    assert t.loc["signal delivered", "cost_ns"] == pytest.approx(t.loc["signal delivered", "price_ns"])
    assert t.loc["of which voluntary", "count"] == pytest.approx(1.7) and t.loc["of which voluntary", "priced_as"] == "not priced"
    assert r["counts_host"] == "h" and bool(r["counts_same_host"])


def test_events_that_make_the_crossing_add_up_within_their_intervals():
    summary, _ = mechanism.decompose(samples(4000.0), counts())     # crossing 3900 = events 3900
    r = row_of(summary)
    assert r["unexplained_low_ns"] <= 0 <= r["unexplained_high_ns"]
    assert r["status"] == "adds up" and bool(r["adds_up"]) and "add up to the crossing" in r["verdict"]


def test_events_that_exceed_the_crossing_are_a_marked_finding_not_a_negative_rest():
    summary, _ = mechanism.decompose(samples(2000.0), counts())     # crossing 1900 < events 3900
    r = row_of(summary)
    assert r["status"] == "exceeds" and not bool(r["adds_up"])
    assert math.isnan(r["unexplained_ns"]) and math.isnan(r["unexplained_low_ns"])
    assert r["excess_ns"] == pytest.approx(2000, rel=0.05) and 0 < r["excess_low_ns"] < r["excess_ns"] < r["excess_high_ns"]
    assert "exceed the crossing by" in r["verdict"] and "the counts do not tell" in r["verdict"]


def test_native_getpid_enters_the_rest_once_per_place_it_is_in():
    """getpid is in the crossing (-1) and in every price (samples() moves the pipe and the signal with it, so
    a switch stays 1100 ns and a signal 1400 ns): rest = G - n - 3 n - 2 x 1100 - 1400, merged into one term."""
    for n in (100.0, 180.0):
        r = row_of(mechanism.decompose(samples(10_000.0, native_null=n), counts())[0])
        assert r["unexplained_ns"] == pytest.approx(10_000 - 4 * n - 3600, rel=0.03)


def test_a_count_below_the_floor_is_none():
    c = counts({"syscalls": 1.004, "context_switches": 0.003, "signals_delivered": 0.0})
    summary, terms = mechanism.decompose(samples(400.0), c)
    assert set(terms.loc[terms["priced_as"] != "not priced", "count"]) == {0.0}
    assert row_of(summary)["pieces_ns"] == 0.0 and row_of(summary)["status"] == "rest"


def test_a_difference_of_two_is_architectures_interval():
    s = samples(1000.0)
    gv = stats.run_data(s[(s["environment"] == "gvisor")])
    nat = stats.run_data(s[(s["environment"] == "native") & (s["probe"] == "null_syscall")])
    d = architectures.geomean_difference_ci(gv, nat)
    c = mechanism.linear_combination_ci([(1.0, gv), (-1.0, nat)])
    assert (c.value, c.ci_low, c.ci_high) == pytest.approx((d.diff, d.ci_low, d.ci_high))


def test_intervals_widen_with_run_to_run_noise():
    quiet = row_of(mechanism.decompose(samples(10_000.0), counts())[0])
    noisy_rows = samples(10_000.0)
    noisy_rows = pd.concat([noisy_rows[noisy_rows["probe"] != "pipe_pingpong"],
                            pd.DataFrame(condition("native", "pipe_pingpong", 2600.0, sigma=0.3, seed=9,
                                                   campaign=NATIVE))])
    noisy = row_of(mechanism.decompose(noisy_rows, counts())[0])
    width = lambda r: r["pieces_high_ns"] - r["pieces_low_ns"]  # noqa: E731
    assert width(noisy) > 3 * width(quiet)


def test_missing_native_prices_are_named_not_guessed():
    r = row_of(mechanism.decompose(samples(10_000.0, prices=False), counts())[0])
    assert math.isnan(r["pieces_ns"]) and r["adds_up"] is None and r["status"] == "not decomposed"
    assert "native prices not measured" in r["verdict"] and "pipe round trip" in r["verdict"]


def test_a_crossing_never_counted_is_not_decomposed_and_another_hosts_counts_are_said():
    r = row_of(mechanism.decompose(samples(10_000.0), counts().iloc[0:0])[0])
    assert r["status"] == "not decomposed" and "was not counted" in r["verdict"]
    r = row_of(mechanism.decompose(samples(10_000.0), counts(host="other"))[0])
    assert r["status"] == "rest" and r["counts_host"] == "other" and not bool(r["counts_same_host"])
    both = pd.concat([counts(host="other", started="2026-11-27T00:00:00Z"), counts()], ignore_index=True)
    assert row_of(mechanism.decompose(samples(10_000.0), both)[0])["counts_host"] == "h"   # its own first


def test_an_unknown_environment_is_refused_in_one_line():
    with pytest.raises(mechanism.MechanismError, match="no crossing known for environment 'vmware'"):
        mechanism.decompose(samples(10_000.0), counts(), environments=["vmware"])


def test_every_price_names_registered_probes_and_every_environment_is_registered_and_counted():
    from osbench_analysis.catalog import registry
    from osbench_analysis.environments import REGISTRY
    from osbench_analysis.measure import counting

    names = {c.name for c in counting.COUNTERS} | set(counting.DERIVED)
    for piece in mechanism.PIECES:
        for probe, _ in piece.price:
            registry.resolve_params(registry.get_probe(probe), piece.params)
        assert all(c.removeprefix("server_") in names for c in piece.counters)
    for env, probes in mechanism.ENVIRONMENT_CROSSINGS.items():
        assert env in REGISTRY.names() and set(probes) <= set(counting.PLAN[env]) <= set(counting.PLAN["native"])


def test_an_analysis_is_decomposed_host_by_host():
    from types import SimpleNamespace

    s = pd.concat([samples(10_000.0, host="a"), samples(4000.0, seed=5, host="b")])
    result = SimpleNamespace(samples=s, settings=SimpleNamespace(baseline="native", level=0.95))
    summary, terms = mechanism.from_analysis(result, counts(host="a"))
    assert list(summary["host"]) == ["a", "b"] and set(terms["host"]) == {"a", "b"}
    assert list(summary["status"]) == ["rest", "adds up"] and list(summary["counts_same_host"]) == [True, False]


def test_a_sandbox_without_its_crossing_probe_is_named_not_dropped():
    s = pd.concat([samples(10_000.0), pd.DataFrame(condition("uml", "stat", 5000.0, campaign="20261124T000000Z-h-uml"))])
    summary, _ = mechanism.decompose(s, counts())
    r = row_of(summary, "uml")
    assert r["verdict"] == "not decomposed: the null system call was not measured in User-mode Linux"
    assert math.isnan(r["crossing_ns"]) and r["adds_up"] is None
    assert row_of(summary)["status"] == "rest"   # gvisor's row is still there, decomposed


def test_applications_sit_beside_their_environments_micro_factor():
    def ratio(env, probe, r, placement="same_cpu"):
        return {"host": "h", "environment": env, "probe": probe, "variant": "", "placement": placement,
                "ratio": r, "ci_low": r * 0.9, "ci_high": r * 1.1, "estimate_ns": r * 10.0,
                "baseline_estimate_ns": 10.0}
    ratios = pd.DataFrame([ratio("gvisor", "null_syscall", 90.0), ratio("gvisor", "app_tar", 7.0),
                           ratio("uml", "null_syscall", 150.0), ratio("uml", "app_compile", 17.0),
                           ratio("uml", "stat", 20.0), ratio("fuse", "stat", 3.0), ratio("fuse", "app_tar", 2.0)])
    t = mechanism.applications_table(ratios)
    assert sorted(t["probe"]) == ["app_compile", "app_tar", "app_tar"]
    by = t.set_index("environment")
    # a file server's crossing is its stat; everywhere else the null system call, even beside a stat
    assert by.loc["fuse", "crossing_probe"] == "stat" and by.loc["fuse", "crossing_ratio"] == 3.0
    assert by.loc["uml", "crossing_probe"] == "null_syscall"
    assert by.loc["gvisor", "crossing_ratio"] == 90.0 and by.loc["uml", "crossing_ratio"] == 150.0
    assert by.loc["uml", "ratio"] == 17.0
    assert mechanism.applications_table(pd.DataFrame()).empty




# ------------------------------------------------------------------ host system calls by name (issue 42 item 5)

def named_samples(gvisor_ns):
    """samples() plus the native probes that price calls by name: a 1-byte read 150 ns, a 1-byte write 130 ns
    (a switch: 2600/2 - 150 - 130 = 1020 ns), a breakpoint signal whole 1500 ns (its sigreturn inside)."""
    s = samples(gvisor_ns)
    extra = condition("native", "read_devzero", 150.0, campaign=NATIVE, seed=7)
    extra += condition("native", "write_devnull", 130.0, campaign=NATIVE, seed=8)
    return pd.concat([s, pd.DataFrame(extra)], ignore_index=True)


def named_counts(host="h", started="2026-11-27T18:00:00Z"):
    """gVisor's getpid counted by name: 4 futex, 1 rt_sigreturn, 1 read and no getpid per operation against
    native's one getpid; 2 switches, 1 signal."""
    c = counts({"syscalls": 6.0, "context_switches": 2.0, "signals_delivered": 1.0, "switches_voluntary": 1.7,
                "switches_involuntary": 0.3, "sc_futex": 4.0, "sc_rt_sigreturn": 1.0, "sc_read": 1.0},
               host=host, started=started)
    native = c[c["environment"] == "native"].iloc[0].to_dict()
    return pd.concat([c, pd.DataFrame([{**native, "counter": "sc_getpid", "median": 1.0, "min": 1.0, "max": 1.0}])],
                     ignore_index=True)


def test_host_calls_counted_by_name_are_priced_by_what_they_are_and_the_rest_left_unpriced():
    summary, terms = mechanism.decompose(named_samples(10_000.0), named_counts())
    r, t = row_of(summary), terms.set_index("piece")
    # priced: the read as a native read (150), the getpid native made and gVisor did not (-1 x 100),
    # 2 switches as a pipe round trip's half less its read and write (1020), a signal whole (1500, sigreturn inside)
    assert t.loc["host read", "price_ns"] == pytest.approx(150, rel=0.03)
    assert t.loc["host getpid", "count"] == pytest.approx(-1.0)
    assert t.loc["context switch", "price_ns"] == pytest.approx(1020, rel=0.03)
    assert t.loc["signal delivered", "price_ns"] == pytest.approx(1500, rel=0.03)
    assert r["pieces_ns"] == pytest.approx(150 - 100 + 2 * 1020 + 1500, rel=0.03)
    # the futex calls are counted and named, never priced as getpids
    assert bool(r["by_name"]) and r["host_calls_unpriced"] == pytest.approx(4.0)
    assert r["unpriced_calls"] == "futex 4" and "futex 4" in t.loc["host system call, unpriced", "priced_as"]
    assert "host futex" not in t.index and "host rt_sigreturn" not in t.index
    assert r["host_calls"] == pytest.approx(5.0)


def test_counts_by_name_are_preferred_to_a_total_even_from_another_host():
    both = pd.concat([counts(host="h"), named_counts(host="other")], ignore_index=True)
    r = row_of(mechanism.decompose(named_samples(10_000.0), both, host="h")[0])
    assert r["counts_host"] == "other" and not bool(r["counts_same_host"]) and bool(r["by_name"])
    r = row_of(mechanism.decompose(named_samples(10_000.0), counts(host="h"), host="h")[0])
    assert r["counts_host"] == "h" and not bool(r["by_name"]) and r["host_calls_unpriced"] == 0


def test_a_named_call_whose_native_probe_was_not_measured_is_unpriced():
    summary, terms = mechanism.decompose(samples(10_000.0), named_counts())   # no read, no write measured
    r, t = row_of(summary), terms.set_index("piece")
    assert r["host_calls_unpriced"] == pytest.approx(5.0) and "read 1" in r["unpriced_calls"]
    # the switch falls back to the pipe round trip less four getpids
    assert t.loc["context switch", "price_ns"] == pytest.approx(1100, rel=0.03)


def test_the_paper_says_how_host_calls_were_priced_where_they_were_counted_and_against_this_hosts_own():
    from osbench_analysis.report import mechanism as paper_mechanism

    # counted by name on 'other' (probe code abc12345, runsc 1); this host 'h' has its own totals only
    mine = counts(host="h").assign(probe_source="0ld0ld00", software=lambda d: d["environment"].map(
        {"gvisor": "runsc 1"}).fillna(""))
    theirs = named_counts(host="other").assign(probe_source="abc12345", software=lambda d: d["environment"].map(
        {"gvisor": "runsc 1"}).fillna(""))
    both = pd.concat([mine, theirs], ignore_index=True)
    summary, terms = mechanism.decompose(named_samples(10_000.0), both, host="h")
    prices = paper_mechanism._prices(terms)
    assert "each host system call, counted by name, at the native call that is it" in prices
    # the unpriced calls are named by the argument and the caption, not listed again here
    assert "\\texttt{read}" in prices and "one no native probe makes alone unpriced" in prices
    assert "futex" not in prices
    # the probe code in words, never its hash (review W9): the paper's campaigns ran abc12345
    paper = {"abc12345"}
    where = paper_mechanism._where(both, summary, "h", paper)
    assert "on another machine, label of other with the paper's probe code" in where and "abc12345" not in where
    assert "cannot be chosen to count again" in where and "runsc 1" in where
    moved = paper_mechanism._transfer(both, summary, terms, "h", "native", paper)
    # by name: 5 calls beyond native's against this host's total 3; switches 2 against 2
    assert "with other probe code than the paper's" in moved and "0ld0ld00" not in moved
    assert "host system calls by at most 2 per operation" in moved and "switches by at most 0 per operation" in moved
    cap = paper_mechanism._unpriced_caption(summary)
    assert "counted by name" in cap and "left unpriced (in the rest: gVisor: futex)" in cap
    assert "Counts taken on label of other (the paper's probe code), another machine, not on this host: it cannot " \
        "be chosen to count again." == paper_mechanism._counted_caption(both, summary, "h", paper).strip()
    assert paper_mechanism._version_words("runsc v0.0.0-20260905035102-160fafc42237") == "runsc of 2026-09-05"
    old = mechanism.decompose(named_samples(10_000.0), counts(host="h"), host="h")[0]
    assert "priced as a native getpid" in paper_mechanism._unpriced_caption(old)
