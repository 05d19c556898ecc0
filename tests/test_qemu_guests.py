"""The emulated-CPU environments (mach, linux-tcg) without QEMU: the serial
parser, the boot lines, the private APT configuration, the initramfs writer,
and which environment measures which probe."""
import gzip
import shutil
import subprocess

import pytest

from osbench_analysis import environments
from osbench_analysis.measure import config
from osbench_analysis.catalog import registry
from osbench_analysis.environments import guest_install, linux_tcg, mach, qemu
from osbench_analysis.environments.qemu import Boot, outcomes, parse_serial
from osbench_analysis.worker.main import WorkerRequest

SERIAL = """\
GNU Mach 1.8
OSB hello kernel=mach jobs=2
OSB job=0 probe=mach_null_trap begin
OSB job=0 batch=0 warmup=1 iterations=1 elapsed=97 work=1
OSB job=0 batch=1 warmup=0 iterations=100 elapsed=7600 work=100
OSB job=0 done
OSB job=1 probe=mach_rpc_task begin
OSB job=1 batch=0 warmup=1 iterations=1 elapsed=27067 work=1
OSB job=1 batch=1 warmup=0 iterations=45 elapsed=74
"""


def test_parser_reads_batches_jobs_and_drops_a_torn_line():
    rep = parse_serial(SERIAL)
    assert rep.hello == {"kernel": "mach", "jobs": "2"}
    assert rep.jobs[0].done and rep.jobs[0].probe == "mach_null_trap"
    assert [b["elapsed_ns"] for b in rep.jobs[0].batches] == [97, 7600]
    assert rep.jobs[0].batches[1]["warmup"] is False and rep.jobs[0].batches[1]["work_done"] == 100
    assert rep.jobs[0].batches[0]["nivcsw"] == 0   # the Mach task counts no rusage
    assert not rep.jobs[1].done and len(rep.jobs[1].batches) == 1   # the last line lacks work=: torn
    assert not rep.ended and not rep.panic


def test_parser_keeps_linux_counters_and_finds_kernel_lines_mid_line():
    text = ("[    1.2] random: crng init done\r\n"
            "OSB job=0 batch=3 warmup=0 iterations=10 elapsed=3260 work=10 cpu_start=0 cpu_end=0 nvcsw=2 "
            "nivcsw=1 minflt=5 started_unix_ns=1704067200000000000\r\n"
            "[    2.0] noiseOSB job=0 done\r\nOSB end\r\n")
    rep = parse_serial(text)
    row = rep.jobs[0].batches[0]
    assert (row["nvcsw"], row["nivcsw"], row["minflt"]) == (2, 1, 5)
    assert rep.jobs[0].done and rep.ended


def test_a_panic_fails_the_job_it_interrupted_with_the_panic_line_and_later_jobs_did_not_run():
    text = SERIAL + "[ 3.1] Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b\n"
    res = outcomes(Boot(text, "panic", None, 4.0), 3, {"time_unit": qemu.TIME_UNIT}, 60)
    assert [o.status for o in res] == ["ok", "crashed", "error"]
    assert res[1].message.startswith("Kernel panic - not syncing: Attempted to kill init!")
    assert "not run" in res[2].message and res[2].batches == []
    assert res[0].facts["guest_kernel"] == "mach" and res[0].facts["time_unit"] == "guest instructions"


def test_a_timeout_fails_the_unfinished_job():
    res = outcomes(Boot(SERIAL, "timeout", None, 60.0), 2, {}, 60)
    assert [o.status for o in res] == ["ok", "timeout"]
    assert "60 s" in res[1].message


def test_a_guest_error_is_its_jobs_alone():
    text = ("OSB hello kernel=linux\nOSB job=0 probe=x begin\nOSB job=0 error=2 cannot open /dev/zero\n"
            "OSB job=1 probe=y begin\nOSB job=1 batch=0 warmup=0 iterations=1 elapsed=5 work=1\nOSB job=1 done\n"
            "OSB end\n")
    res = outcomes(Boot(text, "ended", None, 1.0), 2, {}, 60)
    assert res[0].status == "error" and "cannot open /dev/zero" in res[0].message
    assert res[1].status == "ok"


def test_both_kernels_boot_under_the_same_qemu_command_line():
    m = qemu.qemu_argv(["-cdrom", "x.iso"])
    lx = qemu.qemu_argv(["-kernel", "vmlinuz"])
    assert m[:-2] == lx[:-2]
    assert "shift=0,sleep=off" in m and "-smp" in m and m[m.index("-smp") + 1] == "1"
    pinned = qemu.qemu_argv(["-cdrom", "x"], {1})
    assert pinned[0].endswith("taskset") and pinned[1:3] == ["-c", "1"]


