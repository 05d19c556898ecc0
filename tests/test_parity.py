"""Every notebook has a CLI command with the same parameters (and the same
package function behind it): checked mechanically, both ways."""
import argparse
import json
from pathlib import Path

import pytest

from osbench_analysis import cli

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

# notebook -> (command path, parameters only one side has, each with its reason)
PAIRS = {
    "run_campaign.ipynb": (("run",), {"no_progress": "a terminal display switch; notebooks show no bar"}),
    "analyze.ipynb": (("analyze",), {"write_paper": "the command's purpose is writing the files; "
                                                    "the notebook explores unless asked"}),
    "reference_comparisons.ipynb": (("reference",), {"write_paper": "the command's purpose is writing the files; "
                                                                    "the notebook explores unless asked"}),
    "fleet.ipynb": (("fleet", "run"), {"no_progress": "a terminal display switch; notebooks show no bar"}),
}


# notebooks without a command, each with its reason
UNPAIRED = {"explore.ipynb": "one question per cell; its counterpart is the explore module (docs/python_api.md)"}


def _subparser(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> argparse.ArgumentParser:
    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


def cli_parameters(path: tuple[str, ...]) -> set[str]:
    p = _subparser(cli.build_parser(), path)
    return {a.dest for a in p._actions if a.dest not in ("help",) and not isinstance(a, argparse._SubParsersAction)}


def notebook_parameters(name: str) -> set[str]:
    # the notebook's JSON as stored (nbformat format 4; tests/test_notebooks.py reads it with nbformat and
    # papermill): nbformat's import alone is 1 s of jsonschema's IRI grammar, for nothing here
    nb = json.loads((NOTEBOOKS / name).read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    return {line.split("=", 1)[0].strip() for line in source.splitlines() if "=" in line and
            not line.lstrip().startswith("#")}


def test_every_notebook_is_paired_with_a_command():
    assert {p.name for p in NOTEBOOKS.glob("*.ipynb")} == set(PAIRS) | set(UNPAIRED)


@pytest.mark.parametrize("notebook", sorted(PAIRS))
def test_notebook_and_command_take_the_same_parameters(notebook):
    path, exceptions = PAIRS[notebook]
    nb, cmd = notebook_parameters(notebook), cli_parameters(path)
    assert nb - cmd - set(exceptions) == set(), f"{notebook} has parameters `osbench {' '.join(path)}` lacks"
    assert cmd - nb - set(exceptions) == set(), f"`osbench {' '.join(path)}` has options {notebook} lacks"
