"""The guests' round of `make all` projected on another machine (prints figures; asserts nothing).

    .venv/bin/python benchmarks/guest_round_projection.py                       # the figures of 2026-11-28
    .venv/bin/python benchmarks/guest_round_projection.py --seconds xen-linux=46.2,mach=5.5 --factor 2.5
    .venv/bin/python benchmarks/guest_round_projection.py --round data/campaigns/ID-vm-mach ...   # a sealed round

Each guest's boot is stood in for by a pause of its seconds x --factor x --scale, and the runner's own
scheduler (measure/rounds._count_side_by_side, on two CPUs) boots them: with no budget (every guest
guest_boots times, the full profile's way and the quick profile's until issue 37) and with the quick profile's
budget (measure/config.py: each guest once, a repeat only if it ends within the budget, judged by the first
boot).  Printed: when the last boot ends (rescaled to seconds) and which repeats the budget left out.

The seconds: what one boot of each guest takes on a quiet machine; by default the QEMU CPU seconds of one
quick boot of each guest measured on a 2-vCPU Zen 4 (2026-11-28: the QEMU process's user + system time, which
a busy host does not change much, where its wall time was 2-3 times longer); --round reads each guest's first
boot's wall seconds from a sealed round's manifests (config["guest_budget"]).  --factor 2.5: emulation 2.5
times slower (the Zen 3 EPYC of issue 37).  What the budget is in seconds of this machine is the point: the
same --budget on a slower machine leaves more repeats out.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from osbench_analysis.environments import Environment, Session  # noqa: E402
from osbench_analysis.measure import config  # noqa: E402
from osbench_analysis.measure.plan import _EnvRun  # noqa: E402
from osbench_analysis.measure.rounds import _count_side_by_side  # noqa: E402
from osbench_analysis.worker.launch import WorkerOutcome  # noqa: E402

#: QEMU CPU seconds of one quick boot (guest_batches 5) of each guest, 2-vCPU Zen 4, 2026-11-28 (xen-linux with
#: Xen's bootscrub=false; 46.2 and 47.6 without it), in make measure-guests-round
SECONDS = {"xen-linux": 31.0, "linux-tcg": 11.4, "linux-tcg-nomitig": 11.4, "mach": 5.5, "sel4": 5.4,
           "sel4-slowpath": 4.3}
#: the start-up allowances the budget's order reads (Environment.round_startup_s), per guest
STARTUP = {"xen-linux": 150.0, "linux-tcg": 90.0, "linux-tcg-nomitig": 90.0, "mach": 15.0, "sel4": 10.0,
           "sel4-slowpath": 10.0}


class _Pause(Session):
    def run_round(self, jobs, *, cpus):
        time.sleep(self.env.boot_s)
        for _ in jobs:
            yield WorkerOutcome("ok", 0, "", [{"batch": 0, "warmup": False, "iterations": 1, "elapsed_ns": 1}],
                                self.env.boot_s / len(jobs), {})


class _Bar:
    n = total = 0

    def write(self, *_):
        pass

    def set_postfix_str(self, *_, **__):
        pass

    def refresh(self):
        pass


def project(seconds: dict[str, float], factor: float, budget: float | None, scale: float) -> tuple[float, list]:
    """(when the last boot ends, in seconds at --factor; the repeats left out) under the runner's scheduler."""
    cfg = config.make_config("quick", probes=["null_syscall"], variants={}, guest_boots=2)
    cfg.guest_budget_s = budget * scale if budget is not None else None
    conds = [config.Condition("null_syscall", {}, "same_cpu")]
    parts = []
    with tempfile.TemporaryDirectory(prefix="osbench-projection-") as tmp:
        for name, s in seconds.items():
            env = type(name, (Environment,), {"name": name, "time_unit": "guest instructions",
                                              "session_class": _Pause, "round_startup_s": STARTUP.get(name, 0.0),
                                              "placements": ("same_cpu",)})()
            env.boot_s = s * factor * scale
            parts.append(_EnvRun(env, _Pause(env, Path(tmp)), name, conditions=list(conds)))
        t0 = time.monotonic()
        record = _count_side_by_side(parts, {id(p): 2 for p in parts}, set(), cfg, [0, 1], Path(tmp),
                                     lambda *a: None, _Bar())
        took = (time.monotonic() - t0) / scale
    return took, [n for n, g in record["guests"].items() if g["left_out"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", help="guest=seconds,... of one boot on a quiet machine (default: Zen 4's)")
    ap.add_argument("--round", nargs="*", help="sealed guest campaigns: their first boots' wall seconds")
    ap.add_argument("--factor", type=float, nargs="*", default=[1.0, 2.5], help="emulation this many times slower")
    ap.add_argument("--budget", type=float, default=config.PROFILES["quick"]["guest_budget_s"])
    ap.add_argument("--scale", type=float, default=0.02, help="the pauses' seconds per projected second")
    args = ap.parse_args(argv)
    seconds = dict(SECONDS)
    if args.seconds:
        seconds = {k: float(v) for k, v in (kv.split("=") for kv in args.seconds.split(","))}
    if args.round:
        guests = {}
        for d in args.round:
            guests.update(json.loads((Path(d) / "manifest.json").read_text())["config"]["guest_budget"]["guests"])
        seconds = {n: g["first_boot_s"] for n, g in guests.items() if g.get("first_boot_s")}
    print("one boot each: " + ", ".join(f"{n} {s:.1f} s" for n, s in seconds.items()))
    for factor in args.factor:
        for budget in (None, args.budget):
            took, out = project(seconds, factor, budget, args.scale)
            what = "no budget (2 boots each)" if budget is None else f"budget {budget:.0f} s"
            print(f"x{factor:g} {what:26s}: the guests' boots end at {took:6.1f} s; repeats left out: "
                  f"{', '.join(out) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
