"""The kernel-version sweep (issue 39) without QEMU: the version table and its environments, the
vmlinuz found in either package layout, a zstd kernel decompressed for its PVH entry, the profile's
parsers and attribution, the history, its changes and their functions, the LEBench transcription."""
import json
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from osbench_analysis import environments
from osbench_analysis.analysis import lebench, versions
from osbench_analysis.environments import guest_install, kernels, symprofile
from osbench_analysis.measure import config
from osbench_analysis.plots import versions as plots_versions


def test_the_table_pins_each_version_once_and_registers_both_mitigation_settings():
    names = [k.name for k in kernels.KERNELS]
    assert len(set(names)) == len(names) and {"5.10", "6.1", "6.12"} <= set(names)
    for k in kernels.KERNELS:
        assert re.fullmatch(r"[0-9a-f]{64}", k.sha256) and k.version.startswith(k.name + ".")
        assert k.package.startswith(("linux-image-", "linux-binary-")) and k.package.endswith("-amd64")
        for variant, extra in kernels.MITIGATION_VARIANTS.items():
            env = environments.get(kernels.env_name(k, variant))
            # every sweep boot skips the crypto self-tests (from 7.1 they run through the campaign's boot)
            assert env.pinned is k and env.extra_args == (*extra, "cryptomgr.notests=1") and not env.in_all
            assert "cryptomgr.notests=1" in env.facts()["kernel_args"]
            assert env.vmlinuz == k.folder / "vmlinuz" and env.version() == f"{k.package} {k.version}"
    # oldest first, both settings of each
    sweep = kernels.sweep_environments()
    assert sweep[:2] == ["linux-tcg-5.10", "linux-tcg-5.10-nomitig"] and len(sweep) == 2 * len(names)
    assert [k.sort_key() for k in kernels.KERNELS] == sorted(k.sort_key() for k in kernels.KERNELS)
    assert kernels.sweep_environments(["6.12"]) == ["linux-tcg-6.12", "linux-tcg-6.12-nomitig"]
    with pytest.raises(Exception, match="no kernel version '9.9'"):
        kernels.by_name("9.9")


def test_all_leaves_the_sweep_out_even_when_built(monkeypatch):
    from osbench_analysis.environments.base import Availability
    from osbench_analysis.environments.linux_tcg import LinuxTCG

    monkeypatch.setattr(LinuxTCG, "availability", lambda self: Availability(True, "built"))
    for selector in ("all", "all-guests"):   # make all's rounds: the sweep's guests are in neither
        names = [e.name for e in config.resolve_environments(selector)]
        assert "linux-tcg" in names and not any(re.match(r"linux-tcg-\d", n) for n in names)
    # named, it is measured
    assert [e.name for e in config.resolve_environments("linux-tcg-7.3")] == ["linux-tcg-7.3"]


@pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="dpkg-deb missing")
@pytest.mark.parametrize("inside", ["boot/vmlinuz-9.9.9-amd64", "usr/lib/modules/9.9.9-amd64/vmlinuz"])
def test_the_vmlinuz_is_found_in_either_package_layout(tmp_path, inside):
    root = tmp_path / "pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text("Package: linux-binary-test\nVersion: 1\nArchitecture: amd64\n"
                                             "Maintainer: t <t@t>\nDescription: t\n")
    (root / inside).parent.mkdir(parents=True)
    (root / inside).write_bytes(b"kernel")
    (root / "boot").mkdir(exist_ok=True)
    (root / "boot" / "System.map-9.9.9-amd64").write_text("placeholder")
    deb = tmp_path / "k.deb"
    subprocess.run(["dpkg-deb", "-b", str(root), str(deb)], check=True, capture_output=True)
    out = tmp_path / "x"
    out.mkdir()
    found = kernels._vmlinuz_member(out, deb)
    assert found.read_bytes() == b"kernel" and found.relative_to(out).as_posix() == inside


@pytest.mark.skipif(not shutil.which("zstd"), reason="zstd missing")
def test_a_zstd_kernel_is_decompressed_for_its_pvh_entry(tmp_path):
    from tests.test_qemu_guests import _elf_with_notes

    pvh = _elf_with_notes([(b"Xen", guest_install.XEN_ELFNOTE_PHYS32_ENTRY, b"\x50\x08\0\x01")])
    packed = subprocess.run(["zstd", "-c", "-q"], input=pvh, capture_output=True, check=True).stdout
    bz = tmp_path / "vmlinuz"
    # set-up code, the zstd frame, then the bzImage's bytes after it (zstd complains of them: ignored)
    bz.write_bytes(b"MZ" + bytes(300) + packed + b"trailing bytes of the bzImage")
    assert guest_install.extract_vmlinux(bz, tmp_path / "vmlinux")
    assert (tmp_path / "vmlinux").read_bytes() == pvh


