"""The matched primitives of the emulated-CPU comparison: four kernel designs on one
emulated CPU (Linux, Linux as Xen's PV dom0, GNU Mach, seL4), one row per primitive,
and in each row what each kernel does for it (analysis/microkernel.py's `matched`).

A cell names the probe(s) that measure the kernel's own way of doing the row's
operation and says what they do; a kernel's nearest operation that is not the same
is marked as an analog and says how it differs; where a kernel has no counterpart
the cell is empty and says why (never a stand-in under the row's name).  Linux on
Xen runs the very Linux probes: its cells are Linux's, every system call entering
Xen first."""
from __future__ import annotations

from dataclasses import dataclass

from osbench_analysis.catalog.guests import LINUX, LINUX_NOMITIG, LINUX_PTI, MACH, SEL4, SEL4_SLOWPATH, XEN_LINUX


@dataclass(frozen=True)
class Entry:
    probe: str
    does: str                 # what the kernel does, in a few words
    params: tuple = ()        # (name, value) pairs of the probe's parameters
    analog: bool = False      # the kernel's nearest operation, doing other work than the row's


@dataclass(frozen=True)
class Row:
    key: str
    title: str
    cells: dict               # design -> tuple[Entry, ...], or a str: why that kernel has no counterpart


#: the designs, their printable names and the environments that measure them (their columns)
DESIGNS = {
    "linux": ("Linux 6.1 (monolithic)", (LINUX, LINUX_NOMITIG)),
    "xen": ("Linux 6.1 on Xen 4.17 (PV dom0)", (XEN_LINUX,)),
    "mach": ("GNU Mach 1.8 (first-generation microkernel)", (MACH,)),
    "sel4": ("seL4 5.0.0 (L4-family microkernel)", (SEL4, SEL4_SLOWPATH)),
}
#: the environments in the table's column order, and the design each belongs to
COLUMNS = {env: design for design, (_, envs) in DESIGNS.items() for env in envs}
#: a short label per column
COLUMN_LABELS = {LINUX: "Linux", LINUX_NOMITIG: "Linux, mitigations=off", LINUX_PTI: "Linux, PTI", XEN_LINUX: "Linux on Xen",
                 MACH: "GNU Mach", SEL4: "seL4", SEL4_SLOWPATH: "seL4, no fastpath"}

ROWS = (
    Row("null_entry", "null kernel entry", {
        "linux": (Entry("null_syscall", "getpid via syscall(2): the lightest Linux entry measured (no ENOSYS probe)",
                        analog=True),),
        "mach": (Entry("mach_null_trap", "null_port trap: enter, return MACH_PORT_NULL"),),
        "sel4": (Entry("sel4_poll_ntfn", "NBRecv on an idle notification: the cheapest seL4 system call that "
                                         "returns at once", analog=True),),
    }),
    Row("kernel_query", "trivial kernel query", {
        "linux": (Entry("service_direct", "getppid: one field of the parent", (("bytes", 0),)),),
        "mach": (Entry("mach_task_self", "mach_task_self: a send right to the task's port, named in its space"),),
        "sel4": (Entry("sel4_page_getaddress", "Page_GetAddress: an invocation of a frame capability, "
                                               "its physical address"),),
    }),
    Row("rtt_spaces", "request-reply round trip between two address spaces", {
        "linux": (Entry("pipe_pingpong", "1 B over two pipes between two processes: 4 system calls"),
                  Entry("unix_pingpong", "1 B over an AF_UNIX socketpair between two processes"),
                  Entry("service_shm", "shared memory with a futex wake-up each way between two processes",
                        (("bytes", 0),))),
        "mach": (Entry("mach_rpc_task", "RPC of a 48 B message to a server task: 2 mach_msg traps, send-once "
                                        "reply right"),),
        "sel4": (Entry("sel4_call_space", "Call / ReplyRecv of 1 word to a server in another address space"),
                 Entry("sel4_call_space_8mr", "the same with 8 words, over the fastpath's 4: the slow path")),
    }),
    Row("rtt_threads", "the same between two threads of one address space", {
        "linux": (Entry("condvar_pingpong", "one hand-over between two threads (mutex + condition variable): "
                                            "half a round trip", analog=True),),
        "mach": (Entry("mach_rpc_thread", "RPC of a 48 B message to a server thread of the same task"),),
        "sel4": (Entry("sel4_call_thread", "Call / ReplyRecv of 1 word to a thread of the same address space"),),
    }),
    Row("map_page", "map + touch + unmap of a page", {
        "linux": (Entry("mmap_touch", "mmap 4 KiB anonymous, a zero-fill fault, munmap"),),
        "mach": (Entry("mach_vm_touch", "vm_allocate (a kernel RPC), a zero-fill fault, vm_deallocate"),),
        "sel4": (Entry("sel4_frame_map_touch", "a frame retyped from an untyped (cleared), mapped, written, "
                                               "unmapped, deleted: no page fault", analog=True),),
    }),
    Row("thread_create", "thread create to first run", {
        "linux": (Entry("thread_create_join", "pthread_create + join of an empty thread: to its exit",
                        analog=True),),
        "mach": (Entry("mach_thread_create", "thread_create + set_state + resume, its first message, terminate"),),
        "sel4": (Entry("sel4_thread_create", "TCB retyped, configured, resumed, answers one Call, deleted"),),
    }),
    Row("space_create", "address space (process, task) create and destroy", {
        "linux": (Entry("fork_exit", "fork + _exit + waitpid: a process copied and reaped", analog=True),),
        "mach": (Entry("mach_task_create", "task_create (copy-on-write copy), a thread in it, its first message, "
                                           "task_terminate"),),
        "sel4": (Entry("sel4_space_create", "a PML4 with an ASID, paging structures, the task's image frames "
                                            "mapped, a thread answering one Call, all revoked", analog=True),),
    }),
    Row("msg_self", "message to oneself (no second party)", {
        "linux": "no self-pipe probe in the Linux guest: a two-process round trip is not this",
        "mach": (Entry("mach_msg_self", "mach_msg(SEND|RCV) of a header to a port of the same task: one trap, "
                                        "no context switch"),),
        "sel4": "an seL4 thread cannot receive its own Call: no counterpart",
    }),
)


