"""Whole programs predicted from their system calls counted by name (measure/syscall_mix.py,
analysis/syscall_mix.py, report/sections/programs.py): each call priced by the primitive that makes it,
the rest unpriced and named, the prediction pooled over rounds like the measured slowdown."""
from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from osbench_analysis.analysis import syscall_mix as sm
from osbench_analysis.measure import syscall_mix as count
from osbench_analysis.report.sections import programs

STRACE = """\
syscall            calls
------------------ ---------
read                 120
openat                30
newfstatat            12
execve                 2
wait4                  2
close                 30
------------------ ---------
total                196
"""


def test_strace_summary_is_read_by_name_and_runs_differenced():
    low = count.parse_strace_summary(STRACE)
    assert low == {"read": 120, "openat": 30, "newfstatat": 12, "execve": 2, "wait4": 2, "close": 30}
    high = dict(low, read=520, openat=70, execve=6, getpid=1)
    per = count.per_run(low, high, 2, 6)
    assert per["read"] == 100 and per["openat"] == 10 and per["execve"] == 1 and per["newfstatat"] == 0
    assert per["getpid"] == 0.25


COMPILE_LIKE = {"execve": 13, "vfork": 2, "clone": 1, "wait4": 4, "openat": 10, "close": 12, "newfstatat": 5,
                "readlink": 2, "read": 100, "mmap": 3, "munmap": 1, "getpid": 5, "brk": 7}


def test_each_call_is_priced_by_the_primitive_that_makes_it_and_the_rest_named_unpriced():
    p = sm.plan(COMPILE_LIKE)
    # 3 processes created and executed; 10 execve beyond them are failed lookups: path walks, as a stat
    assert p["priced"] == {"fork_exec": 3, "open_close": 10, "stat": 5 + 2 + 10, "mmap_touch": 3, "null_syscall": 5}
    # inside a primitive at most once per priced call: 3 wait4 of 4, 10 close of 12, the munmap
    assert p["inside"]["wait4"] == 3 and p["inside"]["execve"] == 3 and p["inside"]["close"] == 10 and p["inside"]["munmap"] == 1
    assert p["unpriced"] == {"read": 100, "brk": 7, "wait4": 1, "close": 2}
    assert p["total"] == sum(COMPILE_LIKE.values())
    assert sum(p["priced"].values()) + sum(p["inside"].values()) + sum(p["unpriced"].values()) == p["total"]


def test_under_a_file_server_only_calls_on_files_reach_it():
    p = sm.plan(COMPILE_LIKE, server=True)
    assert p["priced"] == {"open_close": 10, "stat": 7}
    assert p["unpriced"] == {"read": 100, "close": 2}          # a file's reads reach the server, unpriced
    assert p["not_served"]["mmap"] == 3 and p["not_served"]["process creation"] == 16
    assert "getpid" in p["not_served"] and "brk" in p["not_served"]


def _values(rounds_costs: dict, *, native_app: float = 1e6, lacking=()) -> tuple[pd.DataFrame, dict]:
    """Campaign values of two environments over rounds: native and 'sandbox' = native + the added cost."""
    base = {"fork_exec": 100_000.0, "open_close": 1_000.0, "stat": 500.0, "null_syscall": 100.0,
            "mmap_touch": 300.0}
    rows, rounds = [], {}
    for r, add in rounds_costs.items():
        for env in ("native", "sandbox", "server"):
            cid = f"{r}-vm-{env}"
            rounds[cid] = r
            probes = dict(base, app_x=native_app) if env == "native" else dict(base)
            for probe, t in probes.items():
                if env != "native" and (probe in lacking or (env == "server" and probe not in sm.FILE_PROBES)):
                    continue
                v = t + (add.get(probe, 0.0) if env != "native" else 0.0)
                rows.append({"campaign_id": cid, "host": "h", "environment": env, "probe": probe,
                             "variant": "fs=tmpfs" if probe in ("stat", "open_close") else "",
                             "placement": "same_cpu", "y": math.log(v), "se": 0.01, "n_runs": 6, "estimate_ns": v})
    return pd.DataFrame(rows), rounds


def _ratios(**r):
    return pd.DataFrame([{"environment": e, "probe": "app_x", "placement": "same_cpu", "ratio": v,
                          "ci_low": v * 0.9, "ci_high": v * 1.1, "interval_over": "over 2 rounds"}
                         for e, v in r.items()])


MIX = {"workloads": {"app_x": {"per_run": {"execve": 2, "clone": 2, "wait4": 2, "openat": 10, "close": 10,
                                           "newfstatat": 20, "read": 100}}}}


def test_the_prediction_per_round_is_pooled_over_the_rounds():
    adds = {"R1": {"fork_exec": 50_000, "open_close": 2_000, "stat": 1_000},
            "R2": {"fork_exec": 70_000, "open_close": 2_000, "stat": 1_000}}
    values, rounds = _values(adds)
    t = sm.predict(values, rounds, _ratios(sandbox=1.3, server=1.1), MIX, host="h",
                   arch_classes={"server": "user-space-server"}).set_index("environment")
    # R1: 2 x 50 + 10 x 2 + 20 x 1 = 140 us over 1 ms; R2: 180 us; the rounds pooled on the log scale
    assert t.loc["sandbox", "predicted"] == pytest.approx(math.exp((math.log(1.14) + math.log(1.18)) / 2))
    assert t.loc["sandbox", "predicted_low"] < 1.14 and t.loc["sandbox", "predicted_high"] > 1.18
    assert t.loc["sandbox", "n_rounds"] == 2 and t.loc["sandbox", "predicted_over"] == "over campaigns"
    # the reads are unpriced, named, with their share of the calls (not priced as a null system call)
    assert t.loc["sandbox", "calls_unpriced"] == 100 and t.loc["sandbox", "unpriced_share"] == pytest.approx(100 / 146)
    assert dict(t.loc["sandbox", "unpriced"])["read"] == 100
    # a file server: 10 x 2 us + 20 x 1 us = 40 us, in both rounds; processes not served there
    assert t.loc["server", "predicted"] == pytest.approx(1.04)
    assert t.loc["server", "calls_not_served"] == 6 and t.loc["server", "measured"] == 1.1
    assert t.loc["sandbox", "predicted_over_measured"] == pytest.approx(t.loc["sandbox", "predicted"] / 1.3)


