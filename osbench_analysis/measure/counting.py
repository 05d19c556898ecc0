"""What one guest operation costs the host, counted (issue #32, item 3): host system calls, context
switches (voluntary, involuntary), signals, wake-ups, inter-processor interrupts and FUSE requests
(by opcode) of an environment's own processes, per operation of a probe.

How: the unchanged worker runs the probe for a fixed number of iterations inside the environment
(one batch, no warm-up, no calibration, no settling), once at N1 and once at N2 > N1 iterations; the
host's counters of the processes involved are read around each run, and
``(count(N2) - count(N1)) / (N2 - N1)`` is the count per operation: a sandbox's boot, the
interpreter's start and the worker's own set-up cancel.  Several pairs give min/median/max.

The tool is `perf stat` (linux-perf) over kernel software events and tracepoints, counting per task,
never sampling: every event is counted in the kernel at the moment it happens, so the counts do not
depend on other load on the machine (times do).  The overhead is a counter increment per event and no
trap to a tracer, but the system-call tracepoint puts every call on the kernel's tracing path: about
twice a native getpid's time (benchmarks/counting_overhead.py); strace -c -f, with the same counts,
makes it about a hundred times.  What each counter covers (``COUNTERS``):

* the worker's launch, wrapped as ``perf stat -- <launch argv>``: every process and thread it starts,
  inherited (native: the worker; gVisor: runsc, the Sentry, the gofer, the stub processes that run the
  worker; UML: the UML kernel's processes and threads, its tracer included);
* a FUSE server (started by the environment's session, not by the worker): a second ``perf stat -p``
  attached to its threads for the measured run only (threads it starts during the run are followed
  but folded in only when they exit: the count covers the threads alive when it starts; a warm-up
  run first lets libfuse start its threads);
* FUSE requests are counted where the kernel sends them (tracepoint ``fuse:fuse_request_send``, in the
  requesting task's context: the worker's), one counter per opcode of ``FUSE_OPCODES``;
* voluntary switches are ``sched:sched_switch`` with the task leaving in a sleeping or stopped state
  (``prev_state & 0xff``), involuntary ones the rest of ``context-switches`` (preemptions: these
  depend on other load, the voluntary ones do not);
* wake-ups are ``sched:sched_waking`` (in the waker's context); cross-CPU wake-ups are counted as the
  inter-processor interrupts the processes send (``ipi:ipi_send_cpu`` and ``ipi:ipi_send_cpumask``);
* beside perf's, the kernel's own per-process counters of the launch and every descendant it reaped
  (getrusage of the children, ``rusage_delta``): CPU time in user space and in the host kernel per
  operation (times, inflated by perf's tracing and by other load: a lead, not a price) and voluntary
  and involuntary switches (a cross-check of perf's; the FUSE server is not a reaped child, nor is
  every process of a gVisor sandbox).
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from osbench_analysis.errors import OsbenchError

#: FUSE opcodes counted one by one (linux/fuse.h); any other shows in fuse_requests only.
FUSE_OPCODES = {"LOOKUP": 1, "FORGET": 2, "GETATTR": 3, "SETATTR": 4, "UNLINK": 10, "OPEN": 14, "READ": 15,
                "WRITE": 16, "RELEASE": 18, "FLUSH": 25, "CREATE": 35, "BATCH_FORGET": 42, "STATX": 52}


@dataclass(frozen=True)
class Counter:
    name: str
    event: str
    filter: str = ""
    covers: str = ""


COUNTERS: tuple[Counter, ...] = (
    Counter("syscalls", "raw_syscalls:sys_enter", covers="host system calls entered"),
    Counter("context_switches", "context-switches", covers="host context switches away from the tasks, all kinds"),
    Counter("switches_voluntary", "sched:sched_switch", "prev_state & 0xff",
            covers="switches away while sleeping or stopped (blocking: futex, pipe, ptrace stop)"),
    Counter("cpu_migrations", "cpu-migrations", covers="moves of a task to another CPU"),
    Counter("signals_generated", "signal:signal_generate", covers="signals sent by the tasks"),
    Counter("signals_delivered", "signal:signal_deliver", covers="signals delivered to the tasks' handlers"),
    Counter("wakeups", "sched:sched_waking", covers="wake-ups the tasks make of other tasks"),
    Counter("ipis", "ipi:ipi_send_cpu", covers="inter-processor interrupts sent to one CPU (cross-CPU wake-ups)"),
    Counter("ipis_mask", "ipi:ipi_send_cpumask", covers="inter-processor interrupts sent to a set of CPUs"),
    Counter("fuse_requests", "fuse:fuse_request_send", covers="FUSE requests the kernel sent to a server"),
    *(Counter(f"fuse_{op.lower()}", "fuse:fuse_request_send", f"opcode == {code}", covers=f"FUSE {op} requests")
      for op, code in FUSE_OPCODES.items()),
)
DERIVED = {"switches_involuntary": "context_switches - switches_voluntary (preemptions; load-dependent)"}
#: host system calls by name (issue 42 item 5): every ``syscalls:sys_enter_<name>`` tracepoint counted beside
#: COUNTERS, each as ``BY_NAME_PREFIX + <name>`` (their sum equals ``syscalls``, raw_syscalls:sys_enter's, up to
#: the calls with no tracepoint of their own)
BY_NAME_EVENTS = "syscalls:sys_enter_*"
BY_NAME_PREFIX = "sc_"


class CountingError(OsbenchError):
    """perf cannot count here, or a counted run failed."""


def perf_argv(output: Path, counters=COUNTERS, perf: str = "perf", by_name: bool = False) -> list[str]:
    """`perf stat` in CSV mode, one -e per counter in `counters` order (with its --filter); ``by_name``:
    then every system call's own enter tracepoint (BY_NAME_EVENTS), after them."""
    argv = [perf, "stat", "-x", ",", "-o", str(output)]
    for c in counters:
        argv += ["-e", c.event] + (["--filter", c.filter] if c.filter else [])
    return argv + (["-e", BY_NAME_EVENTS] if by_name else [])


