"""GNU Mach, the bare microkernel, under QEMU TCG: osbench's freestanding
bootstrap task (probes/mach/task.c) is the only user-space program; it times
Mach traps, IPC, VM, ports, threads and tasks (registry family ``mach``).

Not the Hurd: no servers, no glibc.  The kernel is Debian trixie's
``gnumach-image-1.8-amd64-up`` (uniprocessor, non-debug, no speculative-
execution defences; bookworm's cannot run a user trap), booted by GRUB from
an ISO made per round, because QEMU's own multiboot loader refuses ELF64.
The boot script passes the task its ports and the round's jobs (`grub_cfg`).
Counts are guest instructions (environments/qemu.py)."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

from osbench_analysis.catalog import registry
from osbench_analysis.environments.qemu import GRUB_PLATFORM, GUESTS_DIR, GuestEnvironment, grub_iso, job_plan, manifest

KERNEL = GUESTS_DIR / "mach" / "gnumach"
TASK = GUESTS_DIR / "mach" / "osbench-mach-task.elf"
KERNEL_ARGS = "console=com0"   # kernel messages and the "console" device on the serial port


def job_word(plan: tuple) -> str:
    """One job as one word of the task's argv: K:probe:min_ticks:warmup:batches:max_iterations:fixed."""
    k, probe, _size, target, warmup, batches, cap, _multiple, fixed = plan
    if not probe.replace("_", "").isalnum():
        raise ValueError(f"probe name {probe!r} cannot go on a GRUB module line")
    return f"{k}:{probe}:{target}:{warmup}:{batches}:{cap}:{fixed}"


def grub_cfg(words: Sequence[str], kernel_args: str = KERNEL_ARGS) -> str:
    """GRUB's configuration: GNU Mach plus our task, started by the kernel's
    boot script.  The single quotes keep GRUB from expanding ${host-port}
    itself; the task gets argv = {bench, HOST_PORT, DEVICE_PORT, JOB...}.
    (A module line without the script, "compat mode", crashes x86_64 Mach.)"""
    jobs = " ".join(words)
    return "\n".join([
        "serial --unit=0 --speed=115200",
        "terminal_input serial",
        "terminal_output serial",
        "set timeout=0",
        'menuentry "osbench-mach" {',
        f"  multiboot /boot/gnumach {kernel_args}",
        f"  module /boot/task.elf bench '${{host-port}}' '${{device-port}}' {jobs} '$(task-create)' '$(task-resume)'",
        "}",
        "",
    ])


class Mach(GuestEnvironment):
    arch_class = "microkernel"
    kernel = "mach"
    startup_s = 15.0    # GRUB + kernel boot under icount: 3-4 s on an idle host, 5-9 s on a busy one
    round_startup_s = 15.0
    preflight_stand_in = "mach_null_trap"

    def __init__(self, name: str = "mach"):
        self.name = name
        self.description = ("GNU Mach (Debian trixie, x86_64 uniprocessor) under QEMU TCG -icount: the bare "
                            "microkernel with osbench's bootstrap task; counts are guest instructions")

    def serves(self, probe) -> bool:
        return probe.guest == "mach"

    def files(self) -> dict[str, Path]:
        return {"GNU Mach kernel": KERNEL, "bootstrap task": TASK, "GRUB i386-pc": GRUB_PLATFORM / "kernel.img"}

    def version(self) -> str:
        pkg = manifest().get(self.name, {}).get("gnumach-image-1.8-amd64-up", {})
        return f"gnumach {pkg.get('version', '?')}"

    def boot_media(self, requests: Sequence, folder: Path) -> list[str]:
        root = folder / "iso"
        (root / "boot" / "grub").mkdir(parents=True)
        shutil.copyfile(KERNEL, root / "boot" / "gnumach")
        shutil.copyfile(TASK, root / "boot" / "task.elf")
        words = [job_word(job_plan(k, r, registry.PROBES.get(r.probe))) for k, r in enumerate(requests)]
        (root / "boot" / "grub" / "grub.cfg").write_text(grub_cfg(words))
        return grub_iso(root, folder / "mach.iso")

    def memory_text(self) -> tuple[int, int]:
        from osbench_analysis.environments import memevents

        return memevents.text_range(TASK.read_bytes())

    def facts(self) -> dict:
        return {**super().facts(), "kernel_args": KERNEL_ARGS, "boot": "GRUB ISO, boot script, one task",
                "counters": "cpu, context switches and faults are not counted by the Mach task (0)",
                "kernel_config": "uniprocessor (-up), non-debug, no speculative-execution mitigations"}
