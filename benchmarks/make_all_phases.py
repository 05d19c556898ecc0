"""The phases of `make all` and their seconds (prints figures; asserts nothing).

    .venv/bin/python benchmarks/make_all_phases.py make_all.log          # a log of `make all` already run
    python3 benchmarks/make_all_phases.py --run [TARGET] > make_all.log  # run `make TARGET` (all) here, then the same

Every phase of `make all` opens with a line `[make: N s] ...` (the Makefile's `phase`); this reads them and
prints each phase's wall seconds: the virtualenv's install, the guests' round (beside runsc's build), the rest
of the set-up, the host round (native and the environments timed in ns), the paper and this machine's report.
With --run it also prints the CPU seconds (user + sys) of everything `make` ran, so that a run on a shared,
busy machine can be compared by what it did as well as by how long it waited.  Issue 37's budget: `make all`
from a fresh clone in 10 minutes on the slowest machine drawn.
"""
from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import time

STAMP = re.compile(r"\[make: (\d+) s\] (.*)")
#: (phase, the line that opens it, the line that closes it): the first line matching each pattern
PHASES = [
    ("install (pip/uv)", r"^set-up", r"^installed"),
    ("guests' round", r"measuring: .*all-guests", r"measured: environment all-guests"),
    ("rest of the set-up", r"measured: environment all-guests", r"^set-up done"),
    ("host round", r"measuring: .*all-timed", r"measured: environment all-timed"),
    ("paper and report", r"measured: environment all-timed", r"^make all finished"),
    ("make all", r"^set-up", r"^make all finished"),
]


def stamps(lines) -> list[tuple[int, str]]:
    """(seconds since make started, what) of every phase line, in order."""
    return [(int(m.group(1)), m.group(2).strip()) for line in lines for m in [STAMP.search(line)] if m]


def phases(marks: list[tuple[int, str]]) -> list[tuple[str, int | None]]:
    """Each phase's seconds; None where its opening or closing line is missing (e.g. no guest available)."""
    def first(pattern):
        return next((t for t, what in marks if re.search(pattern, what)), None)

    out = []
    for name, start, end in PHASES:
        t0, t1 = first(start), first(end)
        out.append((name, t1 - t0 if t0 is not None and t1 is not None else None))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", help="a `make all` log (stdout)")
    ap.add_argument("--run", nargs="?", const="all", metavar="TARGET", help="run `make TARGET` here first")
    args = ap.parse_args(argv)
    cpu = None
    if args.run:
        t0 = time.monotonic()
        proc = subprocess.Popen(["make", args.run], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace")
        lines = []
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(line)
        rc = proc.wait()
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (time.monotonic() - t0, ru.ru_utime, ru.ru_stime, rc)
    elif args.log:
        with open(args.log, errors="replace") as f:
            lines = f.read().replace("\r", "\n").splitlines()
    else:
        ap.error("give a log or --run")
    print("\nphase                  seconds", file=sys.stderr)
    for name, secs in phases(stamps(lines)):
        print(f"{name:22s} {secs if secs is not None else '-':>7}", file=sys.stderr)
    if cpu:
        wall, user, system, rc = cpu
        print(f"make {args.run}: exit {rc}, wall {wall:.0f} s, CPU {user + system:.0f} s "
              f"(user {user:.0f}, sys {system:.0f})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