# ------------------------------------------------------------------ the profile

KALLSYMS = """noise before
OSB kallsyms begin
ffffffff81000000 _stext
ffffffff81000100 do_syscall_64
ffffffff81000200 __x64_sys_getppid
OSB kallsyms end
"""


def test_profile_parsers_and_attribution_per_operation():
    syms = symprofile.parse_kallsyms(KALLSYMS)
    assert syms == [(0xFFFFFFFF81000000, "_stext"), (0xFFFFFFFF81000100, "do_syscall_64"),
                    (0xFFFFFFFF81000200, "__x64_sys_getppid")]
    windows = symprofile.parse_windows("W 0\n401000 10\nffffffff81000104 30\nW 1\n401000 100\n"
                                       "ffffffff81000104 300\nffffffff81000208 200\nffffffff81000104 100\nE 2\n")
    assert len(windows) == 2 and windows[1][0xFFFFFFFF81000104] == 400
    namer = symprofile.Namer(syms, [(0x400000, "_start"), (0x401000, "loop_null")])
    assert namer(0x401004) == ("loop_null", "user") and namer(0xFFFFFFFF81000150) == ("do_syscall_64", "kernel")
    assert namer(0x10) == ("(user)", "user")
    batches = [{"job": 0, "warmup": True, "iterations": 1, "elapsed_ns": 40},
               {"job": 0, "warmup": False, "iterations": 100, "elapsed_ns": 700}]
    (m,) = symprofile.attribute(windows, batches, namer)
    assert m["functions"] == {("loop_null", "user"): 1.0, ("do_syscall_64", "kernel"): 4.0,
                              ("__x64_sys_getppid", "kernel"): 2.0}
    assert m["total"] == 7.0 and m["elapsed_per_op"] == 7.0
    with pytest.raises(symprofile.ProfileError, match="do not pair"):
        symprofile.attribute(windows[:1], batches, namer)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
@pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("objdump")), reason="gcc/objdump missing")
def test_loop_marks_are_the_probe_loops_call_and_the_instruction_after(tmp_path):
    src = tmp_path / "h.c"
    src.write_text("""
#include <time.h>
typedef int (*loop_fn)(long);
static int work(long n) { return (int)n; }
loop_fn volatile the_loop = work;
int osb_run(long n) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC_RAW, &a);
    int rc = the_loop(n);
    clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    return rc + (int)(b.tv_nsec - a.tv_nsec);
}
int main(void) { return osb_run(3) > 0 ? 0 : 1; }
""")
    binary = tmp_path / "h"
    subprocess.run(["gcc", "-O2", "-static", "-o", str(binary), str(src)], check=True, capture_output=True)
    start, end = symprofile.loop_marks(binary)
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True).stdout
    line = next(l for l in dis.splitlines() if l.strip().startswith(f"{start:x}:"))
    assert "call" in line and "*" in line and start < end <= start + 8


# ------------------------------------------------------------------ the history

def _boots(counts: dict) -> pd.DataFrame:
    """Boots as microkernel.boot_counts gives them: {(env, probe, variant): [median per boot]}."""
    rows = []
    for (env, probe, variant), meds in counts.items():
        pj = json.dumps({"bytes": int(variant.split("=")[1])} if variant else {})
        for run, m in enumerate(meds):
            rows.append({"environment": env, "probe": probe, "params_json": pj, "campaign_id": f"c-{env}",
                         "run": run, "min": m, "median": m, "mean": m, "batches": 3, "variant": variant})
    return pd.DataFrame(rows)


