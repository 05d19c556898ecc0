"""What the two emulated-CPU environments share (mach, linux-tcg): one QEMU
command line, one boot per round, one serial-line protocol.

A round's jobs all run in ONE boot: the guest (GNU Mach's bootstrap task,
probes/mach/task.c, or Linux's PID 1, probes/guest/guest_init.c) measures
every job in order and prints, on the serial console::

    OSB hello kernel=mach|linux ...
    OSB job=K probe=NAME begin
    OSB job=K batch=I warmup=0|1 iterations=N elapsed=TICKS work=W [cpu_start=...]
    OSB job=K error=CODE text
    OSB job=K done
    OSB end

`parse_serial` turns that into one `WorkerOutcome` per job (the batch rows
the runner stores, elapsed in the `elapsed_ns` column).  The unit: under
``-icount shift=0,sleep=off`` the guest's TSC and its CLOCK_MONOTONIC_RAW
advance exactly one tick per retired guest instruction, so ``elapsed_ns``
holds guest instructions (kernel + user), never host nanoseconds; every
outcome's facts say so (``time_unit``).  Both kernels run under the very
same command line (`qemu_argv`), which differs only in what is booted.

QEMU runs under the project's guard (launch.guarded) in its own process
group: it never outlives the runner, is killed at the round's timeout, and a
kernel panic ends the boot at once with the panic line as the message of the
job it interrupted."""
from __future__ import annotations

import gzip
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Sequence

from osbench_analysis.environments import hostops, memevents
from osbench_analysis.environments.base import Availability, Environment, Launch, RoundJob, Session

QEMU = "qemu-system-x86_64"
GUESTS_DIR = hostops.ENVS_BUILD_DIR / "guests"
MANIFEST = GUESTS_DIR / "manifest.json"
TIME_UNIT = "guest instructions"
#: the emulated machine both kernels run on; -icount shift=0: one TSC tick per guest instruction,
#: sleep=off: an idle guest does not advance the clock by host time; -rtc clock=vm: the guest's
#: wall clock also follows the instruction count (two boots are then identical)
MACHINE = ("-machine", "pc", "-accel", "tcg", "-cpu", "qemu64", "-m", "512", "-smp", "1",
           "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot", "-nodefaults",
           "-rtc", "base=2024-01-01T00:00:00,clock=vm", "-icount", "shift=0,sleep=off")
PANIC = re.compile(r"(Kernel panic - not syncing.*|\bpanic: .*|panic\b.*(trap|fault).*)")
LINE = re.compile(r"OSB job=(\d+) (.*)")
#: the batch fields the guests print -> the sample columns (schema.COLUMNS) they fill
FIELDS = {"batch": "batch", "warmup": "warmup", "iterations": "iterations", "elapsed": "elapsed_ns",
          "work": "work_done", "cpu_start": "cpu_start", "cpu_end": "cpu_end", "nvcsw": "nvcsw",
          "nivcsw": "nivcsw", "minflt": "minflt", "started_unix_ns": "started_unix_ns"}
#: what a guest that does not count a column reports (the Mach task: one CPU, no rusage)
UNCOUNTED = {"cpu_start": 0, "cpu_end": 0, "nvcsw": 0, "nivcsw": 0, "minflt": 0, "started_unix_ns": 0}
WORKER_PID = {"linux": 1, "mach": 0, "sel4": 0}
INSTALL_HINT = "make envs  (as root: python -m osbench_analysis.environments.install)"
#: a boot with the memory-system model loaded takes up to this many times as long (4-6x measured)
MODEL_SLOWDOWN = 8.0
#: GRUB's BIOS platform, which boots the guests that need a boot loader (mach, xen-linux) from an ISO
GRUB_PLATFORM = Path("/usr/lib/grub/i386-pc")


def machine(cpu: str = "qemu64") -> tuple[str, ...]:
    """MACHINE with another emulated CPU model (linux-tcg-pti: qemu64 with an Intel vendor)."""
    at = MACHINE.index("-cpu") + 1
    return (*MACHINE[:at], cpu, *MACHINE[at + 1:])


