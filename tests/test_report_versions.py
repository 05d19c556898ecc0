"""The paper's "Linux across its versions" (report/sections/versions.py) on synthetic histories: which
changes the body names, the numbers its sentences carry, the appendix table, the newest round, and no
stale file without a sweep."""
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from osbench_analysis.analysis import versions
from osbench_analysis.report.sections import versions as section


def _boots(counts: dict) -> pd.DataFrame:
    rows = []
    for (env, probe), meds in counts.items():
        for run, m in enumerate(meds):
            rows.append({"environment": env, "probe": probe, "params_json": "{}", "campaign_id": f"c-{env}",
                         "run": run, "min": m, "median": m, "mean": m, "batches": 3, "variant": ""})
    return pd.DataFrame(rows)


def _inputs() -> section.VersionsInputs:
    hist = versions.history(_boots({
        ("linux-tcg-5.10", "null_syscall"): [200, 200], ("linux-tcg-6.1", "null_syscall"): [260, 260],
        ("linux-tcg-6.12", "null_syscall"): [240, 241],
        ("linux-tcg-5.10-nomitig", "null_syscall"): [190, 190], ("linux-tcg-6.1-nomitig", "null_syscall"): [250, 250],
        ("linux-tcg-6.12-nomitig", "null_syscall"): [240, 240],
        ("linux-tcg-5.10", "mmap_touch"): [1000, 1000], ("linux-tcg-6.1", "mmap_touch"): [2000, 2000],
        ("linux-tcg-6.12", "mmap_touch"): [2000, 2000],
        ("linux-tcg-5.10-nomitig", "mmap_touch"): [1000, 1000], ("linux-tcg-6.1-nomitig", "mmap_touch"): [2000, 2000],
        ("linux-tcg-6.12-nomitig", "mmap_touch"): [2000, 2000]}))
    ch = versions.changes(hist)
    # what explain adds, chosen: the profiles confirm all but the mitigations=off null_syscall step
    funcs = {("null_syscall", "6.1", "default"): "x64_sys_call +26, do_syscall_64 +14, getpid +2",
             ("null_syscall", "6.12", "default"): "(other kernel functions) -15, syscall_exit_to_user_mode -5",
             ("mmap_touch", "6.1", "default"): "(other kernel functions) +600, mtree_range_walk +300, mas_next +100"}
    ch["functions"] = [funcs.get((r["condition"], r["to"], r["mitigations"]), "") for _, r in ch.iterrows()]
    ch["profiled_delta"] = ch["delta"]
    ch["confirmed"] = ["" if not f else "yes" for f in ch["functions"]]
    agree = pd.DataFrame([
        {"lebench_test": "small-read", "probe": "null_syscall", "lebench_step_percent": 61.0,
         "ours_newest_percent": 0.4, "verdict": "ours changes by under 1 %"},
        {"lebench_test": "small-pagefault", "probe": "mmap_touch", "lebench_step_percent": 31.0,
         "ours_newest_percent": 0.0, "verdict": "ours changes by under 1 %"},
        {"lebench_test": "thrcreate", "probe": "thread_create_join", "lebench_step_percent": 22.0,
         "ours_newest_percent": np.nan, "verdict": "not measured here"}])
    hosts = pd.DataFrame({"probe": ["null_syscall", "mmap_touch"], "params_json": ["{}", "{}"],
                          "sweep": [326.0, 2035.0], "other": [326.2, 2000.0], "percent": [-0.06, 1.75],
                          "sweep_host": "h1", "other_host": "h2", "sweep_batch_ms": 2.0, "other_batch_ms": 10.0})
    return section.VersionsInputs(hist, ch, agree, hosts, ("cryptomgr.notests=1",))


def test_the_body_names_the_largest_confirmed_step_of_each_pair_of_versions_first():
    inp = _inputs()
    top = section.main_changes(inp.changes, n=2)
    # 5.10 -> 6.1: mmap_touch +100 % before null_syscall +30 %; then 6.1 -> 6.12's null_syscall (-7.7 %), the
    # largest of its pair, before the second of 5.10 -> 6.1; oldest pair first
    assert [(r["condition"], r["from"], r["to"]) for _, r in top.iterrows()] == [
        ("mmap_touch", "5.10", "6.1"), ("null_syscall", "6.1", "6.12")]
    assert set(section.main_changes(inp.changes, n=9)["mitigations"]) == {"default"}


