"""What counting costs: one native getpid timed plain, under `perf stat` with measure/counting.py's counters, and
under `strace -c -f`, interleaved (A/B/C, `--rounds` times), one worker of --iterations getpids each (strace's
runs do a twentieth of them: it is that much slower).  Prints min/median/max ns per getpid for each.  Counts do
not change with the tool; times do, which is why the decomposition prices counts with times measured uncounted.

    .venv/bin/python benchmarks/counting_overhead.py [--rounds 5] [--iterations 200000]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from osbench_analysis.measure import counting
from osbench_analysis.worker import launch
from osbench_analysis.worker.main import WorkerRequest


def request(n: int) -> WorkerRequest:
    return WorkerRequest(probe="null_syscall", params={}, min_batch_ns=0, warmup=0, batches=1, max_iterations=n,
                         worker_cpu=0, iterations=n, settle_s=0.0, binaries_facts=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=200_000)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="osbench-counting-overhead-"))
    modes = {"plain": lambda argv: argv,
             "perf stat": lambda argv: [*counting.perf_argv(tmp / "perf.csv"), "--", *argv]}
    if shutil.which("strace"):
        modes["strace -c -f"] = lambda argv: ["strace", "-c", "-f", "-o", str(tmp / "strace.txt"), *argv]
    times: dict[str, list[float]] = {m: [] for m in modes}
    try:
        for _ in range(a.rounds):
            for mode, wrap in modes.items():
                n = a.iterations // (20 if mode.startswith("strace") else 1)
                out = launch.run(launch.Launch(wrap(launch.worker_argv(request(n)))), 300)
                if out.status != "ok":
                    raise SystemExit(f"{mode}: {out.status}: {out.message}")
                b = out.batches[0]
                times[mode].append(b["elapsed_ns"] / b["iterations"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for mode, v in times.items():
        print(f"{mode:14s} ns per getpid: min {min(v):.0f}  median {statistics.median(v):.0f}  max {max(v):.0f}"
              f"  ({len(v)} runs)")


if __name__ == "__main__":
    main()