def parse_by_name(text: str) -> dict[str, int]:
    """The ``syscalls:sys_enter_<name>`` lines of perf stat -x, output -> {BY_NAME_PREFIX + name: count}
    (counts of zero kept: a name asked and not made is a count too)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        r = line.split(",")
        if len(r) >= 3 and r[2].startswith("syscalls:sys_enter_") and r[0].replace(".", "", 1).isdigit():
            out[BY_NAME_PREFIX + r[2].removeprefix("syscalls:sys_enter_")] = int(float(r[0]))
    return out


def _split_by_name(text: str) -> tuple[str, dict[str, int]]:
    """perf's output without its by-name lines (for parse_perf_csv) and those lines parsed."""
    keep = "\n".join(ln for ln in text.splitlines() if ",syscalls:sys_enter_" not in ln)
    return keep, parse_by_name(text)


def parse_perf_csv(text: str, counters=COUNTERS) -> dict[str, int | None]:
    """perf stat -x, output -> {counter name: count}, lines matched to `counters` in order (perf prints
    them in the order asked, one per -e); None for '<not supported>' or '<not counted>'."""
    rows = [line.split(",") for line in text.splitlines() if line.strip() and not line.startswith("#")]
    rows = [r for r in rows if len(r) >= 3]
    if len(rows) != len(counters):
        raise CountingError(f"perf stat printed {len(rows)} counters, {len(counters)} were asked "
                            f"(output: {text.strip()[:200]!r})")
    out: dict[str, int | None] = {}
    for c, r in zip(counters, rows):
        if r[2] != c.event:
            raise CountingError(f"perf stat's line {r[2]!r} where {c.event!r} was expected")
        out[c.name] = int(float(r[0])) if r[0].replace(".", "", 1).isdigit() else None
    return out


