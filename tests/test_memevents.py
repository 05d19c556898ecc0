"""The guests' memory-system model (issue 38): the plugin's build and its boundaries, its windows set on
the boot's batches, the campaign's checks and the analysis of its columns."""
from __future__ import annotations

import ctypes
import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from osbench_analysis import environments
from osbench_analysis.analysis import counts_to_time, memevents as analysis
from osbench_analysis.environments import memevents, qemu
from osbench_analysis.environments.qemu import Boot, outcomes
from osbench_analysis.measure import config
from osbench_analysis.paths import PROBES_DIR
from osbench_analysis.store import schema

SERIAL = "\n".join([
    "OSB hello kernel=linux spectre_v2=x meltdown=Mitigation:_PTI",
    "OSB job=0 probe=null_syscall begin",
    "OSB job=0 batch=0 warmup=1 iterations=1 elapsed=400 work=1",
    "OSB job=0 batch=1 warmup=0 iterations=100 elapsed=32700 work=100",
    "OSB job=0 done",
    "OSB end", ""])


def _window(n: int, **kw) -> str:
    fields = {k: kw.get(k, 0) for k in memevents.FIELDS}
    fields["insns"] = kw.get("insns", n)
    return (f"W window={n} modelled={kw.get('modelled', 1)} "
            + " ".join(f"{k}={v}" for k, v in fields.items()) + f" touch_overflow={kw.get('overflow', 0)}")


def test_windows_go_on_the_boots_batches_in_order_or_on_none():
    text = "M line_bytes=64 global=upper\n" + _window(1, insns=399, l1d_misses=7) + "\n" + _window(2, insns=32699)
    res, facts = memevents.attach(outcomes(Boot(SERIAL, "ended", None, 1.0), 1, {}, 60), text)
    rows = res[0].batches
    assert [r["mem_insns"] for r in rows] == [399, 32699] and rows[0]["l1d_misses"] == 7
    assert set(memevents.FIELDS.values()) <= set(rows[1]) and "memory_problem" not in facts
    # one window short: nothing is set, and the facts say why
    res, facts = memevents.attach(outcomes(Boot(SERIAL, "ended", None, 1.0), 1, {}, 60), text.rsplit("\n", 1)[0])
    assert "mem_insns" not in res[0].batches[0] and "1 windows for 2 batches" in facts["memory_problem"]
    # a window the model did not see whole (it started during it) gets no column, the next ones theirs
    first = "M x=1\n" + _window(1, modelled=0) + "\n" + _window(2)
    res, facts = memevents.attach(outcomes(Boot(SERIAL, "ended", None, 1.0), 1, {}, 60), first)
    assert "mem_insns" not in res[0].batches[0] and res[0].batches[1]["mem_insns"] == 2
    assert facts["memory_windows_unmodelled"] == 1 and "memory_problem" not in facts
    over = "M x=1\n" + _window(1) + "\n" + _window(2, overflow=3, lines_touched=5)
    rows = memevents.attach(outcomes(Boot(SERIAL, "ended", None, 1.0), 1, {}, 60), over)[0][0].batches
    assert rows[1]["lines_touched"] is None and rows[0]["lines_touched"] == 0
    # a torn last line is not a window
    assert len(memevents.parse(text[:-3])[1]) == 1


def test_the_plugin_argument_says_the_window_the_global_pages_and_pollution(tmp_path):
    plugin = tmp_path / "osb-memsim.so"
    with pytest.raises(memevents.MemoryEventsError, match="not built"):
        memevents.plugin_argv(tmp_path, "warm", "marker", "upper", plugin)
    plugin.write_bytes(b"")
    argv = memevents.plugin_argv(tmp_path, "polluted", "marker", "image", plugin)
    assert argv == ["-plugin", f"{plugin},out={tmp_path / memevents.OUTPUT},boundary=marker,global=image,pollute=1"]
    with pytest.raises(memevents.MemoryEventsError, match="one of"):
        memevents.plugin_argv(tmp_path, "cold", "marker", "upper", plugin)
    with pytest.raises(memevents.MemoryEventsError, match="comma"):
        memevents.plugin_argv(tmp_path / "a,b", "warm", "marker", "upper", plugin)


