"""The probe catalog: what each probe measures, its unit, parameters and the
seed measurement it mirrors.  The C side lives in probes/probe_<family>.c."""
from __future__ import annotations

from dataclasses import dataclass, field

from osbench_analysis.errors import OsbenchError


@dataclass(frozen=True)
class Param:
    name: str
    default: object
    choices: tuple = ()     # the accepted values; empty: an integer from lo to hi
    help: str = ""
    lo: int = 0             # the range of an integer parameter without choices (issue 31: a -1, 1e30 or
    hi: int | None = None   # "lots" is refused before measuring, not handed to the probe)

    def check(self, probe: str, value) -> None:
        """Refuse (ProbeError) a value of the wrong type or out of range, naming it and what is accepted."""
        if self.choices:
            if isinstance(value, bool) or value not in self.choices \
                    or type(value) is not type(next(c for c in self.choices if c == value)):
                raise ProbeError(f"{probe}.{self.name} must be one of {list(self.choices)} (got {value!r})")
        elif isinstance(value, bool) or not isinstance(value, int) or not self.lo <= value <= self.hi:
            raise ProbeError(f"{probe}.{self.name} must be an integer from {self.lo} to {self.hi} (got {value!r})")


@dataclass(frozen=True)
class Probe:
    name: str
    family: str             # syscall | file | process | thread | memory | testonly
    unit: str               # what one iteration is
    two_party: bool         # a second process/thread takes part: placement can be cross_cpu
    mirrors: str            # the seed measurement it corresponds to ("none ...": no published table row)
    params: tuple[Param, ...] = field(default=())
    uses_workdir: bool = False
    hidden: bool = False    # test-only probes, left out of default campaigns
    max_iterations: int = 10_000_000  # keeps a batch's memory/files bounded
    # It forks (a child, or the partner of a two-process probe): the worker runs
    # it in osbench-parent, a minimal native parent, unless params parent=python.
    forks: bool = False
    size_param: str = "size"  # the parameter handed to the C probe as osb_params.size
    helper: str = "exit0"     # the program a launching probe executes (osbench-<helper>-<linkage>)
    # Parameter sets that are primitives of their own (select on 10 and on 100
    # fds, fstime's three buffers): every profile measures each of them.
    variants: tuple[dict, ...] = ()
    # A scalability sweep: (parameter, points).  `quick` measures the first
    # point only, `full` every point (config.PROFILES derives both from here).
    sweep: tuple = ()
    # The parameter that counts units of work per iteration ('' if one):
    # files_in_folder proves each of its `files` files removed.
    work_param: str = ""
    # It maps a file of its work dir MAP_SHARED: a direct-I/O file server
    # (FUSE cache=never, libfuse < 3.16) refuses such maps with ENODEV.
    maps_file: bool = False
    # Its size_param counts a group made before any of it is released (osbench's
    # 100 outstanding children or threads, its 1,000,000 blocks): a batch is then
    # whole groups, so a short batch never measures a smaller group than asked.
    grouped: bool = False
    # It does not fork, but what it measures depends on the process it runs in
    # (malloc: the heap the interpreter left and glibc's trimming; threads: the
    # process's mappings), so like a forking probe it runs in osbench-parent, the
    # minimal native process every peer benchmark is, unless params parent=python.
    native_parent: bool = False
    # A host-state control (a canary, issue #20), not a primitive: every campaign measures it in every
    # environment (config.validate adds it), the analysis compares it between campaigns
    # (reproducibility.canary_table) and keeps it out of the estimate tables and the catalog views.
    control: bool = False
    # A probe that exists only inside an emulated guest kernel ("mach": GNU Mach's
    # bootstrap task, probes/mach/task.c): no host environment runs it
    # (Environment.serves), and its unit is guest instructions, not ns.
    guest: str = ""
    # The probe (and parameters) measuring the nearest operation on the other
    # kernel of the emulated-CPU comparison (microkernel.py), and how their work differs.
    pairs_with: tuple = ()
    differs: str = ""

    @property
    def in_native_parent(self) -> bool:
        """It runs in osbench-parent by default (it forks, or asks to)."""
        return self.forks or self.native_parent

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def value(self, name: str, params: dict | None = None):
        """A parameter's value in ``params``, else its default."""
        return {**self.defaults(), **(params or {})}[name]

    def batch_multiple(self, params: dict | None = None) -> int:
        """Iterations a batch is a multiple of: the group size of a grouped probe, else 1."""
        return max(1, int(self.value(self.size_param, params) or 0)) if self.grouped else 1

    def expected_work(self, iterations: int, params: dict | None = None) -> int:
        """The work_done a batch of `iterations` must prove (see schema's work_done)."""
        if not self.work_param:
            return iterations
        return iterations * int(self.value(self.work_param, params))


LINKAGE = Param("linkage", "dynamic", ("dynamic", "static"),
                "how the launched helper program is linked (NetBSD/FreeBSD paper: static vs dynamic)")
PARENT_NATIVE, PARENT_PYTHON = "native", "python"
PARENT = Param("parent", PARENT_NATIVE, (PARENT_NATIVE, PARENT_PYTHON),
               "the process that forks (or allocates, or creates threads): native = osbench-parent, a "
               "minimal C program (as every peer benchmark is); python = the worker's interpreter itself "
               "(~14 MB, the probes' behaviour before the native parent)")
