"""How results are grouped for a reader: the paper's families of primitives,
in the order the paper presents them, for our probes (from the registry's
family) and for the published studies' primitives (reference vocabulary).

One place decides grouping and order, so tables, figures and the paper agree.
"""
from __future__ import annotations

#: The paper's families, in reading order.
FAMILIES: tuple[str, ...] = ("Kernel entry", "Processes", "Threads", "IPC", "Microkernel-style IPC",
                             "Memory and files", "Scalability", "Applications", "Other")

#: registry.Probe.family -> paper family (unknown families fall into "Other").
PROBE_FAMILY = {
    "syscall": "Kernel entry", "entry": "Kernel entry", "signal": "Kernel entry",
    "process": "Processes",
    "thread": "Threads",
    "ipc": "IPC", "net": "IPC", "socket": "IPC",
    "service": "Microkernel-style IPC",
    "file": "Memory and files", "files": "Memory and files", "memory": "Memory and files",
    "memory_bw": "Memory and files", "fstime": "Memory and files",
    "sweep": "Scalability", "sweeps": "Scalability",
}

#: reference primitive vocabulary (data/reference) -> paper family.
PRIMITIVE_FAMILY = {
    "syscall": "Kernel entry", "syscall_mix": "Kernel entry", "stat": "Kernel entry", "fstat": "Kernel entry",
    "open_close": "Kernel entry", "select": "Kernel entry", "signal": "Kernel entry", "page_fault": "Kernel entry",
    "file_rw_small": "Kernel entry",
    "fork": "Processes", "fork_exit": "Processes", "fork_exec": "Processes", "exec": "Processes",
    "shell": "Processes", "process_exit": "Processes",
    "thread_create": "Threads", "thread_switch": "Threads", "thread_sync": "Threads", "thread_workload": "Threads",
    "context_switch": "IPC", "pipe_bandwidth": "IPC", "pipe_throughput": "IPC", "socket_latency": "IPC",
    "socket_bandwidth": "IPC", "ipc_rpc": "Microkernel-style IPC", "ipc_message": "Microkernel-style IPC",
    "malloc": "Memory and files", "memory_copy": "Memory and files", "file_throughput": "Memory and files",
    "file_create": "Memory and files", "mmap": "Memory and files",
    "compute": "Applications", "compile": "Applications", "application_mix": "Applications",
    "application_web": "Applications", "application_db": "Applications", "application_mail": "Applications",
    "system_load": "Applications",
}


def probe_family(probe: str) -> str:
    """The paper family of one of our probes: that of the primitive it measures
    (so a probe sits where the published values of its primitive sit), else
    that of its registry family; the scalability sweeps and the
    microkernel-style service probes are families of their own.  A probe
    with a sweep parameter sits with its primitive; its sweep is plotted in
    Scalability when measured (profile full)."""
    from osbench_analysis.reference_compare import PROBE_PRIMITIVE
    from osbench_analysis.registry import PROBES

    p = PROBES.get(probe)
    if p is not None and p.family in ("sweep", "sweeps", "service"):
        return PROBE_FAMILY[p.family]      # a family of its own in the paper, whatever primitive it touches
    by_primitive = primitive_family(PROBE_PRIMITIVE.get(probe, ""))
    if by_primitive != "Other":
        return by_primitive
    return PROBE_FAMILY.get(p.family, "Other") if p is not None else "Other"


def primitive_family(primitive: str) -> str:
    return PRIMITIVE_FAMILY.get(primitive, "Other")


def family_rank(family: str) -> int:
    return FAMILIES.index(family) if family in FAMILIES else len(FAMILIES)
