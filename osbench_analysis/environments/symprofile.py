"""Where a Linux guest's instructions go, function by function (issue 39): one boot of a linux-tcg guest
with osbench's symbol-profile plugin (probes/plugin/osb_symprof.c, QEMU plugin API v1) counting every
executed instruction by address within each batch's probe loop, and the kernel's own symbols read in the
same boot.

- The window: the harness's indirect call of the probe's loop (osb_run, between its two CLOCK_MONOTONIC_RAW
  reads) to the instruction after it, found in osbench-guest-init's disassembly (`loop_marks`).  Everything
  the guest executes meanwhile is counted: the probe, the kernel, its interrupts, the partner process or
  thread; what a batch's `elapsed` counts, less the two clock reads.
- Idle time: under ``-icount shift=0,sleep=off`` the clock of a guest with nothing to run jumps to its next
  timer, so a batch whose parties all wait (a wake-up left to a timer) counts more than it executes; the
  difference is a row of its own (`IDLE`).
- The names: Debian's image packages hold no System.map (an 83-byte placeholder; the real one is in the
  -dbg package, about 1 GB), so the boot's PID 1 is first osbench-kallsyms-init (probes/guest/
  kallsyms_init.c), which writes /proc/kallsyms' text symbols to QEMU's debug console and then execs the
  ordinary osbench-guest-init (the same PID 1, the same jobs).  With nokaslr the addresses are those of
  every boot of that kernel.  User-space addresses are named from the init's own symbols (nm).
- The jobs run with a fixed batch size (no calibration): one warm-up batch, `MEASURED` measured batches; the
  cleanest measured window's counts (the fewest instructions per operation: another task's work only adds)
  divided by its iterations are instructions per operation, per function.

    prof = symprofile.profile("linux-tcg-6.12", [("null_syscall", {}), ...])  # a DataFrame
    symprofile.save(prof, folder)                                               # data/kernel_profiles/"""
from __future__ import annotations

import bisect
import json
import re
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from osbench_analysis.environments import hostops, linux_tcg, qemu
from osbench_analysis.paths import PROBES_DIR

BUILD = qemu.GUESTS_DIR / "profile"
PLUGIN = BUILD / "osb-symprof.so"
KALLSYMS_INIT = BUILD / "osbench-kallsyms-init"
GUEST_INIT = linux_tcg.VMLINUZ.parent / "osbench-guest-init"
SOURCES = {PLUGIN: PROBES_DIR / "plugin" / "osb_symprof.c", KALLSYMS_INIT: PROBES_DIR / "guest" / "kallsyms_init.c"}
FLAGS = {PLUGIN: ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-shared", "-fPIC"],
         KALLSYMS_INIT: ["-O2", "-Wall", "-static"]}
#: the user half of x86-64's address space: below it the probe and the C library, above it the kernel
USER_TOP = 0x0000800000000000
#: a function below this many instructions per operation, or below this share of its condition's count, is
#: summed into OTHER when saved (a version's profile stays under 100 kB)
KEEP_MIN = 1.0
KEEP_SHARE = 0.005
OTHER = "(other kernel functions)"
#: under -icount sleep=off an idle guest's clock jumps to its next timer: a batch's count then exceeds the
#: instructions executed in its window, and the difference is kept as this pseudo-function
IDLE = "(idle: the clock warped to the next timer)"
IDLE_MIN = 1.0
#: measured batches per condition in a profiled boot, the cleanest kept (as the history keeps each boot's)
MEASURED = 3
COLUMNS = ["environment", "probe", "params_json", "function", "space", "instructions_per_op"]


class ProfileError(RuntimeError):
    pass


def build(folder: Path | None = None) -> list[Path]:
    """The plugin and the kallsyms init (into BUILD, or `folder`), each kept while newer than its source."""
    folder = Path(folder) if folder is not None else BUILD
    folder.mkdir(parents=True, exist_ok=True)
    built = []
    for target, src in SOURCES.items():
        out = folder / target.name
        built.append(out)
        if out.exists() and out.stat().st_mtime >= src.stat().st_mtime:
            continue
        r = subprocess.run(["gcc", *FLAGS[target], "-o", str(out), str(src)], capture_output=True, text=True)
        if r.returncode != 0:
            raise ProfileError(f"building {out.name} failed: {r.stderr.strip()[-400:]}")
    return built