PARENT_MB = Param("parent_mb", 0, (),
                  "extra anonymous memory, every page touched, in the forking parent (MB); "
                  "a sweep like LEBench's big/huge fork", hi=4096)
OUTSTANDING = Param("outstanding", 1, (),
                    "children created before the first is waited for (1: one at a time, as lmbench and "
                    "UnixBench; 100: osbench)", lo=1, hi=1000)


def forking(*params: Param) -> tuple[Param, ...]:
    """Parameters of a probe that forks: which parent forks, and its size."""
    return (PARENT, PARENT_MB, *params)


def parent_of(probe: str, params: dict) -> str:
    """Which process ran a recorded condition's probe: native | python, '' for a
    probe that runs in the worker only.  Campaigns measured before the native parent
    existed (for malloc_free_small and thread_create_join: before 2026-11-23 14:00)
    recorded no `parent` parameter: their probes ran in the Python worker, so a
    missing value means python."""
    spec = PROBES.get(probe)
    if spec is None or not spec.in_native_parent:
        return ""
    return (params or {}).get("parent", PARENT_PYTHON)

PROBES: dict[str, Probe] = {p.name: p for p in [
    Probe("null_syscall", "syscall", "one getpid() via syscall(2)", False,
          "lmbench 'null call'; NetBSD/FreeBSD 'system call' (getpid)"),
    Probe("syscall_mix", "syscall", "close(dup(0)) + getpid + getuid + umask (5 system calls)", False,
          "UnixBench 'System Call Overhead' loop; MINIX 3 vs Linux Table 1/2"),
    Probe("open_close", "file", "open(2) + close(2) of an existing file", False,
          "lmbench 'open/close'", uses_workdir=True),
    Probe("stat", "file", "stat(2) of an existing file", False,
          "lmbench 'stat'", uses_workdir=True),
    Probe("fork_exit", "process", "fork + child _exit + waitpid", True,
          "lmbench 'fork proc'; UnixBench spawn; osbench 'create processes' (outstanding=100); "
          "NetBSD/FreeBSD process creation",
          params=forking(OUTSTANDING), forks=True, size_param="outstanding", grouped=True, max_iterations=1_000_000,
          # LEBench's big and huge fork: the parent's touched memory, copied as page tables
          sweep=("parent_mb", (0, 64, 256))),
    Probe("fork_exec", "process", "fork + execve of an empty program + waitpid", True,
          "lmbench 'exec proc'; osbench 'launch program' (outstanding=100); NetBSD/FreeBSD program load",
          params=forking(LINKAGE, OUTSTANDING), forks=True, size_param="outstanding", grouped=True,
          max_iterations=1_000_000,
          variants=({"linkage": "dynamic"}, {"linkage": "static"})),
    Probe("posix_spawn", "process", "posix_spawn of an empty program + waitpid", True,
          "none exactly (the vfork-style creation path glibc uses; compare fork_exec)",
          params=forking(LINKAGE), forks=True, max_iterations=1_000_000),
    Probe("fork_shell", "process", "fork + execlp /bin/sh -c <empty program> + waitpid", True,
          "lmbench 'fork /bin/sh -c' (lat_proc shell; the empty program is lmbench's hello)",
          params=forking(LINKAGE), forks=True, max_iterations=200_000),
    Probe("exec_only", "process", "execve of its own program by one process (a chain, no fork per op)", True,
          "UnixBench execl (a process re-executing itself with a counter)",
          params=forking(LINKAGE), forks=True, helper="execl", max_iterations=1_000_000),
    Probe("proc_terminate", "process", "kill(SIGTERM) + waitpid of a sleeping child created before the batch",
          True, "McGarry NetBSD/FreeBSD process termination", params=forking(), forks=True,
          max_iterations=2_000),
    Probe("fork_alive", "process", "fork + child _exit + waitpid with `alive` other processes sleeping", True,
          "none in the reference tables (McGarry's fork cost vs number of processes alive, a figure: sweep alive)",
          params=forking(Param("alive", 0, (), "sleeping processes kept alive by the parent during the batch", hi=10_000)),
          forks=True, size_param="alive", max_iterations=1_000_000, sweep=("alive", (0, 100, 1000))),
    Probe("pipe_pingpong", "process", "one round trip of a 1-byte token over two pipes (two context switches)", True,
          "lmbench 'ctxsw'/'pipe latency'; UnixBench pipe-based context switching; NetBSD/FreeBSD context switch",
          params=forking(), forks=True),
    Probe("thread_create_join", "thread", "pthread_create + pthread_join of an empty thread", True,
          "osbench 'create threads' (outstanding=100: 100 created, then joined); McGarry thread lifecycle; "
          "NetBSD/FreeBSD thread creation",
          params=(PARENT, Param("outstanding", 1, (), "threads created before the first is joined (osbench: 100)", lo=1, hi=1000)),
          size_param="outstanding", grouped=True, native_parent=True, max_iterations=1_000_000),
    Probe("mutex_uncontested", "thread", "pthread_mutex_lock + unlock of a mutex no other thread wants", False,
          "McGarry Table 2 uncontested mutex"),
    Probe("condvar_pingpong", "thread", "one hand-over of a token between two threads (mutex + condition variable)",
          True, "McGarry Table 2 condition-variable wake-up (two threads, not one of ten)"),
    Probe("thread_pingpong_game", "thread", "one hand-over of a token between the two player threads of a game "
          "(mutex + condition variables), games played at once", True,
          "McGarry Table 3 ping-pong games (experiment 1: 1 game, 2: 4 games, 3: 500 games with 32 KiB stacks)",
          params=(Param("experiment", 1, (1, 2, 3), "McGarry Table 3 experiment"),), size_param="experiment"),
    Probe("mmap_touch", "memory", "mmap 4 KiB anonymous + write one byte + munmap", False,
          "none in the reference tables (an anonymous page's map + first-touch fault + unmap; lmbench's "
          "page fault is pagefault_file, its lat_mmap is mmap_file)"),
    # the memory-system model's known answers (environments/memevents.py, issue #38): hidden, run by name
    Probe("mem_page_pass", "memory", "one read of one byte in each of `bytes`/4096 pages", False,
          "none (a known answer for the guests' memory-system model: a TLB misses every page once the pages "
          "exceed its entries)", params=(Param("bytes", 256 * 4096, (), "the buffer's bytes (4 KiB pages)",
                                               lo=4096, hi=64 << 20),), size_param="bytes", hidden=True),
    Probe("mem_line_pass", "memory", "one read of one byte in each 64 B line of `bytes` bytes", False,
          "none (a known answer for the guests' memory-system model: a cache misses every line once the "
          "bytes exceed it)", params=(Param("bytes", 65536, (), "the buffer's bytes", lo=64, hi=64 << 20),),
          size_param="bytes", hidden=True),
    Probe("file_create_delete", "file", "create + write 32 B + close + unlink of one file", False,
          "osbench 'create files' (>65,000 files of 32 B in one folder)", uses_workdir=True,
          max_iterations=200_000),
    Probe("malloc_free_small", "memory", "malloc + free of one 4-128 B block", False,
          "osbench 'allocate memory' (blocks=1000000: 1,000,000 blocks of 4-128 B allocated, then freed)",
          # A fixed group by default (issue #22): with blocks=0 the group was the calibrated batch, so the work
          # per block followed the environment's calibration (UML: ~5,000 blocks, heap kept, no page fault;
          # native: ~100,000, heap trimmed and faulted back, one fault per ~46 blocks) and UML read 0.36x native.
          # 1,000 blocks (~70 KB) stay under glibc's 128 KB trim threshold: the same allocator work everywhere.
          params=(PARENT, Param("blocks", 1000, (), "blocks allocated before the first is freed, osbench sizes "
                                "((i % 32) + 1) * 4 B; 0: the whole batch (before issue #22: its work depends "
                                "on the batch size), sizes 4 + (37 i mod 125) B", hi=1_000_000)),
          size_param="blocks", grouped=True, native_parent=True, max_iterations=5_000_000),
    # ---- catalog (issue 9 section 2): kernel entry, IPC, microkernel-style
    # service, files, memory bandwidth, scalability sweeps.
    Probe("read_devzero", "entry", "read(2) of 1 byte from /dev/zero", False, "lmbench 'simple read'"),
    Probe("write_devnull", "entry", "write(2) of 1 byte to /dev/null", False, "lmbench 'simple write'"),
    Probe("fstat", "entry", "fstat(2) of an open 8-byte file", False, "lmbench 'simple fstat'", uses_workdir=True),
    Probe("select_fds", "entry", "select(2) over `fds` descriptors of an open file in the write set (timeout 0)", False,
          "lmbench 'select on 10 fds' / 'select on 100 fds' (lat_select file)", uses_workdir=True,
          params=(Param("fds", 10, (), "descriptors selected on (lmbench: 10 and 100)", lo=1, hi=1000),), size_param="fds",
          variants=({"fds": 10}, {"fds": 100})),
    Probe("poll_fds", "entry", "poll(2) over `fds` readable file descriptors (timeout 0)", False,
          "none in the reference tables (poll(2), the select_fds counterpart)", uses_workdir=True,
          params=(Param("fds", 10, (), "descriptors polled", lo=1, hi=1000),), size_param="fds",
          variants=({"fds": 10}, {"fds": 100})),
    Probe("sigaction_install", "entry", "sigaction(2) installing a SIGUSR1 handler", False,
          "lmbench 'signal handler installation'"),
    Probe("signal_catch", "entry", "kill(getpid(), SIGUSR1) + the handler running", False,
          "lmbench 'signal handler overhead' (which subtracts the send, kill(getpid(), 0); ours keeps it)"),
    Probe("signal_send", "entry", "kill(getpid(), 0): the permission check of sending, no signal", False,
          "none in the reference tables (lmbench lat_sig's send cost, subtracted from its catch: "
          "signal_catch minus signal_send)"),
    Probe("pagefault_file", "entry", "one page fault on a shared file mapping (one page touched per 64 KiB, "
          "mmap + munmap shared by the file's faults)", False,
          "lmbench 'page fault' (lat_pagefault: map a file, touch its pages in a stride)", uses_workdir=True,
          maps_file=True,
          params=(Param("file_kb", 4096, (), "size of the mapped file (KiB)", lo=64, hi=1 << 18),), size_param="file_kb"),
    Probe("mmap_file", "entry", "mmap of a file region + one read per 64 KiB + munmap", False,
          "none in the reference tables (lmbench lat_mmap)", uses_workdir=True, maps_file=True,
          params=(Param("region_kb", 4096, (), "size of the mapped region (KiB)", lo=64, hi=1 << 18),), size_param="region_kb",
          max_iterations=100_000),
    Probe("clock_gettime", "entry", "clock_gettime(CLOCK_MONOTONIC) through the vDSO (no kernel entry)", False,
          "none (the floor under every probe: a clock read that never enters the kernel)"),
    Probe("pipe_bw", "ipc", "one 64 KiB chunk written into a pipe by the partner process and read (the reader is timed)", True,
          "lmbench 'pipe bandwidth' (bw_pipe, 64 KiB chunks)", params=forking(), forks=True,
          max_iterations=1_000_000),
    Probe("unix_bw", "ipc", "one 64 KiB chunk over an AF_UNIX stream socket from the partner process (the reader is timed)", True,
          "lmbench 'AF_UNIX bandwidth' (bw_unix)", params=forking(), forks=True, max_iterations=1_000_000),
    Probe("unix_pingpong", "ipc", "one round trip of 1 byte over an AF_UNIX stream socketpair", True,
          "lmbench 'AF_UNIX sock stream latency' (lat_unix)", params=forking(), forks=True),
    Probe("tcp_pingpong", "ipc", "one round trip of 1 byte over TCP on 127.0.0.1 (TCP_NODELAY)", True,
          "lmbench 'TCP latency' (lat_tcp)", params=forking(), forks=True),
    Probe("udp_pingpong", "ipc", "one round trip of a 1-byte datagram over UDP on 127.0.0.1", True,
          "lmbench 'UDP latency' (lat_udp)", params=forking(), forks=True),
    Probe("ctxsw_ring", "ipc", "one lap of an 8-byte token around a ring of `processes` processes joined by "
          "pipes (`processes` context switches)", True,
          "none in the reference tables (lmbench lat_ctx -s 0 N; the tables' context switch rows are "
          "pipe_pingpong's)",
          params=forking(Param("processes", 2, (), "processes in the ring (lmbench lat_ctx N)", lo=2, hi=64)),
          forks=True, size_param="processes", sweep=("processes", (2, 8, 16))),
    Probe("service_direct", "service", "the service as one system call (bytes=0: getppid; N: read of N bytes "
          "from /dev/zero)", False,
          "none in the reference tables (the direct baseline of the microkernel-style service probes)",
          params=(Param("bytes", 0, (), "0: getppid(); N: read N bytes from /dev/zero", hi=4096),), size_param="bytes",
          variants=({"bytes": 0}, {"bytes": 64})),
    Probe("service_pipe", "service", "the service as a request to a server process over two pipes, "
          "performed there and replied (with the bytes read)", True,
          "none in the reference tables (microkernel-style system call through a user-space server; "
          "compare service_direct)",
          params=forking(Param("bytes", 0, (), "0: getppid(); N: read N bytes from /dev/zero", hi=4096)),
          forks=True, size_param="bytes", variants=({"bytes": 0}, {"bytes": 64})),
    Probe("service_unix", "service", "the service as a request to a server process over an AF_UNIX "
          "socketpair, performed there and replied", True,
          "MINIX 3 paper's RPC cost (a message round trip to a server process; compare service_direct)",
          params=forking(Param("bytes", 0, (), "0: getppid(); N: read N bytes from /dev/zero", hi=4096)),
          forks=True, size_param="bytes", variants=({"bytes": 0}, {"bytes": 64})),
    Probe("service_shm", "service", "the service as a request to a server process through shared memory "
          "with a futex wake-up each way (L4-style)", True,
          "none in the reference tables (the fastest microkernel-style IPC design; compare service_direct)",
          params=forking(Param("bytes", 0, (), "0: getppid(); N: read N bytes from /dev/zero", hi=4096)),
          forks=True, size_param="bytes", variants=({"bytes": 0}, {"bytes": 64})),
    Probe("file_write", "files", "one write(2) of `buffer` bytes to a file that wraps at fstime's maximum size",
          False, "UnixBench fstime 'File Write' (256/500, 1024/2000, 4096/8000 bufsize/maxblocks)",
          uses_workdir=True, params=(Param("buffer", 1024, (256, 1024, 4096), "buffer size (B)"),),
          size_param="buffer", variants=({"buffer": 256}, {"buffer": 1024}, {"buffer": 4096})),
    Probe("file_read", "files", "one read(2) of `buffer` bytes from a cached file (rewound at its end)",
          False, "UnixBench fstime 'File Read'", uses_workdir=True,
          params=(Param("buffer", 1024, (256, 1024, 4096), "buffer size (B)"),),
          size_param="buffer", variants=({"buffer": 256}, {"buffer": 1024}, {"buffer": 4096})),
    Probe("file_copy", "files", "one read(2) + write(2) of `buffer` bytes from one file to another",
          False, "UnixBench fstime 'File Copy'", uses_workdir=True,
          params=(Param("buffer", 1024, (256, 1024, 4096), "buffer size (B)"),),
          size_param="buffer", variants=({"buffer": 256}, {"buffer": 1024}, {"buffer": 4096})),
    Probe("files_in_folder", "files", "one round: `files` files of 32 B created in one folder, then all deleted",
          False, "none as a row of its own (osbench 'create files' round exactly at files=65534; the blog's "
          "figure is mapped to file_create_delete)", uses_workdir=True,
          params=(Param("files", 65534, (), "files per round (osbench: 65,534)", lo=1, hi=100_000),), size_param="files",
          max_iterations=10_000, sweep=("files", (1000, 10000, 65534)), work_param="files"),
    Probe("memcpy_bw", "memory_bw", "memcpy of a `bytes` buffer (8 MiB: beyond the caches)", False,
          "none in the reference tables (memory copy bandwidth, lmbench bw_mem bcopy-style)",
          params=(Param("bytes", 8 << 20, (), "buffer size (B)", lo=1, hi=1 << 30),), size_param="bytes", max_iterations=100_000),
    # Host-state canaries (issue #20): fixed work measured in every round of every campaign, in every
    # environment (config.validate adds them), so that a host that got slower or noisier shows as such.
    Probe("canary_cpu", "canary", "1,024 dependent 64-bit multiply-adds (latency-bound CPU work)", False,
          "none (a host-state control, reproducibility.canary_table)", max_iterations=1_000_000, control=True),
    Probe("canary_memcpy", "canary", "memcpy of a 2 MiB buffer (memory-bound copy)", False,
          "none (a host-state control, reproducibility.canary_table)", max_iterations=100_000, control=True),
    Probe("canary_syscall", "canary", "one getppid() via syscall(2) (a null kernel entry)", False,
          "none (a host-state control, reproducibility.canary_table)", control=True),
    Probe("malloc_memcpy", "memory_bw", "malloc of two `bytes` buffers + fill + copy + two frees", False,
          "UnixBench mallocMemCopy-style (two mallocs, a small copy, two frees)",
          params=(Param("bytes", 256, (), "buffer size (B)", lo=1, hi=1 << 24),), size_param="bytes"),
    Probe("socket_bind_open", "sweeps", "socket(AF_INET, SOCK_STREAM) + bind 127.0.0.1:0 + close with `sockets` "
          "other bound sockets open", False,
          "none in the reference tables (McGarry's socket creation vs number of open sockets, a figure)",
          params=(Param("sockets", 0, (), "bound sockets held open during the batch", hi=10_000),), size_param="sockets",
          sweep=("sockets", (0, 1000, 5000))),
    Probe("mmap_window_maps", "sweeps", "mmap + munmap of a 4 KiB window of a sparse 200 MB file with `maps` "
          "other windows mapped", False,
          "none in the reference tables (McGarry's mmap of 4 KiB windows of a 200 MB file vs mappings, a figure)",
          uses_workdir=True, maps_file=True,
          params=(Param("maps", 0, (), "windows kept mapped during the batch", hi=60_000),),
          size_param="maps", sweep=("maps", (0, 1000, 10000))),
    Probe("thread_create_alive", "sweeps", "pthread_create + join of an empty thread with `threads` other "
          "threads alive (blocked)", False,
          "none in the reference tables (McGarry's thread creation vs threads alive, a figure)",
          params=(Param("threads", 0, (), "threads kept alive during the batch", hi=10_000),), size_param="threads",
          sweep=("threads", (0, 100, 1000))),
    # ---- mechanism (issue #22): the native pieces a sandbox's crossing is made of
    # (osbench_analysis/mechanism.py adds them up beside each environment's crossing).
    Probe("seccomp_trap", "mechanism", "getpid(MAGIC) trapped by a seccomp filter (SECCOMP_RET_TRAP): SIGSYS "
          "delivered to a handler in the same process, which sets the return value, + sigreturn", False,
          "none in the reference tables (what gVisor's systrap platform pays per system call before the Sentry "
          "sees it: filter + trap + signal delivery + sigreturn)",
          # the filter lasts as long as the process: osbench-parent, which ends with its run
          params=(PARENT,), native_parent=True),
    Probe("signal_trap_self", "mechanism", "a breakpoint instruction (int3/brk) raising SIGTRAP, handled, "
          "returned from", False,
          "none in the reference tables (signal delivery + sigreturn with no system call; compare signal_catch, "
          "which adds kill(2))"),
    Probe("ptrace_syscall_stop", "mechanism", "one system call of a tracee under PTRACE_SYSCALL: two stops "
          "(entry, exit), each a waitpid + ptrace resume by the tracer", True,
          "none in the reference tables (the ptrace round trips of UML and gVisor's ptrace platform, "
          "strace-style: two stops per call)",
          params=forking(), forks=True, max_iterations=1_000_000),
    Probe("ptrace_sysemu_stop", "mechanism", "one system call of a tracee under PTRACE_SYSEMU: one stop at "
          "entry (the call is not performed), a waitpid + ptrace resume by the tracer", True,
          "none in the reference tables (what UML and gVisor's ptrace platform pay per guest system call "
          "before their own handling: one PTRACE_SYSEMU stop)",
          params=forking(), forks=True, max_iterations=1_000_000),
    # ---- applications (issue #22): one iteration is one whole run of something a user runs, in
    # every environment (the host's own programs, seen through each sandbox's view of the host's root)
    Probe("app_compile", "apps", "one compile of a small C file (60 lines): fork + exec /usr/bin/cc -O0 -pipe -c "
          "+ waitpid", False,   # the program inherits the worker's CPU: one placement, as a user runs it
          "none in the reference tables (an application workload: the published compile rows are whole builds)",
          uses_workdir=True, params=forking(), forks=True, max_iterations=10_000),
    Probe("app_tar", "apps", "one archive of a tree of `files` files of 1 KiB: fork + exec /bin/tar -cf + waitpid",
          False, "none in the reference tables (an application workload)", uses_workdir=True,
          params=forking(Param("files", 100, (), "files of 1 KiB in the archived tree", lo=1, hi=10_000)), size_param="files",
          forks=True, max_iterations=10_000),
    Probe("app_kv", "apps", "one client session with a key-value server process on 127.0.0.1 (TCP): connect, "
          "`requests` requests (SET, then GET of the same key, alternately), each answered, close", True,
          "none in the reference tables (an application workload: a small key-value server on loopback)",
          params=forking(Param("requests", 100, (), "requests per session", lo=1, hi=100_000)), size_param="requests",
          work_param="requests", forks=True, max_iterations=100_000),
    # ---- GNU Mach's side of the emulated-CPU comparison (environments/mach.py):
    # counted in guest instructions under QEMU -icount, beside linux-tcg's.
    Probe("mach_null_trap", "mach", "one null_port trap (-10): kernel entry and exit, returns MACH_PORT_NULL", False,
          "none in the reference tables (the microkernel's null kernel entry)", guest="mach",
          pairs_with=("null_syscall", {}),
          differs="the trap does nothing; getpid also looks up the caller's pid (Linux's ENOSYS path is shorter)"),
    Probe("mach_task_self", "mach", "one mach_task_self trap (-28): a send right to the task's port", False,
          "none in the reference tables", guest="mach", pairs_with=("null_syscall", {}),
          differs="copies a port right out into the caller's name space, where getpid reads one field"),
    Probe("mach_msg_self", "mach", "one mach_msg(SEND|RCV) of a 32 B header-only message to a port of the "
          "same task", False, "none in the reference tables (Mach IPC with no second party)", guest="mach",
          differs="one trap queues and dequeues a message on the task's own port; no context switch: no Linux "
                  "probe does that (a two-process round trip is not this), so it has no pair"),
    Probe("mach_rpc_thread", "mach", "one RPC round trip of a 48 B typed message to a server thread of the same "
          "task (client and server mach_msg(SEND|RCV), send-once reply right)", True,
          "none in the reference tables (the MINIX 3 paper's background cites Mach vs L3 message costs: "
          "microkernel.published)", guest="mach", pairs_with=("service_shm", {"bytes": 0}),
          differs="2 traps with a reply capability, direct hand-off; a futex round trip is 4 system calls "
                  "and two scheduler wake-ups through shared memory"),
    Probe("mach_rpc_task", "mach", "one RPC round trip of a 48 B typed message to a server in another task "
          "(client and server mach_msg(SEND|RCV), send-once reply right)", True,
          "none in the reference tables (the MINIX 3 paper's background cites Mach vs L3 message costs: "
          "microkernel.published)", guest="mach", pairs_with=("pipe_pingpong", {}),
          differs="a Mach RPC is 2 traps with a reply capability and an address-space switch each way; a pipe "
                  "round trip is 4 system calls through the VFS and the scheduler"),
    Probe("mach_vm_touch", "mach", "vm_allocate 4 KiB + write one byte + vm_deallocate", False,
          "none in the reference tables", guest="mach", pairs_with=("mmap_touch", {}),
          differs="vm_allocate and vm_deallocate are RPCs to the kernel (MIG messages), mmap/munmap system calls"),
    Probe("mach_page_pass", "mach", "one read of one byte in each of 256 pages (1 MiB, vm_allocate'd in set-up)",
          False, "none (a known answer for the guests' memory-system model in GNU Mach: 256 data TLB misses a "
          "pass)", guest="mach", hidden=True),
    Probe("mach_line_pass_64k", "mach", "one read of one byte in each 64 B line of 64 KiB (vm_allocate'd in set-up)",
          False, "none (a known answer for the guests' memory-system model in GNU Mach: 1,024 L1D misses a pass, "
          "no L2 or TLB miss)", guest="mach", hidden=True),
    Probe("mach_line_pass_16k", "mach", "one read of one byte in each 64 B line of 16 KiB (vm_allocate'd in set-up)",
          False, "none (a known answer for the guests' memory-system model in GNU Mach: inside L1D, no miss)",
          guest="mach", hidden=True),
    Probe("mach_port_alloc", "mach", "mach_port_allocate (receive right) + mach_port_destroy", False,
          "none in the reference tables", guest="mach", pairs_with=("unix_pingpong", {}),
          differs="creating and destroying the endpoint of IPC (two kernel RPCs), not a message; the Linux "
                  "row beside it is a socket round trip, the nearest IPC object on that side"),
    Probe("mach_thread_create", "mach", "thread_create + thread_set_state + thread_resume, the thread's first "
          "message received, thread_terminate", True,
          "none in the reference tables (compare thread_create_join)", guest="mach",
          pairs_with=("thread_create_join", {}),
          differs="four kernel RPCs and one message; pthread_create + join is clone + futex wait/wake with "
                  "a glibc stack cache"),
    Probe("mach_task_create", "mach", "task_create (copy-on-write copy of the task) + a send right and a thread "
          "in it, its first message received, task_terminate", True,
          "none in the reference tables (compare fork_exit)", guest="mach", pairs_with=("fork_exit", {}),
          differs="an address space copied copy-on-write and one thread, by kernel RPCs; fork + _exit + waitpid "
                  "copies a process (files, signals, page tables) and reaps it"),
    # ---- seL4's root task (probes/sel4/task.c; sel4, sel4-slowpath), guest instructions (catalog/matched.py)
    Probe("sel4_poll_ntfn", "sel4", "one seL4_NBRecv on an idle notification: enter, find nothing, return", False,
          "none in the reference tables (analog of a null system call: seL4 has no call that does nothing)",
          guest="sel4"),
    Probe("sel4_signal_ntfn", "sel4", "one seL4_Signal of a notification nobody waits on", False,
          "none in the reference tables", guest="sel4"),
    Probe("sel4_yield", "sel4", "one seL4_Yield, the only thread at its priority", False,
          "none in the reference tables", guest="sel4"),
    Probe("sel4_page_getaddress", "sel4", "one seL4_X86_Page_GetAddress invocation of a frame capability", False,
          "none in the reference tables (analog of a trivial kernel query such as getppid)", guest="sel4"),
    Probe("sel4_call_thread", "sel4", "one seL4_Call of 1 word answered by seL4_ReplyRecv of a server thread in "
          "the same address space", True, "none here (seL4's published IPC: cycles)", guest="sel4"),
    Probe("sel4_call_space", "sel4", "one seL4_Call of 1 word answered by seL4_ReplyRecv of a server in another "
          "address space (its own PML4 and ASID)", True, "none here (seL4's published IPC: cycles)", guest="sel4"),
    Probe("sel4_call_space_8mr", "sel4", "one seL4_Call of 8 words (over the fastpath's 4: the slow path) "
          "answered by a server in another address space", True, "none in the reference tables", guest="sel4"),
    Probe("sel4_frame_map_touch", "sel4", "a 4 KiB frame retyped from an untyped (the kernel clears it), mapped, "
          "written, unmapped and deleted", False,
          "none in the reference tables (analog of mmap + touch + munmap: no page fault)", guest="sel4"),
    Probe("sel4_thread_create", "sel4", "a TCB retyped, configured, its registers written and resumed; it answers "
          "one seL4_Call (its first run), then it is deleted", True, "none in the reference tables", guest="sel4"),
    Probe("sel4_space_create", "sel4", "a new address space (PML4 + ASID + paging structures, the root task's "
          "image frames mapped: 32 pages since sel4_page_pass, 31 before), a thread in it answering one seL4_Call, then all revoked", True,
          "none in the reference tables (analog of process create + exit)", guest="sel4", max_iterations=100_000),
    Probe("sel4_page_pass", "sel4", "one read of one byte in each of 128 frames mapped in set-up (512 KiB)", False,
          "none (a known answer for the guests' memory-system model in seL4: 128 data TLB misses a pass)",
          guest="sel4", hidden=True),
    Probe("sel4_line_pass_64k", "sel4", "one read of one byte in each 64 B line of 16 frames mapped in set-up (64 KiB)",
          False, "none (a known answer for the guests' memory-system model in seL4: 1,024 L1D misses a pass, no "
          "L2 or TLB miss)", guest="sel4", hidden=True),
    Probe("sel4_line_pass_16k", "sel4", "one read of one byte in each 64 B line of 4 frames mapped in set-up (16 KiB)",
          False, "none (a known answer for the guests' memory-system model in seL4: inside L1D, no miss)",
          guest="sel4", hidden=True),
    Probe("sel4_test_fault", "testonly", "a write to an unmapped page in the seL4 root task", False,
          "none (tests that a guest's fault fails the run)", hidden=True, guest="sel4"),
    # uses_workdir: a file server (FUSE) runs them too, on its mount (cleanup tests)
    Probe("test_crash_segv", "testonly", "raises SIGSEGV", False, "none (tests worker isolation)", hidden=True,
          uses_workdir=True),
    Probe("test_hang", "testonly", "blocks forever", False, "none (tests timeouts)", hidden=True,
          uses_workdir=True),
]}

