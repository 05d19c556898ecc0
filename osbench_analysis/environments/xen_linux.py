"""Linux as Xen's PV dom0 under QEMU TCG (``xen-linux``): Debian's Xen 4.17
hypervisor (``xen-hypervisor-4.17-amd64``, installed by `make envs`) boots
the very kernel and initramfs of the linux-tcg environment as its first
domain, which runs osbench's probes as its init, unchanged.  A 64-bit PV
guest's ``syscall`` traps into Xen, which bounces it to the guest kernel, and
the guest returns through a hypercall: every Linux system call pays a Xen
entry and exit, the structure of an OS personality on a small kernel
(L4Linux, xnu's BSD on Mach).  A PV guest needs no VT-x: TCG is enough.

GRUB boots Xen from an ISO made per round (multiboot2, the kernel and the
initramfs as modules).  The initramfs is one gzip stream: Xen unpacks a
compressed dom0 initrd itself and sizes it from the stream's last four
bytes, so the round's jobs cannot be appended as a second archive as
linux-tcg does.  Counts are guest instructions (environments/qemu.py), but
Xen's own timer and scheduler run in them: no count repeats exactly from boot
to boot, the boots' medians agree within 0.1% (2026-11-26), so two boots show
the range and a third adds nothing (`boots_needed`)."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Sequence

from osbench_analysis.catalog import matched, registry
from osbench_analysis.environments import linux_tcg
from osbench_analysis.environments.qemu import (GRUB_PLATFORM, GuestEnvironment, grub_iso, gzip_bytes, job_plan,
                                                manifest, newc)

XEN_PACKAGE = "xen-hypervisor-4.17-amd64"
XEN = Path("/boot/xen-4.17-amd64.gz")
#: Xen's command line: its console on COM1, dom0's memory fixed (the machine has 512 MiB), a crash stays, and its
#: free memory not scrubbed: Xen scrubs it in its idle loop, which under QEMU TCG was a third of a quick boot's
#: emulation (47.6 and 46.2 CPU seconds a boot with it, 30.4 without; a tiny boot 26-28 against 21) while the
#: counts moved by at most 0.12 %, inside their boot-to-boot range (issue 37, 2026-11-28: docs/environments.md)
XEN_ARGS = "console=com1 com1=115200,8n1 dom0_mem=384M,max:384M noreboot bootscrub=false"
#: dom0's: Xen's console (hvc0) reaches COM1 through Xen; the rest as linux-tcg's
DOM0_APPEND = ("console=hvc0", "panic=-1", "quiet", "nokaslr", "norandmaps")
#: the Linux probes of the matched rows (catalog/matched.py), not linux-tcg's whole set: a Xen boot takes
#: about 4 s of emulation per job, and the others (syscall_mix, service_pipe) match nothing here
# the matched primitives, and the memory model's known answers (hidden: run by name; analysis/memevents.py)
KNOWN_ANSWERS = ("mem_line_pass", "mem_page_pass")
PROBES = tuple(sorted(set(matched.probes_of("xen")) | set(KNOWN_ANSWERS)))


def grub_cfg(xen_args: str = XEN_ARGS, append: Sequence[str] = DOM0_APPEND) -> str:
    return "\n".join([
        "serial --unit=0 --speed=115200",
        "terminal_input serial",
        "terminal_output serial",
        "set timeout=0",
        'menuentry "osbench-xen-linux" {',
        f"  multiboot2 /boot/xen {xen_args}",
        f"  module2 /boot/vmlinuz {' '.join(append)}",
        "  module2 /boot/initrd",
        "}",
        "",
    ])


def initrd(base_gz: bytes, jobs: bytes) -> bytes:
    """linux-tcg's initramfs with /osb-jobs added, as one gzip stream (Xen sizes a compressed initrd
    from its last four bytes: a second stream appended would be all it sees)."""
    return gzip_bytes(gzip.decompress(base_gz) + newc([("osb-jobs", 0o100644, jobs)]))


class XenLinux(GuestEnvironment):
    arch_class = "monolithic"   # the kernel measured is Linux; Xen runs beneath it (facts: kernel_config)
    kernel = "linux"
    startup_s = 150.0   # GRUB, Xen and dom0's boot under icount: about 30 s idle, 60-120 s on a busy host
    round_startup_s = 150.0
    #: the boots' medians differ by under 0.1%: two boots give that range (one gives none: the quick profile's
    #: budget may leave the second out, measure/config.py); more add nothing
    boots_needed = 2
    #: the memory model's window: the Linux harness's markers (dom0 runs the linux-tcg initramfs)
    memory_boundary = "marker"

    def __init__(self, name: str = "xen-linux"):
        self.name = name
        self.description = ("Debian's Linux kernel as the PV dom0 of Xen 4.17 under QEMU TCG -icount, running "
                            "osbench's probes as its init; counts are guest instructions")

    def serves(self, probe) -> bool:
        return probe.name in PROBES

    def serves_params(self, probe: str, params: dict) -> bool:
        """Only the parameters a matched row asks for (service_direct and service_shm at bytes=0, not 64)."""
        return probe in KNOWN_ANSWERS or matched.asks(probe, params, "xen")

    def files(self) -> dict[str, Path]:
        return {"Xen hypervisor": XEN, "vmlinuz": linux_tcg.VMLINUZ, "initramfs": linux_tcg.INITRAMFS,
                "GRUB i386-pc": GRUB_PLATFORM / "kernel.img"}

    def version(self) -> str:
        xen = manifest().get(self.name, {}).get(XEN_PACKAGE, {})
        return f"{XEN_PACKAGE} {xen.get('version', '?')} + {linux_tcg.LinuxTCG().version()}"

    def boot_media(self, requests: Sequence, folder: Path) -> list[str]:
        plans = [job_plan(k, r, registry.PROBES.get(r.probe)) for k, r in enumerate(requests)]
        root = folder / "iso"
        (root / "boot" / "grub").mkdir(parents=True)
        (root / "boot" / "xen").write_bytes(gzip.decompress(XEN.read_bytes()))
        shutil.copyfile(linux_tcg.VMLINUZ, root / "boot" / "vmlinuz")
        (root / "boot" / "initrd").write_bytes(initrd(linux_tcg.INITRAMFS.read_bytes(), linux_tcg.jobs_file(plans)))
        (root / "boot" / "grub" / "grub.cfg").write_text(grub_cfg())
        return grub_iso(root, folder / "xen-linux.iso")

    def facts(self) -> dict:
        return {**super().facts(), "kernel_args": " ".join(DOM0_APPEND), "xen_args": XEN_ARGS,
                "boot": "GRUB ISO, multiboot2: Xen, then the linux-tcg kernel and initramfs as dom0",
                "guest_packages": {**manifest().get(self.name, {}), **manifest().get(linux_tcg.LinuxTCG().name, {})},
                "kernel_config": "Xen 4.17 (Debian bookworm), credit2, one CPU; dom0: Debian's SMP kernel, "
                                 "64-bit PV, default mitigations"}