def rusage_delta(before, after) -> dict:
    """The kernel's own per-process counters of the processes reaped meanwhile (getrusage RUSAGE_CHILDREN:
    the launch and every descendant it waited for; perf's processes too), differenced: CPU time in user
    space and in the host kernel (microseconds: times, so load-sensitive, unlike the counts), voluntary and
    involuntary context switches (a cross-check of perf's, over reaped processes only)."""
    return {"rusage_user_us": round((after.ru_utime - before.ru_utime) * 1e6),
            "rusage_system_us": round((after.ru_stime - before.ru_stime) * 1e6),
            "rusage_nvcsw": after.ru_nvcsw - before.ru_nvcsw, "rusage_nivcsw": after.ru_nivcsw - before.ru_nivcsw}


def with_derived(counts: dict) -> dict:
    cs, vol = counts.get("context_switches"), counts.get("switches_voluntary")
    return {**counts, "switches_involuntary": None if cs is None or vol is None else cs - vol}


def per_operation(low: dict, high: dict, n_low: int, n_high: int) -> dict[str, float | None]:
    """(count(N2) - count(N1)) / (N2 - N1) for every counter both runs have (None where either lacks it)."""
    if n_high <= n_low:
        raise CountingError(f"the second run needs more iterations than the first (got {n_low} then {n_high})")
    keys = list(dict.fromkeys([*low, *high]))
    return {k: (None if low.get(k) is None or high.get(k) is None else (high[k] - low[k]) / (n_high - n_low))
            for k in keys}


def add_counts(a: dict, b: dict) -> dict:
    """Counter by counter sum (None stays None only where both lack it)."""
    keys = list(dict.fromkeys([*a, *b]))
    return {k: None if a.get(k) is None and b.get(k) is None else (a.get(k) or 0) + (b.get(k) or 0) for k in keys}


def summarize(per_op: list[dict]) -> dict[str, dict]:
    """{counter: {min, median, max, n}} over the pairs' per-operation counts."""
    out = {}
    for k in dict.fromkeys(k for d in per_op for k in d):
        v = [d[k] for d in per_op if d.get(k) is not None]
        if v:
            out[k] = {"min": min(v), "median": statistics.median(v), "max": max(v), "n": len(v)}
    return out


