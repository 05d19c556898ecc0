"""How long exploring takes, this checkout against a base commit, measured A/B interleaved on one
machine in one run (issue 33): `analysis.analyze()` of the committed data (the newest round of each
host with its comparable campaigns: what `make paper` and analyze.ipynb read), the explorer's
redraw after a new probe is picked, and analyze.ipynb's Run All (papermill through
osbench_analysis/papermill_run.py, as `make paper` runs it, kernel start included).

    .venv/bin/python benchmarks/analysis_speed.py [--base REV] [--repeats 3] [--no-notebook]

The base code runs from a `git worktree` of REV (default: where this branch left main, `git
merge-base HEAD main`) on this checkout's data; each repeat runs the base, then this checkout, each
in a fresh process, so that both see the same load (the machine is shared): compare the two columns
of one run, not figures of different runs.  Prints min / median / max seconds of each side, and the
1-minute load average after each repeat (a figure measured under load says so).
Targets: analyze under 3 s, Run All under 8 s, a redraw under 0.5 s.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r'''
import json, os, statistics, sys, time
t = time.perf_counter()
from osbench_analysis.analysis import pipeline
assert pipeline.__file__.startswith(os.getcwd()), pipeline.__file__
out = {"import_s": time.perf_counter() - t}
t = time.perf_counter()
pipeline.analyze()
out["analyze_s"] = time.perf_counter() - t
t = time.perf_counter()
pipeline.analyze()
out["analyze_again_s"] = time.perf_counter() - t
try:
    import ipywidgets  # noqa: F401
except ImportError:
    ipywidgets = None
if ipywidgets is not None:
    import matplotlib
    matplotlib.use("Agg")
    from osbench_analysis.explore import widgets
    from IPython.utils.capture import capture_output
    with capture_output():
        e = widgets.Explorer()
        times = []
        for probe in [p for p in e.probe.options if p != e.probe.value][:4]:
            t = time.perf_counter()
            e.probe.value = probe        # what picking from the list does: refresh() redraws
            times.append(time.perf_counter() - t)
    out["redraw_s"] = statistics.median(times) if times else float("nan")
    out["redraw_max_s"] = max(times) if times else float("nan")
print(json.dumps(out))
'''


def _env(tree: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return dict(env, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")


def _in_process(tree: Path) -> dict:
    r = subprocess.run([sys.executable, "-c", _CHILD], cwd=tree, env=_env(tree), capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{tree}: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _run_all(tree: Path) -> float:
    """analyze.ipynb Run All as `make paper` runs it: papermill through osbench_analysis/papermill_run.py in a
    fresh process, with ``tree``'s package, kernel start included; wall seconds from outside."""
    out = Path(tempfile.mkdtemp(prefix="osbench-speed-nb-")) / "analyze.ipynb"
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "osbench_analysis.papermill_run", str(tree / "notebooks" / "analyze.ipynb"),
                        str(out), "--no-progress-bar", "--cwd", str(tree / "notebooks")],
                       cwd=tree, env=_env(tree), capture_output=True, text=True)
    s = time.perf_counter() - t
    shutil.rmtree(out.parent, ignore_errors=True)
    if r.returncode:
        raise SystemExit(f"{tree}: analyze.ipynb failed: {r.stderr[-2000:]}")
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None, help="commit to compare with (default: git merge-base HEAD main)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-notebook", action="store_true", help="skip analyze.ipynb's Run All")
    args = ap.parse_args()
    base = args.base or subprocess.check_output(["git", "merge-base", "HEAD", "main"], cwd=REPO, text=True).strip()
    tmp = Path(tempfile.mkdtemp(prefix="osbench-speed-"))
    tree = tmp / "base"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), base], cwd=REPO, check=True, capture_output=True)
    # the base tree reads this checkout's campaigns (the same data on both sides)
    (tree / "data" / "campaigns").rename(tmp / "base-campaigns")
    (tree / "data" / "campaigns").symlink_to(REPO / "data" / "campaigns")
    sides = {"base " + base[:10]: tree, "this checkout": REPO}
    got: dict[str, dict[str, list]] = {s: {} for s in sides}
    try:
        for i in range(args.repeats):
            for side, root in sides.items():
                r = _in_process(root)
                if not args.no_notebook:
                    r["run_all_s"] = _run_all(root)
                for k, v in r.items():
                    got[side].setdefault(k, []).append(v)
                load = os.getloadavg()[0]
                got[side].setdefault("load", []).append(load)
                print(f"repeat {i + 1} {side}: " + "  ".join(f"{k}={v:.2f}" for k, v in r.items())
                      + f"  (load {load:.1f})", flush=True)
    finally:
        (tree / "data" / "campaigns").unlink(missing_ok=True)
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nseconds, min / median / max of {args.repeats} interleaved repeats (load: {os.getloadavg()[0]:.1f})")
    keys = [k for k in got[next(iter(got))] if k != "redraw_max_s"]
    print("| what | " + " | ".join(sides) + " |\n|---|" + "---:|" * len(sides))
    for k in keys:
        cells = []
        for side in sides:
            v = got[side].get(k, [])
            cells.append(f"{min(v):.2f} / {statistics.median(v):.2f} / {max(v):.2f}" if v else "-")
        print(f"| {k} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
