"""notebooks/reference_comparisons.ipynb: committed thin and stripped, and runs under papermill."""
import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "reference_comparisons.ipynb"


@pytest.fixture(scope="module")
def nb():
    """The notebook's cells as stored (nbformat 4 JSON; tests/test_notebooks.py reads every notebook with
    nbformat and papermill): nbformat's import is 1 s of jsonschema's IRI grammar, for nothing here."""
    raw = json.loads(NOTEBOOK.read_text())
    return SimpleNamespace(cells=[SimpleNamespace(
        cell_type=c["cell_type"], source="".join(c["source"]) if isinstance(c["source"], list) else c["source"],
        metadata=c.get("metadata", {}), outputs=c.get("outputs"), execution_count=c.get("execution_count"))
        for c in raw["cells"]])


def test_committed_without_outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def test_first_code_cell_is_parameters_of_commented_literals(nb):
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "parameters" in first.metadata.get("tags", [])
    for line in first.source.splitlines():
        assert "#" in line, f"parameter without a comment: {line!r}"
        code = line.split("#", 1)[0]
        node = ast.parse(code).body[0]
        assert isinstance(node, ast.Assign)
        ast.literal_eval(node.value)  # raises if not a literal


def test_other_cells_only_call_the_package(nb):
    code = [c for c in nb.cells if c.cell_type == "code"][1:]
    for cell in code:
        tree = ast.parse(cell.source)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.For, ast.While, ast.Lambda)):
                pytest.fail(f"logic in the notebook (belongs in osbench_analysis): {cell.source[:80]!r}")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                assert isinstance(node, ast.ImportFrom) and node.module.partition(".")[0] == "osbench_analysis"


def _run(tmp_path, **parameters):
    import nbformat
    import papermill

    out = tmp_path / "generated"
    papermill.execute_notebook(str(NOTEBOOK), str(tmp_path / "run.ipynb"), kernel_name="python3", progress_bar=False,
                               parameters={"out_dir": str(out), "n_resamples": 300, "write_paper": True, **parameters})
    ran = nbformat.read(tmp_path / "run.ipynb", as_version=4)
    from test_notebooks import assert_figures_shown

    assert_figures_shown(ran, min_images=2)     # the architecture ratios and ours beside the published
    printed = "".join(o.get("text", "") for c in ran.cells if c.cell_type == "code" for o in c.outputs)
    return {p.name for p in out.iterdir()}, printed


@pytest.mark.slow
def test_runs_under_papermill_beside_our_campaigns(tmp_path, tiny_campaign):
    names, printed = _run(tmp_path, root=str(tiny_campaign.path.parent), campaigns=[tiny_campaign.id])
    for stem in ("capture_summary", "source_issues", "headline_claims", "architecture_ratios", "ours_vs_published"):
        assert f"reference_{stem}.csv" in names
    assert {"reference_architecture_ratios.png", "reference_ours_vs_published.pdf", "reference_section.tex"} <= names
    # where the source texts are (CI keeps them beside the checkout) the transcription check runs for real and a
    # mismatch fails here; a clone without them says how to supply them
    from osbench_analysis.reference import sourcecheck as sc

    if sc.default_seeds_dir().is_dir():
        assert re.search(r"All \d+ tables read exactly as in the source texts", printed)
    else:
        assert f"the transcription was not re-checked (set {sc.SEEDS_ENV}" in printed
    assert f"our campaigns: {tiny_campaign.id}" in printed


@pytest.mark.slow
def test_runs_under_papermill_with_no_campaign_yet(tmp_path):
    names, printed = _run(tmp_path, root=str(tmp_path / "empty"))
    assert "showing published data only" in printed
    assert "reference_architecture_ratios.pdf" in names
