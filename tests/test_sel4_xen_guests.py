"""The seL4 and Xen guests without QEMU: the seL4 task's serial lines, its job
list written into a copy of its ELF, the kernel's configuration and build
steps, the crate's checksum and its refusal, Xen's boot files, and which
environment measures which probe."""
import gzip
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from osbench_analysis import environments
from osbench_analysis.catalog import matched, registry
from osbench_analysis.environments import guest_install, linux_tcg, qemu, sel4, sel4_install, xen_linux
from osbench_analysis.environments.qemu import Boot, outcomes, parse_serial
from osbench_analysis.measure import config
from osbench_analysis.worker.main import WorkerRequest

SEL4_SERIAL = """\
OSB hello kernel=sel4 fastpath=1 build=release imageframes=31 untyped_bits=27 tsc_mhz=999
OSB job=0 probe=sel4_call_space begin
OSB job=0 batch=0 warmup=1 iterations=1 elapsed=1497 work=1
OSB job=0 batch=1 warmup=0 iterations=2776 elapsed=1199422 work=2776
OSB job=0 done
OSB job=1 probe=sel4_test_fault begin
OSB panic: fault of a root-task thread label=5 mr0=0x0000000000401115 mr1=0x0000000000000010
"""


def test_the_sel4_lines_parse_and_a_fault_fails_the_job_it_interrupted():
    rep = parse_serial(SEL4_SERIAL)
    assert rep.hello["kernel"] == "sel4" and rep.hello["fastpath"] == "1" and rep.hello["imageframes"] == "31"
    assert [b["elapsed_ns"] for b in rep.jobs[0].batches] == [1497, 1199422]
    assert rep.jobs[0].batches[1]["work_done"] == 2776 and rep.jobs[0].done
    assert rep.panic.startswith("panic: fault of a root-task thread label=5")
    res = outcomes(Boot(SEL4_SERIAL, "panic", None, 2.0), 3, {"time_unit": qemu.TIME_UNIT}, 60)
    assert [o.status for o in res] == ["ok", "crashed", "error"]
    assert "fault of a root-task thread" in res[1].message and "not run" in res[2].message
    assert res[0].facts["guest_kernel"] == "sel4" and res[0].batches[0]["worker_pid"] == 0


def _elf_with_marker(extra: bytes = b"") -> bytes:
    return b"\x7fELF" + bytes(100) + sel4.JOBS_MARKER + b"\0" + bytes(sel4.JOBS_BYTES - len(sel4.JOBS_MARKER) - 1) \
        + b"tail" + extra


def test_the_jobs_go_into_a_copy_of_the_task_after_its_marker_and_nothing_else_moves():
    elf = _elf_with_marker()
    req = WorkerRequest("sel4_call_space", {}, 1_000_000, 1, 3, 10_000_000)
    line = sel4.job_line(qemu.job_plan(2, req, registry.PROBES["sel4_call_space"]))
    assert line == "2:sel4_call_space:1000000:1:3:10000000:0"
    out = sel4.with_jobs(elf, [line, "3:sel4_yield:5:0:1:9:0"])
    assert len(out) == len(elf) and out.endswith(b"tail") and out[:104] == elf[:104]
    start = elf.find(sel4.JOBS_MARKER) + len(sel4.JOBS_MARKER) + 1
    assert out[start:].split(b"\0")[0] == f"{line}\n3:sel4_yield:5:0:1:9:0\n".encode()
    with pytest.raises(ValueError, match="holds"):
        sel4.with_jobs(elf, ["0:sel4_yield:1:1:1:1:0"] * 400)
    with pytest.raises(ValueError, match="single jobs marker"):
        sel4.with_jobs(elf + sel4.JOBS_MARKER, [line])
    with pytest.raises(ValueError, match="single jobs marker"):
        sel4.with_jobs(b"\x7fELF" + bytes(64), [line])
    with pytest.raises(ValueError):
        sel4.job_line((0, "bad name;", 0, 1, 1, 1, 1, 1, 0))