DEFAULT_PROBES: tuple[str, ...] = tuple(n for n, p in PROBES.items() if not p.hidden and not p.control)


#: The host-state canaries every campaign measures in every environment (config.validate adds them).
CANARY_PROBES: tuple[str, ...] = tuple(n for n, p in PROBES.items() if p.control)


#: The primitives the architecture comparison is built on (one or more per family,
#: each with published microkernel/hybrid-vs-monolithic counterparts): what the
#: quick profile measures inside sandboxes, where every worker pays a boot.
ARCHITECTURE_PROBES = ("null_syscall", "syscall_mix", "stat", "open_close", "file_create_delete", "mmap_touch",
                       "malloc_free_small", "pipe_pingpong", "fork_exit", "fork_exec", "thread_create_join",
                       # GNU Mach's and seL4's primitives (microkernels: sandbox_probes apply)
                       *(n for n, p in PROBES.items() if p.guest in ("mach", "sel4") and not p.hidden))


#: The application workloads (issue #22): whole runs of real programs, for every environment when asked
#: (``--sandbox-probes`` or ``sandbox_probes``); not in the quick profile's sandbox set: in a sandbox one
#: compile takes longer than that profile's whole budget per condition allows.
APPLICATION_PROBES = tuple(n for n, p in PROBES.items() if p.family == "apps")