def perf_available(perf: str = "perf") -> tuple[bool, str]:
    """Whether `perf stat` counts the tracepoints here (needs linux-perf and tracefs; root or
    perf_event_paranoid <= -1 for tracepoints)."""
    exe = shutil.which(perf)
    if exe is None:
        return False, "perf not on PATH (apt-get install linux-perf)"
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"osbench-perf-check-{os.getpid()}.csv"
    try:
        r = subprocess.run([*perf_argv(tmp, COUNTERS[:3], exe), "--", "true"], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            return False, f"perf stat failed: {r.stderr.strip()[:200]}"
        counts = parse_perf_csv(tmp.read_text(), COUNTERS[:3])
        return (counts["syscalls"] is not None, "perf stat counts raw_syscalls:sys_enter"
                if counts["syscalls"] is not None else "perf stat cannot count tracepoints here")
    except (OSError, subprocess.TimeoutExpired, CountingError) as e:
        return False, f"perf stat failed: {e}"
    finally:
        tmp.unlink(missing_ok=True)


def perf_version(perf: str = "perf") -> str:
    try:
        return subprocess.run([perf, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


# ------------------------------------------------------------------ one counted run


def _request(probe: str, iterations: int, workdir: str | None, worker_cpu: int | None):
    from osbench_analysis.worker.request import WorkerRequest

    return WorkerRequest(probe=probe, params={}, min_batch_ns=0, warmup=0, batches=1, max_iterations=iterations,
                         worker_cpu=worker_cpu, workdir=workdir, iterations=iterations, settle_s=0.0,
                         binaries_facts=False)


def _server_pid(sess) -> int | None:
    server = getattr(sess, "server", None)   # a session with a server process of its own (FUSE)
    return server.pid if server is not None and server.poll() is None else None


def counted_run(sess, probe: str, iterations: int, *, cpu: int = 0, timeout_s: float = 300.0,
                perf: str = "perf", by_name: bool = False) -> dict:
    """One worker running `probe` `iterations` times inside the open session `sess`, counted:
    {counter: count} of the worker's launch (everything it starts) plus the session's server, if any."""
    from osbench_analysis.catalog import registry
    from osbench_analysis.store import owners
    from osbench_analysis.worker import launch
    from osbench_analysis.paths import default_workdir

    env = sess.env
    spec = registry.get_probe(probe)
    scratch = Path(sess.scratch) / f"count-{probe}-{iterations}-{time.monotonic_ns()}"
    scratch.mkdir(parents=True)
    private = str(owners.private_dir("osbench-", sess.workdir_root or default_workdir())) if spec.uses_workdir else None
    try:
        req = _request(probe, iterations, sess.inside(private) if private else None,
                       cpu if env.pins_inside else None)
        how = sess.launch(launch.worker_argv(req), cpus={cpu}, output=scratch / "worker.jsonl")
        worker_csv, server_csv = scratch / "worker.csv", scratch / "server.csv"
        how.argv = [*perf_argv(worker_csv, perf=perf, by_name=by_name), "--", *how.argv]
        spid, server = _server_pid(sess), None
        if spid is not None:
            server = subprocess.Popen([*perf_argv(server_csv, perf=perf, by_name=by_name), "-p", str(spid)],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(0.3)   # perf attaches to every thread before the worker starts
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        outcome = launch.run(how, timeout_s)
        if server is not None:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=30)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if outcome.status != "ok" or not outcome.batches:
            raise CountingError(f"{probe} x{iterations} in {env.name}: {outcome.status}: {outcome.message[:300]}")
        done = sum(int(b.get("iterations", 0)) for b in outcome.batches)
        if done != iterations:
            raise CountingError(f"{probe} in {env.name} ran {done} iterations, {iterations} were asked")
        text, named = _split_by_name(worker_csv.read_text())
        counts = {**with_derived(parse_perf_csv(text)), **named, **rusage_delta(before, after)}
        if server is not None:
            text, named = _split_by_name(server_csv.read_text())
            counts = {**counts, **{f"server_{k}": v for k, v in {**with_derived(parse_perf_csv(text)), **named}.items()
                                   if not k.startswith("fuse")}}
        return counts
    finally:
        if private:
            shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


def count_environment(environment: str, probe: str, *, n_low: int = 2_000, n_high: int = 22_000, pairs: int = 3,
                      cpu: int = 0, perf: str = "perf", by_name: bool = True) -> dict:
    """Per-operation counts of `probe` in `environment`: `pairs` pairs of counted runs at n_low and n_high
    iterations in one session (a warm-up run first), each pair's difference per operation; the
    summary is min/median/max over the pairs."""
    from osbench_analysis import environments
    from osbench_analysis.catalog import registry

    env = environments.get(environment)
    ok = env.availability()
    if not ok:
        raise CountingError(f"environment {environment!r} is not available here: {ok.reason}")
    if not env.serves(registry.get_probe(probe)):
        raise CountingError(f"environment {environment!r} does not serve probe {probe!r}")
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"osbench-count-{os.getpid()}-{environment}"
    pair_rows = []
    with env.session(scratch) as sess:
        counted_run(sess, probe, n_low, cpu=cpu, perf=perf)   # warm-up: the server's threads, the caches
        for _ in range(pairs):
            low = counted_run(sess, probe, n_low, cpu=cpu, perf=perf, by_name=by_name)
            high = counted_run(sess, probe, n_high, cpu=cpu, perf=perf, by_name=by_name)
            pair_rows.append({"low": low, "high": high})
    for row in pair_rows:   # by-name counts no run made are left out (the ~360 names a kernel has)
        for side in ("low", "high"):
            row[side] = {k: v for k, v in row[side].items() if not _by_name_zero(k, pair_rows)}
        row["per_operation"] = per_operation(row["low"], row["high"], n_low, n_high)
    return {"environment": environment, "probe": probe, "n_low": n_low, "n_high": n_high, "cpus": [cpu],
            "pairs": pair_rows, "per_operation": summarize([p["per_operation"] for p in pair_rows])}


def _by_name_zero(key: str, pair_rows: list[dict]) -> bool:
    """A by-name counter (``sc_<name>``, ``server_sc_<name>``) that is zero in every counted run."""
    if not key.removeprefix("server_").startswith(BY_NAME_PREFIX):
        return False
    return all(not r[side].get(key) for r in pair_rows for side in ("low", "high"))


def provenance(argv: list[str], perf: str = "perf") -> dict:
    from osbench_analysis import environments
    from osbench_analysis.hosts import machine

    info = machine.collect_host_info()
    host = {k: v for k, v in vars(info).items() if k not in ("git",)} if hasattr(info, "__dict__") else {}
    env_facts = {}
    for name in environments.names():
        e = environments.get(name)
        if e.arch_class != "monolithic" and e.availability():
            try:
                env_facts[name] = e.facts()
            except Exception as ex:   # a fact that cannot be read is said, not fatal
                env_facts[name] = {"error": str(ex)}
    return {"host": host, "git": machine.git_state(), "perf_version": perf_version(perf),
            "environment_facts": env_facts, "command": [sys.executable, "-m", "osbench_analysis.measure.counting", *argv],
            "counters": [{"name": c.name, "event": c.event, "filter": c.filter, "covers": c.covers}
                         for c in COUNTERS], "derived": DERIVED,
            "by_name": {"event": BY_NAME_EVENTS, "prefix": BY_NAME_PREFIX,
                        "covers": "host system calls entered, one counter per call name (zero in every run: left out)"},
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


#: What the decomposition needs counted: each environment's crossing probe(s) and native's, the same probes.
PLAN: dict[str, tuple[str, ...]] = {
    "native": ("null_syscall", "stat", "open_close"),
    "gvisor": ("null_syscall", "stat"), "gvisor-ptrace": ("null_syscall",), "gvisor-gofer": ("stat",),
    "uml": ("null_syscall",), "fuse": ("stat", "open_close"), "fuse-nocache": ("stat", "open_close"),
}
COUNTS_DIR_NAME = "crossing_counts"


def count_plan(plan: dict[str, tuple[str, ...]] = PLAN, *, pairs: int = 3, n_low: int = 2_000,
               n_high: int = 22_000, log=print) -> list[dict]:
    """count_environment for every (environment, probe) of `plan`; one that cannot be counted here is kept
    as a record saying why (never dropped)."""
    out = []
    for env, probes in plan.items():
        for probe in probes:
            t0 = time.monotonic()
            try:
                rec = count_environment(env, probe, pairs=pairs, n_low=n_low, n_high=n_high)
            except (OsbenchError, OSError, subprocess.SubprocessError) as e:
                rec = {"environment": env, "probe": probe, "error": str(e)}
            rec["wall_s"] = round(time.monotonic() - t0, 1)
            log(f"{env} {probe}: " + (rec.get("error") or ", ".join(
                f"{k} {v['median']:.3g}" for k, v in rec["per_operation"].items()
                if k in ("syscalls", "switches_voluntary", "signals_delivered", "fuse_requests",
                         "server_syscalls"))))
            out.append(rec)
    return out


def main(argv: list[str] | None = None) -> int:
    """python -m osbench_analysis.measure.counting [--envs a,b] [--pairs 3] [--out FILE]: count PLAN, write
    the JSON record (counts and provenance) under data/crossing_counts/."""
    import argparse

    from osbench_analysis.paths import REPO_ROOT

    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m osbench_analysis.measure.counting")
    ap.add_argument("--envs", default=",".join(PLAN))
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--n-low", type=int, default=2_000)
    ap.add_argument("--n-high", type=int, default=22_000)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    ok, why = perf_available()
    if not ok:
        raise CountingError(f"cannot count: {why}")
    unknown = [e for e in a.envs.split(",") if e not in PLAN]
    if unknown:
        raise CountingError(f"--envs {','.join(unknown)!r} not counted (known: {', '.join(PLAN)})")
    record = {"kind": "crossing_counts", "version": 1, "provenance": provenance(argv),
              "records": count_plan({e: PLAN[e] for e in a.envs.split(",")}, pairs=a.pairs, n_low=a.n_low,
                                    n_high=a.n_high)}
    from osbench_analysis.hosts import machine

    out = Path(a.out) if a.out else (REPO_ROOT / "data" / COUNTS_DIR_NAME
                                     / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{machine.host_id()}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