def test_the_kernel_is_configured_for_qemus_tcg_as_a_release_build_with_or_without_the_fastpath():
    fast, slow = sel4_install.autoconf(True), sel4_install.autoconf(False)
    for conf in (fast, slow):
        lines = set(conf.splitlines())
        assert {"#define CONFIG_XAPIC 1", "#define CONFIG_FSGSBASE_MSR 1", "#define CONFIG_ARCH_X86_64 1",
                "#define CONFIG_PLAT_PC99 1", "#define CONFIG_SYSCALL 1", "#define CONFIG_MAX_NUM_NODES 1"} <= lines
        assert "X2APIC" not in conf and "DEBUG_BUILD" not in conf and "PRINTING" not in conf
        assert "IOMMU" not in conf and "PCID" not in conf
    assert "#define CONFIG_FASTPATH 1" in fast and "FASTPATH" not in slow


def test_the_kernel_build_uses_the_trees_makefile_and_a_compiler_wrapper_not_a_patch(tmp_path):
    argv = sel4_install.make_argv(tmp_path / "seL4", tmp_path / "cc")
    assert argv[0] == "make" and argv[argv.index("-f") + 1] == str(tmp_path / "seL4" / "Makefile")
    assert {"ARCH=x86", "SEL4_ARCH=x86_64", "PLAT=pc99", "XMLLINT_PATH=true", "CIRCULAR_INCLUDES=true",
            f"CC={tmp_path / 'cc'}", "kernel.elf"} <= set(argv)
    assert not any(a.startswith("DEBUG") for a in argv)
    assert {"-Wno-error", "-fno-pie", "-no-pie", "-fno-stack-protector"} <= set(sel4_install.KERNEL_CC_FLAGS)
    assert sel4_install.stamp_of("a", True) != sel4_install.stamp_of("a", False) != sel4_install.stamp_of("b", False)


def test_the_lock_pins_the_crate_and_a_changed_crate_is_refused(tmp_path):
    lock = sel4_install.CRATE_DIR / "Cargo.lock"
    pinned = sel4_install.locked_checksum(lock)
    assert pinned == "b42578af4c4eb8468e57beaabecc86541ac3a94eca1e92a611457b71f6034822"
    assert 'sel4-sys = "=0.0.28"' in (sel4_install.CRATE_DIR / "Cargo.toml").read_text()
    crate = tmp_path / "sel4-sys-0.0.28.crate"
    crate.write_bytes(b"not the crate the lock pins")
    with pytest.raises(guest_install.GuestInstallError, match="refused"):
        sel4_install.verify_crate(crate, lock)
    fake_lock = tmp_path / "Cargo.lock"
    fake_lock.write_text(lock.read_text().replace(pinned, hashlib.sha256(crate.read_bytes()).hexdigest()))
    assert sel4_install.verify_crate(crate, fake_lock) == hashlib.sha256(crate.read_bytes()).hexdigest()
    with pytest.raises(guest_install.GuestInstallError, match="no checksum"):
        sel4_install.locked_checksum(lock, "sel4-sys", "0.0.27")


def test_the_build_tools_are_pinned_with_their_hashes():
    lines = [ln for ln in sel4_install.BUILD_TOOLS.read_text().splitlines() if ln and not ln.startswith("#")]
    names = {ln.split("==")[0].lower() for ln in lines}
    assert names == {"tempita", "ply", "six"} and all("--hash=sha256:" in ln for ln in lines)


def test_unpack_checks_the_kernel_version(tmp_path):
    def crate(version: str) -> Path:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            data = version.encode() + b"\n"
            info = tarfile.TarInfo("sel4-sys-0.0.28/seL4/VERSION")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        path = tmp_path / f"c-{version}.crate"
        path.write_bytes(buf.getvalue())
        return path

    tree = sel4_install.unpack(crate("5.0.0"), tmp_path / "ok")
    assert (tree / "VERSION").read_text().strip() == "5.0.0"
    with pytest.raises(guest_install.GuestInstallError, match="seL4 4.0.0"):
        sel4_install.unpack(crate("4.0.0"), tmp_path / "old")


