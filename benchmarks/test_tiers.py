"""The test tiers' times: `make test-fast` and `make test`, wall and CPU seconds, the slowest tests by CPU
(prints figures; asserts nothing).

    .venv/bin/python benchmarks/test_tiers.py                 # the fast tier, three times
    .venv/bin/python benchmarks/test_tiers.py --tier full     # make test once (minutes: the whole suite)
    .venv/bin/python benchmarks/test_tiers.py --tier fast --repeat 1 --top 20 --scale 2.5

Each run is the Makefile's own target; CPU is user + sys of everything it ran (pytest's workers, the sandboxes
and guests they reaped), which a shared, busy machine changes far less than the wall time.  --top N adds the N
tests with the most CPU seconds (each xdist worker records its tests' own and their children's CPU).

Issue 37's budget, on the slowest machine drawn (an AMD EPYC family 25 VM, about 2.25-2.5x slower than the
Zen 4 VM these tests were tuned on): `make test` under 6 minutes, `make test-fast` under 20 s.  --scale is the
factor to that machine (default 1: figures as measured here); the budget line is printed against wall x scale.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"fast": ("test-fast", 20.0), "full": ("test", 360.0)}

#: a pytest plugin (written to a temporary folder, loaded with -p) recording each test's wall and CPU seconds
PLUGIN = textwrap.dedent('''
    import os, resource, time

    _rows, _t = [], {}

    def _cpu():
        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

    def pytest_runtest_logstart(nodeid, location):
        _t[nodeid] = (time.perf_counter(), _cpu())

    def pytest_runtest_logfinish(nodeid, location):
        w0, c0 = _t.pop(nodeid)
        _rows.append((nodeid, time.perf_counter() - w0, _cpu() - c0))

    def pytest_unconfigure(config):
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        if worker:       # the controller sees every test too, without its CPU
            with open(os.path.join(os.environ["OSBENCH_TIERS_OUT"], worker + ".tsv"), "w") as f:
                f.writelines("%s\\t%.3f\\t%.3f\\n" % r for r in _rows)
''')


def run(target: str, top: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="osbench-test-tiers-") as tmp:
        Path(tmp, "osbench_tiers_plugin.py").write_text(PLUGIN)
        addopts = [os.environ.get("PYTEST_ADDOPTS", ""), "-p osbench_tiers_plugin" if top else ""]
        env = dict(os.environ, OSBENCH_TIERS_OUT=tmp, PYTEST_ADDOPTS=" ".join(filter(None, addopts)),
                   PYTHONPATH=os.pathsep.join(filter(None, [tmp, os.environ.get("PYTHONPATH")])))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        done = subprocess.run(["make", "--no-print-directory", target], cwd=REPO, env=env, capture_output=True,
                              text=True, errors="replace")
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = []
        for f in glob.glob(os.path.join(tmp, "*.tsv")):
            for line in Path(f).read_text().splitlines():
                node, w, c = line.rsplit("\t", 2)
                rows.append((node, float(w), float(c)))
    summary = next((ln.strip("= ") for ln in reversed(done.stdout.splitlines()) if re.search(r" in [\d.]+s", ln)), "")
    return {"rc": done.returncode, "wall": wall, "summary": summary,
            "cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
            "top": sorted(rows, key=lambda r: -r[2])[:top], "load": os.getloadavg()[0]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tier", choices=[*TARGETS, "both"], default="fast")
    ap.add_argument("--repeat", type=int, default=None, help="runs per tier (default: fast 3, full 1)")
    ap.add_argument("--top", type=int, default=0, metavar="N", help="also the N tests with the most CPU seconds")
    ap.add_argument("--scale", type=float, default=1.0, help="slowdown to the machine the budget is for")
    args = ap.parse_args(argv)
    tiers = list(TARGETS) if args.tier == "both" else [args.tier]
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the start (a shared machine: compare CPU seconds)")
    for tier in tiers:
        target, budget = TARGETS[tier]
        for i in range(args.repeat or (3 if tier == "fast" else 1)):
            r = run(target, args.top)
            print(f"make {target}: {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU, load {r['load']:.1f} at the end, "
                  f"exit {r['rc']}: {r['summary']}")
            print(f"  x {args.scale:g} = {r['wall'] * args.scale:.0f} s against the budget of {budget:.0f} s")
            for node, wall, cpu in r["top"]:
                print(f"  {cpu:7.2f} s CPU {wall:7.2f} s wall  {node}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