def test_each_guest_states_its_window_and_pti_its_cpu_and_global_pages():
    assert environments.get("linux-tcg").memory_boundary == "marker" == environments.get("xen-linux").memory_boundary
    assert environments.get("mach").memory_boundary == "rdtsc" == environments.get("sel4").memory_boundary
    pti = environments.get("linux-tcg-pti")
    assert pti.cpu == "qemu64,vendor=GenuineIntel" and pti.memory_global == "image"
    assert environments.get("linux-tcg").memory_global == "upper"
    argv = qemu.qemu_argv(["-kernel", "k"], None, pti.cpu)
    assert argv[argv.index("-cpu") + 1] == "qemu64,vendor=GenuineIntel" and argv.count("-cpu") == 1
    assert qemu.machine() == qemu.MACHINE
    assert "page-table isolation" in pti.facts()["kernel_config"]
    assert pti.facts()["memory_model"]["global_pages"] == memevents.GLOBAL["image"]


def test_a_pti_guest_without_page_table_isolation_fails_its_jobs():
    pti, plain = environments.get("linux-tcg-pti"), environments.get("linux-tcg")
    ok = outcomes(Boot(SERIAL, "ended", None, 1.0), 1, {}, 60)
    assert pti.checked(ok)[0].status == "ok" and ok[0].facts["guest_meltdown"] == "Mitigation:_PTI"
    amd = outcomes(Boot(SERIAL.replace("Mitigation:_PTI", "Not_affected"), "ended", None, 1.0), 1, {}, 60)
    failed = pti.checked(amd)[0]
    assert failed.status == "error" and "meltdown=Not_affected" in failed.message
    assert plain.checked(amd)[0].status == "ok"


def test_the_tasks_code_range_bounds_its_rdtsc_windows(tmp_path):
    import struct

    def elf(segments):
        head = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 64, 0, 0, 64, 56,
                                                                       len(segments), 0, 0, 0)
        return head + b"".join(struct.pack("<IIQQQQQQ", t, f, 0, va, va, n, n, 4096) for t, f, va, n in segments)

    # the executable PT_LOADs only (R+X text, not R+W data, not a PT_NOTE)
    assert memevents.text_range(elf([(1, 5, 0x401000, 0x7892), (1, 6, 0x409000, 0x3000), (4, 4, 0x400000, 64)])) \
        == (0x401000, 0x408892)
    with pytest.raises(memevents.MemoryEventsError, match="no executable"):
        memevents.text_range(elf([(1, 6, 0x409000, 0x3000)]))
    plugin = tmp_path / "p.so"
    plugin.write_bytes(b"")
    assert memevents.plugin_argv(tmp_path, "warm", "rdtsc", "upper", plugin, (0x401000, 0x408892))[1].endswith(
        ",pollute=0,text=401000-408892")


def test_the_harness_markers_are_the_plugins():
    header = (PROBES_DIR / "harness.h").read_text()
    plugin = (PROBES_DIR / "plugin" / "osb_memsim.c").read_text()
    for name, c_name in (("BEGIN", "MARK_BEGIN"), ("END", "MARK_END")):
        asm = re.search(rf"OSB_MARK_{name}\(\) __asm__ volatile\(\"\.byte ([^\"]+)\"", header).group(1)
        arr = re.search(rf"{c_name}\[\] = \{{([^}}]+)\}}", plugin).group(1)
        assert [int(b, 16) for b in asm.split(",")] == [int(b, 16) for b in arr.split(",")]
    harness = (PROBES_DIR / "harness.c").read_text()
    assert re.search(r"&t0\);\s+OSB_MARK_BEGIN\(\);\s+int rc = probe->loop\(&c, iterations\);\s+OSB_MARK_END\(\);",
                     harness)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc missing")
def test_the_plugin_builds_and_declares_api_version_1(tmp_path):
    out = memevents.build(tmp_path / "osb-memsim.so")
    lib = ctypes.CDLL(str(out), mode=ctypes.RTLD_LOCAL | 1)   # RTLD_LAZY: QEMU's functions resolve in QEMU
    assert ctypes.c_int.in_dll(lib, "qemu_plugin_version").value == 1
    assert hasattr(lib, "qemu_plugin_install")
    mtime = out.stat().st_mtime_ns
    assert memevents.build(out) == out and out.stat().st_mtime_ns == mtime   # kept while its sources are older


