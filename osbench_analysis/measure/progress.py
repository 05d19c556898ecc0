"""The measuring bar, where a person sees it.

On a terminal (`osbench run`) it is tqdm's text bar on stderr.  In
JupyterLab it is a live widget (tqdm.auto with ipywidgets).  Under papermill
(`make measure`, `make all`) the kernel's output only lands in the output
notebook, so the bar would be seen by nobody for the whole measurement: the
same bar is then also drawn as text on the terminal papermill runs in (the
kernel's original stderr, which ipykernel keeps open beside the one it
forwards).  Lines written with `write` (an environment starting, finishing)
go to every bar's place.

Its total is what the runner plans (every condition's first runs, the guests'
boots), grown when precision asks for more runs by as many as it projects
(runner._runs_to_go): the remaining time it shows is an estimate, not the
worst case of every condition at max_runs.
"""
from __future__ import annotations

import io
import os
import sys
from pathlib import Path


def _under_papermill() -> bool:
    """Whether this process is a kernel papermill started (osbench's runner, papermill_run.py, says so in the
    kernel's environment; plain papermill, in its parent's command line)."""
    if os.environ.get("OSBENCH_PAPERMILL"):
        return True
    try:
        cmdline = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
    except OSError:
        return False
    return b"papermill" in cmdline


def _in_kernel() -> bool:
    return "ipykernel" in sys.modules and hasattr(sys.stderr, "_original_stdstream_copy")


def terminal_stream():
    """A text stream on the terminal a papermill kernel was started from, or None."""
    if not (_in_kernel() and _under_papermill()):
        return None
    fd = getattr(sys.stderr, "_original_stdstream_copy", None)
    if fd is None:
        return None
    try:
        return io.TextIOWrapper(io.FileIO(os.dup(fd), "w"), line_buffering=True, errors="replace")
    except OSError:
        return None


class Bars:
    """Several tqdm bars driven as one (the notebook's and the terminal's)."""

    def __init__(self, bars, line_files, streams=()):
        self.bars, self.line_files, self.streams = bars, line_files, list(streams)

    @property
    def n(self) -> int:
        return self.bars[0].n

    @property
    def total(self):
        return self.bars[0].total

    @total.setter
    def total(self, value) -> None:
        for b in self.bars:
            b.total = value

    def update(self, n: int = 1) -> None:
        for b in self.bars:
            b.update(n)

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        for b in self.bars:
            b.set_postfix_str(text, refresh=refresh)

    def refresh(self) -> None:
        for b in self.bars:
            b.refresh()

    def write(self, line: str) -> None:
        for b, f in zip(self.bars, self.line_files):
            if not b.disable:
                b.write(line, file=f)

    def close(self) -> None:
        for b in self.bars:
            b.close()
        for s in self.streams:
            try:
                s.close()
            except OSError:
                pass


def bar(*, total: int, initial: int = 0, desc: str, unit: str, disable: bool = False) -> Bars:
    """The bar of one measurement (see the module's doc for where it shows)."""
    from tqdm import tqdm
    from tqdm.auto import tqdm as auto_tqdm

    common = dict(total=total, initial=initial, desc=desc, unit=unit, disable=disable)
    try:
        main = auto_tqdm(**common, file=sys.stderr, dynamic_ncols=True)
    except ImportError:  # a notebook without ipywidgets: the text bar, in the cell's output
        main = tqdm(**common, file=sys.stderr, dynamic_ncols=True)
    # a widget's lines are plain output (stdout), not stderr's error-coloured stream
    from tqdm.notebook import tqdm as notebook_tqdm   # tqdm.auto's class is defined in tqdm.auto, not here

    widget = _in_kernel() and isinstance(main, notebook_tqdm)
    bars, line_files = [main], [sys.stdout if widget else sys.stderr]
    stream = None if disable else terminal_stream()
    if stream is not None:
        # position 0: its own line on its own terminal (tqdm would nest it under the widget otherwise)
        bars.append(tqdm(**common, file=stream, ncols=100, mininterval=1.0, position=0))
        line_files.append(stream)
    return Bars(bars, line_files, [stream] if stream is not None else [])


def say(line: str) -> None:
    """One line for the person watching: stderr on a terminal, the cell's plain
    output in a notebook (stderr would show as an error), and under papermill
    the terminal too."""
    print(line, file=sys.stdout if _in_kernel() else sys.stderr, flush=True)
    stream = terminal_stream()
    if stream is not None:
        with stream:
            stream.write(line + "\n")
