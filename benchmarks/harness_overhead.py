"""How much does the package's measurement path add to a null system call,
and how long does the quick campaign take to measure?

Prints: the per-op time osbench reports for null_syscall (median over the
batches of one pinned worker) against a bare C loop of the same syscall timed
once over 2x10^6 iterations on the same CPU, in alternated process pairs so
the machine's drift cancels; the ratio of their geometric means with a 95% CI
(goal <= 1.02); and the quick profile's measuring time (goal < 300 s).

    .venv/bin/python benchmarks/harness_overhead.py [--skip-quick]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from osbench_analysis import stats
from osbench_analysis.measure import runner

HERE = Path(__file__).resolve().parent


def build_plain_loop() -> Path:
    exe = Path(tempfile.mkdtemp()) / "plain_getpid_loop"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(HERE / "plain_getpid_loop.c")], check=True)
    return exe


def plain_loop_ns(exe: Path, cpu: int, iterations: int = 10_000_000) -> float:
    r = subprocess.run([str(exe), str(iterations)], capture_output=True, text=True, check=True,
                       preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    return float(r.stdout.split()[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=16, help="plain/osbench process pairs, alternated so drift cancels")
    ap.add_argument("--skip-quick", action="store_true", help="do not time the full quick campaign")
    args = ap.parse_args()
    cpu = sorted(os.sched_getaffinity(0))[0]
    root = Path(tempfile.mkdtemp(prefix="osbench-bench-"))
    exe = build_plain_loop()

    print(f"load average before: {os.getloadavg()[0]:.2f} (figures mean little above ~0.3 on 2 cores)")
    plain, ours = [], []
    for k in range(args.pairs):
        plain.append(plain_loop_ns(exe, cpu, iterations=2_000_000))
        [c] = runner.measure("quick", progress=False, output=str(root), campaign_id=f"pair{k}",
                           probes=["null_syscall"], runs=1, batches=10, placements=["same_cpu"], cpus=[cpu],
                           precision_target=0)
        s = c.samples[~c.samples["warmup"]]
        ours.append(float(s["per_op_ns"].median()))
        print(f"  pair {k:2d}: plain {plain[-1]:7.2f} ns/op   osbench {ours[-1]:7.2f} ns/op "
              f"({len(s)} batches x {int(s['iterations'].iloc[0])})")
    # Each process has its own level here (run medians differ by ~15% between
    # processes), so compare geometric means over processes, with a Welch interval.
    d, lo, hi = stats.welch_interval(np.log(ours), np.log(plain), 0.95)
    gm = lambda v: float(np.exp(np.mean(np.log(v))))  # noqa: E731
    print(f"plain C loop (2x10^6 getpid, one clock-read pair per process, cpu {cpu}): "
          f"geometric mean {gm(plain):.2f} ns/op over {len(plain)} processes")
    print(f"osbench null_syscall (median of one worker's batches): geometric mean {gm(ours):.2f} ns/op "
          f"over {len(ours)} workers")
    print(f"ratio osbench / plain = {np.exp(d):.4f}, 95% CI [{np.exp(lo):.4f}, {np.exp(hi):.4f}] "
          f"(Welch t on log per-process values; goal <= 1.02)")

    if not args.skip_quick:
        [q] = runner.measure("quick", progress=False, output=str(root))
        p = q.manifest.precision
        print(f"quick campaign: {q.manifest.measuring_seconds:.1f} s measuring "
              f"({len(q.samples)} batches, {q.samples['run'].max() + 1} runs at most, {len(q.errors)} failed workers; "
              f"precision stop: {p['stop_reason']}, {p['conditions_met']}/{p['conditions_total']} conditions met; "
              f"goal < 300 s)")


if __name__ == "__main__":
    sys.exit(main())