def test_memory_events_are_validated():
    with pytest.raises(config.ConfigError, match="memory_events"):
        config.validate(config.make_config("quick", probes=["null_syscall"], memory_events="cold"))


def _samples() -> pd.DataFrame:
    """One memory-events campaign of linux-tcg: run 0 without the model, runs 1 and 2 with it."""
    rows = []
    for probe, pj, it, per_op in (("null_syscall", "{}", 100, 326), ("mem_page_pass", '{"bytes": 1048576}', 10, 3000),
                                  ("pipe_pingpong", "{}", 50, 10600)):
        for run in range(3):
            for batch in range(3):
                row = {"campaign_id": "c", "environment": "linux-tcg", "arch_class": "monolithic", "probe": probe,
                       "variant": "", "params_json": pj, "placement": "same_cpu", "fs_type": "", "run": run,
                       "batch": batch, "warmup": batch == 0, "iterations": it, "elapsed_ns": it * per_op + batch,
                       "work_done": it, "cpu_start": 0, "cpu_end": 0, "nvcsw": 0, "nivcsw": 0, "minflt": 0,
                       "loadavg_1m": 0.0, "worker_pid": 1, "started_unix_ns": 0}
                if run:
                    row.update({c: 0 for c in schema.MODEL_FIELDS})
                    row.update(mem_insns=it * per_op + batch + 2, kernel_entries=it * (probe != "mem_page_pass"),
                               dtlb_misses=it * 256 + 3 if probe == "mem_page_pass" else 0,
                               l1d_misses=5 * (probe == "pipe_pingpong") * it, lines_touched=70,
                               pages_touched=260 if probe == "mem_page_pass" else 20)
                rows.append(row)
    return schema.samples_frame(rows)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_campaign_checks_its_counts_and_its_boots_and_the_known_answers():
    s = _samples()
    check = analysis.count_check(s)
    assert check["same_counts"].all() and (check["window_minus_clock"] == 2).all()
    assert set(check["plain_boots"]) == {1} and set(check["model_boots"]) == {2}
    s2 = s.copy()
    s2.loc[(s2["run"] == 2) & (s2["batch"] == 2) & (s2["probe"] == "null_syscall"), "elapsed_ns"] += 1
    off = analysis.count_check(s2).set_index("probe").loc["null_syscall"]
    assert not off["same_counts"] and off["max_relative_difference"] == pytest.approx(1 / (100 * 326 + 2))
    tab = analysis.per_op(s, {"c": "warm"})
    assert tab["exact"].all() and set(tab["boots"]) == {2}
    null = tab.set_index("probe").loc["null_syscall"]
    assert null["kernel_entries"] == 1 and null["lines_touched"] == 70
    ka = analysis.known_answers(tab)
    dtlb = ka[ka["event"] == "dtlb_misses"].iloc[0]
    assert dtlb["predicted"] == 256 and dtlb["measured"] == pytest.approx(256.3) and dtlb["agrees"]
    assert analysis.predicted("mem_line_pass", 4 << 20) == {"l1d_misses": 65536, "l2_misses": 65536,
                                                          "dtlb_misses": 1024, "stlb_misses": 0}
    assert analysis.predicted("mem_line_pass", 16384)["l1d_misses"] == 0
    off = ka.assign(measured=ka["measured"] * 2)
    assert not analysis.known_answers(tab.assign(dtlb_misses=tab["dtlb_misses"] * 2))["agrees"].all()
    assert len(off)
    # the window's footprint: the buffer's 256 pages and a few of code and stack; a model that lost pages fails
    pages = ka[ka["event"] == "pages_touched"].iloc[0]
    assert pages["predicted"] == 256 and pages["measured"] == 260 and pages["agrees"]
    lost = analysis.known_answers(tab.assign(pages_touched=26.0))
    assert not lost[lost["event"] == "pages_touched"]["agrees"].any()