def test_mach_boot_line_quotes_the_script_variables_and_carries_the_jobs():
    req = WorkerRequest("mach_rpc_task", {}, 10_000_000, 1, 10, 10_000_000)
    word = mach.job_word(qemu.job_plan(3, req, registry.PROBES["mach_rpc_task"]))
    assert word == "3:mach_rpc_task:10000000:1:10:10000000:0"
    cfg = mach.grub_cfg([word])
    module = next(line for line in cfg.splitlines() if line.strip().startswith("module"))
    assert module.split()[1:5] == ["/boot/task.elf", "bench", "'${host-port}'", "'${device-port}'"]
    assert word in module and module.endswith("'$(task-create)' '$(task-resume)'")
    assert "multiboot /boot/gnumach console=com0" in cfg
    with pytest.raises(ValueError):
        mach.job_word((0, "bad name;", 0, 1, 1, 1, 1, 1, 0))


def test_linux_boot_line_and_jobs_file():
    assert linux_tcg.append_line().split() == ["console=ttyS0", "panic=-1", "quiet", "nokaslr", "norandmaps"]
    assert linux_tcg.append_line(["mitigations=off"]).endswith("mitigations=off")
    req = WorkerRequest("fork_exit", {"outstanding": 4}, 5_000_000, 1, 3, 1_000_000, iterations=8)
    plan = qemu.job_plan(0, req, registry.PROBES["fork_exit"])
    assert linux_tcg.jobs_file([plan]) == b"0 fork_exit 4 5000000 1 3 1000000 4 8\n"


def test_newc_archive_is_what_cpio_reads(tmp_path):
    data = qemu.newc([("dir", 0o040755, b""), ("dir/f", 0o100644, b"hello"), ("console", 0o020600, b"", (5, 1))])
    assert len(data) % 4 == 0 and data.startswith(b"070701")
    if shutil.which("cpio"):   # make envs installs cpio; the fast tier may run before it
        listing = subprocess.run(["cpio", "-itv"], input=data, capture_output=True, check=True)
        text = listing.stdout.decode()
        assert "dir/f" in text and "5,   1" in text.replace("5,  1", "5,   1")
    assert b"hello" in data and b"TRAILER!!!" in data
    assert gzip.decompress(qemu.gzip_bytes(data)) == data


def test_archive_uri_reads_one_line_and_deb822_sources(tmp_path):
    lst = tmp_path / "sources.list"
    lst.write_text("# comment\ndeb [arch=amd64] http://mirror.example/debian-security bookworm-security main\n"
                   "deb http://mirror.example/debian/ bookworm main\n")
    assert guest_install.archive_uri([str(lst)]) == "http://mirror.example/debian"
    src = tmp_path / "debian.sources"
    src.write_text("Types: deb\nURIs: http://a.example/debian-security\nSuites: bookworm-security\n\n"
                   "Types: deb-src\nURIs: http://src.example/debian\n\n"
                   "Types: deb\nURIs: http://b.example/debian\nSuites: bookworm\nComponents: main\n")
    assert guest_install.archive_uri([str(tmp_path / "missing.list"), str(src)]) == "http://b.example/debian"
    assert guest_install.archive_uri([str(tmp_path / "missing.list")]) == ""


def test_private_apt_configuration_stays_under_its_folder(tmp_path):
    conf = guest_install.apt_config(tmp_path / "apt", "http://b.example/debian")
    text = conf.read_text()
    assert f'Dir::Etc::SourceList "{tmp_path}/apt/sources.list"' in text
    assert 'Dir::Etc::SourceParts "/dev/null"' in text and "/etc/apt" not in text
    assert (tmp_path / "apt" / "sources.list").read_text().split()[-3:] == ["http://b.example/debian", "trixie",
                                                                            "main"]
    with pytest.raises(guest_install.GuestInstallError, match="no Debian archive"):
        guest_install.apt_config(tmp_path / "apt2", "")


def test_mach_probes_run_only_in_mach_and_the_guest_sets_are_measured():
    cfg = config.make_config("quick")
    mach_probes = [n for n, p in registry.PROBES.items() if p.guest == "mach" and not p.hidden]
    assert len(mach_probes) >= 9
    for env in environments.REGISTRY:
        served = {n for n in registry.DEFAULT_PROBES if cfg.measures_in(env, n)}
        if env.name == "mach":
            assert served == set(mach_probes)
        elif env.name.startswith("linux-tcg"):
            # the memory model's known answers are hidden: measured when a campaign names them
            assert served == {p for p in linux_tcg.PROBES if not registry.PROBES[p].hidden}
            assert all(env.serves(registry.PROBES[p]) for p in ("mem_page_pass", "mem_line_pass"))
        else:
            assert not served & set(mach_probes), env.name
    for name in mach_probes:   # every Mach probe says what it pairs with on Linux, and the guest runs that
        if name == "mach_msg_self":   # but a message to oneself, which no Linux probe matches (catalog/matched.py)
            assert registry.PROBES[name].pairs_with == ()
            continue
        pair, params = registry.PROBES[name].pairs_with
        assert pair in linux_tcg.PROBES and registry.PROBES[name].differs
        registry.resolve_params(registry.PROBES[pair], params)


