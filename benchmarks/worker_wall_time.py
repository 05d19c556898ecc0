"""Where a campaign's worker time goes, per environment: wall time per worker
(start-up and boot included), and the timed share (batch time, calibration
and warm-ups included, over worker wall time).

Reads sealed campaigns (nothing is measured unless --measure is given):

    .venv/bin/python benchmarks/worker_wall_time.py data/campaigns/20261123T135922Z-vm-*      # before (one worker per boot)
    .venv/bin/python benchmarks/worker_wall_time.py --measure --output /tmp/scratch          # a short all-environment set now
    .venv/bin/python benchmarks/worker_wall_time.py BEFORE_DIRS... --after AFTER_DIRS...      # side by side
    .venv/bin/python benchmarks/worker_wall_time.py --startup native,gvisor,uml               # where start-up goes
    .venv/bin/python benchmarks/worker_wall_time.py --gaps DIRS... [--after DIRS...]           # the overhead between workers

Per environment it prints the workers, their total wall time, the mean wall
per worker with its 95% t interval over workers, the timed share, and the
measuring seconds of the campaign set.  With --after, the ratio after/before
of the total wall per worker-run (the campaigns must measure the same
conditions for it to mean "same work").  Timing on a shared host is noisy:
compare sets measured side by side.

Measured on this 2-vCPU VM, quick profile (before: the committed set 20261123T135922Z, seven
environments, one boot per sandbox worker; after: `make all` of 2026-11-26 14:27 from a fresh
clone under "/tmp/fresh machine" on a machine whose packages `make all` had to install, ten
environments, the machine otherwise idle).  Wall per worker, mean [95% t interval over workers];
timed share = batch time (calibration and warm-ups included) / worker wall:

    environment     before                       after
    native          0.330 s [0.325, 0.335] 44 %  0.214 s [0.209, 0.220] 69 %  (662 / 594 workers)
    gvisor          2.187 s [2.169, 2.206]  7 %  0.339 s [0.295, 0.383] 43 %
    gvisor-ptrace   2.236 s [2.214, 2.257]  7 %  0.376 s [0.334, 0.418] 39 %
    gvisor-gofer    2.250 s [2.201, 2.300]  6 %  0.440 s [0.360, 0.520] 33 %
    uml             2.780 s [2.738, 2.823]  5 %  0.414 s [0.356, 0.473] 35 %
    fuse(-nocache)  0.31-0.33 s            45 %  0.203 s                 72-73 %
    mach, linux-tcg -                            0.90 s, 1.17 s per job (one boot runs a round's jobs)
    all             932 s worker wall, 16 %      404 s, 42 %; measuring 947 s -> 354 s
    at equal work   932 s                        268 s (0.29x): the before set's 999 worker runs,
                                                 each at the after set's mean for its condition

--gaps reads the batches' own start times (started_unix_ns) of one campaign set: per environment, the
median gap between two workers of that environment (the last batch of one to the first batch of the
next: the worker's exit, the runner's bookkeeping, the next worker's start-up, none of it measured),
the gap where the round moves to another environment (a sandbox's boot and, for gVisor, its clock's
settling), the span of a worker's batches, and the seconds per worker all told (issue 37: the host
round of `make all`).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sst

from osbench_analysis.store import campaigns as store


def wall_table(paths: list[str]) -> pd.DataFrame:
    rows = []
    for path in paths:
        c = store.load_campaign(Path(path))
        runs = pd.DataFrame([r.__dict__ for r in c.manifest.runs])
        wall = runs["wall_s"].to_numpy(dtype=float)
        timed = float(c.samples["elapsed_ns"].sum()) / 1e9
        n = len(wall)
        mean = float(wall.mean()) if n else math.nan
        half = float(sst.t.ppf(0.975, n - 1) * wall.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        rows.append({"environment": c.environment, "workers": n, "failed": int((runs["status"] != "ok").sum()),
                     "wall_s": round(float(wall.sum()), 1), "per_worker_s": round(mean, 3),
                     "ci95_low": round(mean - half, 3), "ci95_high": round(mean + half, 3),
                     "timed_s": round(timed, 1), "timed_share": round(timed / wall.sum(), 3) if n else math.nan,
                     "measuring_s": c.manifest.measuring_seconds})
    table = pd.DataFrame(rows).set_index("environment")
    total = table[["workers", "failed", "wall_s", "timed_s"]].sum()
    table.loc["(all)"] = {**total.to_dict(), "per_worker_s": round(total["wall_s"] / total["workers"], 3),
                          "ci95_low": np.nan, "ci95_high": np.nan,
                          "timed_share": round(total["timed_s"] / total["wall_s"], 3),
                          "measuring_s": table["measuring_s"].max()}
    return table


def runs_table(paths: list[str]) -> pd.DataFrame:
    """One row per worker run: environment, condition (probe, variant, placement) and wall_s."""
    frames = []
    for path in paths:
        c = store.load_campaign(Path(path))
        runs = pd.DataFrame([r.__dict__ for r in c.manifest.runs])
        frames.append(runs.assign(environment=c.environment)[["environment", "probe", "variant", "placement",
                                                               "wall_s"]])
    return pd.concat(frames, ignore_index=True)


def equal_work(before: list[str], after: list[str]) -> pd.DataFrame:
    """The before set's work at the after set's speed: for every condition both measured, the after
    set's mean wall per worker run times the before set's number of runs of it, per environment
    (the before set's conditions the after set lacks are left out of both sides, and counted)."""
    b, a = runs_table(before), runs_table(after)
    key = ["environment", "probe", "variant", "placement"]
    per_b = b.groupby(key)["wall_s"].agg(["size", "sum"])
    per_a = a.groupby(key)["wall_s"].mean().rename("after_mean")
    j = per_b.join(per_a, how="left")
    covered = j[j["after_mean"].notna()]
    rows = covered.groupby(level=0).apply(lambda t: pd.Series({
        "workers": int(t["size"].sum()), "before_s": t["sum"].sum(),
        "after_s": (t["size"] * t["after_mean"]).sum()}))
    rows.loc["(all)"] = rows.sum()
    rows["after/before"] = rows["after_s"] / rows["before_s"]
    missing = j[j["after_mean"].isna()]
    rows["uncovered_workers"] = missing.groupby(level=0)["size"].sum().reindex(rows.index).fillna(0).astype(int)
    rows.loc["(all)", "uncovered_workers"] = int(missing["size"].sum())
    return rows.round({"before_s": 1, "after_s": 1, "after/before": 3})


def gaps_table(paths: list[str]) -> pd.DataFrame:
    """Per environment of one campaign set: workers, the median gap between two of its workers in a row
    (same_gap_s), the median gap before its first worker of a group (switch_gap_s: the boot), the mean span
    of a worker's batches, and the seconds per worker (its batches and the gap before each)."""
    frames = []
    for path in paths:
        c = store.load_campaign(Path(path))
        s = c.samples.assign(end=c.samples["started_unix_ns"] + c.samples["elapsed_ns"])
        w = s.groupby(["probe", "variant", "placement", "run"]).agg(start=("started_unix_ns", "min"),
                                                                     end=("end", "max")).reset_index()
        frames.append(w.assign(environment=c.environment))
    w = pd.concat(frames).sort_values("start").reset_index(drop=True)
    w["gap_s"] = (w["start"] - w["end"].shift(1)) / 1e9
    w["span_s"] = (w["end"] - w["start"]) / 1e9
    same = w["environment"] == w["environment"].shift(1)
    g = w.groupby("environment")
    table = pd.DataFrame({"workers": g.size(),
                          "same_gap_s": w[same].groupby("environment")["gap_s"].median(),
                          "switch_gap_s": w[~same].groupby("environment")["gap_s"].median(),
                          "span_s": g["span_s"].mean(),
                          "s_per_worker": (w["gap_s"].fillna(0) + w["span_s"]).groupby(w["environment"]).sum()
                          / g.size()})
    return table.round(3)


def measure(output: str) -> list[str]:
    from osbench_analysis.measure import runner

    campaigns = runner.measure("quick", environment="all", output=output, wait=True)
    return [str(c.path) for c in campaigns]


def startup_table(names: list[str], repeats: int = 3) -> pd.DataFrame:
    """Wall time of the steps of a worker's start-up, inside each environment, as
    run_round runs them (the first job of each boot, which pays the boot, is
    reported on its own): a program that does nothing, the interpreter without
    and with site, importing the worker, and a whole worker of one short batch."""
    from osbench_analysis import environments
    from osbench_analysis.worker import launch
    from osbench_analysis.environments import RoundJob
    from osbench_analysis.worker.main import WorkerRequest

    py = sys.executable
    req = WorkerRequest(probe="null_syscall", params={}, min_batch_ns=1_000_000, warmup=0, batches=1,
                        max_iterations=10**8)
    steps = {"/bin/true": ["/bin/true"], "python -S -c pass": [py, "-S", "-c", "pass"],
             "python -c pass": [py, "-c", "pass"],
             "import osbench_analysis.worker.main": [py, "-c", "import osbench_analysis.worker.main"],
             "worker, 1 batch of 1 ms": launch.worker_argv(req)}
    rows = []
    for name in names:
        env = environments.get(name)
        with env.session(Path(tempfile.mkdtemp(prefix="osbench-startup-")) / "s") as sess:
            order = ["/bin/true", *list(steps) * repeats]
            jobs = [RoundJob(req, steps[k], Path(tempfile.gettempdir()) / "unused", 60) for k in order]
            walls = [o.wall_s for o in sess.run_round(jobs, cpus=None)]
        rows.append({"environment": name, "step": "first job of the round (boot)", "wall_s": walls[0]})
        rows += [{"environment": name, "step": k, "wall_s": w} for k, w in zip(order[1:], walls[1:])]
    t = pd.DataFrame(rows).groupby(["environment", "step"], sort=False)["wall_s"]
    return pd.DataFrame({"median_s": t.median().round(3), "min_s": t.min().round(3), "max_s": t.max().round(3),
                         "n": t.size()})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", nargs="*", help="campaign folders (one campaign set)")
    ap.add_argument("--after", nargs="*", default=[], help="campaign folders of a second set, to compare")
    ap.add_argument("--measure", action="store_true", help="measure a quick all-environment set first (as --after)")
    ap.add_argument("--output", default=None, help="with --measure: where its campaigns go (default: a temp folder)")
    ap.add_argument("--startup", default=None, help="comma-separated environments: time each start-up step inside")
    ap.add_argument("--gaps", action="store_true", help="the gaps between workers per environment (batch times)")
    args = ap.parse_args()
    if args.gaps:
        pd.set_option("display.width", 160)
        for label, paths in (("before", args.before), ("after", args.after)):
            if paths:
                print(f"{label}: gaps between workers per environment (medians; s_per_worker: batches and gaps)")
                print(gaps_table(paths).to_string())
        return 0
    if args.startup:
        pd.set_option("display.width", 160)
        print("start-up steps per environment (wall per job of one boot; min and max over repeats)")
        print(startup_table(args.startup.split(",")).to_string())
        return 0
    if args.measure:
        args.after = measure(args.output or tempfile.mkdtemp(prefix="osbench-wall-"))
    if not args.before and not args.after:
        ap.error("give campaign folders, or --measure")
    pd.set_option("display.width", 160)
    tables = {}
    for label, paths in (("before", args.before), ("after", args.after)):
        if paths:
            tables[label] = wall_table(paths)
            print(f"{label}: worker wall time per environment (per_worker_s: mean, 95% t interval over workers)")
            print(tables[label].to_string())
            print()
    if len(tables) == 2:
        b, a = tables["before"], tables["after"]
        common = b.index.intersection(a.index)
        ratio = (a.loc[common, "wall_s"] / a.loc[common, "workers"]) / (b.loc[common, "wall_s"] / b.loc[common, "workers"])
        print("after / before, wall per worker run:")
        print(ratio.round(3).to_string())
        print(f"total worker wall time: {b.loc['(all)', 'wall_s']:.0f} s before, {a.loc['(all)', 'wall_s']:.0f} s "
              f"after ({a.loc['(all)', 'wall_s'] / b.loc['(all)', 'wall_s']:.2f}x; the sets need not measure "
              "the same conditions)")
        print()
        print("at equal work: the before set's worker runs, each at the after set's mean wall for its condition")
        print(equal_work(args.before, args.after).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
