"""The four designs' matched table (analysis/kernels.py, catalog/matched.py) on sample rows shaped like
guest campaigns': every cell the kernel's own operation, an analog marked, an absent cell with its reason,
the determinism per kernel, the paper's files and the explorer's one call."""
import json

import numpy as np
import pandas as pd
import pytest

from osbench_analysis import explore
from osbench_analysis.analysis import kernels
from osbench_analysis.catalog import matched, registry


def rows(env, probe, per_op_by_boot, params=None):
    spec = registry.PROBES[probe]
    pj = json.dumps(registry.resolve_params(spec, params or {}), sort_keys=True)
    out = []
    for run, batches in enumerate(per_op_by_boot):
        out.append({"environment": env, "probe": probe, "params_json": pj, "run": run, "warmup": True,
                    "iterations": 10, "elapsed_ns": 10 * 99999})
        out += [{"environment": env, "probe": probe, "params_json": pj, "run": run, "warmup": False,
                 "iterations": 1000, "elapsed_ns": int(1000 * x)} for x in batches]
    return out


def samples():
    data = rows("sel4", "sel4_call_space", [[432, 432]] * 3)
    data += rows("sel4-slowpath", "sel4_call_space", [[1574, 1574]] * 3)
    data += rows("sel4", "sel4_poll_ntfn", [[252, 252]] * 3)
    data += rows("mach", "mach_rpc_task", [[1663, 1663]] * 3)
    data += rows("mach", "mach_msg_self", [[400, 400]] * 3)
    data += rows("linux-tcg", "pipe_pingpong", [[10500, 10500]] * 3)
    data += rows("linux-tcg", "null_syscall", [[326, 326]] * 3)
    # Xen: the minimum repeats, the medians do not
    data += rows("xen-linux", "pipe_pingpong", [[20557, 23122], [20557, 21000]])
    return pd.DataFrame(data)


def test_each_cell_is_the_kernels_own_probe_with_its_counts_or_the_reason_it_is_empty():
    tab = kernels.matched(samples())
    rt = tab[tab["row"] == "rtt_spaces"].set_index(["environment", "probe"])
    assert rt.loc[("sel4", "sel4_call_space"), "median"] == 432 and rt.loc[("sel4", "sel4_call_space"), "exact"]
    assert rt.loc[("sel4-slowpath", "sel4_call_space"), "median"] == 1574
    assert rt.loc[("mach", "mach_rpc_task"), "median"] == 1663
    assert not rt.loc[("xen-linux", "pipe_pingpong"), "exact"]
    assert rt.loc[("xen-linux", "pipe_pingpong"), "min"] == 20557
    assert rt.loc[("linux-tcg", "unix_pingpong"), "boots"] == 0   # asked for, not measured: empty, not zero
    self_row = tab[tab["row"] == "msg_self"].set_index("environment")
    assert self_row.loc["mach", "probe"] == "mach_msg_self" and self_row.loc["mach", "median"] == 400
    for env in ("linux-tcg", "xen-linux", "sel4"):
        assert self_row.loc[env, "probe"] == "" and self_row.loc[env, "absent"]   # the reason, never a stand-in
    null = tab[tab["row"] == "null_entry"].set_index("environment")
    assert null.loc["sel4", "analog"] and not null.loc["mach", "analog"]
    assert "Xen" in null.loc["xen-linux", "does"]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_screen_and_tex_tables_say_the_counts_the_analogs_and_the_empty_cells():
    tab = kernels.matched(samples())
    screen = kernels.matched_screen(tab)
    first = screen[screen["primitive"] == "null kernel entry"].iloc[0]
    assert first["seL4"] == "seL4 notification poll: 252 (analog)" and first["GNU Mach"].endswith("not measured")
    msg = screen[screen["primitive"] == "message to oneself (no second party)"].iloc[0]
    assert msg["Linux"].startswith("— (") and msg["GNU Mach"] == "Mach message to self: 400"   # printable names
    assert "guest instructions" in screen.attrs["caption"]
    ipc = kernels.ipc_round_trip(tab)
    assert set(ipc["primitive"]) - {""} == {"request-reply round trip between two address spaces",
                                            "the same between two threads of one address space"}
    assert ipc.iloc[0]["Linux on Xen"].startswith("pipe round trip: 2")
    tex = kernels.matched_tex(tab)
    assert tex.count(r"\emph{none}") == 5   # Linux (x2), Xen, seL4 (x2): no message to oneself
    assert r"seL4 Call across address spaces: 432" in tex


