"""Section (a) on four kernel designs (report/sections/kernels.py) and the published data it and the
appendix set beside ours: every number from the matched table, the manifests' facts or data/reference,
printable names only, the published figures in their own unit, the published pairings fixed."""
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from osbench_analysis.analysis import kernels
from osbench_analysis.catalog import registry
from osbench_analysis.reference import studies as reference
from osbench_analysis.report import published as paper_published
from osbench_analysis.report import reference_compare as rcmp
from osbench_analysis.report.sections import background as background_section
from osbench_analysis.report.sections import factors as factors_section
from osbench_analysis.report.sections import kernels as section
from osbench_analysis.report.sections import service as service_section


def _rows(env, probe, per_op_by_boot, params=None):
    pj = json.dumps(registry.resolve_params(registry.PROBES[probe], params or {}), sort_keys=True)
    return [{"environment": env, "probe": probe, "params_json": pj, "run": run, "warmup": False,
             "iterations": 1000, "elapsed_ns": int(1000 * x)} for run, batches in enumerate(per_op_by_boot)
            for x in batches]


def _samples():
    data = _rows("sel4", "sel4_call_space", [[432, 432]] * 2) + _rows("sel4-slowpath", "sel4_call_space", [[1574]] * 2)
    data += _rows("sel4", "sel4_call_space_8mr", [[1100]] * 2) + _rows("sel4", "sel4_poll_ntfn", [[252]] * 2)
    data += _rows("mach", "mach_rpc_task", [[1663]] * 2) + _rows("mach", "mach_null_trap", [[76]] * 2)
    data += _rows("linux-tcg", "pipe_pingpong", [[10500]] * 2) + _rows("linux-tcg", "null_syscall", [[326]] * 2)
    data += _rows("linux-tcg-nomitig", "pipe_pingpong", [[10290]] * 2)
    data += _rows("xen-linux", "pipe_pingpong", [[20557, 23122], [20557, 21000]])
    data += _rows("xen-linux", "null_syscall", [[1100]] * 2)
    return pd.DataFrame(data)


FACTS = {"linux-tcg": {"guest_packages": {"linux-image-6.1.0-56-amd64": {"version": "6.1.192-2"}},
                       "qemu": "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)"},
         "xen-linux": {"guest_packages": {"xen-hypervisor-4.17-amd64": {"version": "4.17.7+13-g2445b30a44-0+deb12u1"}}},
         "mach": {"guest_packages": {"gnumach-image-1.8-amd64-up": {"version": "2:1.8+git20250702-1"}}},
         "sel4": {"guest_packages": {"sel4-sys": {"seL4": "5.0.0", "version": "0.0.28"}}}}


@pytest.fixture(scope="module")
def tab():
    t = kernels.matched(_samples())
    t.attrs["facts"] = FACTS
    return t


def test_the_round_trip_sentence_sets_every_kernel_beside_the_others_from_the_table(tab):
    s = section.rtt_sentence(tab)
    assert "432 guest instructions on seL4 (1\\,570 without its fastpath)" in s
    assert "1\\,660 on GNU Mach" in s and "10\\,500 on Linux (pipe round trip, its cheapest)" in s
    assert "21\\,300 on Linux on Xen" in s                       # the median of the boots' medians
    assert f"{10500 / 432:.3g} times seL4's" in s and f"{10500 / 1663:.3g} times GNU Mach's" in s
    assert section.rtt_sentence(tab[tab["environment"] != "linux-tcg"]) == ""   # nothing to compare without Linux
    # short (the Conclusion beside the memory model's sentence): seL4, GNU Mach and Linux, no ratio, no Xen
    short = section.rtt_sentence(tab, short=True)
    assert short.endswith("1\\,660 on GNU Mach and 10\\,500 on Linux (its cheapest).")
    assert "fastpath" not in short and "Xen" not in short and "times" not in short


def test_the_determinism_sentence_names_the_exception_when_most_kernels_count_the_same():
    det = pd.DataFrame({"environment": ["linux-tcg", "linux-tcg-nomitig", "xen-linux", "mach"],
                        "exact": [3, 3, 0, 2], "conditions": [3, 3, 3, 2], "max_spread": [0, 0, 0.0017, 0]})
    s = section.determinism_summary(det)
    assert s.startswith("Every boot of every kernel but Linux on Xen counted the same instructions; Linux on Xen's "
                        "boots' medians lie within 0.17\\%")
    # a list of names with commas in them is kept apart by semicolons
    s = section.determinism_summary(det[det["environment"] != "xen-linux"])
    assert s.startswith("Every boot of Linux; Linux, mitigations=off; and GNU Mach counted the same instructions")