def loop_marks(init: Path = GUEST_INIT) -> tuple[int, int]:
    """(start, end): the address of osb_run's indirect call of the probe loop (the call after a
    clock_gettime call) and of the instruction after it."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(init)], capture_output=True, text=True,
                          check=True).stdout
    body = text.split("<osb_run>:", 1)[1].split("\n\n", 1)[0]
    insns = [(int(m.group(1), 16), m.group(2)) for m in re.finditer(r"^\s*([0-9a-f]+):\s+(.*)$", body, re.M)]
    last_call = ""
    for i, (addr, ins) in enumerate(insns):
        if ins.startswith("call"):
            if "*" in ins and "clock_gettime" in last_call:
                return addr, insns[i + 1][0]
            last_call = ins
    raise ProfileError(f"no probe-loop call after clock_gettime in osb_run of {init}")


def user_symbols(init: Path = GUEST_INIT) -> list[tuple[int, str]]:
    out = subprocess.run(["nm", "-n", str(init)], capture_output=True, text=True, check=True).stdout
    return [(int(a, 16), n) for a, t, n in (l.split()[:3] for l in out.splitlines() if len(l.split()) >= 3)
            if t in "tTwW"]


def parse_kallsyms(text: str) -> list[tuple[int, str]]:
    """The debug console's symbol lines between the markers: sorted (address, name)."""
    body = text.split("OSB kallsyms begin\n", 1)[-1].split("OSB kallsyms end", 1)[0]
    syms = []
    for line in body.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                syms.append((int(parts[0], 16), parts[1]))
            except ValueError:
                continue
    syms.sort()
    return syms


def parse_windows(text: str) -> list[dict[int, int]]:
    """The plugin's windows, in order: address -> instructions."""
    windows: list[dict[int, int]] = []
    for line in text.splitlines():
        if line.startswith("W "):
            windows.append(defaultdict(int))
        elif line and line[0] != "E" and windows:
            a, n = line.split()
            windows[-1][int(a, 16)] += int(n)
    return windows


class Namer:
    """Address -> (function, space) by the nearest symbol at or below it."""

    def __init__(self, kernel: list[tuple[int, str]], user: list[tuple[int, str]]):
        self.k_addr, self.k_name = [a for a, _ in kernel], [n for _, n in kernel]
        self.u_addr, self.u_name = [a for a, _ in user], [n for _, n in user]

    def __call__(self, addr: int) -> tuple[str, str]:
        if addr < USER_TOP:
            i = bisect.bisect_right(self.u_addr, addr) - 1
            return (self.u_name[i] if i >= 0 else "(user)"), "user"
        i = bisect.bisect_right(self.k_addr, addr) - 1
        return (self.k_name[i] if i >= 0 else "(kernel, unnamed)"), "kernel"


def attribute(windows: list[dict[int, int]], batches: list[dict], namer: Namer) -> list[dict]:
    """Per measured batch (warm-ups left out): function -> instructions per operation."""
    if len(windows) != len(batches):
        raise ProfileError(f"{len(windows)} loop windows but {len(batches)} batch lines: they do not pair")
    out = []
    for w, b in zip(windows, batches):
        if b["warmup"]:
            continue
        per: dict[tuple[str, str], float] = defaultdict(float)
        for addr, n in w.items():
            per[namer(addr)] += n / b["iterations"]
        out.append({"job": b["job"], "total": sum(w.values()) / b["iterations"],
                    "elapsed_per_op": b["elapsed_ns"] / b["iterations"], "functions": dict(per)})
    return out


def cleanest(measured: list[dict]) -> list[dict]:
    """Per job, its measured batch with the smallest count per operation (the history keeps each boot's so,
    analysis/versions.py): what another task runs during a batch only ever adds to it."""
    best: dict[int, dict] = {}
    for m in measured:
        if m["job"] not in best or m["elapsed_per_op"] < best[m["job"]]["elapsed_per_op"]:
            best[m["job"]] = m
    return [best[k] for k in sorted(best)]