def cells(row: Row, design: str):
    """The entries of `design` in `row` (Xen's are Linux's), or the reason it has none."""
    cell = row.cells.get("linux" if design == "xen" else design, "not measured on this kernel")
    if design == "xen" and not isinstance(cell, str):
        return tuple(Entry(e.probe, e.does + "; each system call enters Xen, which bounces it to Linux",
                           e.params, e.analog) for e in cell)
    return cell


def asks(probe: str, params: dict, design: str) -> bool:
    """Whether a matched row asks `design` for `probe` at `params` (an entry without parameters takes any)."""
    entries = [e for row in ROWS for e in (() if isinstance(cells(row, design), str) else cells(row, design))
               if e.probe == probe]
    return any(all(params.get(k) == v for k, v in e.params) for e in entries)


def probes_of(design: str) -> set[str]:
    """Every probe the matched rows ask of `design`."""
    return {e.probe for row in ROWS for e in (cells(row, design) if not isinstance(cells(row, design), str) else ())}


@dataclass(frozen=True)
class KernelPath:
    entries: str      # kernel entries (system calls, traps, hypercalls) per operation
    switches: str     # address-space switches (CR3 writes) per operation
    copies: str       # copies of the message through the kernel per operation
    source: str       # where the numbers come from


#: What the instruction count flatters, bounded from each kernel's own path (not measured): per
#: operation, its kernel entries, address-space switches and copies.  A CR3 write or a syscall counts
#: one instruction here; on hardware each switch also costs TLB refills (no PCID in these kernels'
#: configurations), which the count leaves out.
PATHS = {
    ("null_entry", "linux"): KernelPath("1", "0", "0", "getpid: syscall, sysret"),
    ("null_entry", "xen"): KernelPath("1 Linux, 2 Xen (the trap, and the return hypercall)", "2 (PV: guest user and "
                                 "guest kernel have page tables of their own)", "0",
                                 "64-bit PV system call: Xen bounces it, the guest returns by HYPERVISOR_iret"),
    ("null_entry", "mach"): KernelPath("1", "0", "0", "the null_port trap"),
    ("null_entry", "sel4"): KernelPath("1", "0", "0", "NBRecv: one syscall, no switch"),
    ("rtt_spaces", "linux"): KernelPath("4 (write and read on each side)", "2", "4 (1 B in and out each way)",
                                   "pipe_pingpong: two processes, two pipes"),
    ("rtt_spaces", "xen"): KernelPath("4 Linux, at least 8 Xen (each system call's trap and return, plus the "
                                 "context switches' hypercalls)", "at least 10 (2 per system call, 1 per process "
                                 "switch)", "4", "as Linux, each entry through Xen"),
    ("rtt_spaces", "mach"): KernelPath("2 (mach_msg sending and receiving on each side)", "2", "4 (the message into a kernel "
                                  "buffer and out, each way)", "mach_msg's copyin/copyout"),
    ("rtt_spaces", "sel4"): KernelPath("2 (Call; ReplyRecv)", "2", "0 for up to 4 words (in registers), else the "
                                  "words past 4 once each way", "the fastpath (or the slow path without it)"),
    ("rtt_threads", "linux"): KernelPath("about 2 per hand-over (futex wake, futex wait)", "0", "0",
                                    "condvar_pingpong: glibc condition variable over futexes"),
    ("rtt_threads", "mach"): KernelPath("2", "0", "4", "mach_msg within one task"),
    ("rtt_threads", "sel4"): KernelPath("2", "0", "0", "Call/ReplyRecv, same VSpace: no CR3 write"),
    ("rtt_threads", "xen"): KernelPath("about 2 Linux per hand-over, each through Xen (its trap and return)",
                                  "2 per system call (PV: guest user and guest kernel have page tables of their own)",
                                  "0", "as Linux, each entry through Xen"),
    ("kernel_query", "linux"): KernelPath("1", "0", "0", "getppid: syscall, sysret"),
    ("kernel_query", "xen"): KernelPath("1 Linux, 2 Xen", "2", "0", "as the null entry, through Xen"),
    ("kernel_query", "mach"): KernelPath("1", "0", "0", "the mach_task_self trap"),
    ("kernel_query", "sel4"): KernelPath("1", "0", "0 (the answer in message registers)",
                                    "an invocation of a frame capability: one seL4_Call"),
}
