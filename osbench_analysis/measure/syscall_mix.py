"""Each application workload's system calls by name, counted natively (issue #32, item 4): what a whole
program asks of the kernel per run, so that the analysis can price it with the per-primitive crossing
costs and set the prediction beside the measured slowdown (analysis/syscall_mix.py).

How: the unchanged worker runs the workload natively for a fixed number of iterations (one batch, no
warm-up or calibration), once at N1 and once at N2 > N1, under ``strace -f -c`` (every process and thread
it starts followed, one count per system call name); ``(calls(N2) - calls(N1)) / (N2 - N1)`` per name is
the count per run of the workload: the interpreter's start and the worker's set-up cancel.  strace is
chosen over perf's per-syscall tracepoints for its names (one counter per call name, no table of
tracepoints to keep); its overhead (a ptrace stop per call, about a hundred times a native getpid, see
measure/counting.py) changes times, not counts.  Counts of a program do not depend on the host's load;
a workload's mix is the same program on every host, and the file records on which host it was taken.

    python -m osbench_analysis.measure.syscall_mix      # (make count-mix) writes data/syscall_mix/<host>.json
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from osbench_analysis.errors import OsbenchError
from osbench_analysis.paths import REPO_ROOT

OUT_DIR = REPO_ROOT / "data" / "syscall_mix"


class MixError(OsbenchError):
    """A workload that could not be counted."""


def parse_strace_summary(text: str) -> dict[str, int]:
    """`strace -c -U name,calls` output -> {name: calls} (the total line left out)."""
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r"\s*([a-z_0-9]+)\s+(\d+)\s*", line)
        if m and m[1] not in ("total", "syscall", "calls"):
            out[m[1]] = out.get(m[1], 0) + int(m[2])
    return out


def per_run(low: dict[str, int], high: dict[str, int], n_low: int, n_high: int) -> dict[str, float]:
    """Calls per run of the workload by name, from two counted runs (a name seen in neither is absent;
    a difference below zero, the harness's noise, counts as zero)."""
    return {k: max(0.0, (high.get(k, 0) - low.get(k, 0)) / (n_high - n_low)) for k in sorted(set(low) | set(high))}


def strace_version() -> str:
    try:
        return subprocess.run(["strace", "-V"], capture_output=True, text=True, timeout=10).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return ""


def counted(sess, probe: str, iterations: int, scratch: Path, timeout_s: float = 300.0) -> dict[str, int]:
    from osbench_analysis.catalog import registry
    from osbench_analysis.measure.counting import _request
    from osbench_analysis.paths import default_workdir
    from osbench_analysis.store import owners
    from osbench_analysis.worker import launch

    out = scratch / f"strace-{probe}-{iterations}.txt"
    private = (str(owners.private_dir("osbench-", sess.workdir_root or default_workdir()))
               if registry.get_probe(probe).uses_workdir else None)
    try:
        how = sess.launch(launch.worker_argv(_request(probe, iterations, private, None)), cpus={0},
                          output=scratch / f"worker-{probe}-{iterations}.jsonl")
        how.argv = ["strace", "-f", "-c", "-U", "name,calls", "-o", str(out), "--", *how.argv]
        outcome = launch.run(how, timeout_s)
    finally:
        if private:
            shutil.rmtree(private, ignore_errors=True)
    done = sum(int(b.get("iterations", 0)) for b in outcome.batches or [])
    if outcome.status != "ok" or done != iterations:
        raise MixError(f"{probe} x{iterations} natively under strace: {outcome.status}: {outcome.message[:300]}")
    return parse_strace_summary(out.read_text())


def count_workloads(probes=None, *, n_low: int = 2, n_high: int = 6, pairs: int = 2) -> dict:
    """{probe: {"pairs": [...], "per_run": {name: median calls per run}}} for the application workloads."""
    from osbench_analysis import environments
    from osbench_analysis.catalog import registry

    if not shutil.which("strace"):
        raise MixError("strace is not installed here: apt-get install strace (make setup installs it)")
    probes = list(probes or registry.APPLICATION_PROBES)
    env = environments.get("native")
    result = {}
    scratch = Path(tempfile.mkdtemp(prefix="osbench-mix-"))
    try:
        with env.session(scratch / "s") as sess:
            for probe in probes:
                counted(sess, probe, n_low, scratch)          # warm-up: caches, the first run's extra work
                runs = [per_run(counted(sess, probe, n_low, scratch), counted(sess, probe, n_high, scratch),
                                n_low, n_high) for _ in range(pairs)]
                names = sorted({k for r in runs for k in r})
                result[probe] = {"n_low": n_low, "n_high": n_high, "pairs": runs,
                                 "per_run": {k: statistics.median(r.get(k, 0.0) for r in runs) for k in names}}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    import argparse

    from osbench_analysis.hosts import identity, machine

    ap = argparse.ArgumentParser(prog="python -m osbench_analysis.measure.syscall_mix", description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", default=str(OUT_DIR))
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args(argv)
    info = machine.collect_host_info().as_dict()
    host = identity.host_identity(info)
    workloads = count_workloads(pairs=args.pairs)
    record = {"host": host.key, "host_label": host.label, "tool": strace_version(),
              "probe_sources_sha256": machine.probe_sources_sha256(), "workloads": workloads}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{host.key}.json"
    fd, tmp = tempfile.mkstemp(dir=out, prefix=".tmp-")       # written whole or not at all
    with os.fdopen(fd, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
    for probe, w in workloads.items():
        top = sorted(w["per_run"].items(), key=lambda kv: -kv[1])[:5]
        print(f"{probe}: {sum(w['per_run'].values()):.0f} calls per run; most: "
              + ", ".join(f"{k} {v:.0f}" for k, v in top))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
