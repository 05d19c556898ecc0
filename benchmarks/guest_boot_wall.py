"""Wall time of one boot of each emulated-CPU guest (mach, linux-tcg, sel4,
sel4-slowpath, xen-linux) and whether repeated boots count the same
instructions; with --measure, also one boot measuring every probe the guest
serves as the quick profile does (its measuring wall time).

    python benchmarks/guest_boot_wall.py [--boots 2] [--envs mach,linux-tcg,sel4,xen-linux] [--measure]

One tiny job per boot (the guest's null kernel entry, 1M-instruction
batches): the figure is mostly the boot itself (GRUB + GNU Mach, the Linux
kernel, seL4, Xen + Linux) under QEMU TCG -icount, which depends on the
host's load; the counts must not (xen-linux: only their minima)."""
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


def one_boot(env, probes: list[str], min_batch: int = 1_000_000, batches: int = 3) -> tuple[float, list]:
    reqs = [WorkerRequest(p, {}, min_batch, 1, batches, registry.PROBES[p].max_iterations) for p in probes]
    with tempfile.TemporaryDirectory(prefix="osbench-bench-") as tmp:
        t0 = time.monotonic()
        with env.session(Path(tmp) / "s") as sess:
            outcomes = list(sess.run_round([RoundJob(r, [], Path(tmp) / f"o{i}.jsonl", 600.0)
                                            for i, r in enumerate(reqs)], cpus=None))
        wall = time.monotonic() - t0
    for outcome in outcomes:
        if outcome.status != "ok":
            raise SystemExit(f"{env.name}: {outcome.status}: {outcome.message}")
    return wall, [(b["iterations"], b["elapsed_ns"]) for o in outcomes for b in o.batches]


def measuring_boot(env) -> tuple[float, int]:
    """One boot measuring every probe the guest serves with the quick profile's batches."""
    from osbench_analysis.measure import config

    cfg = config.make_config("quick")
    probes = [n for n in registry.DEFAULT_PROBES if cfg.measures_in(env, n)]
    wall, _ = one_boot(env, probes, int(cfg.min_batch_ms * 1e6), cfg.batches)
    return wall, len(probes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boots", type=int, default=2)
    ap.add_argument("--envs", default="mach,linux-tcg,sel4,sel4-slowpath,xen-linux")
    ap.add_argument("--measure", action="store_true", help="also one boot measuring every probe it serves")
    args = ap.parse_args()
    print(f"host load (1 min): {__import__('os').getloadavg()[0]:.2f}")
    for name in args.envs.split(","):
        env = environments.get(name)
        walls, counts = [], []
        for _ in range(args.boots):
            w, c = one_boot(env, [SMOKE.get(name, "null_syscall")])
            walls.append(w)
            counts.append(c)
        same = all(c == counts[0] for c in counts)
        print(f"{name:14s} wall per boot: median {statistics.median(walls):.1f} s (min {min(walls):.1f}, "
              f"max {max(walls):.1f}, {len(walls)} boots); counts identical across boots: {same}")
        if args.measure:
            wall, n = measuring_boot(env)
            print(f"{name:14s} one boot measuring its {n} probes (quick profile's batches): {wall:.1f} s")


if __name__ == "__main__":
    main()
