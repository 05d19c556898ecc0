"""Debian's Linux kernel under the very same QEMU command line as GNU Mach
(environments/qemu.py), running osbench's own probes: PID 1 of its
initramfs is osbench-guest-init (probes/guest/guest_init.c), the harness and
probe tables linked statically, so the probes are the native ones,
unchanged.  Under -icount shift=0 CLOCK_MONOTONIC_RAW advances one ns per
guest instruction: the counts are guest instructions, comparable with the
mach environment's and never with host nanoseconds.

The kernel is the machine's release's linux-image-*-amd64 (vmlinuz only,
extracted, not installed), an SMP kernel with its default mitigations
(retpolines); ``mitigations=off`` gives the other figure (linux-tcg-nomitig).  On ``-cpu
qemu64,vendor=GenuineIntel`` the kernel deems the CPU Meltdown-affected and isolates its page tables
(linux-tcg-pti: KPTI without PCID, checked in every boot by the guest's hello line)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from osbench_analysis.catalog import registry
from osbench_analysis.environments.qemu import GUESTS_DIR, GuestEnvironment, job_plan, manifest, newc

VMLINUZ = GUESTS_DIR / "linux" / "vmlinuz"
#: the same kernel decompressed from VMLINUZ at install (guest_install.extract_vmlinux): QEMU enters it at
#: its PVH entry point, skipping the BIOS, the real-mode set-up and the decompressor under emulation
#: (about 4 s of the boot's 11 s); what the probes execute is the same kernel code
VMLINUX = GUESTS_DIR / "linux" / "vmlinux"
INITRAMFS = GUESTS_DIR / "linux" / "initramfs.cpio.gz"
#: nokaslr norandmaps: two boots give byte-identical serial output (addresses and all)
BASE_APPEND = ("console=ttyS0", "panic=-1", "quiet", "nokaslr", "norandmaps")
#: the probes the guest measures: the Linux side of every Mach pair (registry.Probe.pairs_with)
PROBES = ("null_syscall", "syscall_mix", "pipe_pingpong", "unix_pingpong", "service_direct", "service_pipe",
          "service_shm", "mmap_touch", "thread_create_join", "fork_exit",
          # the cross-thread hand-over beside Mach's and seL4's round trips within one task (catalog/matched.py)
          "condvar_pingpong",
          # the memory-system model's known answers (hidden: measured when named, environments/memevents.py)
          "mem_page_pass", "mem_line_pass")


#: the guest's /sys/devices/system/cpu/vulnerabilities/meltdown under page-table isolation (as its hello says it)
PTI = "Mitigation:_PTI"


def kernel_image() -> Path:
    """The kernel QEMU boots: the decompressed vmlinux where make envs made it, else the vmlinuz."""
    return VMLINUX if VMLINUX.exists() else VMLINUZ


def append_line(extra: Sequence[str] = ()) -> str:
    """The kernel command line: serial console, a panic ends the boot, no randomisation."""
    return " ".join([*BASE_APPEND, *extra])


def jobs_file(plans: Sequence[tuple]) -> bytes:
    """/osb-jobs: one line per job, the fields guest_init.c reads."""
    return "".join(" ".join(map(str, p)) + "\n" for p in plans).encode()


class LinuxTCG(GuestEnvironment):
    arch_class = "monolithic"
    kernel = "linux"
    startup_s = 90.0    # kernel boot under icount: 13-16 s on an idle host, 25-70 s on a busy one
    round_startup_s = 90.0

    memory_boundary = "marker"    # the harness's markers: the kernel and the vDSO read the TSC too

    def __init__(self, name: str = "linux-tcg", extra_args: Sequence[str] = (), description: str = "",
                 cpu: str = "qemu64", meltdown: str = "", pinned=None):
        self.name, self.extra_args = name, tuple(extra_args)
        # cpu: the emulated CPU (linux-tcg-pti: an Intel vendor, so that Linux deems it Meltdown-affected and
        # isolates its page tables); meltdown: what the guest's vulnerabilities/meltdown must say, else the
        # boot's jobs fail (the environment is not what its name promises)
        self.cpu, self.meltdown = cpu, meltdown
        if meltdown == PTI:
            self.memory_global = "image"   # Linux 6.1 under PTI without PCID keeps only its image global
        # pinned: a Kernel of the version sweep (catalog/kernel_versions.py: its own vmlinuz, the same initramfs
        # and probes), measured when named, never by `--environment all`; None: the machine's release's kernel
        self.pinned = pinned
        self.in_all = pinned is None
        self.description = description or (
            "Debian's Linux kernel under the same QEMU TCG -icount command line as mach, running osbench's "
            "probes statically linked as its init; counts are guest instructions")

    def serves(self, probe) -> bool:
        return probe.name in PROBES

    def files(self) -> dict[str, Path]:
        return {"vmlinuz": self.vmlinuz, "initramfs": INITRAMFS}

    @property
    def vmlinuz(self) -> Path:
        return VMLINUZ if self.pinned is None else self.pinned.folder / "vmlinuz"

    @property
    def vmlinux(self) -> Path:
        return VMLINUX if self.pinned is None else self.pinned.folder / "vmlinux"

    def image(self) -> Path:
        """The kernel QEMU boots: the decompressed vmlinux where it was made, else the vmlinuz."""
        return self.vmlinux if self.vmlinux.exists() else self.vmlinuz

    def availability(self):
        ok = super().availability()
        if not ok and self.pinned is not None:
            from osbench_analysis.environments.base import Availability

            return Availability(False, ok.reason, "make kernels  (after make envs)")
        return ok

    def version(self) -> str:
        if self.pinned is not None:
            return f"{self.pinned.package} {self.pinned.version}"
        pkg = next(((k, v) for k, v in manifest().get("linux-tcg", {}).items() if k.startswith("linux-image")),
                   ("linux-image", {}))
        return f"{pkg[0]} {pkg[1].get('version', '?')}"

    def boot_media(self, requests: Sequence, folder: Path) -> list[str]:
        plans = [job_plan(k, r, registry.PROBES.get(r.probe)) for k, r in enumerate(requests)]
        # the kernel unpacks concatenated archives in order: the built one, then this round's jobs;
        # an archive must start 4-byte aligned (zeros between archives are skipped)
        base = INITRAMFS.read_bytes()
        initrd = folder / "initrd.cpio"
        initrd.write_bytes(base + b"\0" * (-len(base) % 512) + newc([("osb-jobs", 0o100644, jobs_file(plans))]))
        return ["-kernel", str(self.image()), "-initrd", str(initrd), "-append", append_line(self.extra_args)]

    def checked(self, results: list) -> list:
        """Every job failed when the guest's meltdown state is not the one this environment promises."""
        from dataclasses import replace

        if not self.meltdown:
            return results
        seen = next((o.facts.get("guest_meltdown") for o in results if "guest_meltdown" in o.facts), None)
        if seen is None or seen == self.meltdown:
            return results
        why = (f"{self.name} promises meltdown={self.meltdown} (page-table isolation) but the guest says "
               f"meltdown={seen}")
        return [replace(o, status="error", message=why) for o in results]

    def facts(self) -> dict:
        return {**super().facts(), "kernel_args": append_line(self.extra_args),
                "kernel_entry": "PVH entry of vmlinux (decompressed from vmlinuz)" if self.image() == self.vmlinux
                else "vmlinuz through the BIOS and its decompressor",
                "guest_packages": manifest().get("linux-tcg" if self.pinned is None else self.name, {}),
                **({"kernel_version": self.pinned.name, "kernel_release": self.pinned.release,
                    "kernel_suite": self.pinned.suite or "(host)"} if self.pinned is not None else {}),
                "kernel_config": "Debian SMP PREEMPT_DYNAMIC kernel on one vCPU"
                                 + ("" if "mitigations=off" in self.extra_args else ", default mitigations")
                                 + "".join(f", {a}" for a in self.extra_args)
                                 + (f", -cpu {self.cpu}: page-table isolation (KPTI) checked in every boot"
                                    if self.meltdown == PTI else "")}