def test_determinism_tells_exact_kernels_from_those_whose_boots_differ_and_by_how_much():
    det = kernels.determinism(samples()).set_index("environment")
    assert det.loc["sel4", "verdict"] == "identical counts in every boot" and det.loc["sel4", "max_spread"] == 0
    x = det.loc["xen-linux"]
    assert x["exact"] == 0 and x["boots"] == 2 and x["same_minimum"] == 1   # the minima repeat, the medians not
    assert np.isclose(x["max_spread"], (21839.5 - 20778.5) / 21309)
    assert x["verdict"] == "0 of 1 conditions exact, the boots' medians within 5%"
    sentence = kernels.determinism_sentence(det.reset_index())
    assert "Linux on Xen: 0 of 1 conditions exact" in sentence and "xen-linux" not in sentence   # a reader's name
    assert "its minimum batch the same in every boot for 1 of them" in sentence


def test_one_boot_is_neither_exact_nor_a_range_and_says_its_repeat_was_not_checked():
    """A quick round whose budget left a guest's repeat boot out (measure/rounds.py): its counts are one boot's,
    and nothing says they repeat (one boot used to read as exact: every boot the same, vacuously)."""
    data = pd.DataFrame(rows("xen-linux", "pipe_pingpong", [[20557, 23122]]) + rows("sel4", "sel4_call_space",
                                                                                    [[432, 432]] * 2))
    det = kernels.determinism(data).set_index("environment")
    x = det.loc["xen-linux"]
    assert x["exact"] == 0 and x["single_boot"] == 1 and x["max_spread"] == 0
    assert x["verdict"] == "one boot: whether its counts repeat is not checked"
    assert det.loc["sel4", "verdict"] == "identical counts in every boot"
    sentence = kernels.determinism_sentence(det.reset_index())
    assert "Linux on Xen: one boot" in sentence and "minimum batch" not in sentence
    tab = kernels.matched(data)
    cell = tab[(tab["environment"] == "xen-linux") & (tab["probe"] == "pipe_pingpong")].iloc[0]
    assert cell["boots"] == 1 and not cell["exact"]
    assert kernels._tex_count(cell) == "21\\,800$^1$"      # its one median, marked, no '*' (boots differ)


def test_the_paths_table_bounds_what_instructions_leave_out_for_the_ipc_rows():
    paths = kernels.paths_table()
    assert {"kernel entries", "address-space switches", "copies"} <= set(paths.columns)
    keys = set(matched.PATHS)
    for design in ("linux", "xen", "mach", "sel4"):
        assert ("rtt_spaces", design) in keys and ("null_entry", design) in keys
    assert matched.PATHS[("rtt_spaces", "sel4")].switches == "2"
    assert matched.PATHS[("rtt_threads", "sel4")].switches == "0"


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_paper_files_are_written_only_when_two_designs_were_measured(tmp_path):
    tab = kernels.matched(samples())
    det = kernels.determinism(samples())
    files = kernels.write_files(tab, det, tmp_path)
    assert {f.name for f in files} >= {"microkernel_matched.tex", "microkernel_matched.pdf", "microkernel_paths.tex"}
    only_one = tab.assign(boots=np.where(tab["design"] == "sel4", tab["boots"], 0))
    assert kernels.write_files(only_one, det, tmp_path) == []
    assert not (tmp_path / "microkernel_matched.tex").exists()   # no stale table


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_explore_compares_the_ipc_round_trip_across_kernels_in_one_call(tmp_path, monkeypatch, committed_root):
    monkeypatch.setattr(kernels, "from_campaigns", lambda campaigns=None, root=None: (kernels.matched(samples()),
                                                                                      pd.DataFrame()))
    ipc = explore.ipc_across_kernels(root=committed_root)   # its guest round: the committed data's
    assert "seL4, no fastpath" in ipc.columns and (ipc["seL4"].str.contains("432")).any()
    monkeypatch.setattr(kernels, "from_campaigns", lambda campaigns=None, root=None: (pd.DataFrame(),
                                                                                      pd.DataFrame()))
    with pytest.raises(explore.ExploreError, match="no emulated-CPU guest campaign"):
        explore.ipc_across_kernels(root=tmp_path)


def test_the_table_takes_one_round_the_newest_campaign_of_each_guest():
    cat = pd.DataFrame({"campaign_id": ["a-mach", "b-mach", "b-sel4", "c-native"],
                        "environment": ["mach", "mach", "sel4", "native"],
                        "created_utc": ["2026-11-24", "2026-11-26", "2026-11-26", "2026-11-27"]})
    assert sorted(kernels.newest_round(cat)) == ["b-mach", "b-sel4"]
    assert kernels.newest_round(cat.iloc[0:0]) == []


def test_the_papers_cells_mark_analogs_and_boots_that_differ_past_the_digits_shown():
    tex = kernels.matched_tex(kernels.matched(samples()))
    assert r"seL4 notification poll: 252$^a$" in tex
    assert r"pipe round trip: 21\,300 [20\,800, 21\,800]" in tex   # Xen's two boots' medians