def test_a_primitive_the_environment_did_not_measure_leaves_its_calls_unpriced():
    values, rounds = _values({"R1": {"open_close": 2_000, "stat": 1_000}, "R2": {"open_close": 2_000, "stat": 1_000}},
                             lacking=("fork_exec",))
    t = sm.predict(values, rounds, _ratios(sandbox=1.2), MIX, host="h").set_index("environment")
    assert dict(t.loc["sandbox", "unpriced"])["(fork_exec)"] == 2
    assert t.loc["sandbox", "predicted"] == pytest.approx(1.04)
    text = programs.table_tex(t.reset_index(), {"host_label": "h", "tool": "strace -- version 6.1"})
    assert "did not measure fork + exec" in text


def test_a_round_without_a_needed_primitive_is_left_out_and_one_round_is_said_to_be_one():
    values, rounds = _values({"R1": {"stat": 1_000}, "R2": {"stat": 1_000}})
    values = values[~((values["campaign_id"] == "R2-vm-sandbox") & (values["probe"] == "stat"))]
    mix = {"workloads": {"app_x": {"per_run": {"newfstatat": 100}}}}
    t = sm.predict(values, rounds, _ratios(sandbox=1.2), mix, host="h").set_index("environment")
    assert t.loc["sandbox", "n_rounds"] == 1 and t.loc["sandbox", "predicted_over"] == "within one campaign"
    assert t.loc["sandbox", "predicted"] == pytest.approx(1.1)


def test_a_workload_with_no_call_priced_is_not_predicted():
    values, rounds = _values({"R1": {"stat": 1_000}, "R2": {"stat": 1_000}})
    mix = {"workloads": {"app_x": {"per_run": {"read": 200, "write": 200}}}}
    t = sm.predict(values, rounds, _ratios(sandbox=3.0), mix, host="h")
    assert len(t) == 1 and np.isnan(t["predicted"].iloc[0]) and t["unpriced_share"].iloc[0] == 1.0
    text = programs.paragraph_tex(t, mix)
    assert "none of the 400 calls of a app\\_x" in text and "100\\%" in text and "No slowdown is predicted" in text and "0 of" not in text
    assert "-- & --" in programs.table_tex(t, {})


def test_the_paragraph_counts_the_predictions_within_25_percent():
    adds = {"R1": {"fork_exec": 50_000, "open_close": 2_000, "stat": 1_000},
            "R2": {"fork_exec": 50_000, "open_close": 2_000, "stat": 1_000}}
    values, rounds = _values(adds)
    t = sm.predict(values, rounds, _ratios(sandbox=2.0, server=1.05), MIX, host="h",
                   arch_classes={"server": "user-space-server"})
    mix = {**MIX, "host": "h", "analysis_host": "h", "probe_sources_sha256": "abcdef0123",
           "paper_probe_sources": {"abcdef01"}, "tool": "strace -- version 6.1"}
    text = programs.paragraph_tex(t, mix)
    assert "1 of 2 measured slowdowns within 25" in text and "1 below" in text
    assert "on this host with the probe code of its campaigns" in text
    other = programs.paragraph_tex(t, {**mix, "paper_probe_sources": {"99999999"}, "analysis_host": "g"})
    assert "on another host" in other and "other than its campaigns" in other


def test_the_committed_mix_is_read_for_its_host_or_any_and_compared_with_the_others(tmp_path):
    (tmp_path / "h1.json").write_text(json.dumps({"host": "h1", "workloads": {"w": {"per_run": {"read": 10, "brk": 3}}}}))
    (tmp_path / "h2.json").write_text(json.dumps({"host": "h2", "workloads": {"w": {"per_run": {"read": 12}}}}))
    assert sm.load_mix("h2", tmp_path)["host"] == "h2" and sm.load_mix("other", tmp_path)["host"] == "h1"
    assert sm.load_mix("h1", tmp_path / "none") == {}
    others = sm.other_mixes("h1", tmp_path)
    assert [o["host"] for o in others] == ["h2"]
    a = sm.mix_agreement(sm.load_mix("h1", tmp_path), others[0]).iloc[0]
    assert a["abs_diff"] == 5 and a["largest"] == "brk" and (a["largest_a"], a["largest_b"]) == (3, 0)


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed (make setup installs it)")
def test_a_workload_is_counted_natively_under_strace():
    got = count.count_workloads(["app_kv"], pairs=1)["app_kv"]
    per = got["per_run"]
    assert per.get("read", 0) > 10 and per.get("write", 0) > 10     # a key-value session is reads and writes


def test_nothing_is_predicted_where_no_environment_beside_native_was_measured():
    values, rounds = _values({"R1": {}})
    values = values[values["environment"] == "native"]
    assert sm.predict(values, rounds, pd.DataFrame(), MIX).empty
    assert programs.paragraph_tex(pd.DataFrame(), MIX) == "" and programs.table_tex(pd.DataFrame(), MIX) == ""
