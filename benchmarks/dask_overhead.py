"""What an idle Dask worker costs the measurement (issue 11).

The same campaign measured on this host directly (`osbench run`) and through
a Dask worker (`osbench fleet run`: a `dask scheduler` and a
`dask worker --name here --nthreads 1 --resources MEASURE=1 --no-nanny` as
separate processes, with TLS, started by the commands
`osbench fleet certs` prints, as docs/fleet.md starts them), alternated in pairs (direct first,
then Dask first, ...) so drift of the machine spreads over both.  For every
condition: the ratio Dask / direct of the per-op time with its 95 % interval
(stats.ratio_table, runs-t on log run medians, the runs of all pairs pooled
per side).  Goal: every interval includes 1.

    python benchmarks/dask_overhead.py [--pairs 1] [--profile quick] [--probes a,b]

On this shared 2-vCPU VM the scheduler, the client and the worker share the
measured CPUs: in a real fleet the scheduler and client run elsewhere, so
this is an upper bound of the worker's own cost.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from osbench_analysis import stats
from osbench_analysis.fleet import run as fleet
from osbench_analysis.fleet import certs as fleet_certs
from osbench_analysis.store import campaigns as store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--probes", help="comma-separated; default: the profile's")
    ap.add_argument("--loud-worker", action="store_true",
                    help="start the Dask worker with its profiler and 100 ms memory monitor on (Dask's defaults)")
    ap.add_argument("--reuse", metavar="ROOT", help="only compare the direct-*/dask-* campaigns already under ROOT")
    args = ap.parse_args()
    if args.reuse:
        ids = sorted(store.catalog(args.reuse)["campaign_id"])
        report({i: ("direct" if i.startswith("direct-") else "dask") for i in ids}, Path(args.reuse),
               len(ids) // 2, args.profile)
        return
    params = {"probes": args.probes.split(",")} if args.probes else {}
    work = Path(tempfile.mkdtemp(prefix="osbench-dask-overhead-"))
    root, bindir = work / "campaigns", Path(sys.executable).parent
    certs = dataclasses.replace(fleet_certs.make_certs(["here"], work / "certs", "127.0.0.1", _free_port()),
                                dashboard_port=0)  # the scheduler's dashboard on a free loopback port
    env = {**os.environ, fleet.FLEET_DIR_ENV: str(work / "host"),
           **({} if args.loud_worker else fleet.QUIET_WORKER_ENV)}

    def venv(argv):
        return [str(bindir / argv[0]), *argv[1:]]

    procs = [subprocess.Popen(venv(certs.scheduler_argv()), env={**os.environ, **certs.environment("scheduler")},
                              stderr=subprocess.DEVNULL, start_new_session=True),
             subprocess.Popen(venv(certs.worker_argv("here")), env=env, stderr=subprocess.DEVNULL,
                              start_new_session=True)]
    labels = {}
    client = certs.files("client").parameters()
    try:
        deadline = time.monotonic() + 60
        while "here" not in _hosts(certs.address, client):
            if time.monotonic() > deadline:
                raise SystemExit("the Dask worker did not connect within 60 s")
            time.sleep(0.5)
        for i in range(args.pairs):
            order = ("direct", "dask") if i % 2 == 0 else ("dask", "direct")
            for how in order:
                t0 = time.monotonic()
                if how == "direct":
                    cid = f"direct-{i}"
                    subprocess.run([sys.executable, "-m", "osbench_analysis.cli", "run", "--profile", args.profile,
                                    "--output", str(root), "--campaign-id", cid, "--no-progress",
                                    *fleet.cli_arguments(None, params)], check=True, capture_output=True)
                else:
                    r = fleet.fleet_run(certs.address, ["here"], profile=args.profile, output=str(root),
                                        campaign_id=f"dask-{i}", say=lambda m: None, **client, **params)
                    if r.unfinished:
                        raise SystemExit(f"the Dask campaign failed: {r.unfinished[0].message}")
                    cid = f"dask-{i}-here"
                labels[cid] = how
                print(f"pair {i}: {how:6s} campaign {cid} in {time.monotonic() - t0:.0f} s", flush=True)
    finally:
        for p in procs:
            os.killpg(p.pid, 9)
            p.wait()

    report(labels, root, args.pairs, args.profile)


def _hosts(address, client) -> dict:
    try:
        return fleet.connected_hosts(address, **client, say=lambda m: None)
    except fleet.FleetError:
        return {}  # the scheduler is not up yet


def report(labels: dict[str, str], root: Path, pairs: int, profile: str) -> None:
    parts = []
    for offset, (cid, how) in enumerate(labels.items()):
        s = store.load_campaign(cid, root).samples
        # pool the runs of several campaigns per side: run numbers must stay distinct
        parts.append(s.assign(how=how, campaign_id=how, run=s["run"] + 1000 * offset))
    samples = pd.concat(parts, ignore_index=True)
    t = stats.ratio_table(samples, baseline="direct", by="how")
    t["includes_1"] = (t["ci_low"] <= 1) & (t["ci_high"] >= 1)
    pd.set_option("display.width", 200)
    print(f"\nDask worker / direct, per-op time, {t['level'].iloc[0]:.0%} CI ({t['ci_method'].iloc[0]}), "
          f"{pairs} pair(s) of '{profile}' campaigns:")
    print(t[["probe", "variant", "placement", "ratio", "ci_low", "ci_high", "n_runs", "baseline_n_runs",
             "includes_1"]].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"\n{int(t['includes_1'].sum())} of {len(t)} intervals include 1; "
          f"median ratio {t['ratio'].median():.3f}; campaigns kept in {root}")


if __name__ == "__main__":
    main()
