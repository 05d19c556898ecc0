"""The worker: runs one probe in its own process and reports every batch.

It only executes (pyperf's worker role); the runner decides what to run.
Launched as ``python -S -c <boot> --request JSON`` (launch.worker_argv: the same as
``python -m osbench_analysis.worker.main --request JSON``, without site), possibly
behind a command prefix (a sandbox runner), it writes one JSON object per line
to stdout (or --out FILE): first {"kind": "environment", ...} with the facts it
sees from inside (facts.py), then {"kind": "batch", ...} for each batch, then
{"kind": "done"};
on a probe error {"kind": "error", "message": ...} and exit status 3.
Calibration batches come first and are flagged as warm-ups, never dropped.

Probes that fork (registry `forks`) run by default in osbench-parent, a minimal
native program linked with the same harness (probes/helpers/parent.c): fork
copies the forking process's page tables, so forking from this interpreter
would measure the interpreter.  The worker starts one parent per run, sends it
each batch's iteration count over a pipe and reads back the harness's result;
params parent=python keeps the old in-interpreter behaviour as a variant.
"""
from __future__ import annotations

import json
import math
import mmap
import os
import sys
import time

from osbench_analysis.hosts import facts

EXIT_PROBE_ERROR = 3
#: the folder of the package's programs (osbench-parent, the helpers, the guard), beside the extension; a
#: string: the worker imports no pathlib (BIN_DIR, a Path, is made on first use for the runner's side)
_BIN = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "_bin")
_PARENT = os.path.join(_BIN, "osbench-parent")
#: the batch fields the harness fills (store.schema.HARNESS_FIELDS, which tests/test_worker_start.py checks
#: this against): schema itself is not imported here
HARNESS_FIELDS = ("iterations", "elapsed_ns", "work_done", "cpu_start", "cpu_end", "nvcsw", "nivcsw", "minflt",
                  "started_unix_ns")


def __getattr__(name: str):
    """What the runner's side imports from here, made on first use: the worker process imports neither
    dataclasses (WorkerRequest, request.py) nor pathlib."""
    if name == "WorkerRequest":
        from osbench_analysis.worker.request import WorkerRequest

        return WorkerRequest
    if name in ("BIN_DIR", "PARENT"):
        from pathlib import Path

        return Path(_BIN if name == "BIN_DIR" else _PARENT)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def helper_path(params: dict, helper: str = "exit0") -> str:
    return os.path.join(_BIN, f"osbench-{helper}-{params.get('linkage', 'dynamic')}")


class ProbeFailed(RuntimeError):
    pass


def probe_library(probe: str, library: str | None = None):
    """(ffi, lib) of the extension holding the probe: the campaigns' one, or the
    test extension for the probes that crash or hang on purpose (`library`:
    "test" or "probes", from the request's probe_info; None: asks the
    registry).  Imported here: the runner never loads probes."""
    if library is None:
        library = _probe_info(probe, {})["library"]
    if library == "test":
        from osbench_analysis._probes_test import ffi, lib
    else:
        from osbench_analysis._probes import ffi, lib
    return ffi, lib


def _probe_info(probe: str, params: dict) -> dict:
    """The registry's facts about a probe (request.probe_info): for a request made in this process
    without them (tests, benchmarks), never for one the runner sent."""
    from osbench_analysis.worker.request import probe_info

    return probe_info(probe, params)


