"""The application workloads' system-call mix, counted natively (issue #32, item 4): per workload
operation, how many of each host system call (by name) the worker and every process it starts make.

How: as measure/counting.py, the unchanged worker runs the probe natively for a fixed number of
iterations (one batch, no warm-up or calibration), once at N1 and once at N2 > N1, and
``(calls(N2) - calls(N1)) / (N2 - N1)`` per system call name is the count per operation (the
interpreter's start and the worker's set-up cancel); several pairs give min/median/max.

The tool is ``strace -f -c`` (calls per name, every process and thread the launch starts followed),
not perf's per-name tracepoints: strace names each call itself, from one ptrace stop per call, where
perf would need one of some 350 ``syscalls:sys_enter_*`` events per name (more than perf opens at
once on a small machine).  The cost is time only: every call stops at the tracer twice, about a
hundred times a native getpid's time (benchmarks/counting_overhead.py), so the counted runs are slow;
the counts are the program's own and do not depend on load or on the tracing (the programs do not
poll on time).  A call made a different number of times from run to run (a compiler's memory
allocation, a retry) shows as a spread between pairs.

The output, one JSON record under data/syscall_mix/ named by the time and the host identity key
(written to a temporary file and renamed into place), carries the host record, the host identity
key, strace's and the kernel's versions and the command.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from osbench_analysis.errors import OsbenchError
from osbench_analysis.measure.counting import _request, summarize

MIX_DIR_NAME = "syscall_mix"
#: The workloads counted: registry's family "apps".
WORKLOADS = ("app_compile", "app_tar", "app_kv")
KIND = "syscall_mix"
VERSION = 1

_ROW = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s+(\d+)\s*$")


class SyscallMixError(OsbenchError):
    """The system-call mix could not be counted."""


def strace_argv(output: Path, strace: str = "strace") -> list[str]:
    """strace following every process, counting calls per name (no times: they are the tracer's)."""
    return [strace, "-f", "-c", "-U", "name,calls", "-o", str(output)]


def parse_strace_counts(text: str) -> dict[str, int]:
    """{system call name: calls} from ``strace -c -U name,calls`` output (the total line dropped)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if m and m.group(1) not in ("total", "syscall"):
            out[m.group(1)] = out.get(m.group(1), 0) + int(m.group(2))
    if not out and text.strip():
        raise SyscallMixError(f"strace -c output has no 'name calls' rows: {text[:200]!r}")
    return out


def per_operation(low: dict[str, int], high: dict[str, int], n_low: int, n_high: int) -> dict[str, float]:
    """Calls per operation for each name seen at either size: (high - low) / (n_high - n_low)."""
    if n_high <= n_low:
        raise SyscallMixError(f"n_high ({n_high}) must exceed n_low ({n_low})")
    return {k: (high.get(k, 0) - low.get(k, 0)) / (n_high - n_low) for k in sorted(set(low) | set(high))}


def strace_version(strace: str = "strace") -> str:
    try:
        return subprocess.run([strace, "-V"], capture_output=True, text=True, timeout=10).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError) as e:
        return f"unknown ({e})"


def traced_run(sess, probe: str, iterations: int, *, cpu: int = 0, timeout_s: float = 900.0,
               strace: str = "strace") -> dict[str, int]:
    """One native worker running `probe` `iterations` times under strace -f -c: {name: calls}."""
    from osbench_analysis.catalog import registry
    from osbench_analysis.paths import default_workdir
    from osbench_analysis.store import owners
    from osbench_analysis.worker import launch

    spec = registry.get_probe(probe)
    scratch = Path(sess.scratch) / f"mix-{probe}-{iterations}-{time.monotonic_ns()}"
    scratch.mkdir(parents=True)
    private = str(owners.private_dir("osbench-", sess.workdir_root or default_workdir())) if spec.uses_workdir else None
    try:
        req = _request(probe, iterations, sess.inside(private) if private else None,
                       cpu if sess.env.pins_inside else None)
        how = sess.launch(launch.worker_argv(req), cpus={cpu}, output=scratch / "worker.jsonl")
        out = scratch / "strace.txt"
        how.argv = [*strace_argv(out, strace), "--", *how.argv]
        outcome = launch.run(how, timeout_s)
        if outcome.status != "ok" or not outcome.batches:
            raise SyscallMixError(f"{probe} x{iterations} under strace: {outcome.status}: {outcome.message[:300]}")
        done = sum(int(b.get("iterations", 0)) for b in outcome.batches)
        if done != iterations:
            raise SyscallMixError(f"{probe} under strace ran {done} iterations, {iterations} were asked")
        return parse_strace_counts(out.read_text())
    finally:
        if private:
            shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


def count_workload(probe: str, *, n_low: int = 5, n_high: int = 25, pairs: int = 3, cpu: int = 0) -> dict:
    """Per-operation system calls by name of `probe`, natively: `pairs` pairs of traced runs."""
    from osbench_analysis import environments

    env = environments.get("native")
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"osbench-mix-{os.getpid()}"
    rows = []
    with env.session(scratch) as sess:
        traced_run(sess, probe, n_low, cpu=cpu)   # warm-up: the page cache, the compiler's files
        for _ in range(pairs):
            low, high = traced_run(sess, probe, n_low, cpu=cpu), traced_run(sess, probe, n_high, cpu=cpu)
            rows.append(per_operation(low, high, n_low, n_high))
    names = sorted({k for r in rows for k in r})
    return {"probe": probe, "environment": "native", "n_low": n_low, "n_high": n_high, "pairs": len(rows),
            "per_operation": summarize([{k: r.get(k, 0.0) for k in names} for r in rows])}


def provenance(argv: list[str]) -> dict:
    from osbench_analysis.hosts import identity, machine

    info = machine.collect_host_info()
    host = {k: v for k, v in vars(info).items() if k != "git"}
    return {"host": host, "host_key": identity.host_identity(host).key, "git": machine.git_state(),
            "strace_version": strace_version(), "kernel_release": os.uname().release,
            "command": [sys.executable, "-m", "osbench_analysis.measure.syscall_mix", *argv],
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_atomic(path: Path, record: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    """python -m osbench_analysis.measure.syscall_mix [--pairs 3] [--n-low 5] [--n-high 25] [--out FILE]"""
    import argparse

    from osbench_analysis.paths import REPO_ROOT

    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m osbench_analysis.measure.syscall_mix")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--n-low", type=int, default=5)
    ap.add_argument("--n-high", type=int, default=25)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    if shutil.which("strace") is None:
        raise SyscallMixError("strace is not installed (apt-get install strace); it counts the calls by name")
    prov = provenance(argv)
    records = []
    for probe in WORKLOADS:
        t0 = time.monotonic()
        rec = count_workload(probe, n_low=a.n_low, n_high=a.n_high, pairs=a.pairs)
        rec["wall_s"] = round(time.monotonic() - t0, 1)
        top = sorted(rec["per_operation"].items(), key=lambda kv: -kv[1]["median"])[:5]
        print(f"{probe}: " + ", ".join(f"{k} {v['median']:.3g}" for k, v in top))
        records.append(rec)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = Path(a.out) if a.out else REPO_ROOT / "data" / MIX_DIR_NAME / f"{stamp}-{prov['host_key']}.json"
    print(write_atomic(out, {"kind": KIND, "version": VERSION, "provenance": prov, "records": records}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
