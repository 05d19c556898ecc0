"""The worker: runs one probe in its own process and reports every batch.

It only executes (pyperf's worker role); the runner decides what to run.
Launched as ``python -m osbench_analysis.worker --request JSON``, possibly
behind a command prefix (a sandbox runner), it writes one JSON object per line
to stdout (or --out FILE): first {"kind": "environment", ...} with the facts it
sees from inside (facts.py), then {"kind": "batch", ...} for each batch, then
{"kind": "done"};
on a probe error {"kind": "error", "message": ...} and exit status 3.
Calibration batches come first and are flagged as warm-ups, never dropped.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from osbench_analysis import facts
from osbench_analysis.schema import HARNESS_FIELDS

EXIT_PROBE_ERROR = 3
BIN_DIR = Path(__file__).resolve().parent / "_bin"


@dataclass
class WorkerRequest:
    probe: str
    params: dict
    min_batch_ns: int
    warmup: int
    batches: int
    max_iterations: int
    worker_cpu: int | None = None   # pin this process (and by inheritance its children)
    child_cpu: int = -1             # pin the second party elsewhere (cross_cpu), -1: inherit
    workdir: str | None = None      # private directory for file probes
    iterations: int | None = None   # fixed batch size: skips calibration
    settle_s: float = 0.0           # wait before calibrating (an environment's clock or caches settling)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def helper_path(params: dict) -> str:
    return str(BIN_DIR / f"osbench-exit0-{params.get('linkage', 'dynamic')}")


class ProbeFailed(RuntimeError):
    pass


class Batcher:
    """Runs batches of one probe through the C harness."""

    def __init__(self, req: WorkerRequest):
        from osbench_analysis._probes import ffi, lib  # imported here: the runner never loads probes

        self.ffi, self.lib, self.req = ffi, lib, req
        self._keep = [ffi.new("char[]", s.encode()) for s in (req.workdir or "", helper_path(req.params))]
        self.params = ffi.new("osb_params *")
        self.params.workdir, self.params.helper_path = self._keep
        self.params.child_cpu = req.child_cpu
        self.params.size = int(req.params.get("size", 0))
        self.result = ffi.new("osb_result *")
        self.name = req.probe.encode()

    def run(self, iterations: int) -> dict:
        load1 = os.getloadavg()[0]
        rc = self.lib.osb_run(self.name, self.params, iterations, self.result)
        r = self.result
        if rc != 0:
            raise ProbeFailed(f"{self.req.probe}: {self.ffi.string(r.message).decode(errors='replace')}"
                              f" (error {r.error})")
        return {**{name: getattr(r, name) for name in HARNESS_FIELDS}, "loadavg_1m": load1}


def next_iterations(n: int, elapsed_ns: int, target_ns: int, cap: int) -> int:
    """Grow n towards the target batch time; at most 100x a step so one cold
    first iteration cannot make the next batch absurdly long."""
    want = math.ceil(n * 1.2 * target_ns / max(elapsed_ns, 1))
    return max(n + 1, min(want, n * 100, cap))


def run_request(req: WorkerRequest, emit) -> None:
    if req.worker_cpu is not None:
        os.sched_setaffinity(0, {req.worker_cpu})
    emit({"kind": "environment", **facts.environment_facts(req.workdir)})
    if req.settle_s > 0:
        time.sleep(req.settle_s)
    b = Batcher(req)
    index = 0

    def record(stats: dict, warmup: bool) -> None:
        nonlocal index
        emit({"kind": "batch", "batch": index, "warmup": warmup, "worker_pid": os.getpid(), **stats})
        index += 1

    n = req.iterations
    if n is None:
        n = 1
        while True:
            stats = b.run(n)
            record(stats, warmup=True)
            if stats["elapsed_ns"] >= req.min_batch_ns or n >= req.max_iterations:
                break
            n = next_iterations(n, stats["elapsed_ns"], req.min_batch_ns, req.max_iterations)
    for _ in range(req.warmup):
        record(b.run(n), warmup=True)
    for _ in range(req.batches):
        record(b.run(n), warmup=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--request", required=True, help="WorkerRequest as JSON")
    ap.add_argument("--out", help="write the JSON lines to this file instead of stdout "
                                  "(for environments whose console is not a clean pipe, e.g. UML)")
    args = ap.parse_args(argv)
    req = WorkerRequest(**json.loads(args.request))
    out = open(args.out, "a", buffering=1) if args.out else sys.stdout

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


if __name__ == "__main__":
    sys.exit(main())