class ProbeError(OsbenchError, ValueError):
    """A probe name or parameter the catalog does not know."""


# ---------------------------------------------------------------- scalability sweeps

def swept_probes() -> dict[str, tuple[str, tuple]]:
    """probe -> (swept parameter, points) for every probe the registry sweeps."""
    return {n: p.sweep for n, p in PROBES.items() if p.sweep and not p.hidden}


def sweep_only(config: dict | None) -> bool:
    """Whether a campaign's configuration (its manifest's ``config``) makes it a *sweep campaign*: every probe
    it names (the host-state canaries aside) is a swept probe of the registry, and at least one of them is
    measured at two or more points of its sweep (``variants``).  Such a campaign (e.g. `osbench run
    --environment native --probes fork_exit,fork_alive,... --variants '{...every point...}'`) is measured for
    the scalability fits only: the analysis never makes it the primary campaign of its environment while a
    campaign of the whole catalog exists (analysis.select_campaigns), never pools it, and fits its sweeps
    from it.  store.catalog says which campaigns are (its column ``sweep_only``)."""
    import json

    cfg = config or {}
    swept = swept_probes()
    probes = [p for p in cfg.get("probes") or [] if p not in CANARY_PROBES]
    if not probes or not set(probes) <= set(swept):
        return False
    variants = cfg.get("variants") or {}
    return any(len({json.dumps(v.get(swept[p][0]), sort_keys=True) for v in variants.get(p) or []
                    if isinstance(v, dict) and swept[p][0] in v}) >= 2 for p in probes)