def test_the_microkernel_tasks_line_passes_are_checked_against_their_fixed_sizes():
    # GNU Mach's and seL4's tasks take no size: 64 KiB (twice L1D: every line misses L1D, none L2 or the
    # TLB) and 16 KiB (inside L1D: nothing misses)
    rows = []
    for guest in ("mach", "sel4"):
        for probe, l1d in ((f"{guest}_line_pass_64k", 1024.4), (f"{guest}_line_pass_16k", 0.3)):
            rows.append({"mode": "warm", "environment": guest, "probe": probe, "params_json": "{}",
                         "l1d_misses": l1d, "l2_misses": 0.0, "dtlb_misses": 0.1, "stlb_misses": 0.0})
    tab = pd.DataFrame(rows)
    ka = analysis.known_answers(tab)
    assert len(ka) == 16 and ka["agrees"].all()
    big = ka[(ka["probe"] == "sel4_line_pass_64k") & (ka["event"] == "l1d_misses")].iloc[0]
    assert big["bytes"] == 65536 and big["predicted"] == 1024
    assert set(ka[ka["probe"].str.endswith("_16k")]["predicted"]) == {0}
    # a model whose L1D held 64 KiB (no misses), or one that missed inside L1D, fails the check
    wrong = tab.assign(l1d_misses=lambda d: np.where(d["probe"].str.endswith("_64k"), 0.0, 256.0))
    bad = analysis.known_answers(wrong)
    assert not bad[bad["event"] == "l1d_misses"]["agrees"].any()


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_matched_rows_in_memory_terms_and_counts_to_time():
    s = _samples()
    tab = pd.concat([analysis.per_op(s, {"c": "warm"}),
                     analysis.per_op(s.assign(campaign_id="p"), {"p": "polluted"})], ignore_index=True)
    m = analysis.matched(tab).set_index("probe")
    assert m.loc["pipe_pingpong", "row"] == "rtt_spaces" and m.loc["null_syscall", "row"] == "null_entry"
    assert m.loc["pipe_pingpong", "warm:L1 misses"] == 5 and m.loc["pipe_pingpong", "footprint lines"] == 70
    assert "mem_page_pass" not in m.index   # no matched row
    screen = analysis.matched_screen(analysis.matched(tab))
    from osbench_analysis.formatting import sig3

    assert list(screen["footprint lines"]) == [sig3(70.0)] * 2 and screen.attrs["caption"]
    from osbench_analysis.plots.memevents import plot_memory_matched

    assert plot_memory_matched(analysis.matched(tab)).axes
    native = s[s["run"] == 0].assign(environment="native", elapsed_ns=lambda d: d["elapsed_ns"] // 3)
    t = counts_to_time.table(native, tab)
    assert set(t["probe"]) == {"null_syscall", "mem_page_pass", "pipe_pingpong"}
    # the kernel entry priced natively: the null call's native ns less its instructions' modelled cost
    null_ns = counts_to_time.native_ns(native).set_index("probe").loc["null_syscall", "native_ns"]
    null = t.set_index("probe").loc["null_syscall"]
    assert t.attrs["entry_price_ns"] == pytest.approx(null_ns - null["instructions"] * counts_to_time.COSTS[
        "ns_per_insn"])
    assert null["modelled_ns"] == pytest.approx(null_ns) and null["ns_per_insn"] == pytest.approx(1 / 3, rel=1e-3)
    # the known-answer stream stands apart: two primitives are too few to rank, three with it
    assert counts_to_time.summary(t) == {} and t.set_index("probe").loc["mem_page_pass", "known_answer"]
    summ = counts_to_time.summary(t, known_answers=True)
    assert summ["primitives"] == 3 and summ["model_spread"] >= 1


def test_samples_without_the_model_columns_get_nulls_and_old_files_load(tmp_path):
    s = _samples()
    bare = s[[c for c in s.columns if c not in schema.MODEL_FIELDS]]
    again = schema.samples_frame(bare.to_dict("records"))
    assert again[list(schema.MODEL_FIELDS)].isna().all().all() and list(again.columns) == list(schema.SAMPLE_COLUMNS)
    assert str(again["mem_insns"].dtype) == "Int64"
    assert json.dumps(list(schema.MODEL_FIELDS))