def qemu_argv(boot: Sequence[str], cpus: set[int] | None = None, cpu: str = "qemu64") -> list[str]:
    """The one QEMU command line of both guests, `boot` saying what is booted
    (-cdrom ISO for Mach, -kernel/-initrd/-append for Linux), pinned to
    `cpus` from outside (icount is single-threaded: one host CPU is enough)."""
    return hostops.pinned([QEMU, *machine(cpu), *boot], cpus)


def grub_iso(root: Path, iso: Path) -> list[str]:
    """An ISO that GRUB (i386-pc) boots from the folder `root`, its boot/grub/grub.cfg saying what
    (GNU Mach and its task; Xen and its dom0): QEMU's arguments to boot it."""
    r = subprocess.run(["grub-mkrescue", "-d", str(GRUB_PLATFORM), "-o", str(iso), str(root)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"grub-mkrescue failed: {r.stderr.strip().splitlines()[-1:]}")
    return ["-cdrom", str(iso), "-boot", "d"]


def manifest() -> dict:
    """What `make envs` installed for the guests (versions, sha256), {} if nothing."""
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}


def qemu_version() -> str:
    return hostops.command_output([QEMU, "--version"]) if hostops.which(QEMU) else ""


# ------------------------------------------------------------------ serial parser

@dataclass
class JobReport:
    probe: str = ""
    batches: list[dict] = field(default_factory=list)
    began: bool = False
    done: bool = False
    error: str = ""


@dataclass
class SerialReport:
    hello: dict = field(default_factory=dict)   # the key=value pairs of the guest's hello line
    jobs: dict[int, JobReport] = field(default_factory=dict)
    ended: bool = False
    panic: str = ""


def _pairs(text: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in text.split() if "=" in kv)


def parse_serial(text: str) -> SerialReport:
    """The guest's OSB lines from a serial log (kernel messages around them are
    ignored; a torn last line is dropped): each job's batch rows with the
    sample columns' names, whether it finished, its error, a kernel panic."""
    rep = SerialReport()
    for raw in text.replace("\r", "").split("\n"):
        line = raw.strip()
        if not rep.panic and PANIC.search(line):
            rep.panic = PANIC.search(line).group(0).strip()
        start = line.find("OSB ")
        if start < 0:
            continue
        line = line[start:]
        if line.startswith("OSB hello"):
            rep.hello = _pairs(line[len("OSB hello"):])
        elif line == "OSB end":
            rep.ended = True
        elif m := LINE.match(line):
            job = rep.jobs.setdefault(int(m.group(1)), JobReport())
            rest = m.group(2)
            if rest.endswith(" begin"):
                job.began, job.probe = True, _pairs(rest).get("probe", "")
            elif rest == "done":
                job.done = True
            elif rest.startswith("error="):
                job.error = rest
            elif rest.startswith("batch="):
                pairs = _pairs(rest)
                try:
                    row = {FIELDS[k]: int(v) for k, v in pairs.items() if k in FIELDS}
                except ValueError:
                    continue
                if not {"batch", "warmup", "iterations", "elapsed_ns", "work_done"} <= set(row):
                    continue   # torn
                row["warmup"] = bool(row["warmup"])
                job.batches.append({**UNCOUNTED, **row})
    return rep


# ------------------------------------------------------------------ boot

@dataclass
class Boot:
    serial: str
    status: str        # ended | panic | timeout | exited
    returncode: int | None
    wall_s: float
    stderr: str = ""
    loadavg_1m: float = 0.0   # the host's, as the boot started (the guest's own says nothing of the host)


