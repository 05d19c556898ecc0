"""Run a notebook under papermill with a quiet terminal: what the Makefile calls
(`make measure`, `make paper`) in place of `python -m papermill`, with the same
options (`-p NAME VALUE`, `-k`, `--log-level`, `--no-progress-bar`, ...).

    python -m osbench_analysis.papermill_run notebooks/analyze.ipynb build/notebooks/analyze.ipynb -p write_paper True

Two lines papermill's kernels print on every successful run are not warnings a
person can act on, so they are removed where they come from, not filtered:

* ``[IPKernelApp] WARNING | Kernel is running over TCP without encryption``:
  the kernel's own log (its start-up notices, not a cell's output) shows
  errors only (``--IPKernelApp.log_level=ERROR``); the kernel still talks to
  papermill over TCP on localhost.  (ZeroMQ IPC sockets, which avoid the
  warning, lost a reply now and then when two notebooks ran side by side,
  `make paper`: the run then waited for ever);
* ``[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel``: jupyter_client
  sends SIGINT before asking a kernel to shut down (to stop a running cell);
  after a finished run no cell runs, so the kernel is asked to shut down
  without the interrupt (one that does not stop is still killed).

Everything else shows as before: a failing cell, a kernel that dies, a warning
a cell raises (in its output), papermill's own warnings.

Ctrl-C (SIGINT to the terminal's foreground group: make and this process; the
kernel runs in a session of its own) is passed on to the kernel as an
interrupt, so the cell running stops the way Ctrl-C stops `osbench run`: the
runner keeps its journal, ends its environments (workers, FUSE mounts, scratch
folders) and raises the one line saying what was kept and how to resume
(measure/runner.py).  That line, not the notebook's traceback, is what this
prints (exit 130); before, papermill gave up at once ("Aborted!") and the
kernel died without cleaning up.  A second Ctrl-C stops this process at once.
"""
from __future__ import annotations

import os
import signal
import sys

#: set for the kernels this runner starts: the measuring bar (measure/progress.py) then draws on the terminal
RUNNER_ENV = "OSBENCH_PAPERMILL"
#: the kernel managers this process started (Ctrl-C is passed on to their kernels), and whether it was
_KERNELS: list = []
_INTERRUPTED: list = []


def kernel_manager_class():
    """jupyter_client's AsyncKernelManager with a quiet kernel log, without the interrupt before shutdown."""
    from jupyter_client.manager import AsyncKernelManager

    class QuietKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw) -> None:
            # the measuring bar (measure/progress.py) draws on the terminal of a kernel this runner started
            kw["env"] = {**(kw.get("env") or os.environ), RUNNER_ENV: "1"}
            kw["extra_arguments"] = [*(kw.get("extra_arguments") or []), "--IPKernelApp.log_level=ERROR"]
            await super().start_kernel(**kw)
            _KERNELS.append(self)

        async def _async_interrupt_kernel(self) -> None:
            if self.shutting_down:      # shutdown_kernel's interrupt: nothing runs after a finished run
                return
            await super()._async_interrupt_kernel()

    return QuietKernelManager


def engine():
    """papermill's nbclient engine, starting kernels with kernel_manager_class()."""
    from papermill.engines import NBClientEngine

    class QuietEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
            kwargs.setdefault("kernel_manager_class", kernel_manager_class())
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    return QuietEngine


def execute_notebook(input_path, output_path, **kwargs):
    """papermill.execute_notebook with the quiet engine (tests and scripts)."""
    import papermill

    use()
    return papermill.execute_notebook(str(input_path), str(output_path), **kwargs)


def use() -> None:
    """Make the quiet engine papermill's default in this process."""
    from papermill.engines import papermill_engines

    papermill_engines.register(None, engine())
    papermill_engines.register("osbench", engine())


def without_iri_grammar() -> None:
    """Spare this process jsonschema's optional IRI format check: importing it (rfc3987_syntax) builds a
    grammar, 0.75 s of papermill's 1.4 s start; nbformat's notebook schema has no IRI field.  A process
    that already imported it keeps it."""
    sys.modules.setdefault("rfc3987_syntax", None)


def _interrupt_kernels(signum, frame) -> None:
    """SIGINT: an interrupt to every running kernel (the cell stops as Ctrl-C stops it); a second one, or
    one before any kernel runs, stops this process (KeyboardInterrupt)."""
    running = [k for k in _KERNELS if k.has_kernel]
    if _INTERRUPTED or not running:
        raise KeyboardInterrupt
    _INTERRUPTED.append(True)
    for k in running:
        try:   # the kernel's process group (its own session): its workers run in groups of their own
            os.killpg(k.provisioner.pgid or k.provisioner.pid, signal.SIGINT)
        except (OSError, AttributeError):
            pass


def main(argv=None) -> int:
    """papermill's command line; Ctrl-C ends in one line naming what was interrupted (exit 130)."""
    without_iri_grammar()
    import click
    from papermill.cli import papermill
    from papermill.exceptions import PapermillExecutionError

    use()
    args = list(sys.argv[1:] if argv is None else argv)
    notebook = next((a for a in args if a.endswith(".ipynb")), "the notebook")
    signal.signal(signal.SIGINT, _interrupt_kernels)
    try:
        return papermill.main(args=args, prog_name="papermill", standalone_mode=False) or 0
    except PapermillExecutionError as e:
        if e.ename != "KeyboardInterrupt" and not _INTERRUPTED:
            raise
        # the runner's own line (what was kept, how to resume), as `osbench run` prints it (cli.main)
        what = e.evalue if e.ename == "KeyboardInterrupt" else f"{e.ename}: {e.evalue}"
        print(f"{notebook}: interrupted{': ' + what if what else f' in cell {e.exec_count}'}", file=sys.stderr)
    except (click.exceptions.Abort, KeyboardInterrupt):
        print(f"{notebook}: interrupted{' again: stopped at once' if _INTERRUPTED else ' before its kernel ran'}",
              file=sys.stderr)
    except click.ClickException as e:    # a usage error: as papermill prints it
        e.show()
        return e.exit_code
    except Exception as e:       # after a Ctrl-C (a kernel interrupted while it started, ...): one line too
        if not _INTERRUPTED:
            raise
        print(f"{notebook}: interrupted ({type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]})",
              file=sys.stderr)
    return 130


if __name__ == "__main__":
    sys.exit(main())