def test_the_section_carries_the_numbers_of_its_inputs():
    inp = _inputs()
    tex = section.section_tex(inp)
    assert r"\label{sec:versions}" in tex and r"\includegraphics[width=\linewidth]{generated/versions_history}" in tex
    assert "3 Debian kernels, Linux 5.10 to 6.12, each with its default mitigations" in tex
    # 12 counts of two boots, one (6.12's null_syscall: 240 and 241) not exact
    assert "11 of the 12 counts repeated to the instruction" in tex
    n = len(inp.changes)
    assert f"lists the {n} changes" in tex and n == 5 and f"; {n} changes exceed that movement" in tex
    # functions named without the profile's remainder row; counts with TeX's thousands separator
    # conditions by their printed names, kernel functions in typewriter; never a probe's identifier
    assert r"mmap + touch + munmap +1{,}000 instructions (+100\,\%), in \texttt{mtree\_range\_walk} +300" in tex
    assert "null\\_syscall" not in tex and "mmap\\_touch" not in tex
    assert r"\texttt{x64\_sys\_call} +26, \texttt{do\_syscall\_64} +14" in tex and "getpid" not in tex
    assert "(other kernel functions)" not in tex
    # mitigation cost over null_syscall (260/250, 200/190, 241/240... median 240.5/240) and nothing else solo
    lo, hi, nv = section.mitigation_range(inp.hist)
    assert nv == 3 and lo == pytest.approx(100 * (240.5 / 240 - 1)) and hi == pytest.approx(100 * (200 / 190 - 1))
    assert f"{lo:+.1f}" in tex and f"{hi:+.1f}" in tex
    # the body: LEBench's range beside ours, the hosts in one sentence; the details in the appendix
    assert r"where LEBench timed +31\,\% to +61\,\%" in tex and "agree within 1.8\\,\\%." in tex
    assert r"\texttt{cryptomgr.notests=1}" in tex and "h1" not in tex and "h2" not in tex
    app = section.appendix_tex(inp.changes, inp=inp)
    # LEBench: the two tests measured here, not the third
    assert r"+61\,\% on small-read, +31\,\% on small-pagefault; " in app and "thrcreate" not in app
    assert "the same direction in 0 of 2" in app
    # the hosts: the largest difference and null_syscall's, the batch lengths
    assert r"within 1.8\,\% on all 2 conditions, the null system call within 0.06\,\%" in app
    assert "2 and 10 guest milliseconds" in app and "h1" not in app


def test_the_appendix_lists_every_change_with_three_functions():
    inp = _inputs()
    tex = section.appendix_tex(inp.changes)
    assert r"\label{sec:versions-appendix}" in tex and r"\label{tab:versions-changes}" in tex
    body = tex.split(r"\endlastfoot", 1)[1]
    assert body.count(r" \\") == len(inp.changes)
    assert (r"5.10$\to$6.1 & def. & mmap + touch + munmap & 1{,}000 & 2{,}000 & +100.0\,\% &  & \texttt{mtree\_range\_walk} +300, "
            r"\texttt{mas\_next} +100 & yes \\") in body
    assert r"6.1$\to$6.12 & def. & null system call & 260 & 240 & $-$7.5\,\% &  &" in body
    # oldest pair first, the default mitigations before mitigations=off
    assert body.index("6.1$\\to$6.12") > body.index("5.10$\\to$6.1 & off")


def test_the_newest_round_is_the_newest_unsealed_as_partial_campaign_of_each_sweep_environment():
    cat = pd.DataFrame([
        ("a-old", "linux-tcg-7.1", "20261128T085901Z", ""), ("a-new", "linux-tcg-7.1", "20261128T110000Z", ""),
        ("b-new", "linux-tcg-5.10", "20261128T100000Z", ""),
        ("c-part", "linux-tcg-5.10-nomitig", "20261128T120000Z", "stopped"),
        ("c-old", "linux-tcg-5.10-nomitig", "20261128T080000Z", ""),
        ("x", "linux-tcg", "20261129T000000Z", "")], columns=["campaign_id", "environment", "created_utc", "partial"])
    assert versions.newest_round(cat) == ["b-new", "c-old", "a-new"]
    # a campaign with the memory model is beside the round, not of it
    mem = pd.concat([cat.assign(memory_events=""), pd.DataFrame([("m", "linux-tcg-7.1", "20261128T130000Z", "", "warm")],
                                                                columns=[*cat.columns, "memory_events"])])
    assert versions.newest_round(mem) == ["b-new", "c-old", "a-new"]
    assert versions.memory_mode(mem.iloc[-1]) == "warm" and versions.memory_mode(cat.iloc[0]) == ""
    assert versions.newest_round(cat.iloc[0:0]) == []
    # a store with campaigns but none of the sweep (a synthetic paper's): no round, not a KeyError
    assert versions.newest_round(cat[cat["campaign_id"] == "x"]) == []