def test_xens_initrd_is_one_gzip_stream_whose_size_field_is_the_whole(tmp_path):
    base = qemu.gzip_bytes(qemu.newc([("init", 0o100755, b"#!init")]))
    out = xen_linux.initrd(base, b"0 null_syscall 0 1 0 1 1 1 0\n")
    raw = gzip.decompress(out)
    assert int.from_bytes(out[-4:], "little") == len(raw)   # what Xen reads to size the unpacked initrd
    assert raw.startswith(gzip.decompress(base)) and b"osb-jobs" in raw and b"null_syscall" in raw
    cfg = xen_linux.grub_cfg()
    assert "multiboot2 /boot/xen console=com1" in cfg and "module2 /boot/vmlinuz console=hvc0" in cfg
    assert cfg.index("/boot/vmlinuz") < cfg.index("module2 /boot/initrd")


def test_each_guest_measures_its_own_probes_and_the_matched_rows_name_real_probes():
    cfg = config.make_config("quick")
    sel4_probes = {n for n, p in registry.PROBES.items() if p.guest == "sel4" and not p.hidden}
    assert len(sel4_probes) >= 8
    for env in environments.REGISTRY:
        served = {n for n in registry.DEFAULT_PROBES if cfg.measures_in(env, n)}
        if env.name.startswith("sel4"):
            assert served == sel4_probes, env.name
        elif env.name == "xen-linux":
            # the Linux guest's probes that the matched rows ask for
            assert served == set(xen_linux.PROBES) - set(xen_linux.KNOWN_ANSWERS) == matched.probes_of("xen")
            assert served <= set(linux_tcg.PROBES)
        else:
            assert not served & sel4_probes, env.name
    for design, (_, envs) in matched.DESIGNS.items():
        for probe in matched.probes_of(design):
            assert probe in registry.PROBES, probe
            for env in envs:
                assert environments.get(env).serves(registry.PROBES[probe]), (env, probe)


def test_the_matched_table_never_pairs_the_mach_message_to_self_with_a_round_trip():
    row = next(r for r in matched.ROWS if r.key == "msg_self")
    assert isinstance(matched.cells(row, "linux"), str) and isinstance(matched.cells(row, "sel4"), str)
    spaces = next(r for r in matched.ROWS if r.key == "rtt_spaces")
    assert "mach_msg_self" not in {e.probe for e in matched.cells(spaces, "mach")}
    assert registry.PROBES["mach_msg_self"].pairs_with == ()


def test_the_preflight_null_syscall_runs_the_sel4_null_entry():
    req = WorkerRequest("null_syscall", {}, 1, 0, 1, 10)
    assert environments.get("sel4").guest_request(req).probe == "sel4_poll_ntfn"
    assert environments.get("xen-linux").guest_request(req) is req


def test_xen_measures_only_the_parameters_the_matched_rows_ask_for():
    conds = config.validate(config.make_config("quick"))
    env = environments.get("xen-linux")
    cfg = config.make_config("quick")
    xen = [c for c in conds if cfg.measures_condition(env, c)]
    by = {(c.probe, c.params.get("bytes")) for c in xen}
    assert ("service_direct", 0) in by and ("service_direct", 64) not in by and ("service_shm", 64) not in by
    assert {c.probe for c in xen} == set(xen_linux.PROBES) - set(xen_linux.KNOWN_ANSWERS)
    linux = environments.get("linux-tcg")
    assert {("service_direct", 64)} <= {(c.probe, c.params.get("bytes")) for c in conds
                                        if cfg.measures_condition(linux, c)}


def test_xen_runs_the_memory_models_known_answers_when_they_are_named():
    env = environments.get("xen-linux")
    for probe in xen_linux.KNOWN_ANSWERS:
        spec = registry.PROBES[probe]
        assert env.serves(spec) and env.serves_params(probe, registry.resolve_params(spec, {}))
    assert set(xen_linux.KNOWN_ANSWERS) <= set(linux_tcg.PROBES)   # the Linux guest's init has them
    assert all(registry.PROBES[p].hidden for p in xen_linux.KNOWN_ANSWERS)   # never in a default campaign