def test_the_preflight_null_syscall_runs_the_mach_null_trap_and_nothing_else_is_substituted():
    req = WorkerRequest("null_syscall", {"x": 1}, 1, 0, 1, 10)
    assert environments.get("mach").guest_request(req).probe == "mach_null_trap"
    assert environments.get("linux-tcg").guest_request(req) is req
    other = WorkerRequest("mach_rpc_task", {}, 1, 0, 1, 10)
    assert environments.get("mach").guest_request(other) is other


def test_outcome_rows_fill_every_sample_column_with_the_runners_own():
    from osbench_analysis.store import schema

    res = outcomes(Boot(SERIAL, "panic", None, 4.0, loadavg_1m=0.5), 2, {}, 60)
    rows = [{**b, "probe": "mach_null_trap", "variant": "", "params_json": "{}", "placement": "same_cpu",
             "fs_type": "", "run": 0} for b in res[0].batches]
    df = schema.samples_frame(rows, campaign_id="c", environment="mach", arch_class="microkernel")
    assert list(df["elapsed_ns"]) == [97, 7600] and set(df["worker_pid"]) == {0} and set(df["loadavg_1m"]) == {0.5}


def _elf_with_notes(notes: list[tuple[bytes, int, bytes]]) -> bytes:
    """A minimal x86-64 ELF whose one program header is a PT_NOTE holding ``notes``."""
    import struct

    body = b"".join(struct.pack("<III", len(n) + 1, len(d), t) + (n + b"\0").ljust((len(n) + 4) // 4 * 4, b"\0")
                    + d.ljust((len(d) + 3) // 4 * 4, b"\0") for n, t, d in notes)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 64, 0, 0, 64,
                                                                    56, 1, 0, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 4, 4, 64 + 56, 0, 0, len(body), len(body), 4)
    return header + phdr + body


def test_the_linux_kernel_is_decompressed_for_its_pvh_entry_and_booted_so(tmp_path, monkeypatch):
    import lzma

    pvh = _elf_with_notes([(b"Xen", 6, b"linux"), (b"Xen", guest_install.XEN_ELFNOTE_PHYS32_ENTRY, b"\x50\x08\0\x01")])
    plain = _elf_with_notes([(b"Xen", 6, b"linux")])
    assert guest_install.has_pvh_entry(pvh) and not guest_install.has_pvh_entry(plain)
    assert not guest_install.has_pvh_entry(b"MZ" + pvh)
    # a bzImage: set-up code, then the xz payload (a false xz magic before it is skipped)
    bz = tmp_path / "vmlinuz"
    bz.write_bytes(b"\x4d\x5a" + bytes(500) + b"\xfd7zXZ\x00junk" + lzma.compress(pvh, format=lzma.FORMAT_XZ))
    assert guest_install.extract_vmlinux(bz, tmp_path / "vmlinux")
    assert (tmp_path / "vmlinux").read_bytes() == pvh
    bz.write_bytes(bytes(100) + lzma.compress(plain, format=lzma.FORMAT_XZ))
    assert not guest_install.extract_vmlinux(bz, tmp_path / "none") and not (tmp_path / "none").exists()
    # a gzip payload, a false gzip magic before it, and the bzImage's bytes after the stream
    bz.write_bytes(bytes(100) + b"\x1f\x8b\x08junk" + gzip.compress(pvh) + b"trailer")
    assert guest_install.extract_vmlinux(bz, tmp_path / "gz") and (tmp_path / "gz").read_bytes() == pvh

    monkeypatch.setattr(linux_tcg, "VMLINUZ", bz)
    monkeypatch.setattr(linux_tcg, "VMLINUX", tmp_path / "vmlinux")
    monkeypatch.setattr(linux_tcg, "INITRAMFS", tmp_path / "initramfs")
    (tmp_path / "initramfs").write_bytes(b"x")
    req = WorkerRequest("null_syscall", {}, 1_000_000, 0, 1, 10)
    env = linux_tcg.LinuxTCG()
    argv = env.boot_media([req], tmp_path)
    assert argv[argv.index("-kernel") + 1] == str(tmp_path / "vmlinux")
    assert env.facts()["kernel_entry"].startswith("PVH entry of vmlinux")
    (tmp_path / "vmlinux").unlink()
    argv = env.boot_media([req], tmp_path)
    assert argv[argv.index("-kernel") + 1] == str(bz) and "decompressor" in env.facts()["kernel_entry"]
