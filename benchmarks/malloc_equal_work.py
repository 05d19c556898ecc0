"""Issue #22: why UML's malloc_free_small read 0.36x native, and that the fixed
group does the same work in both.  Prints, per group setting (blocks=0: the whole
batch, the old default; blocks=1000: the new one) and fixed batch size, the
per-block time natively and in an environment (osbench-parent in both), each the
geometric mean over repetitions with its 95% t interval, minor faults per block,
and the ratio environment/native with the t interval of the paired log ratios.

    .venv/bin/python benchmarks/malloc_equal_work.py [uml] [--reps 4]

Native workers run pinned to CPU 0; the environment is confined to CPU 0 from
outside, one boot per repetition.  Timing on a shared host is noisy: the
repetitions interleave native and the environment.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from scipy import stats as st

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from osbench_analysis import environments
from osbench_analysis.worker import launch  # noqa: E402
from osbench_analysis.environments.base import RoundJob  # noqa: E402
from osbench_analysis.worker.main import WorkerRequest  # noqa: E402

SETTINGS = [(0, 5_000), (0, 100_000), (1000, 5_000), (1000, 100_000)]


def request(blocks: int, n: int, settle_s: float = 0.0, cpu: int | None = None) -> WorkerRequest:
    return WorkerRequest(probe="malloc_free_small", params={"blocks": blocks, "parent": "native"}, min_batch_ns=0,
                         warmup=2, batches=15, max_iterations=5_000_000, iterations=n, settle_s=settle_s,
                         worker_cpu=cpu)


def summary(batches: list[dict]) -> tuple[float, float]:
    b = [x for x in batches if x.get("kind", "batch") == "batch" and not x["warmup"]]
    return (statistics.median(x["elapsed_ns"] / x["iterations"] for x in b),
            statistics.median(x["minflt"] / x["iterations"] for x in b))


def native(blocks: int, n: int) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-m", "osbench_analysis.worker.main", "--request",
                          request(blocks, n, cpu=0).to_json()], capture_output=True, text=True, cwd=REPO,
                         check=True).stdout
    return summary([json.loads(line) for line in out.splitlines() if '"batch"' in line])


def inside(name: str) -> dict:
    env = environments.get(name)
    with tempfile.TemporaryDirectory(prefix="osbench-malloc-") as tmp, env.session(Path(tmp) / "s") as sess:
        jobs = [RoundJob(r, launch.worker_argv(r, []), Path(tmp) / f"out-{i}", 300 + env.startup_s)
                for i, r in enumerate(request(b, n, env.settle_s) for b, n in SETTINGS)]
        outcomes = list(sess.run_round(jobs, cpus={0}))
    bad = [o.message for o in outcomes if o.status != "ok"]
    if bad:
        raise SystemExit(f"{name}: {bad}")
    return {s: summary(o.batches) for s, o in zip(SETTINGS, outcomes)}


def t_interval(logs: list[float]) -> tuple[float, float, float]:
    m = statistics.fmean(logs)
    h = st.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else math.nan
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("environment", nargs="?", default="uml")
    ap.add_argument("--reps", type=int, default=4)
    a = ap.parse_args()
    nat = {s: [] for s in SETTINGS}
    env = {s: [] for s in SETTINGS}
    for _ in range(a.reps):
        for s in SETTINGS:
            nat[s].append(native(*s))
        for s, v in inside(a.environment).items():
            env[s].append(v)
    print(f"malloc_free_small, ns per block: geometric mean over {a.reps} repetitions [95% t interval]")
    for s in SETTINGS:
        b, n = s
        fmt = lambda xs: "%.4g [%.4g, %.4g]" % t_interval([math.log(x[0]) for x in xs])  # noqa: E731
        ratio = t_interval([math.log(e[0] / x[0]) for e, x in zip(env[s], nat[s])])
        print(f"blocks={b:<5} batch={n:<7} native {fmt(nat[s])} ({max(x[1] for x in nat[s]):.3g} flt/block)  "
              f"{a.environment} {fmt(env[s])} ({max(x[1] for x in env[s]):.3g} flt/block)  "
              f"ratio {ratio[0]:.3g} [{ratio[1]:.3g}, {ratio[2]:.3g}]")


if __name__ == "__main__":
    main()