def profile(env_name: str, conditions: list[tuple[str, dict, int]], cpus: set[int] | None = None,
            timeout_s: float = 1800.0, keep: Path | None = None, kallsyms: Path | None = None):
    """One profiled boot of `env_name` running each (probe, params, iterations) once with a fixed batch;
    a DataFrame (COLUMNS) and the boot's facts.  `keep`: a folder for the raw files (serial, symbols,
    windows).  `kallsyms`: the symbols a profiled boot of the same kernel wrote (nokaslr: the same
    addresses); the boot then runs the ordinary init alone, its jobs as early as a campaign's."""
    import pandas as pd

    from osbench_analysis import environments
    from osbench_analysis.catalog import registry
    from osbench_analysis.worker.request import WorkerRequest

    build()
    env = environments.get(env_name)
    if not env.availability():
        raise ProfileError(f"{env_name}: {env.availability().reason}")
    start, end = loop_marks()
    requests = []
    for probe, params, n in conditions:
        spec = registry.PROBES[probe]
        requests.append(WorkerRequest(probe, registry.resolve_params(spec, params), 1_000_000, 1, MEASURED,
                                      spec.max_iterations, iterations=int(n)))
    with tempfile.TemporaryDirectory(prefix="osbench-profile-") as tmp:
        folder = Path(tmp)
        media = env.boot_media(requests, folder)
        initrd = Path(media[media.index("-initrd") + 1])
        base = initrd.read_bytes()
        if kallsyms is None:
            # PID 1 names the kernel's functions first, then execs the ordinary init (later archives win)
            overlay = qemu.newc([("init", 0o100755, KALLSYMS_INIT.read_bytes()),
                                 ("osb-guest-init", 0o100755, GUEST_INIT.read_bytes())])
            initrd.write_bytes(base + b"\0" * (-len(base) % 512) + overlay)
        else:
            (folder / "kallsyms.txt").write_bytes(Path(kallsyms).read_bytes())
        argv = qemu.qemu_argv(media, cpus) + [
            *(["-debugcon", f"file:{folder / 'kallsyms.txt'}"] if kallsyms is None else []),
            "-plugin", f"{PLUGIN},start={start:#x},end={end:#x},out={folder / 'windows.txt'}"]
        b = qemu.boot(argv, timeout_s, log=folder / "serial.log")
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for name in ("serial.log", "kallsyms.txt", "windows.txt"):
                if (folder / name).exists():
                    (keep / name).write_bytes((folder / name).read_bytes())
        rep = qemu.parse_serial(b.serial)
        if b.status != "ended":
            raise ProfileError(f"{env_name}: the profiled boot ended {b.status}: {rep.panic or b.stderr[-300:]}")
        kernel = parse_kallsyms((folder / "kallsyms.txt").read_text(errors="replace"))
        windows = parse_windows((folder / "windows.txt").read_text())
    if not kernel:
        raise ProfileError(f"{env_name}: the guest wrote no kernel symbols")
    batches = [{**row, "job": k} for k in sorted(rep.jobs) for row in rep.jobs[k].batches]
    namer = Namer(kernel, user_symbols())
    rows = []
    measured = cleanest(attribute(windows, batches, namer))
    for m in measured:
        probe, params, _ = conditions[m["job"]]
        pj = json.dumps(requests[m["job"]].params, sort_keys=True)
        for (fn, space), v in m["functions"].items():
            rows.append({"environment": env_name, "probe": probe, "params_json": pj, "function": fn,
                         "space": space, "instructions_per_op": v})
        # the batch's count beyond the instructions executed: the guest idle, its clock warped to the next timer
        idle = m["elapsed_per_op"] - m["total"]
        if idle > IDLE_MIN:
            rows.append({"environment": env_name, "probe": probe, "params_json": pj, "function": IDLE,
                         "space": "idle", "instructions_per_op": idle})
    checks = {f"{conditions[m['job']][0]} {json.dumps(requests[m['job']].params, sort_keys=True)}":
              {"window_per_op": round(m["total"], 3), "elapsed_per_op": round(m["elapsed_per_op"], 3)}
              for m in measured}
    facts = {"environment": env_name, "version": env.version(), "kernel_args": env.facts().get("kernel_args"),
             "qemu": qemu.qemu_version(), "plugin": "probes/plugin/osb_symprof.c", "loop_marks": [hex(start), hex(end)],
             "kernel_symbols": len(kernel), "iterations": {c[0] + " " + json.dumps(c[1], sort_keys=True): c[2]
                                                            for c in conditions},
             "window_vs_elapsed": checks, "boot_wall_s": round(b.wall_s, 1)}
    return pd.DataFrame(rows, columns=COLUMNS), facts


def compact(prof):
    """Functions under KEEP_MIN instructions per operation, or under KEEP_SHARE of their condition's count,
    summed into one row per condition and space (the idle row is always kept)."""
    import pandas as pd

    total = prof.groupby(["environment", "probe", "params_json"])["instructions_per_op"].transform("sum")
    small = ((prof.instructions_per_op < KEEP_MIN) | (prof.instructions_per_op < KEEP_SHARE * total)) & (
        prof.function != IDLE)
    rest = (prof[small].groupby(["environment", "probe", "params_json", "space"], as_index=False)
            .instructions_per_op.sum().assign(function=OTHER))
    out = pd.concat([prof[~small], rest[COLUMNS]], ignore_index=True)
    out["instructions_per_op"] = out.instructions_per_op.round(3)
    return out.sort_values(["probe", "params_json", "instructions_per_op"], ascending=[True, True, False])


def save(prof, facts: dict, folder: Path) -> Path:
    """`folder`/<environment>.csv (compacted) and .json (the boot's facts)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{facts['environment']}.csv"
    compact(prof).to_csv(path, index=False)
    (folder / f"{facts['environment']}.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    """python -m osbench_analysis.environments.symprofile ENV [ENV...] --out FOLDER --conditions JSON"""
    import argparse
    import time

    ap = argparse.ArgumentParser(description="per-function instruction profiles of linux-tcg guests")
    ap.add_argument("environments", nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--conditions", required=True,
                    help='JSON list of [probe, params, iterations], e.g. [["null_syscall", {}, 4000]]')
    ap.add_argument("--cpus", default="")
    args = ap.parse_args(argv)
    conds = [tuple(c) for c in json.loads(args.conditions)]
    cpus = {int(c) for c in args.cpus.split(",")} if args.cpus else None
    for name in args.environments:
        t0 = time.monotonic()
        prof, facts = profile(name, conds, cpus)
        path = save(prof, facts, args.out)
        print(f"{name}: {path} ({time.monotonic() - t0:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
