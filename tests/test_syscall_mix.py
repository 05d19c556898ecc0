"""Whole programs predicted from their counted system calls (measure/syscall_mix.py,
analysis/syscall_mix.py, report/sections/programs.py)."""
from __future__ import annotations

import json
import shutil

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


def test_calls_fall_into_the_kinds_their_primitives_price():
    k = sm.kinds({"execve": 1, "clone": 1, "wait4": 1, "openat": 10, "close": 10, "newfstatat": 5,
                  "readlink": 2, "read": 100, "mmap": 3})
    assert k == {"process": 1, "open": 10, "metadata": 7, "other": 103}


def _estimates(env_costs: dict) -> pd.DataFrame:
    rows = []
    native = {"fork_exec": 100_000.0, "open_close": 1_000.0, "stat": 500.0, "null_syscall": 100.0, "app_x": 1e6}
    for env, add in env_costs.items():
        for probe, t in native.items():
            t = t + add.get(probe, 0.0) if env != "native" else t
            rows.append({"environment": env, "probe": probe, "variant": "", "placement": "same_cpu",
                         "estimate_ns": t, "ci_low_ns": t * 0.99, "ci_high_ns": t * 1.01})
    return pd.DataFrame(rows)


def test_the_prediction_prices_each_kind_and_a_file_server_only_file_calls():
    est = _estimates({"native": {}, "sandbox": {"fork_exec": 50_000, "open_close": 2_000, "stat": 1_000,
                                                "null_syscall": 1_000},
                      "server": {"open_close": 2_000, "stat": 1_000}})
    ratios = pd.DataFrame([{"environment": e, "probe": "app_x", "placement": "same_cpu", "ratio": r,
                            "ci_low": r * 0.95, "ci_high": r * 1.05} for e, r in (("sandbox", 2.0), ("server", 1.1))])
    mix = {"workloads": {"app_x": {"per_run": {"execve": 2, "wait4": 2, "openat": 10, "close": 10,
                                               "newfstatat": 20, "read": 100}}}}
    t = sm.predict(est, ratios, mix, arch_classes={"server": "user-space-server"}).set_index("environment")
    # sandbox: 2 x 50 us + 10 x 2 us + 20 x 1 us + 100 x 1 us = 240 us over a 1 ms run
    assert t.loc["sandbox", "predicted"] == pytest.approx(1.24)
    assert t.loc["sandbox", "predicted_low"] < 1.24 < t.loc["sandbox", "predicted_high"]
    # a file server serves only the file calls: 10 x 2 us + 20 x 1 us = 40 us; the rest cost nothing there
    assert t.loc["server", "predicted"] == pytest.approx(1.04) and t.loc["server", "calls_unpriced"] == 0
    assert t.loc["sandbox", "predicted_over_measured"] == pytest.approx(1.24 / 2.0)
    text = programs.paragraph_tex(t.reset_index(), {"workloads": {"app_x": {"per_run": {"read": 100, "execve": 2}}}})
    assert "1 of 2 measured slowdowns within 25" in text and "1 below" in text
    assert "app_x" not in programs.table_tex(t.reset_index(), {}).split("\\midrule")[0]


def test_a_kind_the_environment_did_not_measure_is_left_unpriced():
    est = _estimates({"native": {}, "sandbox": {"null_syscall": 1_000}})
    est = est[~((est["environment"] == "sandbox") & (est["probe"] == "fork_exec"))]
    ratios = pd.DataFrame([{"environment": "sandbox", "probe": "app_x", "placement": "same_cpu", "ratio": 1.2,
                            "ci_low": 1.1, "ci_high": 1.3}])
    mix = {"workloads": {"app_x": {"per_run": {"execve": 3, "read": 10}}}}
    t = sm.predict(est, ratios, mix)
    assert t["calls_unpriced"].iloc[0] == 3 and t["predicted"].iloc[0] == pytest.approx(1.01)


def test_the_committed_mix_is_read_for_its_host_or_any(tmp_path):
    (tmp_path / "h1.json").write_text(json.dumps({"host": "h1", "workloads": {}}))
    (tmp_path / "h2.json").write_text(json.dumps({"host": "h2", "workloads": {}}))
    assert sm.load_mix("h2", tmp_path)["host"] == "h2" and sm.load_mix("other", tmp_path)["host"] == "h1"
    assert sm.load_mix("h1", tmp_path / "none") == {}


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed (make setup installs it)")
def test_a_workload_is_counted_natively_under_strace():
    got = count.count_workloads(["app_kv"], pairs=1)["app_kv"]
    per = got["per_run"]
    assert per.get("read", 0) > 10 and per.get("write", 0) > 10     # a key-value session is reads and writes


def test_nothing_is_predicted_where_no_environment_beside_native_was_measured():
    mix = {"workloads": {"app_x": {"per_run": {"read": 10}}}}
    assert sm.predict(_estimates({"native": {}}), pd.DataFrame(), mix).empty
    assert programs.paragraph_tex(pd.DataFrame(), mix) == "" and programs.table_tex(pd.DataFrame(), mix) == ""