def touch_anonymous(mb: int) -> mmap.mmap | None:
    """mb MB of anonymous memory with every page written: a bigger forking parent."""
    if mb <= 0:
        return None
    m = mmap.mmap(-1, mb << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for off in range(0, mb << 20, mmap.PAGESIZE):
        m[off] = 1
    return m


class NativeParent:
    """osbench-parent running batches of one probe on request (a pipe each way);
    it dies with this process (PR_SET_PDEATHSIG) and when close() shuts its stdin."""

    def __init__(self, ffi, req: WorkerRequest, helper: str, size: int, parent_mb: int):
        if not os.access(_PARENT, os.X_OK):
            raise ProbeFailed(f"{_PARENT} is missing: rebuild the package (`pip install -e .` or `make install`)")
        self.ffi = ffi
        self.size = ffi.sizeof("osb_result")
        import subprocess  # only a forking probe's worker pays for it

        argv = [_PARENT, str(os.getpid()), req.probe, helper, req.workdir or "", str(req.child_cpu),
                str(size), str(parent_mb)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)

    def run(self, iterations: int, result) -> int:
        try:
            self.proc.stdin.write(iterations.to_bytes(8, sys.byteorder, signed=True))
            data = b""
            while len(data) < self.size:
                chunk = self.proc.stdout.read(self.size - len(data))
                if not chunk:
                    break
                data += chunk
        except BrokenPipeError:
            data = b""
        if len(data) != self.size:
            rc = self.proc.poll()
            raise ProbeFailed(f"osbench-parent ended without a result (status {rc})")
        self.ffi.memmove(result, data, self.size)
        return -1 if result.error else 0

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            import subprocess   # imported already by __init__: a name, not a second import

            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


class Batcher:
    """Runs batches of one probe through the C harness: in this process, or in
    osbench-parent for a probe that forks (unless params parent=python)."""

    def __init__(self, req: WorkerRequest):
        info = getattr(req, "probe_info", None) or _probe_info(req.probe, req.params)
        ffi, lib = probe_library(req.probe, info["library"])

        helper = helper_path(req.params, info["helper"])
        size_param = info["size_param"]
        # a grouped probe's batch is whole groups (registry.Probe.batch_multiple)
        self.multiple = info["multiple"]
        self.ffi, self.lib, self.req = ffi, lib, req
        self._keep = [ffi.new("char[]", s.encode()) for s in (req.workdir or "", helper)]
        self.params = ffi.new("osb_params *")
        self.params.workdir, self.params.helper_path = self._keep
        self.params.child_cpu = req.child_cpu
        self.params.size = int(req.params.get(size_param, 0))
        self.result = ffi.new("osb_result *")
        self.name = req.probe.encode()
        parent_mb = int(req.params.get("parent_mb", 0))
        self.parent = info["parent"]
        self.native = None
        self._ballast = None
        if self.parent == "native":   # registry.PARENT_NATIVE
            self.native = NativeParent(ffi, req, helper, self.params.size, parent_mb)
        else:
            self._ballast = touch_anonymous(parent_mb)  # the interpreter, grown

    def run(self, iterations: int) -> dict:
        load1 = os.getloadavg()[0]
        if self.native is not None:
            rc = self.native.run(iterations, self.result)
        else:
            rc = self.lib.osb_run(self.name, self.params, iterations, self.result)
        r = self.result
        if rc != 0:
            raise ProbeFailed(f"{self.req.probe}: {self.ffi.string(r.message).decode(errors='replace')}"
                              f" (error {r.error})")
        return {**{name: getattr(r, name) for name in HARNESS_FIELDS}, "loadavg_1m": load1}

    def close(self) -> None:
        if self.native is not None:
            self.native.close()
            self.native = None
        if self._ballast is not None:
            self._ballast.close()
            self._ballast = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def batch_cap(max_iterations: int, multiple: int = 1) -> int:
    """The largest batch: ``max_iterations`` rounded down to whole groups, but never below one group."""
    return max(multiple, max_iterations // multiple * multiple)


def next_iterations(n: int, elapsed_ns: int, target_ns: int, cap: int, multiple: int = 1) -> int:
    """Grow n towards the target batch time; at most 100x a step so one cold
    first iteration cannot make the next batch absurdly long.  With ``multiple``
    (a grouped probe's group size) n stays a whole number of groups, within
    ``batch_cap(cap, multiple)``."""
    cap = batch_cap(cap, multiple)
    want = math.ceil(n * 1.2 * target_ns / max(elapsed_ns, 1))
    n_next = max(n + 1, min(want, n * 100, cap))
    return min(-(-n_next // multiple) * multiple, cap)


#: a clock read through the vDSO costs tens of ns from Python; one that falls back to a trapped
#: system call (gVisor before its vDSO parameters are ready) costs microseconds
CHEAP_CLOCK_NS = 400.0


def clock_read_ns(reads: int = 200) -> float:
    """Mean cost of one monotonic clock read, from Python."""
    t0 = time.perf_counter_ns()
    for _ in range(reads):
        time.monotonic_ns()
    return (time.perf_counter_ns() - t0) / reads


def settle(max_s: float) -> float:
    """Wait until reading the clock is cheap (the environment's vDSO clock is
    active), twice in a row, or at most max_s; returns the seconds waited.
    A sandbox that has settled already (a later worker of the same boot)
    costs a few microseconds here instead of a fixed sleep."""
    t0 = time.monotonic()
    cheap = 0
    while time.monotonic() - t0 < max_s:
        cheap = cheap + 1 if clock_read_ns() < CHEAP_CLOCK_NS else 0
        if cheap >= 2:
            break
        time.sleep(0.01)
    return time.monotonic() - t0


def run_request(req: WorkerRequest, emit) -> None:
    if req.make_workdir and req.workdir:
        os.makedirs(req.workdir, mode=0o700)
        try:
            _run_request(req, emit)
        finally:
            import shutil

            left = os.listdir(req.workdir)
            shutil.rmtree(req.workdir, ignore_errors=True)
        if left:
            raise ProbeFailed(f"probe left files in {req.workdir}: {sorted(left)[:3]}")
        return
    _run_request(req, emit)


def _run_request(req: WorkerRequest, emit) -> None:
    if req.worker_cpu is not None:
        os.sched_setaffinity(0, {req.worker_cpu})
    emit({"kind": "environment", **facts.environment_facts(req.workdir, binaries=req.binaries_facts)})
    if req.settle_s > 0:
        emit({"kind": "settled", "waited_s": round(settle(req.settle_s), 3)})
    with Batcher(req) as b:
        index = 0

        def record(stats: dict, warmup: bool) -> None:
            nonlocal index
            # parent: which process ran the batch (native | python; '' when the probe does not fork)
            emit({"kind": "batch", "batch": index, "warmup": warmup, "worker_pid": os.getpid(),
                  "parent": b.parent, **stats})
            index += 1

        n = req.iterations
        if n is None:
            n = b.multiple
            while True:
                stats = b.run(n)
                record(stats, warmup=True)
                if stats["elapsed_ns"] >= req.min_batch_ns or n >= batch_cap(req.max_iterations, b.multiple):
                    break
                n = next_iterations(n, stats["elapsed_ns"], req.min_batch_ns, req.max_iterations, b.multiple)
        for _ in range(req.warmup):
            record(b.run(n), warmup=True)
        for _ in range(req.batches):
            record(b.run(n), warmup=False)


USAGE = ("usage: python -m osbench_analysis.worker.main --request JSON [--out FILE]\n"
         "  --request JSON  the WorkerRequest as JSON\n"
         "  --out FILE      write the JSON lines to this file instead of stdout (for environments whose\n"
         "                  console is not a clean pipe, e.g. UML)")


def parse_args(argv: list[str]) -> dict[str, str]:
    """{'request': ..., 'out': ...} from `--request JSON [--out FILE]` (argparse's import alone is a
    noticeable part of a worker's start inside UML); exits 2 with the usage on anything else."""
    opts, rest = {}, list(argv)
    while rest:
        flag = rest.pop(0)
        name = flag[2:].split("=", 1)[0] if flag.startswith("--") else ""
        if flag in ("-h", "--help"):
            print(USAGE)
            raise SystemExit(0)
        if name not in ("request", "out") or name in opts or ("=" not in flag and not rest):
            print(f"{USAGE}\nworker: error: unexpected argument {flag!r}", file=sys.stderr)
            raise SystemExit(2)
        opts[name] = flag.split("=", 1)[1] if "=" in flag else rest.pop(0)
    if "request" not in opts:
        print(f"{USAGE}\nworker: error: --request is required", file=sys.stderr)
        raise SystemExit(2)
    return opts


class _Request:
    """A request as the worker reads it (the fields of request.WorkerRequest and probe_info, as
    attributes): a plain object, so that the worker process imports no dataclasses."""

    def __init__(self, fields: dict):
        self.__dict__.update(fields)


#: WorkerRequest's defaults, for a request JSON written by hand that leaves them out
_DEFAULTS = {"worker_cpu": None, "child_cpu": -1, "workdir": None, "iterations": None, "settle_s": 0.0,
             "make_workdir": False, "binaries_facts": True, "memory_events": "", "probe_info": None}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    req = _Request({**_DEFAULTS, **json.loads(args["request"])})
    out = open(args["out"], "a", buffering=1) if args.get("out") else sys.stdout

    def emit(obj: dict) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    try:
        run_request(req, emit)
    except ProbeFailed as e:
        emit({"kind": "error", "message": str(e)})
        return EXIT_PROBE_ERROR
    emit({"kind": "done"})
    return 0


def run() -> None:
    """The worker process's entry (launch.worker_argv): main(), its output flushed, then out without the
    interpreter's finalization (nothing of it is needed once the lines are written; inside a sandbox it is
    system calls again).  An exception or SystemExit leaves as usual."""
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


if __name__ == "__main__":
    sys.exit(main())
