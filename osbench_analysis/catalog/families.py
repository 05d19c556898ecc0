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
    "mechanism": "Kernel entry", "apps": "Applications",
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
    "malloc": "Memory and files", "heap_buffers": "Memory and files", "memory_copy": "Memory and files", "file_throughput": "Memory and files",
    "file_create": "Memory and files", "mmap": "Memory and files",
    "compute": "Applications", "compile": "Applications", "application_mix": "Applications",
    "application_web": "Applications", "application_db": "Applications", "application_mail": "Applications",
    "system_load": "Applications",
}


# The primitive (reference metric vocabulary) each probe measures, so our
# ratios land on the same rows as the published ones in the figures.
PROBE_PRIMITIVE = {
    "null_syscall": "syscall", "syscall_mix": "syscall_mix", "open_close": "open_close", "stat": "stat",
    "fork_exit": "fork_exit", "fork_exec": "fork_exec", "pipe_pingpong": "context_switch",
    "thread_create_join": "thread_create", "mmap_touch": "mmap", "file_create_delete": "file_create",
    "malloc_free_small": "malloc",
    "posix_spawn": "spawn", "fork_shell": "shell", "exec_only": "exec", "proc_terminate": "process_exit",
    "fork_alive": "fork_exit", "mutex_uncontested": "thread_sync", "condvar_pingpong": "thread_sync",
    "thread_pingpong_game": "thread_switch",
    # catalog (issue 9 section 2)
    "read_devzero": "file_rw_small", "write_devnull": "file_rw_small", "fstat": "fstat", "select_fds": "select",
    "poll_fds": "select", "sigaction_install": "signal", "signal_catch": "signal", "signal_send": "signal", "pagefault_file": "page_fault",
    "mmap_file": "mmap", "clock_gettime": "clock_read", "pipe_bw": "pipe_bandwidth", "unix_bw": "socket_bandwidth",
    "unix_pingpong": "socket_latency", "tcp_pingpong": "socket_latency", "udp_pingpong": "socket_latency",
    "ctxsw_ring": "context_switch",
    "service_direct": "service_call",  # not "syscall": the direct baseline sits with its server variants
    "service_pipe": "ipc_rpc",
    "service_unix": "ipc_rpc", "service_shm": "ipc_rpc", "file_write": "file_throughput",
    "file_read": "file_throughput", "file_copy": "file_throughput", "files_in_folder": "file_create",
    "memcpy_bw": "memory_copy", "malloc_memcpy": "malloc", "socket_bind_open": "socket_create",
    "mmap_window_maps": "mmap", "thread_create_alive": "thread_create",
    # mechanism (issue #22): the pieces of a sandbox's crossing (mechanism.py), no published rows
    "seccomp_trap": "syscall_trap", "signal_trap_self": "signal", "ptrace_syscall_stop": "ptrace_stop",
    "ptrace_sysemu_stop": "ptrace_stop",
    "app_compile": "compile", "app_tar": "application_archive", "app_kv": "application_kv",
    # GNU Mach's primitives, counted in guest instructions (microkernel.py compares them with
    # linux-tcg's): a primitive of their own each, never beside a host figure in ns
    "mach_null_trap": "mach_null_trap", "mach_task_self": "mach_task_self", "mach_msg_self": "mach_msg_self",
    "mach_rpc_thread": "mach_rpc_thread", "mach_rpc_task": "mach_rpc_task", "mach_vm_touch": "mach_vm_touch",
    "mach_port_alloc": "mach_port_alloc", "mach_thread_create": "mach_thread_create",
    "mach_task_create": "mach_task_create",
    # seL4's (probes/sel4), guest instructions too (catalog/matched.py sets them beside the other kernels')
    **{p: p for p in ("sel4_poll_ntfn", "sel4_signal_ntfn", "sel4_yield", "sel4_page_getaddress", "sel4_call_thread",
                      "sel4_call_space", "sel4_call_space_8mr", "sel4_frame_map_touch", "sel4_thread_create",
                      "sel4_space_create")},
}
# mmap_touch maps, touches and unmaps anonymous memory: not lmbench's file-backed page fault, so it
# sits on its own primitive rather than beside the published page-fault factors.