def test_a_query_served_by_another_address_space_costs_a_round_trip_over_linuxs_direct_query():
    t = kernels.matched(pd.concat([_samples(), pd.DataFrame(_rows("linux-tcg", "service_direct", [[342]] * 2,
                                                                  {"bytes": 0}))]))
    s = section.served_sentence(t)
    assert "342 instructions (getppid)" in s
    assert f"{432 / 342:.3g} times as many on seL4" in s and f"{1663 / 342:.3g} times on GNU Mach" in s
    assert f"{10500 / 342:.3g} times on Linux between two of its processes" in s
    assert section.served_sentence(kernels.matched(_samples())) == ""      # no direct query measured: nothing


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_section_states_versions_age_unit_limits_and_determinism_in_a_readers_names(tab, tmp_path):
    det = kernels.determinism(_samples())
    files = section.write_section(tab, det, tmp_path)
    text = (tmp_path / "microkernel_kernels.tex").read_text()
    appendix = (tmp_path / "microkernel_published_beside.tex").read_text()
    assert files and "tab:kernels-matched" in text and "fig:kernels-matched" in text
    assert r"\ref{tab:kernels-paths}" in text and r"\label{tab:kernels-paths}" in appendix   # the table: appendix
    assert "seL4 5.0.0, released in 2017" in text and "Meltdown" in text
    assert "Linux 6.1.192" in text and "Xen 4.17.7" in text and "GNU Mach 1.8+git20250702" in text
    assert "QEMU 7.2.22" in text and "TLB and cache misses count nothing" in text and section.PLUGIN_CHECK in text
    # boot to boot: the body in one sentence, each kernel's conditions and boots in the appendix
    assert "Every boot of" in text and "Linux on Xen's boots' medians lie within" in text
    assert "Linux on Xen: 1 of 2 conditions exact" in appendix and "seL4: identical counts in every boot" in appendix
    assert "fastpath makes its round trip 3.64 times shorter" in text
    for ident in ("xen-linux", "linux-tcg", "sel4_call_space", "pipe_pingpong", "mach_rpc_task"):
        assert ident not in text, ident                           # identifiers never reach the page
    only_one = tab.assign(boots=np.where(tab["design"] == "sel4", tab["boots"], 0))
    assert section.write_section(only_one, det, tmp_path) == []
    assert not (tmp_path / "microkernel_kernels.tex").exists()   # no stale section


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_published_figures_stand_beside_ours_in_their_own_unit_and_hardware(tab):
    ipc = service_section.load_published_ipc()
    sel4 = ipc[ipc["kernel"] == "seL4"].iloc[0]
    assert sel4["unit"] == "cycles" and sel4["time_ns"] == pytest.approx(301 / 3.4)    # 88.5 ns, computed
    assert np.isnan(ipc[ipc["unit"] == "TSC ticks"]["time_ns"]).all()                 # no clock stated: no time
    side = section.published_beside(tab, ipc, rcmp.published_factors())
    row = side[side["kernel"] == "seL4"].iloc[0]
    assert row["published"] == "301 cycles (88.5 ns)" and "216 guest instructions" in row["here"]
    assert "3.4 GHz" in row["hardware"] and "(" not in row["hardware"]
    minix = side[side["kernel"].str.startswith("MINIX")].iloc[0]
    assert "ratio of times" in minix["published"] and "no multi-server system" in minix["here"]
    assert side["kernel"].str.startswith("L4Re").any() and "tab:kernels-published" in section.published_beside_tex(side)


