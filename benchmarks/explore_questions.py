"""Seconds per exploration question on this checkout's campaigns (median of a few
repeats, min and max beside it): what explore.ipynb asks, as a researcher would,
and the whole analyze() for contrast.

    .venv/bin/python benchmarks/explore_questions.py [--repeats 5]

Wall-clock on whatever else the machine is doing: compare the lines of one run
with each other (ratios), not with another machine's.
"""
from __future__ import annotations

import argparse
import statistics
import time

from osbench_analysis.analysis import pipeline as analysis
from osbench_analysis.explore import questions as explore


def questions(probe: str, placement: str, envs: list[str]) -> dict:
    def runs_question():
        s = explore.samples(probe, placement=placement, environments=envs)
        explore.run_summary(s), explore.runs_agree(s), explore.plot_runs(s)

    def environments_question():
        s = explore.samples(probe, placement=placement, environments=envs)
        explore.compare(s, "environment", envs[1], envs[0])

    def campaigns_question():
        pair = explore.newest(envs[0], 2, probe=probe, placement=placement)
        explore.compare(explore.samples(probe, placement=placement, campaigns=pair), "campaign_id", pair[1], pair[0])

    return {
        f"{probe} runs per environment: samples, per-run summary, verdict, plot": runs_question,
        f"{envs[1]} / {envs[0]} ratio with its interval": environments_question,
        f"two {envs[0]} campaigns compared": campaigns_question,
        f"analyze() restricted to {probe} in {', '.join(envs)}": lambda: analysis.analyze(
            probes=[probe], environments=envs, n_resamples=2000),
        "IPC round trip across kernels (the guest campaigns)": explore.ipc_across_kernels,
        "analyze() of every probe and environment (for contrast)": lambda: analysis.analyze(n_resamples=2000),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--probe", default="pipe_pingpong")
    ap.add_argument("--placement", default="same_cpu")
    ap.add_argument("--environments", default="native,gvisor")
    args = ap.parse_args(argv)
    for name, ask in questions(args.probe, args.placement, args.environments.split(",")).items():
        ask()    # warm: imports and the page cache, which a researcher pays once per session
        times = []
        for _ in range(args.repeats if "every probe" not in name else max(1, args.repeats // 3)):
            t0 = time.perf_counter()
            ask()
            times.append(time.perf_counter() - t0)
        print(f"{statistics.median(times):7.2f} s  [{min(times):.2f}, {max(times):.2f}] over {len(times)}  {name}",
              flush=True)


if __name__ == "__main__":
    main()