def probe_family(probe: str) -> str:
    """The paper family of one of our probes: that of the primitive it measures
    (so a probe sits where the published values of its primitive sit), else
    that of its registry family; the scalability sweeps and the
    microkernel-style service probes are families of their own.  A probe
    with a sweep parameter sits with its primitive; its sweep is plotted in
    Scalability when measured (profile full)."""
    from osbench_analysis.catalog.registry import PROBES

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


#: How a probe is named in the paper's prose and tables (never its snake_case identifier).
PRINT_NAMES = {
    "null_syscall": "null system call", "syscall_mix": "system-call mix", "open_close": "open + close",
    "stat": "stat", "fork_exit": "fork + exit", "fork_exec": "fork + exec", "posix_spawn": "posix\\_spawn",
    "fork_shell": "fork + shell", "exec_only": "exec alone", "proc_terminate": "process termination",
    "fork_alive": "fork with processes alive", "pipe_pingpong": "pipe round trip",
    "thread_create_join": "thread create + join", "mutex_uncontested": "uncontested mutex",
    "condvar_pingpong": "condition-variable hand-over", "thread_pingpong_game": "ping-pong game hand-over",
    "mmap_touch": "mmap + touch + munmap", "file_create_delete": "file create + delete",
    "malloc_free_small": "small malloc + free", "read_devzero": "read of /dev/zero", "write_devnull": "write to /dev/null",
    "fstat": "fstat", "select_fds": "select", "poll_fds": "poll", "sigaction_install": "sigaction",
    "signal_catch": "signal delivery", "signal_send": "signal permission check", "pagefault_file": "file page fault",
    "mmap_file": "file mmap + read", "clock_gettime": "clock\\_gettime (vDSO)", "pipe_bw": "pipe bandwidth",
    "unix_bw": "AF\\_UNIX bandwidth", "unix_pingpong": "AF\\_UNIX round trip", "tcp_pingpong": "TCP round trip",
    "udp_pingpong": "UDP round trip", "ctxsw_ring": "token ring lap", "service_direct": "service, direct",
    "service_pipe": "service via pipes", "service_unix": "service via AF\\_UNIX", "service_shm": "service via shared memory",
    "file_write": "file write", "file_read": "file read", "file_copy": "file copy", "files_in_folder": "files in one folder",
    "memcpy_bw": "memcpy bandwidth", "malloc_memcpy": "malloc + copy", "socket_bind_open": "socket + bind",
    "mmap_window_maps": "mmap of a file window", "thread_create_alive": "thread create with threads alive",
    "seccomp_trap": "seccomp trap to a handler", "signal_trap_self": "breakpoint signal to a handler",
    "ptrace_syscall_stop": "ptrace system-call stops", "ptrace_sysemu_stop": "ptrace SYSEMU stop",
    "app_compile": "compile of a small C file", "app_tar": "tar of a small tree",
    "app_kv": "key-value session on loopback",
    # host-state canaries (issue #20)
    "canary_cpu": "canary: CPU loop", "canary_memcpy": "canary: 2~MiB copy", "canary_syscall": "canary: getppid",
    # GNU Mach's bootstrap task (probes/mach), guest instructions
    "mach_null_trap": "Mach null trap", "mach_task_self": "Mach task-self trap", "mach_msg_self": "Mach message to self",
    "mach_rpc_thread": "Mach RPC across threads", "mach_rpc_task": "Mach RPC across tasks",
    "mach_vm_touch": "vm\\_allocate + touch + deallocate", "mach_port_alloc": "port allocate + destroy",
    "mach_thread_create": "Mach thread create + terminate", "mach_task_create": "Mach task create + terminate",
    # seL4's root task (probes/sel4), guest instructions
    "sel4_poll_ntfn": "seL4 notification poll", "sel4_signal_ntfn": "seL4 signal", "sel4_yield": "seL4 yield",
    "sel4_page_getaddress": "seL4 Page\\_GetAddress", "sel4_call_thread": "seL4 Call across threads",
    "sel4_call_space": "seL4 Call across address spaces", "sel4_call_space_8mr": "seL4 Call of 8 words across spaces",
    "sel4_frame_map_touch": "seL4 frame retype + map + touch + unmap", "sel4_thread_create": "seL4 thread create + delete",
    "sel4_space_create": "seL4 address space create + revoke",
}

