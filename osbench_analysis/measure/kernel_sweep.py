"""`make kernels`: the kernel-version sweep (issue 39, docs/kernels.md) from fetching to the per-function
profiles, one step after the other, one guest boot at a time.

1. fetch: every version of catalog/kernel_versions.py's table (pinned .deb, sha256 checked), unpacked;
2. measure: one campaign per environment (each version with its default mitigations and with
   mitigations=off), every probe linux-tcg runs, two boots (their counts repeat: two show it), batches of
   `MIN_BATCH_MS` guest milliseconds (instructions), pinned to `cpus`;
3. profile: one profiled boot per environment (environments/symprofile.py), each condition run with a
   fixed batch of about `PROFILE_WINDOW` instructions (from its campaign's count), saved under
   data/kernel_profiles/.

4. memory (with --memory-events MODE): one memory-events campaign per version, default mitigations.

    python -m osbench_analysis.measure.kernel_sweep [--versions 5.10,7.3] [--cpus 0] [--skip fetch,measure]
                                                    [--memory-events warm]"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from osbench_analysis.environments import kernels, linux_tcg
from osbench_analysis.paths import CAMPAIGNS_DIR, REPO_ROOT

STEPS = ("fetch", "measure", "profile", "memory")
GUEST_BOOTS = 2
MIN_BATCH_MS = 2
BATCHES = 3
WARMUP = 1
#: instructions one profiled batch should last (its iterations = this / the campaign's count per operation): the
#: campaigns' batch length (MIN_BATCH_MS), so that what a batch carries once weighs the same per operation
PROFILE_WINDOW = 2_000_000
PROFILES_DIR = REPO_ROOT / "data" / "kernel_profiles"


def run_argv(env: str, cpus: str) -> list[str]:
    """One campaign of one sweep environment (the CLI, as a user would run it)."""
    return [sys.executable, "-m", "osbench_analysis.cli", "run", "--environment", env, "--guest-boots",
            str(GUEST_BOOTS), "--placements", "same_cpu", "--min-batch-ms", str(MIN_BATCH_MS), "--batches",
            str(BATCHES), "--warmup", str(WARMUP), "--no-progress", "--wait", "--note", "kernel-version sweep (issue 39)",
            *(["--cpus", cpus] if cpus else [])]


def memory_argv(env: str, mode: str, cpus: str) -> list[str]:
    """One memory-events campaign (`osbench run --memory-events MODE`) of a sweep environment, the campaigns'
    batches: beside the round (analysis.versions.newest_round leaves it out), read by versions.memory_history."""
    argv = run_argv(env, cpus)
    argv[argv.index("--note") + 1] = "kernel-version sweep, memory events (issue 39)"
    return [*argv, "--memory-events", mode]


def conditions_from_campaign(env: str, root: Path = CAMPAIGNS_DIR) -> list[tuple[str, dict, int]]:
    """(probe, params, iterations) of every condition of `env`'s newest campaign under root: iterations so
    that a profiled batch lasts about PROFILE_WINDOW instructions."""
    import pandas as pd

    from osbench_analysis.store import campaigns as store

    cat = store.catalog(root)
    mine = cat[cat["environment"] == env].sort_values("created_utc") if len(cat) else cat
    if not len(mine):
        # no campaign yet: the probes with their default parameters, a guess of 10,000 instructions each
        return [(p, {}, max(1, PROFILE_WINDOW // 10_000)) for p in linux_tcg.PROBES]
    samples = pd.read_parquet(Path(mine.iloc[-1]["path"]) / "samples.parquet")
    s = samples[~samples["warmup"].astype(bool)]
    per = (s["elapsed_ns"] / s["iterations"]).groupby([s["probe"], s["params_json"]]).median()
    return [(probe, json.loads(pj), max(1, int(PROFILE_WINDOW // max(v, 1.0)))) for (probe, pj), v in per.items()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", default="", help="comma-separated names of the table (default: all)")
    ap.add_argument("--cpus", default=os.environ.get("KERNEL_CPUS", ""),
                    help="the CPU(s) the guests are pinned to (one: one boot at a time)")
    ap.add_argument("--skip", default="", help=f"steps to skip, of {','.join(STEPS)}")
    ap.add_argument("--memory-events", default="", choices=("", "warm", "polluted"),
                    help="also one memory-events campaign per version, default mitigations (about 3x a campaign)")
    args = ap.parse_args(argv)
    names = [n for n in args.versions.split(",") if n] or None
    skip = {s for s in args.skip.split(",") if s}
    envs = kernels.sweep_environments(names)
    t0 = time.monotonic()
    times = {}
    if "fetch" not in skip:
        t = time.monotonic()
        problems = kernels.install(names, boot=False)
        for step, why in problems.items():
            print(f"{step}: {why}", flush=True)
        times["fetch"] = time.monotonic() - t
    ready = [e for e in envs if _available(e)]
    for e in sorted(set(envs) - set(ready), key=envs.index):
        print(f"{e}: not available, left out", flush=True)
    if "measure" not in skip:
        t = time.monotonic()
        for env in ready:
            r = subprocess.run(run_argv(env, args.cpus), cwd=REPO_ROOT)
            if r.returncode != 0:
                print(f"{env}: the campaign failed (status {r.returncode})", flush=True)
        times["measure"] = time.monotonic() - t
    if "profile" not in skip:
        from osbench_analysis.environments import symprofile

        t = time.monotonic()
        cpus = {int(c) for c in args.cpus.split(",")} if args.cpus else None
        # the default mitigations' profiles first: the changes most asked about, and an interrupted sweep keeps them
        for env in sorted(ready, key=lambda e: e.endswith("-nomitig")):
            try:
                prof, facts = symprofile.profile(env, conditions_from_campaign(env), cpus)
            except symprofile.ProfileError as e:
                print(f"{env}: no profile: {e}", flush=True)
                continue
            print(f"{env}: profile {symprofile.save(prof, facts, PROFILES_DIR)}", flush=True)
        times["profile"] = time.monotonic() - t
    if args.memory_events and "memory" not in skip:
        t = time.monotonic()
        for env in [e for e in ready if not e.endswith("-nomitig")]:
            r = subprocess.run(memory_argv(env, args.memory_events, args.cpus), cwd=REPO_ROOT)
            if r.returncode != 0:
                print(f"{env}: the memory-events campaign failed (status {r.returncode})", flush=True)
        times["memory"] = time.monotonic() - t
    print("kernel sweep: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items())
          + f", {time.monotonic() - t0:.0f} s in all", flush=True)
    return 0


def _available(env: str) -> bool:
    from osbench_analysis import environments

    return bool(environments.get(env).availability())


if __name__ == "__main__":
    raise SystemExit(main())