def test_the_abstract_takes_the_four_designs_when_measured(tab):
    s = section.abstract_sentence(tab)
    assert "Four kernel designs" in s and "not a time" in s and "432" in s
    assert section.abstract_sentence(tab.assign(boots=0)) == ""
    # with the memory model's sentence the counts are no longer called a path length without caches
    words = "A round trip between two address spaces takes 432 instructions on seL4."
    with_memory = section.abstract_sentence(tab, words)
    assert "without caches" not in with_memory and "a model's cache and TLB misses" in with_memory
    assert with_memory.endswith(words) and section.rtt_counts(tab)["seL4"] == pytest.approx(432, abs=1)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_lmbench_simple_syscall_stays_paired_with_the_null_call_and_malloc_memcopy_is_unpaired():
    mapping = reference.load_probe_mapping().set_index(["source_id", "table_id", "metric_id"])
    lm = mapping.loc[("papadimitriou_macos_freebsd", "table2_lmbench", "simple_syscall")]
    assert lm["probe"] == "null_syscall" and "getppid" in lm["method_difference"]
    assert mapping.loc[("papadimitriou_macos_freebsd", "table2_lmbench", "simple_write"), "probe"] == "write_devnull"
    # the evidence the pairing rests on: lmbench's write to /dev/null is printed apart, and slower
    ref = reference.load_reference()
    t = ref[(ref["source_id"] == "papadimitriou_macos_freebsd") & (ref["table_id"] == "table2_lmbench")]
    v = t.pivot(index="system_id", columns="metric_id", values="value")
    assert (v["simple_write"] > v["simple_syscall"]).all()
    mm = mapping.loc[("papadimitriou_macos_freebsd", "table1_unixbench", "malloc_memcopy")]
    assert mm["match"] == "none" and "very large area" in mm["method_difference"]
    pub = rcmp.published_factors()
    assert "mallocMemCopy" not in set(pub[pub["primitive"] == "malloc"]["metric_as_published"])
    assert factors_section._published_summary(pub, "malloc") == "--"


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_minix_fork_factor_is_marked_as_a_missing_copy_on_write_and_not_counted():
    pub = rcmp.published_factors()
    fork = pub[(pub["primitive"] == "fork_exit") & (pub["subject_arch"] == "microkernel")]
    assert len(fork) == 1 and "copy-on-write" in fork["design_caveat"].iloc[0]
    assert factors_section._published_summary(pub, "fork_exit").endswith("182$^\\dagger$")
    assert "copy-on-write" in factors_section.design_caveats_tex(pub, ["fork_exit"])
    measured = pd.DataFrame({"environment": ["gvisor"], "primitive": ["fork_exit"], "ratio_low": [7.0],
                             "ratio_high": [8.0]})
    ag = factors_section.agreement(measured, pub)
    assert set(ag["kind"]) == {"hybrid"}                          # MINIX's 182 is not a design factor: left out


def test_background_lists_only_the_systems_a_study_measured_itself():
    sources = reference.load_sources()

    class Inp:
        pass

    inp = Inp()
    inp.sources = sources
    text = background_section.background_tex(inp)
    miao = next(line for line in text.splitlines() if "miao_minix3_linux" in line).split("; measured with")[0]
    for cited in ("inkernel", "L3", "Unix", "MkLinux"):
        assert cited not in miao, cited
    assert "Minix 3.1.2a" in miao and "quotes earlier results" in text


def test_cited_results_carry_units_and_say_whose_attribution_it_is():
    cited = rcmp.cited_results()
    rows = {(r.metric_id, r.system_id): r for r in cited.itertuples()}
    rpc = next(r for k, r in rows.items() if k[0] == "rpc_cost" and r.cell_as_published == "230")
    assert paper_published._cell_with_unit(rpc.cell_as_published, rpc.unit_label) == "230 µs"
    aim = next(r for k, r in rows.items() if k[0] == "aim_max_throughput")
    src = paper_published._cited_source(aim)
    assert "attributed by us" in src and "haertig1997l4linux" in src and "citing" not in src
    assert "[" not in "".join(cited["cited_note"])               # no reference numbers internal to a study


def test_the_background_names_the_studies_in_one_cited_sentence_and_points_to_their_list():
    inp = SimpleNamespace(sources=reference.load_sources())
    text = background_section.background_sentence_tex(inp)
    keys = [src.get("bibkey") or sid for sid, src in inp.sources.items()]
    assert text.startswith(f"Our comparisons start from {background_section._COUNT_WORDS[len(keys)]} published studies")
    assert "\\citep{" + ",".join(keys) + "}" in text and "\\ref{sec:studies}" in text
    assert background_section.background_sentence_tex(SimpleNamespace(sources={})) == ""


def test_a_kernel_booted_once_is_said_to_show_nothing_of_whether_its_counts_repeat():
    """The quick profile's budget may leave a guest's repeat boot out (measure/rounds.py): the body says which
    kernels booted once, and never that their boots counted the same or how far apart they lie."""
    det = pd.DataFrame([
        {"environment": "sel4", "boots": 2, "conditions": 3, "exact": 3, "single_boot": 0, "max_spread": 0.0},
        {"environment": "xen-linux", "boots": 1, "conditions": 2, "exact": 0, "single_boot": 2, "max_spread": 0.0}])
    text = section.determinism_summary(det)
    assert text.startswith("Every boot of seL4 counted the same instructions")
    assert "Linux on Xen booted once (the quick profile's budget left the repeat out): whether its counts repeat" \
           " is not shown" in text
    assert "lie within" not in text