def test_no_sweep_no_section_and_no_stale_file(tmp_path):
    out = tmp_path / "generated"
    out.mkdir()
    for name in (section.SECTION_FILE, section.APPENDIX_FILE):
        (out / name).write_text("stale")
    root = tmp_path / "campaigns"
    root.mkdir()
    assert section.write_section(out, root=root, profiles_dir=tmp_path) == []
    assert not (out / section.SECTION_FILE).exists() and not (out / section.APPENDIX_FILE).exists()
    assert section.host_check(root).empty


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_section_and_its_compact_figure_are_written(tmp_path):
    written = section.write_section(tmp_path, inp=_inputs())
    names = {p.name for p in written}
    assert {section.SECTION_FILE, section.APPENDIX_FILE, section.SYMBOLS_FILE, "versions_history.pdf",
            "versions_history.png"} == names
    # the kernel functions printed, for the paper's identifier check; no probe name, no boot parameter
    symbols = (tmp_path / section.SYMBOLS_FILE).read_text().split()
    assert {"mtree_range_walk", "x64_sys_call", "do_syscall_64"} <= set(symbols)
    assert not {"mmap_touch", "null_syscall", "cryptomgr.notests=1"} & set(symbols)
    from osbench_analysis.report import pdf_check
    assert "mtree_range_walk" in pdf_check.allowed_names(tmp_path) and "mtree_range_walk" not in pdf_check.API_NAMES
    assert json.dumps(sorted(names))  # all paths are files that exist
    assert all((tmp_path / n).stat().st_size > 0 for n in names)


def test_the_memory_history_keeps_the_sweeps_rows_oldest_first_relative_to_the_oldest():
    ev = {e: 0.0 for e in versions.MEMORY_EVENTS}
    tab = pd.DataFrame([
        {"mode": "warm", "environment": "linux-tcg-7.3", "probe": "null_syscall", "params_json": "{}", "boots": 2,
         "exact": True, **ev, "mem_insns": 330.0, "l1i_misses": 0.04},
        {"mode": "warm", "environment": "linux-tcg-5.10", "probe": "null_syscall", "params_json": "{}", "boots": 2,
         "exact": True, **ev, "mem_insns": 240.0, "l1i_misses": 0.02},
        {"mode": "warm", "environment": "linux-tcg-5.10", "probe": "service_direct", "params_json": '{"bytes": 64}',
         "boots": 2, "exact": True, **ev, "mem_insns": 700.0},
        {"mode": "warm", "environment": "mach", "probe": "null_syscall", "params_json": "{}", "boots": 2,
         "exact": True, **ev, "mem_insns": 1.0}])
    out = versions.memory_rows(tab)
    assert list(out["environment"]) == ["linux-tcg-5.10", "linux-tcg-7.3", "linux-tcg-5.10"]   # no mach
    assert list(out["condition"]) == ["null_syscall", "null_syscall", "service_direct bytes=64"]
    assert out.loc[1, "l1i_misses_rel"] == pytest.approx(2.0) and out.loc[1, "mem_insns_rel"] == pytest.approx(330 / 240)
    assert np.isnan(out.loc[2, "l2_misses_rel"])    # nothing to be relative to: 0 in the oldest
    assert versions.memory_rows(tab.iloc[3:]).empty


