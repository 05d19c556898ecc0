"""How often a notebook run under papermill stalls on a widget cell: the estimate table's filter
drawn the old way (its Output filled by capture, ``with output: display(...)``) against today's
(explore.widgets.show_in: the outputs set as the widget's state).  Issue #30's hang of `make paper`.

    python benchmarks/widget_stall.py [--runs 8] [--cells 15]

With capture, nbclient sends the captured outputs back to the kernel on the shell socket while it
waits on that socket for the cell's reply; now and then it never sees the reply (nbclient issue 312).
Each notebook runs with a 20 s cell timeout, so a stall shows as a run of 20 s or more instead of
waiting for ever.  Measured on a 2-vCPU AMD EPYC, 8 runs of 15 filter cells each: capture stalled in
3 of 8 runs, state in 0 of 8."""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import nbformat

from osbench_analysis import papermill_run

SETUP = '''
import pandas as pd
from IPython.display import display
from osbench_analysis import formatting
from osbench_analysis.explore import widgets
n = 330
t = pd.DataFrame({"probe": [f"p{i % 40}" for i in range(n)], "environment": [f"e{i % 7}" for i in range(n)],
                  "host": ["h"] * n, "time": [f"{i} ns" for i in range(n)]})

class Captured(widgets.TableFilter):
    def refresh(self):
        self.output.clear_output(wait=True)
        with self.output:
            display(formatting.show(self.rows()))
'''


def notebook(mode: str, cells: int, path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(SETUP))
    for _ in range(cells):
        nb.cells.append(nbformat.v4.new_code_cell("Captured(t).widget" if mode == "capture" else
                                                  "widgets.table_filter(t)"))
        nb.cells.append(nbformat.v4.new_code_cell("formatting.show(t.head(50))"))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--cells", type=int, default=15)
    args = ap.parse_args()
    timeout = 20
    with tempfile.TemporaryDirectory(prefix="osbench-stall-") as tmp:
        paths = {m: notebook(m, args.cells, Path(tmp) / f"{m}.ipynb") for m in ("capture", "state")}
        walls: dict[str, list[float]] = {m: [] for m in paths}
        for _ in range(args.runs):            # interleaved: the two see the same machine
            for mode, path in paths.items():
                t0 = time.monotonic()
                papermill_run.execute_notebook(path, path.with_suffix(".out.ipynb"), kernel_name="python3",
                                               execution_timeout=timeout, progress_bar=False)
                walls[mode].append(time.monotonic() - t0)
    for mode, w in walls.items():
        stalled = sum(x >= timeout for x in w)
        print(f"{mode:8s} stalled in {stalled} of {len(w)} runs; wall min {min(w):.1f} s, max {max(w):.1f} s")


if __name__ == "__main__":
    main()
