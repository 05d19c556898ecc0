"""seL4, a third-generation (L4-family) microkernel, under QEMU TCG: osbench's
freestanding root task (probes/sel4/task.c) is the only user-space program;
it times seL4 system calls, IPC, and object and address-space creation
(registry family ``sel4``).

The kernel is seL4 5.0.0 (2017: before the Meltdown/Spectre defences, no
MCS scheduler, no verification claim for x86_64), x86_64 pc99, built by
`make envs` from the source the crates.io crate ``sel4-sys`` 0.0.28 ships
(sel4_install.py), as a release build: with the IPC fastpath (``sel4``) or
without it (``sel4-slowpath``).  QEMU's own multiboot loader boots it
(``-kernel``, an ELF32 copy) with the root task as its one module
(``-initrd``); no GRUB.  A release kernel prints nothing: the task writes
its lines to COM1 through its IOPort capability.  The round's jobs are
written into a copy of the task, in a buffer of its data that starts with a
marker (`with_jobs`): seL4 hands its root task no command line.  Counts are
guest instructions (environments/qemu.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from osbench_analysis.catalog import registry
from osbench_analysis.environments.qemu import GUESTS_DIR, GuestEnvironment, job_plan, manifest

SEL4_DIR = GUESTS_DIR / "sel4"
#: the release kernel ignores them (no printing); they name the serial port for a debug build
KERNEL_ARGS = "console_port=0x3f8 debug_port=0x3f8"
#: task.c's osb_jobs: 8 KiB of data starting with this marker and its NUL, then the jobs, NUL-ended
JOBS_MARKER = b"@@OSB-SEL4-JOBS@@"
JOBS_BYTES = 8192


def kernel_path(fastpath: bool) -> Path:
    return SEL4_DIR / ("fastpath" if fastpath else "slowpath") / "kernel32.elf"


def task_path(fastpath: bool) -> Path:
    return SEL4_DIR / ("fastpath" if fastpath else "slowpath") / "osbench-sel4-task.elf"


def job_line(plan: tuple) -> str:
    """One job as the task reads it: K:probe:min_ticks:warmup:batches:max_iterations:fixed."""
    k, probe, _size, target, warmup, batches, cap, _multiple, fixed = plan
    if not probe.replace("_", "").isalnum():
        raise ValueError(f"probe name {probe!r} cannot go in the seL4 task's job list")
    return f"{k}:{probe}:{target}:{warmup}:{batches}:{cap}:{fixed}"


def with_jobs(elf: bytes, lines: Sequence[str]) -> bytes:
    """The task's ELF with `lines` written after the jobs marker (which must occur exactly once)."""
    at = elf.find(JOBS_MARKER)
    if at < 0 or elf.find(JOBS_MARKER, at + 1) >= 0:
        raise ValueError("the seL4 task has no single jobs marker (probes/sel4/task.c's osb_jobs): rebuild it "
                         "with make envs")
    payload = "".join(line + "\n" for line in lines).encode() + b"\0"
    start = at + len(JOBS_MARKER) + 1
    room = JOBS_BYTES - len(JOBS_MARKER) - 1
    if len(payload) > room:
        raise ValueError(f"{len(lines)} jobs take {len(payload)} bytes; the seL4 task holds {room}")
    return elf[:start] + payload.ljust(room, b"\0") + elf[start + room:]


class SeL4(GuestEnvironment):
    arch_class = "microkernel"
    kernel = "sel4"
    startup_s = 10.0    # no GRUB, no BIOS disk: about 1 s to the task's first line, 3-5 s on a busy host
    round_startup_s = 10.0
    preflight_stand_in = "sel4_poll_ntfn"

    def __init__(self, name: str = "sel4", fastpath: bool = True):
        self.name, self.fastpath = name, fastpath
        self.description = ("seL4 5.0.0 (2017, x86_64, release build, IPC fastpath "
                            + ("on" if fastpath else "off") + ") under QEMU TCG -icount with osbench's root "
                            "task; counts are guest instructions")

    def serves(self, probe) -> bool:
        return probe.guest == "sel4"

    def files(self) -> dict[str, Path]:
        return {"seL4 kernel": kernel_path(self.fastpath), "root task": task_path(self.fastpath)}

    def version(self) -> str:
        crate = manifest().get(self.name, {}).get("sel4-sys", {})
        return (f"seL4 {crate.get('seL4', '?')} (crate sel4-sys {crate.get('version', '?')}), fastpath "
                + ("on" if self.fastpath else "off"))

    def boot_media(self, requests: Sequence, folder: Path) -> list[str]:
        lines = [job_line(job_plan(k, r, registry.PROBES.get(r.probe))) for k, r in enumerate(requests)]
        task = folder / "task.elf"
        task.write_bytes(with_jobs(task_path(self.fastpath).read_bytes(), lines))
        return ["-kernel", str(kernel_path(self.fastpath)), "-initrd", str(task), "-append", KERNEL_ARGS]

    def memory_text(self) -> tuple[int, int]:
        from osbench_analysis.environments import memevents

        return memevents.text_range(task_path(self.fastpath).read_bytes())

    def facts(self) -> dict:
        return {**super().facts(), "kernel_args": KERNEL_ARGS,
                "boot": "QEMU multiboot: the kernel (ELF32) and the root task as its one module",
                "counters": "cpu, context switches and faults are not counted by the seL4 task (0)",
                "kernel_config": "seL4 5.0.0 release build, x86_64 pc99, xAPIC, FS/GS base by MSR, IPC fastpath "
                                 + ("on" if self.fastpath else "off")
                                 + "; no Meltdown/Spectre defences (the tree predates them)"}
