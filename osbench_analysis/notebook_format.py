"""Notebooks stored as JupyterLab 4 saves them, outputs stripped, so that opening
one in JupyterLab does not mark it modified (JupyterLab rewrites the kernelspec
and language_info it gets from the kernel, and a difference is a change).

    python -m osbench_analysis.notebook_format notebooks/*.ipynb          # rewrite in place
    python -m osbench_analysis.notebook_format --check notebooks/*.ipynb  # list those that differ

The metadata is the kernel's own (ipykernel's language_info and the python3
kernelspec of this environment), not typed here, so it follows the Python the
project runs on.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

KERNEL = "python3"


def lab_metadata() -> dict:
    """The notebook metadata JupyterLab 4 writes after talking to this environment's python3 kernel."""
    from ipykernel.ipkernel import IPythonKernel
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    return {"kernelspec": {"display_name": spec.display_name, "language": spec.language, "name": KERNEL},
            "language_info": dict(IPythonKernel.language_info)}


def normalised(text: str) -> str:
    """The notebook as stored: outputs and execution counts stripped, cell metadata
    kept (the parameters tag), notebook metadata as lab_metadata(), nbformat 4.5
    serialisation (what JupyterLab 4 writes: indent 1, sorted keys, final newline)."""
    import nbformat

    nb = nbformat.reads(text, as_version=4)
    nb.nbformat, nb.nbformat_minor = 4, 5
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)     # papermill's timings
    nb.metadata = nbformat.from_dict(lab_metadata())
    return nbformat.writes(nb) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m osbench_analysis.notebook_format", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only list the notebooks that are not stored normalised")
    ap.add_argument("paths", nargs="+", type=Path)
    args = ap.parse_args(argv)
    differ = []
    for path in args.paths:
        text = path.read_text()
        want = normalised(text)
        if text != want:
            differ.append(path)
            if not args.check:
                path.write_text(want)
    for path in differ:
        print(f"{'not normalised' if args.check else 'normalised'}: {path}")
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
