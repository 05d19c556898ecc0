"""Conversions to µs per operation / MB/s, checked on hand-computed examples and against the papers' own cross-checks."""
import math

import pytest

from osbench_analysis.reference import studies as reference


@pytest.fixture(scope="module")
def ref():
    return reference.load_reference()


def _row(ref, table_id, metric_id, system_id):
    hit = ref[(ref["table_id"] == table_id) & (ref["metric_id"] == metric_id) & (ref["system_id"] == system_id)]
    assert len(hit) == 1
    return hit.iloc[0]


@pytest.mark.parametrize("value, unit, kw, common, expected", [
    (7139, "count_per_window", {"window_s": 20}, "us_per_op", 2801.5128169),    # 20 s / 7139 execl
    (60366, "loops_per_s", {}, "us_per_op", 16.5656164),                        # MINIX syscall loop
    (43.6, "loops_per_min", {}, "us_per_op", 1376146.789),                      # 60 s / 43.6 compiles
    (15333, "us_total", {"n_ops": 1000}, "us_per_op", 15.333),
    (954660, "us_total", {"n_ops": 2_000_000}, "us_per_op", 0.47733),
    (0.1061, "us_per_op", {}, "us_per_op", 0.1061),
    (220582, "KB_per_s", {}, "MB_per_s", 215.4121094),                          # / 1024
    (5301.44, "MB_per_s", {}, "MB_per_s", 5301.44),
])
def test_convert_value_hand_examples(value, unit, kw, common, expected):
    got_unit, got, formula = reference.convert_value(value, unit, **kw)
    assert got_unit == common and formula
    assert got == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize("unit", ["s_total", "percent", "events_per_s", "pages", "load_average"])
def test_units_without_per_operation_meaning_are_refused(unit):
    with pytest.raises(reference.ReferenceDataError, match="no per-operation"):
        reference.convert_value(1.0, unit)


def test_window_and_count_parameters_are_required():
    with pytest.raises(reference.ReferenceDataError, match="window_s"):
        reference.convert_value(10, "count_per_window")
    with pytest.raises(reference.ReferenceDataError, match="n_ops"):
        reference.convert_value(10, "us_total")


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_loaded_rows_are_converted_or_say_why_not(ref):
    for _, r in ref.iterrows():
        converted = (not math.isnan(r["us_per_op"])) + (not math.isnan(r["MB_per_s"]))
        if r["convertible"] and not math.isnan(r["value"]):
            assert converted == 1 and r["conversion"], (r["table_id"], r["metric_id"], r["system_id"])
        else:
            assert converted == 0
            if not r["convertible"]:
                assert r["not_convertible_reason"].strip(), (r["table_id"], r["metric_id"])


def test_loaded_examples(ref):
    assert _row(ref, "table2_microseconds", "syscall_loop_10000_iter", "linux_fc6")["us_per_op"] == pytest.approx(2.2)
    assert _row(ref, "table2_lmbench", "pipe_bandwidth", "macos_imac")["MB_per_s"] == pytest.approx(5301.44)
    assert _row(ref, "table1_unixbench", "file_read_4096_8000", "linux_fc6")["MB_per_s"] == pytest.approx(392921 / 1024)
    assert _row(ref, "table3_pingpong", "exp3_thread_creation", "freebsd_5_3")["us_per_op"] == pytest.approx(41.154)
    assert math.isnan(_row(ref, "counters", "context_switches_per_s", "linux_2_4_12")["us_per_op"])
    assert math.isnan(_row(ref, "table1_unixbench", "shell_scripts_8", "minix3")["us_per_op"])  # unit in doubt


@pytest.mark.parametrize("system_id", ["minix3", "linux_fc6"])
def test_two_independent_tables_agree_after_conversion(ref, system_id):
    # The MINIX paper measures the same syscall loop twice: UnixBench loops/s (Table 1) and gettimeofday
    # around 10000 loops (Table 2). Converted to µs per loop they must agree (the paper: 'similar').
    unixbench = _row(ref, "table1_unixbench", "syscall_overhead", system_id)["us_per_op"]
    timed = _row(ref, "table2_microseconds", "syscall_loop_10000_iter", system_id)["us_per_op"]
    assert timed / unixbench == pytest.approx(1.0, abs=0.2)


def test_dc_rows_keep_the_printed_lps_and_convert_as_loops_per_minute():
    ref = reference.load_reference()
    t = ref[(ref["source_id"] == "miao_minix3_linux") & (ref["table_id"] == "table1_unixbench")]
    dc = t[t["metric_id"] == "dc_sqrt2"].set_index("system_id")
    assert set(dc["cell_as_published"].str.endswith(" lps")) == {True}          # printed value and unit kept
    assert set(dc["unit"]) == {"loops_per_min"} and set(dc["unit_as_printed"]) == {"loops_per_s"}
    for _, r in dc.iterrows():
        assert r["us_per_op"] == pytest.approx(60e6 / r["value_published"])
        assert "printed as loops per second" in r["conversion"]
    # why per second is impossible: every dc loop forks and execs dc, yet read per second Linux would launch
    # more dc processes per second than it can fork+wait empty children in the Process Creation row
    forks_per_s = t[(t["metric_id"] == "process_creation") & (t["system_id"] == "linux_fc6")]["value"].iloc[0]
    assert dc.loc["linux_fc6", "value_published"] > 5 * forks_per_s
    assert dc.loc["linux_fc6", "us_per_op"] > 1e6 / forks_per_s                  # per minute: a loop costs more than a fork


def test_a_printed_unit_that_differs_needs_a_note(tmp_path):
    import json
    import shutil

    dst = tmp_path / "reference"
    shutil.copytree(reference.default_reference_dir(), dst)
    path = dst / "miao_minix3_linux" / "table1_unixbench.json"
    spec = json.loads(path.read_text(encoding="utf-8"))
    del spec["metrics"]["dc_sqrt2"]["unit_note"]
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(reference.ReferenceDataError, match="unit_note"):
        reference.load_reference(dst)
    spec["metrics"]["dc_sqrt2"].pop("unit_as_printed")
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(reference.ReferenceDataError, match="prints unit"):
        reference.load_reference(dst)
