"""Wall time of one boot of each emulated-CPU guest (mach, linux-tcg) and
whether repeated boots count the same instructions.

    python benchmarks/guest_boot_wall.py [--boots 2] [--envs mach,linux-tcg]

One tiny job per boot (the guest's null kernel entry, 1M-instruction
batches): the figure is mostly the boot itself (GRUB + GNU Mach, or the
Linux kernel) under QEMU TCG -icount, which depends on the host's load; the
counts must not."""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from osbench_analysis import environments
from osbench_analysis.catalog import registry
from osbench_analysis.environments import RoundJob
from osbench_analysis.environments.guest_install import SMOKE
from osbench_analysis.worker.main import WorkerRequest


def one_boot(env, probe: str) -> tuple[float, list]:
    req = WorkerRequest(probe, {}, 1_000_000, 1, 3, registry.PROBES[probe].max_iterations)
    with tempfile.TemporaryDirectory(prefix="osbench-bench-") as tmp:
        t0 = time.monotonic()
        with env.session(Path(tmp) / "s") as sess:
            outcome = next(iter(sess.run_round([RoundJob(req, [], Path(tmp) / "o.jsonl", 600.0)], cpus=None)))
        wall = time.monotonic() - t0
    if outcome.status != "ok":
        raise SystemExit(f"{env.name}: {outcome.status}: {outcome.message}")
    return wall, [(b["iterations"], b["elapsed_ns"]) for b in outcome.batches]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boots", type=int, default=2)
    ap.add_argument("--envs", default="mach,linux-tcg")
    args = ap.parse_args()
    print(f"host load (1 min): {__import__('os').getloadavg()[0]:.2f}")
    for name in args.envs.split(","):
        env = environments.get(name)
        walls, counts = [], []
        for _ in range(args.boots):
            w, c = one_boot(env, SMOKE.get(name, "null_syscall"))
            walls.append(w)
            counts.append(c)
        same = all(c == counts[0] for c in counts)
        print(f"{name:10s} wall per boot: median {statistics.median(walls):.1f} s (min {min(walls):.1f}, "
              f"max {max(walls):.1f}, {len(walls)} boots); counts identical across boots: {same}")


if __name__ == "__main__":
    main()
