"""Do our probes measure what lmbench, UnixBench and osbench measure?

Builds the three peer suites from their source folders (never copied into this
repository; docs/probes.md says where to get them), then runs each primitive
they share with us side by side with our probe, in interleaved rounds (the
order shuffled in every round), every process pinned to one CPU, and prints

    primitive | lmbench | UnixBench | osbench | ours | ours / lowest agreeing peer

as the median over rounds with [min-max].  A peer's figure is what the peer
prints (lmbench: its own timing loop; UnixBench: loops counted in a fixed
window, per loop; osbench: the best of its 5 s of rounds); ours is the median
per-op time of a worker's calibrated batches (10 ms each), or, in the osbench
rows, the best of 30 batches of one group each (osbench's statistic: the best
of its rounds of 100 children or threads, or 1,000,000 blocks; it runs 30 to
1,000 rounds in its 5 s).
"Agreeing" peers are those within 20% of the lowest peer of the row; the
ratio is ours over the lowest of them.  Not a test: it prints figures.

    git clone https://github.com/intel/lmbench /tmp/lmbench
    git clone https://github.com/kdlucas/byte-unixbench /tmp/byte-unixbench
    git clone https://github.com/mbitsnbites/osbench /tmp/osbench
    .venv/bin/python benchmarks/fidelity.py --lmbench /tmp/lmbench \
        --unixbench /tmp/byte-unixbench --osbench /tmp/osbench [--rounds 5] [--cpu 0]

lmbench needs the tirpc headers (Debian: libtirpc-dev); its exec and shell
tests run /tmp/hello, which this script installs for the run only when absent.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from osbench_analysis.catalog import registry
from osbench_analysis.worker.launch import run_worker
from osbench_analysis.worker.main import WorkerRequest

LMBENCH_LIBS = ["lib_timing.c", "lib_mem.c", "lib_stats.c", "lib_debug.c", "getopt.c", "lib_sched.c"]
UB_DURATION_S = 2  # UnixBench's fixed window per run


class BuildError(RuntimeError):
    pass


def _cc(args: list[str], cwd: Path) -> None:
    r = subprocess.run(["cc", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError(f"cc {' '.join(args)} in {cwd} failed:\n{r.stderr[-2000:]}")


def build(lmbench: Path | None, unixbench: Path | None, osbench: Path | None, out: Path) -> dict[str, Path]:
    """Compile the peer programs we compare against into `out`; name -> executable."""
    out.mkdir(parents=True, exist_ok=True)
    exe: dict[str, Path] = {}
    if lmbench:
        src = lmbench / "src"
        rpc = ["-I/usr/include/tirpc"] if Path("/usr/include/tirpc").is_dir() else []
        for prog in ("lat_syscall", "lat_proc", "lat_pipe"):
            _cc(["-O2", "-w", *rpc, "-o", str(out / prog), f"{prog}.c", *LMBENCH_LIBS, "-lm",
                 *(["-ltirpc"] if rpc else [])], src)
            exe[f"lmbench/{prog}"] = out / prog
        _cc(["-O2", "-w", *rpc, "-o", str(out / "hello"), "hello.c"], src)
        exe["lmbench/hello"] = out / "hello"
    if unixbench:
        src = unixbench / "UnixBench" / "src"
        ub = out / "unixbench"
        ub.mkdir(exist_ok=True)
        for prog in ("syscall", "context1", "spawn", "execl"):  # execl must be named execl (UB_BINDIR/execl)
            _cc(["-O3", "-ffast-math", "-w", "-DTIME", "-o", str(ub / prog), f"{prog}.c"], src)
            exe[f"unixbench/{prog}"] = ub / prog
    if osbench:
        src = osbench / "src"
        for prog in ("create_processes", "create_threads", "launch_programs", "mem_alloc"):
            _cc(["-O3", "-w", "-I.", "-o", str(out / f"osbench_{prog}"), f"{prog}.c", "common/time.c",
                 "-pthread", "-lm"], src)
            exe[f"osbench/{prog}"] = out / f"osbench_{prog}"
    return exe


def _pinned(cpu: int):
    return lambda: os.sched_setaffinity(0, {cpu})


def _run(argv: list[str], cpu: int, env: dict | None = None) -> tuple[str, float]:
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, preexec_fn=_pinned(cpu), timeout=120,
                       env={**os.environ, **(env or {})})
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {r.returncode}: {r.stderr[-500:]}")
    return r.stdout + r.stderr, wall


def lmbench_us(exe: Path, *args: str, cpu: int) -> float:
    """lmbench prints 'Name: 0.1234 microseconds'."""
    text, _ = _run([str(exe), *args], cpu)
    m = re.search(r":\s*([0-9.]+)\s+microseconds", text)
    if not m:
        raise RuntimeError(f"no lmbench figure in {text!r}")
    return float(m.group(1))


def unixbench_us(exe: Path, *args: str, cpu: int, by_wall: bool = False) -> float:
    """UnixBench prints COUNT|n|1|lps after a fixed window: per loop = window / n.
    execl's window is measured with time(2) (whole seconds), so for it the wall
    time of the whole chain is used instead."""
    text, wall = _run([str(exe), str(UB_DURATION_S), *args], cpu, env={"UB_BINDIR": str(exe.parent)})
    m = re.search(r"COUNT\|(\d+)\|", text)
    if not m:
        raise RuntimeError(f"no UnixBench count in {text!r}")
    return (wall if by_wall else UB_DURATION_S) * 1e6 / int(m.group(1))


def osbench_us(exe: Path, cpu: int) -> float:
    """osbench prints 'x us / process' (or ns / alloc) after its 5 s."""
    text, _ = _run([str(exe)], cpu)
    m = re.search(r"([0-9.]+)\s+(us|ns) /", text)
    if not m:
        raise RuntimeError(f"no osbench figure in {text!r}")
    return float(m.group(1)) / (1000.0 if m.group(2) == "ns" else 1.0)


def ours_us(probe: str, params: dict, cpu: int, workdir: str | None = None, batches: int = 7,
            best: bool = False) -> float:
    """Our per-op time: the median of 7 calibrated batches of >= 10 ms, or, with ``best``,
    the best of 30 batches of exactly one group each (a grouped probe's group: osbench's
    round of 100 children or threads, or of 1,000,000 blocks), as osbench takes the best of
    its rounds."""
    spec = registry.get_probe(probe)
    resolved = registry.resolve_params(spec, params)
    one_group = spec.batch_multiple(resolved) if best else None
    req = WorkerRequest(probe=probe, params=resolved, min_batch_ns=10_000_000,
                        warmup=1, batches=30 if best else batches, max_iterations=spec.max_iterations,
                        worker_cpu=cpu, workdir=workdir, iterations=one_group)
    out = run_worker(req, timeout_s=300)
    if out.status != "ok":
        raise RuntimeError(f"{probe}: {out.status}: {out.message}")
    per_op = [b["elapsed_ns"] / b["iterations"] / 1e3 for b in out.batches if not b["warmup"]]
    return min(per_op) if best else statistics.median(per_op)


@dataclass
class Row:
    primitive: str
    peers: dict            # peer column -> () -> us
    ours: tuple            # (probe, params)
    uses_workdir: bool = False
    best: bool = False     # ours as the best batch (the peer prints its best round), else the median
    results: dict = field(default_factory=dict)   # column -> [us per round]


def rows(exe: dict[str, Path], cpu: int, file_path: str) -> list[Row]:
    def have(*names):
        return all(n in exe for n in names)

    L = lambda prog, *a: (lambda: lmbench_us(exe[f"lmbench/{prog}"], *a, cpu=cpu))  # noqa: E731
    U = lambda prog, *a, **k: (lambda: unixbench_us(exe[f"unixbench/{prog}"], *a, cpu=cpu, **k))  # noqa: E731
    O = lambda prog: (lambda: osbench_us(exe[f"osbench/{prog}"], cpu=cpu))  # noqa: E731
    out = [
        Row("null syscall", {**({"lmbench": L("lat_syscall", "null")} if have("lmbench/lat_syscall") else {}),
                             **({"UnixBench": U("syscall", "getpid")} if have("unixbench/syscall") else {})},
            ("null_syscall", {})),
        Row("syscall mix (5 calls)", {"UnixBench": U("syscall", "mix")} if have("unixbench/syscall") else {},
            ("syscall_mix", {})),
        Row("stat (tmpfs)", {"lmbench": L("lat_syscall", "stat", file_path)} if have("lmbench/lat_syscall") else {},
            ("stat", {}), uses_workdir=True),
        Row("open+close (tmpfs)", {"lmbench": L("lat_syscall", "open", file_path)}
            if have("lmbench/lat_syscall") else {}, ("open_close", {}), uses_workdir=True),
        Row("pipe round trip", {**({"lmbench": L("lat_pipe")} if have("lmbench/lat_pipe") else {}),
                                **({"UnixBench": U("context1")} if have("unixbench/context1") else {})},
            ("pipe_pingpong", {})),
        Row("fork + exit + wait", {**({"lmbench": L("lat_proc", "fork")} if have("lmbench/lat_proc") else {}),
                                   **({"UnixBench": U("spawn")} if have("unixbench/spawn") else {})},
            ("fork_exit", {})),
        Row("  same, python parent", {}, ("fork_exit", {"parent": "python"})),
        Row("fork 100, then wait", {"osbench": O("create_processes")} if have("osbench/create_processes") else {},
            ("fork_exit", {"outstanding": 100}), best=True),
        Row("fork + exec + wait", {"lmbench": L("lat_proc", "exec")} if have("lmbench/lat_proc") else {},
            ("fork_exec", {})),
        Row("  same, python parent", {}, ("fork_exec", {"parent": "python"})),
        Row("launch 100, then wait", {"osbench": O("launch_programs")} if have("osbench/launch_programs") else {},
            ("fork_exec", {"outstanding": 100}), best=True),
        Row("fork + /bin/sh -c", {"lmbench": L("lat_proc", "shell")} if have("lmbench/lat_proc") else {},
            ("fork_shell", {})),
        Row("exec only (execl)", {"UnixBench": U("execl", by_wall=True)} if have("unixbench/execl") else {},
            ("exec_only", {})),
        Row("thread create 100, join", {"osbench": O("create_threads")} if have("osbench/create_threads") else {},
            ("thread_create_join", {"outstanding": 100}), best=True),
        Row("malloc 10^6 blocks, free", {"osbench": O("mem_alloc")} if have("osbench/mem_alloc") else {},
            ("malloc_free_small", {"blocks": 1_000_000}), best=True),
    ]
    return out


def _fmt(vals: list[float]) -> str:
    if not vals:
        return "—"
    med = statistics.median(vals)
    digits = 3 if med < 10 else 1 if med < 1000 else 0
    return f"{med:.{digits}f} [{min(vals):.{digits}f}–{max(vals):.{digits}f}]"


def ratio(row: Row) -> str:
    peers = {k: statistics.median(v) for k, v in row.results.items() if k != "ours" and v}
    if not peers or not row.results.get("ours"):
        return "—"
    low = min(peers.values())
    agreeing = [v for v in peers.values() if v <= 1.2 * low]
    base = min(agreeing)
    per_round = [o / base for o in row.results["ours"]]
    return f"{statistics.median(per_round):.2f} [{min(per_round):.2f}–{max(per_round):.2f}]"


def table(rs: list[Row]) -> str:
    lines = ["| primitive | lmbench | UnixBench | osbench | ours | ours / lowest agreeing peer |",
             "|---|---|---|---|---|---|"]
    for r in rs:
        probe, params = r.ours
        label = probe + (f" ({','.join(f'{k}={v}' for k, v in params.items())})" if params else "")
        label += ", best of 30 groups" if r.best else ""
        lines.append(f"| {r.primitive} | {_fmt(r.results.get('lmbench', []))} | "
                     f"{_fmt(r.results.get('UnixBench', []))} | {_fmt(r.results.get('osbench', []))} | "
                     f"{_fmt(r.results.get('ours', []))} `{label}` | {ratio(r)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lmbench", type=Path, help="source folder of github.com/intel/lmbench")
    ap.add_argument("--unixbench", type=Path, help="source folder of github.com/kdlucas/byte-unixbench")
    ap.add_argument("--osbench", type=Path, help="source folder of github.com/mbitsnbites/osbench")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=None, help="the CPU everything is pinned to (default: the first allowed)")
    ap.add_argument("--build-dir", type=Path, default=Path("build/fidelity"))
    ap.add_argument("--only", help="comma-separated substrings of primitives to run")
    ap.add_argument("--json", type=Path, help="also write every round's figures here")
    args = ap.parse_args(argv)
    if not (args.lmbench or args.unixbench or args.osbench):
        ap.error("give at least one of --lmbench, --unixbench, --osbench (see the docstring for where to get them)")
    cpu = args.cpu if args.cpu is not None else sorted(os.sched_getaffinity(0))[0]
    exe = build(args.lmbench, args.unixbench, args.osbench, args.build_dir.resolve())
    tmpfs = "/dev/shm" if Path("/dev/shm").is_dir() else None
    scratch = Path(tempfile.mkdtemp(prefix="osbench-fidelity-", dir=tmpfs))
    file_path = scratch / "f"
    file_path.write_bytes(b"x" * 32)
    hello = Path("/tmp/hello")
    installed_hello = False
    if "lmbench/hello" in exe and not hello.exists():
        shutil.copy2(exe["lmbench/hello"], hello)
        installed_hello = True
    try:
        rs = rows(exe, cpu, str(file_path))
        if args.only:
            keys = args.only.split(",")
            rs = [r for r in rs if any(k in r.primitive for k in keys)]
        load = os.getloadavg()
        print(f"# fidelity: {args.rounds} interleaved rounds, pinned to CPU {cpu}; loadavg at start "
              f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)", file=sys.stderr)
        for rnd in range(args.rounds):
            jobs = [(r, col, fn) for r in rs for col, fn in r.peers.items()] + [(r, "ours", None) for r in rs]
            random.shuffle(jobs)
            for r, col, fn in jobs:
                if fn is None:
                    work = None
                    if r.uses_workdir:
                        work = Path(tempfile.mkdtemp(prefix="ours-", dir=tmpfs))
                    try:
                        v = ours_us(*r.ours, cpu=cpu, workdir=str(work) if work else None, best=r.best)
                    finally:
                        if work:
                            shutil.rmtree(work, ignore_errors=True)
                else:
                    v = fn()
                r.results.setdefault(col, []).append(v)
            print(f"# round {rnd + 1}/{args.rounds} done", file=sys.stderr)
        print(table(rs))
        if args.json:
            args.json.write_text(json.dumps({r.primitive + " / " + r.ours[0] + json.dumps(r.ours[1]): r.results
                                             for r in rs}, indent=1))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if installed_hello:
            hello.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