def test_history_changes_and_the_functions_that_carry_them(tmp_path):
    boots = _boots({
        ("linux-tcg-5.10", "null_syscall", ""): [200, 200], ("linux-tcg-6.1", "null_syscall", ""): [204, 204],
        ("linux-tcg-6.12", "null_syscall", ""): [250, 251],
        ("linux-tcg-5.10-nomitig", "null_syscall", ""): [190, 190],
        ("linux-tcg-6.12-nomitig", "null_syscall", ""): [180, 180],
        ("linux-tcg-5.10", "service_pipe", "bytes=64"): [1000, 1000],
        ("linux-tcg-6.1", "service_pipe", "bytes=64"): [1000, 1000],
        ("linux-tcg", "null_syscall", ""): [1, 1],   # not of the sweep: left out
    })
    hist = versions.history(boots)
    assert set(hist["environment"]) == {"linux-tcg-5.10", "linux-tcg-6.1", "linux-tcg-6.12", "linux-tcg-5.10-nomitig",
                                        "linux-tcg-6.12-nomitig"}
    ns = hist[(hist["condition"] == "null_syscall") & (hist["mitigations"] == "default")]
    assert list(ns["version"]) == ["5.10", "6.1", "6.12"] and list(ns["relative"]) == [1.0, 1.02, 250.5 / 200]
    assert list(ns["exact"]) == [True, True, False]
    assert list(hist[hist["condition"] == "service_pipe bytes=64"]["relative"]) == [1.0, 1.0]
    ch = versions.changes(hist)
    # 5.10 -> 6.1 is 2 %: no change; 6.1 -> 6.12 is +22.8 %; with mitigations=off 5.10 -> 6.12 (consecutive
    # among those measured) is -5.3 %
    assert [(r["from"], r["to"], r["mitigations"]) for _, r in ch.iterrows()] == [("6.1", "6.12", "default"),
                                                                               ("5.10", "6.12", "off")]
    assert ch.iloc[0]["delta"] == pytest.approx(46.5) and ch.iloc[1]["percent"] == pytest.approx(-100 * 10 / 190)
    prof = pd.DataFrame([
        ("linux-tcg-6.1", "null_syscall", "{}", "do_syscall_64", "kernel", 50.0),
        ("linux-tcg-6.1", "null_syscall", "{}", "__x64_sys_getppid", "kernel", 20.0),
        ("linux-tcg-6.12", "null_syscall", "{}", "do_syscall_64", "kernel", 80.0),
        ("linux-tcg-6.12", "null_syscall", "{}", "__x64_sys_getppid", "kernel", 19.0),
        ("linux-tcg-6.12", "null_syscall", "{}", "x86_return_thunk", "kernel", 12.0)], columns=symprofile.COLUMNS)
    prof.to_csv(tmp_path / "linux-tcg-6.1.csv", index=False)
    explained = versions.explain(ch, versions.profiles(tmp_path))
    assert explained.iloc[0]["functions"] == "do_syscall_64 +30, x86_return_thunk +12"
    assert explained.iloc[0]["profiled_delta"] == pytest.approx(41.0) and explained.iloc[1]["functions"] == ""
    assert list(explained["confirmed"]) == ["yes", ""]
    assert versions.confirmed(60000.0, 1400.0) == "no" and versions.confirmed(-100.0, -60.0) == "yes"
    line = versions.sentences(explained)[0]
    assert line.startswith("6.1 → 6.12 (default mitigations): null_syscall +46 instructions (+22.8 %)")
    assert line.endswith("in do_syscall_64 +30, x86_return_thunk +12")
    cost = versions.mitigation_cost(hist)
    assert cost.loc["null_syscall", "6.12"] == pytest.approx(250.5 / 180)
    fig = plots_versions.plot_history(hist, versions.version_order())
    assert [a.get_title() for a in fig.axes[:2]] == ["default mitigations", "mitigations=off"]


def test_the_compacted_profile_keeps_totals():
    prof = pd.DataFrame([("e", "p", "{}", "a", "kernel", 10.0), ("e", "p", "{}", "b", "kernel", 0.4),
                         ("e", "p", "{}", "c", "kernel", 0.3), ("e", "p", "{}", "u", "user", 0.2)],
                        columns=symprofile.COLUMNS)
    out = symprofile.compact(prof)
    assert out["instructions_per_op"].sum() == pytest.approx(10.9)
    assert set(out["function"]) == {"a", symprofile.OTHER} and len(out) == 3