def test_the_spread_between_two_rounds_leaves_out_versions_whose_witness_moved():
    later = versions.history(_boots({
        ("linux-tcg-5.10", "null_syscall"): [200, 200], ("linux-tcg-6.1", "null_syscall"): [300, 300],
        ("linux-tcg-7.1", "null_syscall"): [340, 340],
        ("linux-tcg-5.10", "pipe_pingpong"): [1000, 1000], ("linux-tcg-6.1", "pipe_pingpong"): [1300, 1300],
        ("linux-tcg-7.1", "pipe_pingpong"): [2000, 2000]}))
    earlier = versions.history(_boots({
        ("linux-tcg-5.10", "null_syscall"): [200.5, 200.5], ("linux-tcg-6.1", "null_syscall"): [300, 300],
        ("linux-tcg-7.1", "null_syscall"): [1290, 1290],     # the first round of 7.1 met something else
        ("linux-tcg-5.10", "pipe_pingpong"): [1000, 1000], ("linux-tcg-6.1", "pipe_pingpong"): [1000, 1000],
        ("linux-tcg-7.1", "pipe_pingpong"): [9000, 9000]}))
    sp = versions.round_spread(later, earlier).set_index("condition")
    # 5.10 and 6.1 only (7.1's witness moved): pipe 0 % and 30 %, median 15 %, largest 30 %
    assert sp.loc["pipe_pingpong", "spread_percent"] == pytest.approx(15.0) and sp.loc["pipe_pingpong", "versions"] == 2
    assert sp.loc["pipe_pingpong", "max_percent"] == pytest.approx(30.0)
    assert sp.loc["null_syscall", "max_percent"] == pytest.approx(100 * 0.5 / 200.5)
    ch = versions.beyond_spread(versions.changes(later), sp.reset_index())
    got = {(r["condition"], r["to"]): r["beyond"] for _, r in ch.iterrows()}
    # pipe 6.1 (+30 %) and 7.1 (+54 %) are beyond its median movement (15 %); null_syscall's far beyond 0.13 %
    assert got == {("null_syscall", "6.1"): True, ("null_syscall", "7.1"): True, ("pipe_pingpong", "6.1"): True,
                   ("pipe_pingpong", "7.1"): True}
    assert not versions.beyond_spread(versions.changes(later), sp.reset_index().assign(spread_percent=40.0)).loc[
        lambda c: c["condition"] == "pipe_pingpong", "beyond"].iloc[0]
    assert versions.round_spread(later, later.iloc[0:0]).empty
    within = versions.beyond_spread(versions.changes(later), sp.reset_index().assign(spread_percent=40.0))
    line = [x for x in versions.sentences(within.assign(functions="")) if "pipe_pingpong" in x and "6.1" in x][0]
    assert line.endswith("[within the condition's between-round spread, 40.0 %]")
    # the body: how far the rounds moved, and how many changes are beyond it; the main changes only those
    inp = _inputs()
    inp.spread = pd.DataFrame({"condition": ["null_syscall", "mmap_touch"], "mitigations": ["default", "default"],
                               "spread_percent": [0.01, 120.0], "max_percent": [0.02, 150.0], "versions": [3, 3]})
    inp.changes = versions.beyond_spread(inp.changes, inp.spread)
    tex = section.appendix_tex(inp.changes, inp=inp)
    assert (r"on the 3 versions where the first round met nothing else, the two rounds differ only by "
            r"\texttt{cryptomgr.notests=1}") in tex
    assert (r"1 conditions moved by under 1\,\% between them in every version; the other 1 by a median of "
            r"120.0\,\% over the versions and by up to 150\,\% (mmap + touch + munmap)") in tex
    n_beyond = int(inp.changes["beyond"].sum())
    assert f"{n_beyond} of the {len(inp.changes)} do." in tex
    assert f"; {n_beyond} changes exceed that movement" in section.section_tex(inp)
    assert set(section.main_changes(inp.changes)["condition"]) == {"null_syscall"}
    assert "$^*$" in section.appendix_tex(inp.changes)


def test_the_sweeps_memory_campaign_is_an_ordinary_run_with_the_model():
    from osbench_analysis.measure import kernel_sweep

    argv = kernel_sweep.memory_argv("linux-tcg-7.1", "warm", "0")
    assert argv[argv.index("--environment") + 1] == "linux-tcg-7.1" and argv[-2:] == ["--memory-events", "warm"]
    assert argv[argv.index("--note") + 1].endswith("memory events (issue 39)")
    assert argv[argv.index("--min-batch-ms") + 1] == str(kernel_sweep.MIN_BATCH_MS)
    assert "memory" in kernel_sweep.STEPS


