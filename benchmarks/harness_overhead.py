"""How much does the package's measurement path add to a null system call,
and how long does the quick campaign take to measure?

Prints: the per-op time osbench reports for null_syscall (median over the
batches of one pinned worker) against a bare C loop of the same syscall timed
once over 10^7 iterations on the same CPU, in alternated pairs so the machine's
drift cancels; the median ratio (goal <= 1.02); and the quick profile's
measuring time (goal < 300 s).

    .venv/bin/python benchmarks/harness_overhead.py [--skip-quick]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from osbench_analysis import runner

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
    ap.add_argument("--pairs", type=int, default=7, help="plain/osbench pairs, alternated so drift cancels")
    ap.add_argument("--skip-quick", action="store_true", help="do not time the full quick campaign")
    args = ap.parse_args()
    cpu = sorted(os.sched_getaffinity(0))[0]
    root = Path(tempfile.mkdtemp(prefix="osbench-bench-"))
    exe = build_plain_loop()

    print(f"load average before: {os.getloadavg()[0]:.2f} (figures mean little above ~0.3 on 2 cores)")
    plain, ours, ratios = [], [], []
    for k in range(args.pairs):
        p = plain_loop_ns(exe, cpu)
        c = runner.measure("quick", progress=False, output=str(root), campaign_id=f"pair{k}",
                           probes=["null_syscall"], runs=1, batches=20, placements=["same_cpu"], cpus=[cpu],
                           precision_target=0)
        s = c.samples[~c.samples["warmup"]]
        o = float(s["per_op_ns"].median())
        plain.append(p), ours.append(o), ratios.append(o / p)
        print(f"  pair {k}: plain {p:8.2f} ns/op   osbench {o:8.2f} ns/op "
              f"({len(s)} batches x {int(s['iterations'].iloc[0])})   ratio {o / p:.4f}")
    print(f"plain C loop (10^7 getpid, one clock read pair, cpu {cpu}): median {statistics.median(plain):.2f} ns/op")
    print(f"osbench null_syscall (median of batch per-op times): median {statistics.median(ours):.2f} ns/op")
    print(f"ratio osbench / plain: median {statistics.median(ratios):.4f} over {len(ratios)} alternated pairs "
          f"(min {min(ratios):.4f}, max {max(ratios):.4f}; goal <= 1.02)")

    if not args.skip_quick:
        q = runner.measure("quick", progress=False, output=str(root))
        print(f"quick campaign: {q.manifest['measuring_seconds']:.1f} s measuring "
              f"({len(q.samples)} batches, {len(q.errors)} failed workers; goal < 300 s)")


if __name__ == "__main__":
    sys.exit(main())
