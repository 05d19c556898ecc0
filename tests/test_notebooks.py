"""The notebooks run unchanged under papermill, stay thin and are stored clean;
a notebook run and the CLI with the same parameters do the same thing."""
import json
import re
from pathlib import Path

import pytest

from osbench_analysis import analysis, cli, paper, store

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TINY = dict(probes=["null_syscall", "pipe_pingpong"], runs=2, batches=2, min_batch_ms=1.0, precision_target=0.0)


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_is_committed_clean_with_a_tagged_parameters_cell(path):
    import nbformat  # nbformat and papermill take 1-3 s to import: not at collection
    import papermill as pm

    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert all(not c.outputs and c.execution_count is None for c in code)
    for line in code[0].source.splitlines():  # literals only, each explained
        assert "#" in line and "(" not in line.split("#")[0], line
    # papermill must understand every line, or `papermill --help-notebook` and type hints silently drop it
    assert len(pm.inspect_notebook(str(path))) == len(code[0].source.splitlines())


@pytest.fixture(scope="module")
def notebook_campaign(tmp_path_factory):
    """run_campaign.ipynb executed with tiny parameters: (campaigns root, tmp folder)."""
    import papermill as pm

    tmp = tmp_path_factory.mktemp("nb")
    root = tmp / "campaigns"
    pm.execute_notebook(str(NOTEBOOKS / "run_campaign.ipynb"), str(tmp / "run.ipynb"), kernel_name="python3",
                        parameters=dict(TINY, output=str(root), campaign_id="nb"), progress_bar=False)
    return root, tmp


@pytest.mark.slow
def test_run_notebook_seals_a_campaign_of_the_asked_probes(notebook_campaign):
    root, tmp = notebook_campaign
    c = store.load_campaign("nb", root)
    assert set(c.samples["probe"]) == set(TINY["probes"])
    assert c.samples.groupby(["probe", "placement"])["run"].nunique().eq(TINY["runs"]).all()


@pytest.mark.slow
def test_run_notebook_and_cli_give_the_same_configuration(notebook_campaign):
    root, tmp = notebook_campaign
    assert cli.main(["run", "--probes", ",".join(TINY["probes"]), "--runs", "2", "--batches", "2",
                     "--min-batch-ms", "1", "--precision-target", "0", "--output", str(root), "--campaign-id", "cli",
                     "--no-progress"]) == 0
    a, b = (json.loads((root / i / store.MANIFEST_FILE).read_text())["config"] for i in ("nb", "cli"))
    for cfg in (a, b):
        cfg.pop("campaign_id"), cfg.pop("campaign_set")
    assert a == b


@pytest.mark.slow
def test_analyze_notebook_writes_the_paper_files_without_errors(notebook_campaign):
    import nbformat
    import papermill as pm

    root, tmp = notebook_campaign
    gen = tmp / "generated"
    pm.execute_notebook(str(NOTEBOOKS / "analyze.ipynb"), str(tmp / "analyze.ipynb"), kernel_name="python3",
                        parameters=dict(campaigns=["nb"], root=str(root), out_dir=str(gen), n_resamples=300),
                        progress_bar=False)
    assert (gen / "per_op_forest.pdf").is_file() and (gen / "macros.tex").is_file()
    executed = nbformat.read(tmp / "analyze.ipynb", as_version=4)
    assert not any(o.get("output_type") == "error" for cell in executed.cells for o in cell.get("outputs", []))
    macros = (gen / "macros.tex").read_text()
    assert r"\newcommand{\osbNullSyscallSameCpu}" in macros and r"\newcommand{\osbPipePingpongCrossCpu}" in macros