def test_the_sweeps_memory_campaigns_are_the_newest_of_each_sweep_environment_and_mode():
    cat = pd.DataFrame([("m1", "linux-tcg-7.1", "20261128T110000Z", "warm"), ("m2", "linux-tcg-7.1", "20261128T120000Z", "warm"),
                        ("p1", "linux-tcg-7.1", "20261128T130000Z", ""), ("m3", "linux-tcg-5.10", "20261128T100000Z", "polluted"),
                        ("d1", "linux-tcg", "20261128T140000Z", "warm")],
                       columns=["campaign_id", "environment", "created_utc", "memory_events"])
    assert sorted(versions.sweep_memory_campaigns(cat)) == ["m2", "m3"]   # not the plain campaign, not linux-tcg's
    assert versions.sweep_memory_campaigns(cat.iloc[0:0]) == []


def _memory_history() -> pd.DataFrame:
    """versions.memory_rows of a synthetic per-operation table: fork + exit and a pipe round trip missing more
    L1I lines on the newer kernel, a null system call that never misses, and a variant row the table leaves out."""
    ev = {e: 0.0 for e in versions.MEMORY_EVENTS}
    rows = []
    for env, fork, pipe, tlb in (("linux-tcg-5.10", 2880.0, 172.0, 541.0), ("linux-tcg-6.1", 3436.0, 203.0, 574.0),
                                 ("linux-tcg-7.3", 5067.0, 625.0, 846.0)):
        rows += [{"mode": "warm", "environment": env, "probe": "fork_exit", "params_json": "{}", "boots": 2,
                  "exact": True, **ev, "l1i_misses": fork, "dtlb_misses": tlb},
                 {"mode": "warm", "environment": env, "probe": "pipe_pingpong", "params_json": "{}", "boots": 2,
                  "exact": True, **ev, "l1i_misses": pipe, "dtlb_misses": 74.0},
                 {"mode": "warm", "environment": env, "probe": "null_syscall", "params_json": "{}", "boots": 2,
                  "exact": True, **ev, "l1i_misses": 0.02},
                 {"mode": "warm", "environment": env, "probe": "service_shm", "params_json": '{"bytes": 64}',
                  "boots": 2, "exact": True, **ev, "l1i_misses": 300.0}]
    return versions.memory_rows(pd.DataFrame(rows))


def test_the_versions_appendix_tabulates_the_memory_events_per_version_and_says_what_grew():
    mem = _memory_history()
    g = section.memory_grid(mem, "l1i_misses")
    # the conditions that miss, no variant, versions oldest first
    assert list(g.index) == ["fork_exit", "pipe_pingpong"] and list(g.columns) == ["5.10", "6.1", "7.3"]
    tex = section.memory_table_tex(mem)
    assert r"\label{tab:versions-memory}" in tex and "condition & 5.10 & 6.1 & 7.3" in tex
    assert "fork + exit & 2{,}880 & 3{,}436 & 5{,}067" in tex and "pipe round trip & 172 & 203 & 625" in tex
    assert "fork + exit & 541 & 574 & 846" in tex and "null system call" not in tex
    words = section.memory_sentence(mem)
    # both grew; the pipe most (625 / 172 = 3.63 times), fork + exit least (5067 / 2880 = 1.76)
    assert words.startswith("All 2 conditions that miss the L1I cache miss it more often per operation on 7.3 "
                            "than on 5.10, 1.76 to 3.63 times as often")
    assert "(most, pipe round trip: 172 to 625)" in words
    # one that shrank is counted apart
    fewer = mem.copy()
    fewer.loc[(fewer["condition"] == "fork_exit") & (fewer["version"] == "7.3"), "l1i_misses"] = 2000.0
    assert section.memory_sentence(fewer).startswith("1 of the 2 conditions")
    assert section.memory_table_tex(pd.DataFrame()) == "" and section.memory_sentence(pd.DataFrame()) == ""


def test_the_body_says_the_memory_events_in_one_sentence_when_measured():
    inp = _inputs()
    assert "memory model" not in section._body_tail(inp)
    with_memory = section._body_tail(dataclasses.replace(inp, memory=_memory_history()))
    assert ("In the memory model, warm, all 2 conditions that miss the L1I cache miss it more often per operation on "
            "7.3 than on 5.10") in with_memory and "(Table~\\ref{tab:versions-memory})" in with_memory
