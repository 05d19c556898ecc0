"""The application workloads' system-call mix: strace's counts read, the record's schema, the mapping's
coverage and the prediction arithmetic (analysis/syscall_mix.py, measure/syscall_mix.py)."""
import json

import pandas as pd
import pytest

from osbench_analysis.analysis import syscall_mix as sm
from osbench_analysis.measure import syscall_mix as measure

STRACE = """syscall              calls
---------------- ---------
read                    13
openat                  69
newfstatat              67
---------------- ---------
total                  149
"""


def test_parse_strace_counts_reads_names_and_drops_total():
    assert measure.parse_strace_counts(STRACE) == {"read": 13, "openat": 69, "newfstatat": 67}
    with pytest.raises(measure.SyscallMixError, match="no 'name calls' rows"):
        measure.parse_strace_counts("% time     seconds\n garbage here\n")


def test_per_operation_differences_two_sizes():
    low, high = {"read": 10, "write": 3}, {"read": 30, "openat": 4, "write": 3}
    assert measure.per_operation(low, high, 5, 15) == {"openat": 0.4, "read": 2.0, "write": 0.0}
    with pytest.raises(measure.SyscallMixError, match="must exceed"):
        measure.per_operation(low, high, 5, 5)


def _record(tmp_path, name="20261126T000000Z-test-abc123.json"):
    rec = {"kind": measure.KIND, "version": measure.VERSION,
           "provenance": {"host_key": "test-abc123", "strace_version": "strace -- version 6.1"},
           "records": [{"probe": "app_tar", "environment": "native", "n_low": 5, "n_high": 25, "pairs": 3,
                        "per_operation": {"openat": {"min": 10, "median": 10, "max": 10, "n": 3},
                                          "close": {"min": 12, "median": 12, "max": 12, "n": 3},
                                          "newfstatat": {"min": 20, "median": 20, "max": 21, "n": 3},
                                          "weird_call": {"min": 1, "median": 1, "max": 1, "n": 3},
                                          "brk": {"min": 0, "median": 0, "max": 0, "n": 3}}}]}
    return measure.write_atomic(tmp_path / name, rec)


def test_record_written_atomically_and_read_back(tmp_path):
    path = _record(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]      # no temporary file left
    rec = json.loads(path.read_text())
    assert set(rec) == {"kind", "version", "provenance", "records"}
    counts, prov = sm.load_mix(tmp_path)
    assert prov["host_key"] == "test-abc123"
    assert dict(zip(counts["syscall"], counts["calls"])) == {"openat": 10, "close": 12, "newfstatat": 20,
                                                              "weird_call": 1}   # zero counts dropped
    (tmp_path / "zz.json").write_text(json.dumps({"kind": "crossing_counts"}))
    with pytest.raises(sm.SyscallMixError, match="expected 'syscall_mix'"):
        sm.load_mix(tmp_path)


def test_coverage_reports_unpriced_and_nets_closes_of_opens(tmp_path):
    counts, _ = sm.load_mix(_record(tmp_path).parent)
    cov = sm.coverage(counts).iloc[0]
    assert cov["calls"] == 43 and cov["unpriced"] == ["weird_call"] and cov["unpriced_calls"] == 1
    priced = sm.priced_calls(counts).set_index("syscall")
    assert priced.loc["close", "calls"] == 2          # 12 closes, 10 of them the opens' own
    assert priced.loc["openat", "probe"] == "open_close"


def test_prediction_arithmetic_on_synthetic_costs():
    counts = pd.DataFrame({"probe": ["app_kv"] * 3, "syscall": ["read", "write", "openat"],
                           "calls": [200.0, 200.0, 2.0]})
    est = pd.DataFrame({"environment": ["native", "native", "sandbox", "sandbox"],
                        "probe": ["tcp_pingpong", "open_close", "tcp_pingpong", "open_close"],
                        "estimate_ns": [1000.0, 500.0, 3000.0, 1500.0],
                        "ci_low_ns": [990.0, 490.0, 2970.0, 1460.0], "ci_high_ns": [1010.0, 510.0, 3030.0, 1540.0]})
    extra = sm.extra_costs(est, "native").set_index("probe")
    assert extra.loc["tcp_pingpong", "extra_ns"] == 2000 and extra.loc["open_close", "extra_ns"] == 1000
    assert extra.loc["open_close", "half_ns"] == pytest.approx((40 ** 2 + 10 ** 2) ** 0.5)
    p = sm.predict(counts, {"app_kv": (1e6, 1e3)}, extra.reset_index()).iloc[0]
    # 400 calls = 100 round trips x 2000 ns, 2 opens x 1000 ns
    assert p["predicted_ns"] == pytest.approx(1e6 + 100 * 2000 + 2 * 1000)
    assert p["half_ns"] == pytest.approx((1e3 ** 2 + (100 * (30 ** 2 + 10 ** 2) ** 0.5) ** 2 + (2 * (40 ** 2 + 10 ** 2) ** 0.5) ** 2) ** 0.5)
    assert p["missing"] == [] and p["fallback"] == []


def test_prediction_falls_back_to_a_bare_crossing_and_says_so():
    counts = pd.DataFrame({"probe": ["app_tar"], "syscall": ["read"], "calls": [10.0]})
    extra = pd.DataFrame({"environment": ["s"], "probe": ["null_syscall"], "extra_ns": [100.0], "half_ns": [0.0]})
    p = sm.predict(counts, {"app_tar": (5000.0, 0.0)}, extra).iloc[0]
    assert p["predicted_ns"] == 6000 and p["fallback"] == ["read_devzero"]
    none = sm.predict(counts, {"app_tar": (5000.0, 0.0)}, extra.assign(probe="stat")).iloc[0]
    assert none["missing"] == ["read_devzero"]


@pytest.mark.parametrize("pred, meas, word", [((1, 2), (3, 4), "under"), ((5, 6), (3, 4), "over"),
                                              ((2, 3.5), (3, 4), "agrees")])
def test_verdict(pred, meas, word):
    assert sm.verdict(*pred, *meas) == word


def test_every_counted_name_of_the_committed_counts_is_priced():
    counts, prov = sm.load_mix()
    if counts.empty:
        pytest.skip("no committed system-call counts")
    assert prov["host_key"] and prov["strace_version"]
    cov = sm.coverage(counts)
    assert set(cov["workload"]) == set(measure.WORKLOADS)
    assert (cov["unpriced_calls"] == 0).all(), cov[["workload", "unpriced"]]