#: A swept parameter as a reader reads it on an axis or in a table (never the registry's identifier).
SWEEP_AXIS_WORDS = {"alive": "processes alive", "parent_mb": "MB touched in the parent",
                    "processes": "processes in the ring", "files": "files in the folder", "sockets": "sockets open",
                    "maps": "windows mapped", "threads": "threads alive"}


def print_sweep_axis(param: str) -> str:
    """'parent_mb' -> 'MB touched in the parent'; an unknown parameter with its underscores as spaces."""
    return SWEEP_AXIS_WORDS.get(param, str(param).replace("_", " "))


#: Bandwidth probes: the bytes one operation moves, a number or the parameter that holds it.  The paper
#: reports these in bytes per second, with the bytes per operation named.
BYTES_PER_OP = {"pipe_bw": 65536, "unix_bw": 65536, "memcpy_bw": "bytes", "file_write": "buffer",
                "file_read": "buffer", "file_copy": "buffer"}


def print_name(probe: str) -> str:
    """The probe as a reader reads it (TeX): 'fork + exec'; an unknown probe keeps its identifier, escaped."""
    return PRINT_NAMES.get(probe, probe.replace("_", "\\_"))


def plain_name(probe: str) -> str:
    """print_name as plain text, for a screen table or a figure's axis: 'AF_UNIX round trip'."""
    return print_name(probe).replace("\\_", "_")


#: A kernel design (the manifests' arch_class) as a reader reads it.
DESIGN_WORDS = {"monolithic": "monolithic", "microkernel": "microkernel", "hybrid": "hybrid",
                "user-space-kernel": "user-space kernel", "hosted-kernel": "hosted kernel",
                "user-space-server": "user-space file server"}


def print_design(arch_class: str) -> str:
    return DESIGN_WORDS.get(str(arch_class), str(arch_class).replace("-", " "))


def print_condition(label: str) -> str:
    """A probe with its parameters as the code labels it, 'service_shm (bytes=0)', as a reader reads it (TeX):
    'service via shared memory (bytes 0)'; a label that names no probe is returned as it is."""
    import re

    m = re.fullmatch(r"([a-z0-9_]+)(?: \((.*)\))?", str(label).strip())
    if not m or m[1] not in PRINT_NAMES:
        return str(label)
    params = print_variant(m[2]) if m[2] and "=" in m[2] else (m[2] or "--")
    return PRINT_NAMES[m[1]] + ("" if params == "--" else f" ({params})")


def plain_text(tex: str) -> str:
    """A printed name for a figure (matplotlib, not TeX): 'posix\\_spawn' -> 'posix_spawn', '2~MiB' -> '2 MiB'."""
    return str(tex).replace("\\_", "_").replace("~", " ")


def variant_params(variant: str) -> dict[str, str]:
    """'linkage=static,fds=10' -> {'linkage': 'static', 'fds': '10'} (the analysis' variant string)."""
    out = {}
    for part in str(variant or "").split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def print_variant(variant: str) -> str:
    """A variant as a reader reads it: 'linkage=static' -> 'static', 'fds=10' -> 'fds 10', '' -> '--'."""
    params = {k: v for k, v in variant_params(variant).items() if k != "fs"}   # the file system has its own column
    if not params:
        return "--"
    words = {"workdir_fs": lambda v: "guest's own " + v.removeprefix("guest-")}   # the sandbox's own file system
    return ", ".join(v if k in ("linkage", "parent") else words[k](v) if k in words else f"{k.replace('_', ' ')} {v}"
                     for k, v in params.items())


def bytes_per_op(probe: str, variant: str = "") -> int | None:
    """The bytes one operation of a bandwidth probe moves (None for other probes)."""
    from osbench_analysis.catalog.registry import PROBES

    spec = BYTES_PER_OP.get(probe)
    if spec is None or isinstance(spec, int):
        return spec
    given = variant_params(variant).get(spec)
    if given is not None:
        return int(given)
    p = PROBES.get(probe)
    default = next((q.default for q in p.params if q.name == spec), None) if p is not None else None
    return int(default) if default is not None else None


def file_system(variant: str) -> str:
    """The file system a file probe ran on ('fs=' of the variant), '--' for probes that use none."""
    return variant_params(variant).get("fs", "--")