def boot(argv: list[str], timeout_s: float, log: Path | None = None) -> Boot:
    """Run one guest under the guard until it prints `OSB end` (QEMU is then
    stopped: Mach parks forever), panics, exits or reaches `timeout_s`."""
    from osbench_analysis.worker import launch

    t0 = time.monotonic()
    load1 = os.getloadavg()[0]
    proc = subprocess.Popen(launch.guarded(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    chunks: list[bytes] = []
    status = "exited"
    try:
        fds = [proc.stdout, proc.stderr]
        err: list[bytes] = []
        tail = b""
        while fds:
            left = timeout_s - (time.monotonic() - t0)
            if left <= 0:
                status = "timeout"
                break
            ready, _, _ = select.select(fds, [], [], min(left, 1.0))
            for f in ready:
                data = os.read(f.fileno(), 65536)
                if not data:
                    fds.remove(f)
                elif f is proc.stdout:
                    chunks.append(data)
                    tail = (tail + data)[-4096:]
                else:
                    err.append(data)
            text = tail.decode(errors="replace")
            if re.search(r"OSB end\r?\n", text):
                status = "ended"
                break
            if PANIC.search(text):
                # the panic's line may still be arriving: give it a moment, then stop
                time.sleep(0.3)
                status = "panic"
                break
    finally:
        launch.stop(proc)
        try:
            out, e = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            out, e = b"", b""
        chunks.append(out or b"")
    serial = b"".join(chunks).decode(errors="replace")
    if log is not None:
        log.write_text(serial)
    rc = proc.returncode if status == "exited" else None
    return Boot(serial, status, rc, time.monotonic() - t0, (b"".join(err) + (e or b"")).decode(errors="replace"),
                load1)


def outcomes(b: Boot, n_jobs: int, facts: dict, timeout_s: float) -> list:
    """One WorkerOutcome per job of the boot, in job order: a job that
    finished is ok (its own error otherwise); the job the boot died in gets
    the panic line, the timeout or QEMU's complaint; later jobs say they
    never ran."""
    from osbench_analysis.worker.launch import WorkerOutcome

    rep = parse_serial(b.serial)
    kernel = rep.hello.get("kernel", "")
    inside = {**facts, **{f"guest_{k}": v for k, v in rep.hello.items()}} if kernel else facts
    if b.status == "panic" and rep.panic:
        why = rep.panic
    elif b.status == "timeout":
        why = f"killed after {timeout_s:.0f} s without finishing (one boot runs the round)"
    else:
        tail = " | ".join(b.stderr.strip().splitlines()[-3:])
        why = f"the guest ended without finishing (QEMU status {b.returncode})" + (f": {tail}" if tail else "")
    # the worker's own columns: its pid (Linux: PID 1, the init that runs the probes; the Mach task has
    # no pid: 0) and the host's load as the boot started
    worker = {"worker_pid": WORKER_PID.get(kernel, 0), "loadavg_1m": b.loadavg_1m}
    out, failed_at = [], None
    for k in range(n_jobs):
        job = rep.jobs.get(k, JobReport())
        job.batches = [{**row, **worker} for row in job.batches]
        wall = b.wall_s / max(n_jobs, 1)
        if job.done:
            out.append(WorkerOutcome("ok", 0, "", job.batches, wall, inside))
        elif job.error:
            out.append(WorkerOutcome("error", 3, f"{job.probe or 'job'} in the guest: {job.error}", job.batches,
                                     wall, inside))
        elif failed_at is None:
            failed_at = k
            status = "timeout" if b.status == "timeout" else ("crashed" if b.status == "panic" else "error")
            out.append(WorkerOutcome(status, None, why, job.batches, wall, inside))
        else:
            out.append(WorkerOutcome("error", None, f"not run: the boot ended in job {failed_at} ({why})", [],
                                     0.0, inside))
    return out


# ------------------------------------------------------------------ sessions

def request_of(worker_argv: Sequence[str]):
    """The WorkerRequest inside a worker command line (launch.worker_argv)."""
    from osbench_analysis.worker.request import WorkerRequest

    argv = list(worker_argv)
    return WorkerRequest.from_json(argv[argv.index("--request") + 1])


class GuestSession(Session):
    """One boot per round (run_round); launch() boots once for a single job
    through `python -m osbench_analysis.environments.qemu`, for a runner
    that starts one worker at a time."""
    env: "GuestEnvironment"

    def run_round(self, jobs: Sequence[RoundJob], *, cpus: set[int] | None) -> Iterator:
        if not jobs:
            return
        requests = [self.env.guest_request(j.request) for j in jobs]
        timeout = sum(j.timeout_s for j in jobs)
        folder = self.scratch / f"boot-{time.monotonic_ns()}"
        folder.mkdir(parents=True)
        # the memory-system model, when this round's requests ask for it (every job of a boot the same)
        mode = getattr(requests[0], "memory_events", "") or ""
        events = ""
        try:
            argv = qemu_argv(self.env.boot_media(requests, folder), cpus, self.env.cpu)
            if mode:
                argv += memevents.plugin_argv(folder, mode, self.env.memory_boundary, self.env.memory_global,
                                              text=self.env.memory_text())
                timeout *= MODEL_SLOWDOWN
            b = boot(argv, timeout, log=folder / "serial.log")
            if mode:
                try:
                    events = (folder / memevents.OUTPUT).read_text()
                except OSError:
                    events = ""
        finally:
            hostops.remove_tree(folder)
        results = outcomes(b, len(jobs), self.facts(), timeout)
        results = self.env.checked(results)
        if mode:
            results, seen = memevents.attach(results, events)
            results = [replace(o, facts={**o.facts, "memory_events": mode, **seen}) for o in results]
        for job, outcome in zip(jobs, results):
            _write_lines(job.output, outcome)
            yield outcome

    def close(self) -> None:
        # a QEMU the boot could not reap (it should have) must not survive the session:
        # every boot's files, hence its command line, are under this session's scratch
        if hostops.which(QEMU):
            hostops.kill_processes(hostops.which(QEMU), str(self.scratch))

    def launch(self, worker_argv: Sequence[str], *, cpus: set[int] | None, output: Path) -> Launch:
        req = request_of(worker_argv)
        cpu_list = ",".join(map(str, sorted(cpus))) if cpus else ""
        return Launch([sys.executable, "-m", "osbench_analysis.environments.qemu", self.env.name, req.to_json(),
                       cpu_list])


def _write_lines(path: Path, outcome) -> None:
    """The worker's JSON lines for one job (launch.parse_lines reads them back)."""
    lines = [{"kind": "environment", **outcome.facts}] + [{"kind": "batch", **b} for b in outcome.batches]
    lines.append({"kind": "done"} if outcome.status == "ok" else {"kind": "error", "message": outcome.message})
    Path(path).write_text("".join(json.dumps(x) + "\n" for x in lines))


class GuestEnvironment(Environment):
    """A kernel booted under QEMU TCG with icount: subclasses say what is booted."""
    pins_inside = False
    time_unit = TIME_UNIT
    placements = ("same_cpu",)   # one emulated CPU: no second CPU for a second party
    session_class = GuestSession
    kernel = ""                  # mach | linux: the guest's hello line
    round_startup_s = 0.0        # one boot's start-up, once per round (subclasses set it)
    #: the probe that stands for the runner's pre-flight null system call in a guest that has none
    preflight_stand_in = ""
    #: boots a campaign takes at most whatever guest_boots says (0: guest_boots): a guest whose counts
    #: repeat only in their minima (xen-linux) learns nothing more from a third boot
    boots_needed = 0
    #: the emulated CPU model (-cpu)
    cpu = "qemu64"
    #: the memory-system model's window (memevents): the Mach and seL4 tasks' user-mode RDTSCs, or the
    #: Linux harness's markers; the TLB entries a CR3 write keeps (memevents.GLOBAL)
    memory_boundary = "rdtsc"
    memory_global = "upper"

    def memory_text(self) -> tuple[int, int] | None:
        """The task's code range (rdtsc windows: its RDTSCs alone are boundaries); None: the user half."""
        return None

    def checked(self, results: list) -> list:
        """The boot's outcomes, failed when the guest's hello says it is not the guest this environment
        promises (linux-tcg-pti: a kernel without page-table isolation); as they are by default."""
        return results

    def guest_request(self, req):
        """The request the guest runs: itself, except the runner's pre-flight
        null_syscall in a guest without it (GNU Mach), which runs the guest's
        own null kernel entry instead: the pre-flight checks that a boot
        measures end to end, and that is what it then checks."""
        from dataclasses import replace

        from osbench_analysis.catalog import registry

        if self.preflight_stand_in and req.probe == "null_syscall" and not self.serves(registry.PROBES[req.probe]):
            return replace(req, probe=self.preflight_stand_in, params={})
        return req

    def boot_media(self, requests: Sequence, folder: Path) -> list[str]:
        """QEMU arguments that boot this kernel running `requests` in order (files made in `folder`)."""
        raise NotImplementedError

    def files(self) -> dict[str, Path]:
        """What `make envs` must have built: name -> path."""
        raise NotImplementedError

    def availability(self) -> Availability:
        if not hostops.which(QEMU):
            return Availability(False, f"{QEMU} missing (Debian package qemu-system-x86)", INSTALL_HINT)
        missing = [f"{k} ({p})" for k, p in self.files().items() if not Path(p).exists()]
        if missing:
            return Availability(False, f"not built: {', '.join(missing)}", INSTALL_HINT)
        return Availability(True, f"{self.version()}, {qemu_version()}, -icount shift=0 ({TIME_UNIT})")

    def version(self) -> str:
        return ""

    def facts(self) -> dict:
        return {"time_unit": TIME_UNIT, "qemu": qemu_version(), "qemu_machine": " ".join(machine(self.cpu)),
                "kernel": self.kernel, "guest_packages": manifest().get(self.name, {}),
                "memory_model": memevents.model_facts(self.memory_boundary, self.memory_global)}


def job_plan(k: int, req, spec) -> tuple:
    """The numbers a guest needs to run a request like the worker: job index,
    probe, size parameter, target batch length, warm-ups, batches, batch cap,
    group size, fixed batch size (0: calibrate)."""
    size = int(req.params.get(spec.size_param, 0) or 0) if spec else 0
    multiple = spec.batch_multiple(req.params) if spec else 1
    return (k, req.probe, size, int(req.min_batch_ns), int(req.warmup), int(req.batches), int(req.max_iterations),
            multiple, int(req.iterations or 0))


def newc(entries: Sequence[tuple]) -> bytes:
    """A cpio archive in the kernel's initramfs format (newc): entries
    (name, mode, data) or (name, mode, data, (major, minor)) for a device node
    (/dev/console must exist for init's output to reach the console), then
    the trailer.  Written here so no cpio program or mknod is needed."""
    out = bytearray()
    for ino, entry in enumerate([*entries, ("TRAILER!!!", 0, b"")], start=1):
        name, mode, data = entry[:3]
        rdev = entry[3] if len(entry) > 3 else (0, 0)
        raw = name.encode() + b"\0"
        nlink = 2 if mode & 0o170000 == 0o040000 else 1
        head = "070701" + "".join(f"{v:08X}" for v in (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, *rdev,
                                                         len(raw), 0))
        out += head.encode() + raw
        out += b"\0" * (-len(out) % 4)
        out += data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


# ------------------------------------------------------------------ one job, one boot

def main(argv: list[str] | None = None) -> int:
    """``python -m osbench_analysis.environments.qemu ENV REQUEST_JSON [CPUS]``:
    one boot running one request, its worker JSON lines on stdout (the
    launch() path; run_round does the same in-process for a whole round)."""
    import tempfile

    from osbench_analysis import environments
    from osbench_analysis.worker.request import WorkerRequest

    args = list(sys.argv[1:] if argv is None else argv)
    env = environments.get(args[0])
    req = WorkerRequest.from_json(args[1])
    cpus = {int(c) for c in args[2].split(",")} if len(args) > 2 and args[2] else None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # the finally below still removes the folder
    with tempfile.TemporaryDirectory(prefix="osbench-guest-") as tmp:
        out = Path(tmp) / "job.jsonl"
        with env.session(Path(tmp) / "session") as sess:
            outcome = next(iter(sess.run_round([RoundJob(req, [], out, 1e9)], cpus=cpus)))
        sys.stdout.write(out.read_text())
    return 0 if outcome.status == "ok" else 3


if __name__ == "__main__":
    sys.exit(main())
