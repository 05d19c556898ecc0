"""A clean terminal (issue 30): the notebooks the Makefile runs print no kernel warning or error line on a
successful run, and a real warning or error still shows."""
from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from osbench_analysis import papermill_run

REPO = Path(__file__).resolve().parents[1]
NOISE = re.compile(r"WARNING|ERROR|Warning:|KeyboardInterrupt")


def tiny_notebook(path: Path, *cells: str) -> Path:
    """A notebook with a tagged parameters cell and the given code cells, as nbformat 4 JSON."""
    def code(src, tags=()):
        return {"cell_type": "code", "execution_count": None, "id": f"c{abs(hash(src)) % 10**8:08d}",
                "metadata": {"tags": list(tags)}, "outputs": [], "source": src}
    nb = {"cells": [code("x = 1  # a parameter", ["parameters"]), *map(code, cells)],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))
    return path


def run(tmp_path, *cells: str) -> tuple[subprocess.CompletedProcess, dict]:
    """The notebook through `python -m osbench_analysis.papermill_run`, as `make paper` runs them."""
    nb = tiny_notebook(tmp_path / "in.ipynb", *cells)
    out = tmp_path / "out.ipynb"
    done = subprocess.run([sys.executable, "-m", "osbench_analysis.papermill_run", "--no-progress-bar",
                           "--log-level", "WARNING", "-k", "python3", str(nb), str(out), "-p", "x", "2"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return done, (json.loads(out.read_text()) if out.exists() else {})


def test_the_makefile_runs_notebooks_through_the_quiet_runner():
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^PAPERMILL\s*:=.*-m osbench_analysis\.papermill_run", makefile, re.M)
    assert "-m papermill" not in makefile


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_shutting_down_sends_no_interrupt_but_an_interrupt_asked_for_is_sent(monkeypatch):
    from jupyter_client.manager import AsyncKernelManager

    sent = []

    async def interrupt(self):
        sent.append(self.shutting_down)
    monkeypatch.setattr(AsyncKernelManager, "_async_interrupt_kernel", interrupt)
    km = papermill_run.kernel_manager_class()(kernel_name="python3")
    assert km.transport == "tcp"   # IPC sockets lost a reply now and then with two notebooks side by side
    km.shutting_down = True       # what shutdown_kernel sets before it would interrupt
    asyncio.run(km._async_interrupt_kernel())
    km.shutting_down = False      # a person's interrupt, a timeout
    asyncio.run(km._async_interrupt_kernel())
    assert sent == [False]


@pytest.mark.slow
def test_a_successful_run_prints_no_warning_or_error_and_a_real_warning_stays_in_its_cell(tmp_path):
    done, nb = run(tmp_path, "from osbench_analysis import notebook\nnotebook.show_figures()\n"
                             "import os, warnings\nwarnings.warn('a real warning')\nprint(os.environ.get('OSBENCH_PAPERMILL'))")
    assert done.returncode == 0, done.stderr
    noise = [line for line in (done.stdout + done.stderr).splitlines() if NOISE.search(line)]
    assert noise == [], done.stderr[-4000:]
    outputs = [o for c in nb["cells"] for o in c.get("outputs", [])]
    text = "".join("".join(o.get("text", "")) for o in outputs)
    assert "UserWarning: a real warning" in text and "1\n" in text   # the kernel knows who started it


@pytest.mark.slow
def test_a_failing_cell_still_fails_the_run_with_its_error(tmp_path):
    done, _ = run(tmp_path, "raise ValueError('the error a person must see')")
    assert done.returncode != 0
    assert "the error a person must see" in done.stderr


@pytest.mark.slow
def test_two_notebooks_side_by_side_both_finish(tmp_path):
    """make paper runs analyze and reference_comparisons at once: neither may wait for a lost reply."""
    import concurrent.futures

    cells = "import time\n" + "\n".join(f"time.sleep(0.05); print({i})" for i in range(3))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(run, tmp_path / name, cells) for name in ("a", "b")]
        for r in runs:
            done, _ = r.result(timeout=300)
            assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_runner_starts_without_the_iri_grammar_and_still_validates_notebooks(tmp_path):
    """papermill's start (issue 33): jsonschema's optional IRI check is not imported by the runner; nbformat
    still validates a notebook against its schema and still refuses a broken one."""
    code = ("import sys; from osbench_analysis import papermill_run; papermill_run.without_iri_grammar(); "
            "import papermill.cli, nbformat; nb = nbformat.read(sys.argv[1], 4); nbformat.validate(nb); "
            "nb.cells[0]['cell_type'] = 'no such type'\n"
            "try:\n    nbformat.validate(nb); print('accepted')\n"
            "except nbformat.ValidationError: print('refused', 'rfc3987_syntax' in sys.modules and "
            "sys.modules['rfc3987_syntax'] is not None)")
    out = subprocess.run([sys.executable, "-c", code, str(REPO / "notebooks" / "analyze.ipynb")], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["refused", "False"]
