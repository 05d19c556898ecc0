"""Section (a) in memory terms (report/sections/memory.py): the round trips' table and sentences, the
calibration of counts by native times, the files written, and the memory model's campaigns kept out of the
instruction-count rounds -- on synthetic tables, never the live data."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from osbench_analysis.analysis import counts_to_time, kernels, memevents
from osbench_analysis.report.sections import memory
from osbench_analysis.store import campaigns as store

#: (environment, probe, params, warm instructions, warm L1D, warm TLB, CR3 writes, cold lines, cold pages,
#:  polluted window instructions)
ROWS = [
    ("linux-tcg", "null_syscall", {}, 330.0, 0.02, 0.0, 0.0, 62, 28, 354.0),
    ("linux-tcg-pti", "null_syscall", {}, 340.0, 0.02, 15.0, 2.0, 65, 31, 366.0),
    ("xen-linux", "null_syscall", {}, 1100.0, 0.1, 3.0, 2.0, 133, 45, 1124.0),
    ("mach", "mach_null_trap", {}, 76.0, 0.0, 0.0, 0.0, 25, 12, 97.0),
    ("sel4", "sel4_poll_ntfn", {}, 252.0, 0.0, 0.0, 0.0, 48, 22, 286.0),
    ("linux-tcg", "pipe_pingpong", {}, 10700.0, 220.0, 159.0, 2.0, 1970, 271, 47100.0),
    ("linux-tcg", "service_shm", {"bytes": 0}, 9540.0, 180.0, 101.0, 2.0, 1770, 256, 46100.0),
    ("linux-tcg-pti", "pipe_pingpong", {}, 11000.0, 220.0, 284.0, 10.0, 1980, 270, 53400.0),
    ("linux-tcg-pti", "service_shm", {"bytes": 0}, 9670.0, 179.0, 213.0, 10.0, 1790, 256, 51800.0),
    ("xen-linux", "pipe_pingpong", {}, 8000.0, 937.0, 370.0, 10.0, 2630, 391, 134000.0),   # cheaper on Xen: not taken
    ("xen-linux", "service_shm", {"bytes": 0}, 23700.0, 878.0, 300.0, 10.0, 2480, 380, 140600.0),
    ("mach", "mach_rpc_task", {}, 1664.0, 0.0, 6.0, 2.0, 191, 41, 1692.0),
    ("sel4", "sel4_call_space", {}, 432.0, 0.0, 8.0, 2.0, 63, 18, 467.0),
    ("sel4", "sel4_call_space_8mr", {}, 1112.0, 0.0, 8.0, 2.0, 144, 26, 1147.0),
    ("sel4-slowpath", "sel4_call_space", {}, 900.0, 0.0, 8.0, 2.0, 90, 20, 930.0),
]


def per_op() -> pd.DataFrame:
    rows = []
    for env, probe, params, insns, l1d, tlb, cr3, lines, pages, window in ROWS:
        base = {"environment": env, "probe": probe, "params_json": json.dumps(params, sort_keys=True), "boots": 2,
                "exact": True, "iterations": 100.0, "mem_loads": insns / 3, "mem_stores": insns / 6,
                "l2_misses": 0.0, "itlb_misses": 0.0, "stlb_misses": 0.0, "cr3_writes": cr3,
                "kernel_entries": 1.0 if "null" in probe or "poll" in probe else 2.0, "syscall_insns": 1.0,
                "hypercalls": 0.0, "hypervisor_entries": 0.0, "wrmsrs": 0.0}
        rows.append({**base, "mode": "warm", "mem_insns": insns, "l1i_misses": 0.0, "l1d_misses": l1d,
                     "dtlb_misses": tlb, "lines_touched": np.nan, "pages_touched": np.nan})
        rows.append({**base, "mode": "polluted", "iterations": 1.0, "mem_insns": window,
                     "l1i_misses": lines * 0.6, "l1d_misses": lines * 0.4, "l2_misses": float(lines),
                     "dtlb_misses": float(pages), "lines_touched": float(lines), "pages_touched": float(pages)})
    return pd.DataFrame(rows)


def tabs() -> dict:
    t = per_op()
    m = memevents.matched(t)
    m.attrs["model"] = {"sel4": {"line_bytes": 64, "page_bytes": 4096, "l1i": "32 KiB, 8-way (by host address)",
                                 "l1d": "32 KiB, 8-way, physical addresses", "l2": "1 MiB, 16-way, unified",
                                 "itlb": "64 entries, 8-way", "dtlb": "64 entries, 4-way",
                                 "stlb": "1536 entries, 12-way, shared",
                                 "tlb_flush": "a CR3 write drops every non-global entry (qemu64: no PCID), more",
                                 "timing": "none: events are counted, never priced",
                                 "global_pages": "the kernel half", "kernel_entries": "a user-to-kernel step"}}
    return {"per_op": t, "matched": m, "pti": memevents.pti(t), "known_answers": memevents.known_answers(t),
            "count_check": pd.DataFrame()}


def test_the_round_trips_run_linuxs_cheapest_probe_on_every_linux_and_one_entry_a_kernel():
    rt = memevents.round_trips(tabs()["matched"])
    spaces = rt[rt["row"] == "rtt_spaces"].set_index("environment")
    # Linux's cheapest (service_shm) on Linux, PTI and Xen alike, though pipe_pingpong is Xen's cheapest
    assert set(spaces.loc[["linux-tcg", "linux-tcg-pti", "xen-linux"], "probe"]) == {"service_shm"}
    assert spaces.loc["sel4", "probe"] == "sel4_call_space"          # the cheaper of seL4's two entries
    assert list(spaces.index) == list(memevents.KERNELS)            # the kernels in order, no slow path
    assert list(dict.fromkeys(rt["row"])) == ["null_entry", "rtt_spaces"]   # no thread row measured here


def test_the_table_prints_whole_counts_whole_and_marks_a_window_holding_other_work():
    rt = memevents.round_trips(tabs()["matched"])
    tex = memory.table_tex(rt)
    sel4 = next(ln for ln in tex.splitlines() if ln.startswith("seL4 &") and "432" in ln)
    cells = [c.strip() for c in sel4.rstrip(" \\").split("&")]
    # instructions, lines, pages; warm L1I L1D L2 TLB; cold L1I L1D L2 TLB; CR3, entries
    assert cells[1:] == ["432", "63", "18", "0", "0", "0", "8", "38", "25", "63", "18", "2", "2"]
    linux = next(ln for ln in tex.splitlines() if ln.startswith("Linux &") and "9\\,540" in ln)
    # one group line per operation, spanning every column
    assert tex.count(r"\multicolumn{14}{l}") == 2 and r"\emph{request-reply round trip, two address spaces}" in tex
    assert "1\\,770$^{4.83\\times}$" in linux            # 46100 / 9540: the window holds more than the operation
    assert "$^" not in sel4                                # 467 / 432 = 1.08: no mark
    assert memory._n(0.02) == "0" and memory._n(0.111) == "0.111" and memory._n(2.0004) == "2"
    assert memory._n(np.nan) == "--" and memory._n(23700.0) == "23\\,700"
    full = memory.table_tex(tabs()["matched"], probe_column=True)
    assert "seL4 call, other space, 8 words" in full or "sel4" in full.lower()
    m = tabs()["matched"]        # a line per matched entry, one per operation, two of headings
    assert full.count(r"\\") == len(m) + m["row"].nunique() + 2 and r"\multicolumn{15}{l}" in full


def test_the_sentences_quote_the_table_and_leave_out_what_is_missing():
    t = tabs()
    rt = memevents.round_trips(t["matched"])
    text = memory.findings_tex(rt, t["pti"])
    assert "seL4's round trip between two address spaces touches 63 cache lines on 18 pages" in text
    assert "GNU Mach's 191 lines on 41 pages" in text and "1,770 lines on 256 pages" in text
    assert "(an upper bound: its window also holds the guest's other work, 4.83 times" in text
    assert "seL4 0 L1 and 8 TLB misses" in text and "its 2 CR3 writes" in text
    assert "writes CR3 10 times against 2" in text
    assert "from 0 CR3 writes and 0 TLB misses into 2 and 15" in text
    assert "3.03\\% more instructions" in text                  # 340 / 330
    # without GNU Mach, Xen or the PTI guest: their clauses go, the rest stays
    part = rt[~rt["environment"].isin(["mach", "xen-linux"])]
    short = memory.findings_tex(part, pd.DataFrame())
    assert "GNU Mach" not in short and "Xen" not in short and "isolation" not in short and "63 cache lines" in short
    no_sel4 = memory.findings_tex(rt[rt["environment"] != "sel4"], pd.DataFrame())
    assert "touches" not in no_sel4 and no_sel4.startswith("On Xen the same Linux round trip writes CR3 10 times")
    geometry = memory.geometry_words(t["matched"].attrs["model"])
    assert "L1I and L1D of 32~KiB 8-way" in geometry and "L2 of 1~MiB 16-way" in geometry
    assert "1536 entries 12-way" in geometry and "(qemu64: no PCID)" in geometry


def test_counts_are_priced_by_the_papers_native_estimates_with_their_intervals():
    t = tabs()
    est = pd.DataFrame([
        {"environment": "native", "placement": "same_cpu", "probe": p, "params_json": pj, "estimate_ns": ns,
         "ci_low_ns": ns * 0.9, "ci_high_ns": ns * 1.2}
        for p, pj, ns in (("null_syscall", "{}", 100.0), ("pipe_pingpong", "{}", 2000.0),
                          ("service_shm", '{"bytes": 0}', 1500.0))]
        + [{"environment": "native", "placement": "cross_cpu", "probe": "null_syscall", "params_json": "{}",
            "estimate_ns": 999.0, "ci_low_ns": 1.0, "ci_high_ns": 2000.0}])
    native = counts_to_time.native_from_estimates(est)
    assert len(native) == 3 and native.set_index("probe").loc["null_syscall", "native_ns"] == 100.0
    cal = counts_to_time.from_native(native, t["per_op"]).set_index("probe")
    null = cal.loc["null_syscall"]
    assert null["ns_per_insn"] == pytest.approx(100 / 330)
    assert (null["ns_per_insn_low"], null["ns_per_insn_high"]) == pytest.approx((90 / 330, 120 / 330))
    summary = counts_to_time.summary(cal.reset_index())
    words = memory.calibration_words(cal.reset_index(), summary)
    assert f"{100 / 330:.3f}"[:5] in words and "[0.273, 0.364]" in words and "3 Linux primitives" in words
    assert memory.calibration_words(pd.DataFrame(), {}) == ""
    assert counts_to_time.native_from_estimates(pd.DataFrame()).empty


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_files_are_written_and_none_stale_without_the_campaigns(tmp_path):
    t = tabs()
    written = memory.write_section(None, tmp_path, t)
    names = {p.name for p in written}
    assert {"memory.tex", "memory_appendix.tex", "memory_round_trips.pdf", "memory_matched.pdf",
            "memory_matched.csv"} <= names
    body = (tmp_path / "memory.tex").read_text()
    assert r"\label{tab:memory}" in body and r"generated/memory_round_trips" in body and "63 cache lines" in body
    appendix = (tmp_path / "memory_appendix.tex").read_text()
    assert r"\label{sec:memory}" in appendix and r"\label{tab:memory-all}" in appendix
    assert "It has no timing (events are counted, never priced)" in appendix
    assert memory.write_section(None, tmp_path, None) == []
    assert not (tmp_path / "memory.tex").exists() and not (tmp_path / "memory_appendix.tex").exists()


def test_the_conclusion_claims_the_counts_and_no_time():
    t = tabs()
    s = memory.conclusion_sentence(t)
    assert "touches 63 lines with the caches emptied first against at most 1\\,770 for Linux's" in s
    assert "misses 8 times warm against 281" in s and "the shorter path is also the smaller footprint" in s
    assert "prices nothing" in s and memory.conclusion_sentence(None) == ""
    # a Linux that touched fewer lines than seL4 would not be called the larger footprint
    flipped = t["matched"].copy()
    linux = (flipped["environment"] == "linux-tcg") & (flipped["row"] == "rtt_spaces")
    flipped.loc[linux, "footprint lines"] = 10.0
    assert "do not order the two kernels alike" in memory.conclusion_sentence(dict(t, matched=flipped))
    rt_less = dict(t, matched=t["matched"][t["matched"]["environment"] != "sel4"])
    assert memory.conclusion_sentence(rt_less) == ""


def test_the_memory_models_campaigns_are_no_round_of_the_instruction_counts():
    cat = pd.DataFrame([
        {"campaign_id": "a-sel4", "environment": "sel4", "created_utc": "2026-11-26T10:00:00", "partial": "",
         "memory_events": ""},
        {"campaign_id": "b-sel4", "environment": "sel4", "created_utc": "2026-11-28T10:00:00", "partial": "",
         "memory_events": "warm"},
        {"campaign_id": "c-mach", "environment": "mach", "created_utc": "2026-11-28T10:00:00", "partial": "",
         "memory_events": "polluted"}])
    assert list(store.memory_model(cat)) == [False, True, True]
    assert kernels.newest_round(cat) == ["a-sel4"]
    assert not store.memory_model(cat.drop(columns="memory_events")).any()   # an older catalog: none


def test_guest_counts_are_set_against_another_campaigns_batch_by_batch():
    def frame(elapsed, iterations=(1, 100, 7000), model=None):
        return pd.DataFrame([{"environment": "sel4", "probe": "sel4_call_space", "params_json": "{}", "run": 0,
                              "batch": b, "iterations": it, "elapsed_ns": e, "mem_insns": model}
                             for b, (it, e) in enumerate(zip(iterations, elapsed))])
    ours = frame([500, 43300, 3024300])
    ref = frame([500, 43301, 4000000], iterations=(1, 100, 9000))     # batch 2 ran another size: not compared
    same = memevents.same_batches(ours, ref).iloc[0]
    assert (same["batches"], same["same"]) == (2, 1) and same["max_relative_difference"] == pytest.approx(1 / 43301)
    # the model's boots are not the boot without it
    assert memevents.same_batches(frame([500, 43300, 1], model=1.0), ref).empty
    t = memevents.same_batches(ours, ref)
    t.attrs.update(same_probe_code={"sel4": False}, same_host=False)
    words = memory.host_words(t)
    assert "seL4 1 of 2 (a later probe code; the others differ by up to 0.00231\\%)" in words and "on two hosts" in words
    assert "Table~\\ref{tab:kernels-matched}" in words
    assert memory.host_words(None) == "" and memory.host_words(t.iloc[0:0]) == ""


#: the committed memory-events campaigns the paper reads (data/paper_campaigns.txt)
COMMITTED = {"warm": ["20261128T105812Z-vm-linux-tcg", "20261128T105812Z-vm-linux-tcg-pti", "20261128T105812Z-vm-mach",
                      "20261128T105812Z-vm-sel4", "20261128T105812Z-vm-sel4-slowpath", "20261128T105831Z-vm-xen-linux"],
             "polluted": ["20261128T110925Z-vm-linux-tcg", "20261128T110925Z-vm-linux-tcg-pti",
                          "20261128T110925Z-vm-mach", "20261128T110925Z-vm-sel4", "20261128T110925Z-vm-sel4-slowpath",
                          "20261128T111424Z-vm-xen-linux"]}


@pytest.mark.slow  # reads twelve committed campaigns
def test_the_committed_memory_campaigns_hold_their_checks(committed_root):
    ids = COMMITTED["warm"] + COMMITTED["polluted"]
    assert sorted(memevents.memory_campaigns(committed_root)) == sorted(ids)   # the newest of each guest and mode
    assert not set(ids) & set(kernels.newest_round(store.catalog(committed_root)))   # never the counts' round
    t = memory.load(committed_root)
    # every guest but Xen's: the boot without the model counted what the model's boots did, and two boots agree
    cc = t["count_check"]
    assert cc[cc["environment"] != "xen-linux"]["same_counts"].all()
    per = t["per_op"]
    assert per[per["environment"] != "xen-linux"]["exact"].all()
    # GNU Mach's and seL4's known answers all hold
    ka = t["known_answers"]
    assert ka[ka["environment"].isin(["mach", "sel4"])]["agrees"].all()
    # the matched round trips on all five kernels, warm and emptied first
    rt = memevents.round_trips(t["matched"])
    spaces = rt[rt["row"] == "rtt_spaces"].set_index("environment")
    assert list(spaces.index) == list(memevents.KERNELS)
    assert spaces[["warm:L1 misses", "polluted:L1 misses", "footprint lines"]].notna().all().all()
    # seL4's fastpath round trip between address spaces: two CR3 writes, no L1 miss warm
    assert spaces.loc["sel4", "warm:CR3 writes"] == 2 and spaces.loc["sel4", "warm:L1 misses"] < 0.05
    # its counts against the round of the four designs (another host, older probe code): seL4's batches of
    # the same size counted the same
    same = t["same_batches"].groupby("environment")[["batches", "same"]].sum()
    assert same.loc["sel4", "same"] >= same.loc["sel4", "batches"] - 2


def test_the_native_side_is_the_papers_estimates_named_by_their_parameters():
    from types import SimpleNamespace

    est = pd.DataFrame([
        {"campaign_id": "n", "environment": "native", "host": "h", "placement": "same_cpu", "probe": "service_shm",
         "variant": "bytes=0", "estimate_ns": 1500.0, "ci_low_ns": 1400.0, "ci_high_ns": 1600.0},
        {"campaign_id": "n", "environment": "native", "host": "h", "placement": "same_cpu", "probe": "null_syscall",
         "variant": "", "estimate_ns": 100.0, "ci_low_ns": 99.0, "ci_high_ns": 104.0},
        {"campaign_id": "o", "environment": "native", "host": "other", "placement": "same_cpu",
         "probe": "null_syscall", "variant": "", "estimate_ns": 50.0, "ci_low_ns": 49.0, "ci_high_ns": 51.0}])
    samples = pd.DataFrame({"environment": ["native"] * 3, "probe": ["service_shm", "null_syscall", "null_syscall"],
                            "variant": ["bytes=0", "", ""],
                            "params_json": ['{"bytes": 0}', "{}", "{}"]})
    result = SimpleNamespace(primary_estimates=est, samples=samples, baseline_id="n",
                             campaigns=[SimpleNamespace(campaign_id="n", host="h"),
                                        SimpleNamespace(campaign_id="o", host="other")],
                             settings=SimpleNamespace(baseline="native"))
    native = memory.native_estimates(result).set_index("probe")
    assert native.loc["service_shm", "params_json"] == '{"bytes": 0}' and native.loc["null_syscall", "native_ns"] == 100
    cal = memory.calibration(result, tabs())
    assert set(cal["probe"]) == {"service_shm", "null_syscall"}
    assert memory.calibration(None, tabs()).empty and memory.calibration(result, None).empty


def test_the_abstract_states_the_round_trip_in_memory_terms_and_no_time():
    t = tabs()
    counts = {"seL4": 432.0, "GNU Mach": 1664.0, "Linux": 9464.0}
    s = memory.abstract_sentence(t, None, counts)
    # the instruction counts beside the model's events, kernel by kernel in one order
    assert s.startswith("A round trip between two address spaces takes 432, 1\\,660 and 9\\,460 instructions on "
                        "seL4, GNU Mach and Linux (Linux's cheapest)")
    # lines with the caches emptied first (Linux's an upper bound: its window held other work), warm misses
    assert "touches 63, 191 and at most 1\\,770 cache lines from cold caches" in s
    assert "warm, it misses L1 0, 0 and 180 times and the TLBs 8, 6 and 101." in s
    assert "~ns" not in s                        # no calibration given: no price
    # without counts the sentence names the kernels and quotes no instruction
    assert memory.abstract_sentence(t).startswith("A round trip between two address spaces on seL4, GNU Mach and Linux "
                                                  "touches")
    # without Linux, or Linux alone, nothing to set side by side
    only_linux = dict(t, matched=t["matched"][t["matched"]["environment"].str.startswith("linux")])
    assert memory.abstract_sentence(only_linux, None, counts) == "" and memory.abstract_sentence(None) == ""


def test_the_abstracts_price_is_the_calibrations_range_and_says_no_microkernel_was_timed():
    cal = pd.DataFrame({"probe": ["a", "b", "c"], "native_ns": [100.0, 2000.0, 1500.0],
                        "ns_per_insn": [0.30, 0.21, 0.16], "count_ns": [100.0, 2000.0, 1500.0],
                        "modelled_ns": [110.0, 1900.0, 1600.0], "known_answer": [False] * 3})
    s = memory.price_sentence(cal)
    assert "0.160--0.300~ns" in s and "no microkernel was timed" in s
    assert memory.price_sentence(pd.DataFrame()) == "" and memory.price_sentence(None) == ""