def test_lebench_transcription_and_the_agreement_table():
    fig = lebench.figure1()
    counts = fig.groupby("test").size()
    assert len(counts) == 15 and set(counts) == {41}
    assert (fig[fig["series"] == "4.0"]["percent"] == 0).all()   # the baseline column
    step = lebench.mitigation_step(fig)
    assert step["small-read"] == pytest.approx(100 * (177 / 110 - 1))
    assert len(lebench.root_causes()) == 11
    hist = versions.history(_boots({("linux-tcg-6.12", "null_syscall", ""): [300, 300],
                                    ("linux-tcg-6.12-nomitig", "null_syscall", ""): [240, 240],
                                    ("linux-tcg-6.12", "fork_exit", ""): [1000, 1000],
                                    ("linux-tcg-6.12-nomitig", "fork_exit", ""): [1001, 1001],
                                    ("linux-tcg-6.12", "mmap_touch", ""): [900, 900],
                                    ("linux-tcg-6.12-nomitig", "mmap_touch", ""): [1000, 1000]}))
    agree = lebench.agreement(hist).set_index("lebench_test")
    assert agree.loc["small-read", "ours_newest_percent"] == pytest.approx(25.0)
    assert agree.loc["small-read", "verdict"].startswith("same direction")
    assert agree.loc["fork", "verdict"].startswith("ours changes by under 1 %")
    assert agree.loc["small-pagefault", "verdict"] == "opposite directions"
    assert agree.loc["thrcreate", "verdict"] == "not measured here"
    assert lebench.ranking(agree.reset_index()) == pytest.approx(0.5)   # small-read, fork, small-pagefault
    assert "No version is in both studies" in lebench.agreement_markdown(agree.reset_index())


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
@pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("nm")), reason="gcc/nm missing")
def test_the_plugin_and_the_kallsyms_init_build_and_export_what_qemu_and_the_kernel_need(tmp_path):
    plugin, init = symprofile.build(tmp_path)
    dyn = subprocess.run(["nm", "-D", "--defined-only", str(plugin)], capture_output=True, text=True).stdout
    assert re.search(r" T qemu_plugin_install$", dyn, re.M) and re.search(r" [DB] qemu_plugin_version$", dyn, re.M)
    # what it calls of QEMU stays undefined, to be bound by QEMU at load
    undef = subprocess.run(["nm", "-D", "--undefined-only", str(plugin)], capture_output=True, text=True).stdout
    assert "qemu_plugin_register_vcpu_insn_exec_inline" in undef
    assert "statically linked" in subprocess.run(["file", str(init)], capture_output=True, text=True).stdout
    mtime = plugin.stat().st_mtime_ns
    symprofile.build(tmp_path)   # kept while newer than its source
    assert plugin.stat().st_mtime_ns == mtime


def test_the_profile_keeps_each_conditions_cleanest_batch():
    measured = [{"job": 0, "total": 300.0, "elapsed_per_op": 900.0}, {"job": 0, "total": 310.0, "elapsed_per_op": 320.0},
                {"job": 1, "total": 5.0, "elapsed_per_op": 5.0}]
    assert [m["elapsed_per_op"] for m in symprofile.cleanest(measured)] == [320.0, 5.0]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_mitigations_cost_in_executed_instructions_leaves_idle_time_out():
    prof = pd.DataFrame([
        ("linux-tcg-6.12", "null_syscall", "{}", "do_syscall_64", "kernel", 110.0),
        ("linux-tcg-6.12", "null_syscall", "{}", "user", "user", 10.0),
        ("linux-tcg-6.12-nomitig", "null_syscall", "{}", "do_syscall_64", "kernel", 90.0),
        ("linux-tcg-6.12-nomitig", "null_syscall", "{}", "user", "user", 10.0),
        ("linux-tcg-6.12-nomitig", "null_syscall", "{}", symprofile.IDLE, "idle", 500.0)], columns=symprofile.COLUMNS)
    cost = lebench.executed_mitigation_cost(prof)
    assert list(cost["version"]) == ["6.12"] and cost.iloc[0]["percent"] == pytest.approx(20.0)
    hist = versions.history(_boots({("linux-tcg-6.12", "null_syscall", ""): [120, 120],
                                    ("linux-tcg-6.12-nomitig", "null_syscall", ""): [600, 600]}))
    row = lebench.agreement(hist, prof=prof).set_index("lebench_test").loc["small-read"]
    assert row["ours_newest_percent"] == pytest.approx(-80.0) and row["executed_newest_percent"] == pytest.approx(20.0)
    assert "executed only" in lebench.agreement_markdown(lebench.agreement(hist, prof=prof))


def test_the_executed_history_reads_the_profiles_without_idle_time():
    hist = versions.history(_boots({("linux-tcg-5.10", "null_syscall", ""): [300, 300],
                                    ("linux-tcg-6.1", "null_syscall", ""): [1200, 1200]}))
    prof = pd.DataFrame([
        ("linux-tcg-5.10", "null_syscall", "{}", "do_syscall_64", "kernel", 250.0),
        ("linux-tcg-6.1", "null_syscall", "{}", "do_syscall_64", "kernel", 275.0),
        ("linux-tcg-6.1", "null_syscall", "{}", symprofile.IDLE, "idle", 900.0)], columns=symprofile.COLUMNS)
    ex = versions.executed_history(prof, hist)
    assert list(ex["median"]) == [250.0, 275.0] and list(ex["relative"]) == [1.0, 1.1]