def get_probe(name: str) -> Probe:
    try:
        return PROBES[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(name, PROBES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ProbeError(f"probe {name!r} unknown{hint} (known: {', '.join(DEFAULT_PROBES)})") from None


# ---------------------------------------------------------------- where file probes' folder is (issue #22)
#: A file probe's condition key saying which file system its private folder is on inside a sandbox:
#: the host-backed volume (gVisor's directfs/gofer bind, UML's hostfs: the crossing to the host) or a
#: tmpfs the guest kernel serves itself (gVisor's Sentry tmpfs, a tmpfs inside the UML guest).  Not a
#: probe parameter (the worker and the C probe never read it): the runner places the folder by it.
#: The host volume is the key's absence, so conditions measured before it existed keep their params_json.
WORKDIR_FS = "workdir_fs"
FS_HOST_VOLUME, FS_GUEST_TMPFS = "host-volume", "guest-tmpfs"
WORKDIR_FS_CHOICES = (FS_HOST_VOLUME, FS_GUEST_TMPFS)


def workdir_fs(params: dict | None) -> str:
    """Which file system a condition's private folder is on (host-volume unless it says otherwise)."""
    return (params or {}).get(WORKDIR_FS, FS_HOST_VOLUME)


def resolve_params(probe: Probe, given: dict | None) -> dict:
    """Defaults overlaid with the given parameters, each checked against the catalog."""
    params = probe.defaults()
    given = dict(given or {})
    if WORKDIR_FS in given:
        fs = given.pop(WORKDIR_FS)
        if not probe.uses_workdir:
            raise ProbeError(f"{probe.name}.{WORKDIR_FS}: only file probes have a work folder (got {fs!r})")
        if fs not in WORKDIR_FS_CHOICES:
            raise ProbeError(f"{probe.name}.{WORKDIR_FS} must be one of {list(WORKDIR_FS_CHOICES)} (got {fs!r})")
        if fs != FS_HOST_VOLUME:
            params[WORKDIR_FS] = fs
    for key, value in given.items():
        spec = next((p for p in probe.params if p.name == key), None)
        if spec is None:
            known = ", ".join(p.name for p in probe.params) or "none"
            raise ProbeError(f"probe {probe.name!r} has no parameter {key!r} (parameters: {known})")
        spec.check(probe.name, value)
        params[key] = value
    return params


def variant_label(probe: Probe, params: dict, fs_type: str = "") -> str:
    """Short label of what distinguishes this condition: non-default parameters
    and, for file probes, the filesystem (results differ by orders of magnitude)."""
    # workdir_fs=guest-tmpfs stays in the label beside fs=<type>: analysis.without_fs drops only fs=, and the
    # guest tmpfs must not merge with the host volume when environments are compared on the probe's parameters
    parts = [f"{k}={v}" for k, v in sorted(params.items()) if v != probe.defaults().get(k)]
    if probe.uses_workdir and fs_type:
        parts.append(f"fs={fs_type}")
    return ",".join(parts)
