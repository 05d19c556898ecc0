"""The notebooks run unchanged under papermill, stay thin and are stored clean;
a notebook run and the CLI with the same parameters do the same thing."""
import json
import re
from pathlib import Path

import pytest

from osbench_analysis import cli
from osbench_analysis.analysis import pipeline as analysis
from osbench_analysis.report import paper
from osbench_analysis.store import campaigns as store

# its first test pays for the notebook tooling's imports (6-10 s): the whole file is in the full suite (make test), not the fast tier
pytestmark = pytest.mark.slow

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TINY = dict(probes=["null_syscall", "pipe_pingpong"], runs=2, batches=2, min_batch_ms=1.0, precision_target=0.0)


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_is_committed_clean_with_a_tagged_parameters_cell(path):
    import nbformat  # nbformat and papermill take 1-3 s to import: not at collection
    import papermill as pm

    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    kept = [i for i, c in enumerate(code) if c.outputs or c.execution_count is not None]
    assert not kept, (f"{path.name}: code cells {kept} are committed with outputs or an execution count: run "
                      "`.venv/bin/python -m osbench_analysis.notebook_format notebooks/*.ipynb` before committing")
    for line in code[0].source.splitlines():  # literals only, each explained
        assert "#" in line and "(" not in line.split("#")[0], line
    # papermill must understand every line, or `papermill --help-notebook` and type hints silently drop it
    assert len(pm.inspect_notebook(str(path))) == len(code[0].source.splitlines())


def test_jupyterlab_opens_at_the_root_and_every_link_of_the_notebooks_resolves():
    """JupyterLab starts at the repository root (README), so that a link from a notebook or from
    notebooks/README.md to docs/ opens (it was a 404 when JupyterLab started in notebooks/)."""
    readme = (NOTEBOOKS.parent / "README.md").read_text()
    starts = re.findall(r"^\.venv/bin/jupyter lab\b(.*)$", readme, re.M)
    assert starts and all(not s.split("#")[0].strip() for s in starts), starts   # no folder: the root
    assert "notebooks/README.md" in readme.split("```sh\n.venv/bin/jupyter lab")[1][:400]
    texts = {NOTEBOOKS / "README.md": (NOTEBOOKS / "README.md").read_text()}
    for path in NOTEBOOKS.glob("*.ipynb"):
        texts[path] = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                                if c["cell_type"] == "markdown")
    links = [(path, target) for path, text in texts.items()
             for target in re.findall(r"\]\(([^)#:\s]+)[^)]*\)", text)]
    assert any("docs/" in t for _, t in links)
    for path, target in links:
        resolved = (path.parent / target).resolve()
        assert resolved.exists() and NOTEBOOKS.parent.resolve() in (resolved, *resolved.parents), (path.name, target)


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_is_stored_as_jupyterlab_saves_it(path):
    """Opening it in JupyterLab must not mark it modified: fix with
    `python -m osbench_analysis.notebook_format notebooks/*.ipynb`."""
    from osbench_analysis import notebook_format

    text = path.read_text()
    assert text == notebook_format.normalised(text)


def test_normalising_strips_outputs_and_keeps_the_parameters_tag(tmp_path):
    import nbformat

    from osbench_analysis import notebook_format

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1  # a parameter", id="a1b2c3d4"),
                                         nbformat.v4.new_code_cell("x", id="e5f6a7b8")])
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.cells[1].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=1)]
    nb.cells[1].execution_count = 1
    again = nbformat.reads(notebook_format.normalised(nbformat.writes(nb)), as_version=4)
    assert again.cells[0].metadata["tags"] == ["parameters"]
    assert again.cells[1].outputs == [] and again.cells[1].execution_count is None
    assert again.metadata["kernelspec"]["name"] == "python3" and "version" in again.metadata["language_info"]
    path = tmp_path / "n.ipynb"
    path.write_text(nbformat.writes(nb))
    assert notebook_format.main(["--check", str(path)]) == 1 and notebook_format.main([str(path)]) == 0
    assert notebook_format.main(["--check", str(path)]) == 0


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
        cfg.pop("preflight")   # what the pre-flight found (its wall time), not a parameter
    assert a == b


def images(cell) -> list:
    """The PNG images a cell displayed, as arrays."""
    import base64
    import io

    from matplotlib import image

    return [image.imread(io.BytesIO(base64.b64decode(o["data"]["image/png"])), format="png")
            for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]


def drawn(img) -> float:
    """Share of pixels that differ from the background (the top-left corner): 0 for a blank image."""
    import numpy as np

    return float(np.mean(np.any(np.abs(img[..., :3] - img[0, 0, :3]) > 0.05, axis=-1)))


def assert_figures_shown(executed, min_images: int) -> None:
    """Every cell that draws (builds a figure) displayed at least one image, none blank."""
    shown = [img for cell in executed.cells if cell.cell_type == "code" for img in images(cell)]
    assert len(shown) >= min_images, f"{len(shown)} images displayed, expected at least {min_images}"
    assert all(drawn(img) > 0.01 for img in shown), [round(drawn(img), 4) for img in shown]
    assert not any("<Figure size" in o.get("data", {}).get("text/plain", "") and "image/png" not in o.get("data", {})
                   for cell in executed.cells for o in cell.get("outputs", []))
    assert not any(o.get("output_type") == "error" for cell in executed.cells for o in cell.get("outputs", []))


def _tree(folder: Path) -> dict:
    import hermetic

    with hermetic.reading_the_checkout():   # what is there is not read, only whether a run changed it
        return {p: p.stat().st_mtime_ns for p in folder.rglob("*")} if folder.exists() else {}


@pytest.mark.slow
def test_analyze_notebook_shows_its_figures_and_writes_the_paper_files_only_when_asked(notebook_campaign):
    import nbformat
    import papermill as pm

    root, tmp = notebook_campaign
    gen = tmp / "generated"
    pm.execute_notebook(str(NOTEBOOKS / "analyze.ipynb"), str(tmp / "analyze.ipynb"), kernel_name="python3",
                        parameters=dict(campaigns=["nb"], root=str(root), out_dir=str(gen), n_resamples=300,
                                        write_paper=True), progress_bar=False)
    assert (gen / "per_op_forest.pdf").is_file() and (gen / "macros.tex").is_file()
    executed = nbformat.read(tmp / "analyze.ipynb", as_version=4)
    assert_figures_shown(executed, min_images=2)   # two families at least: kernel entry, IPC
    macros = (gen / "macros.tex").read_text()
    assert r"\newcommand{\osbNullSyscallSameCpu}" in macros and r"\newcommand{\osbPipePingpongCrossCpu}" in macros


@pytest.mark.slow
def test_analyze_notebook_as_shipped_writes_nothing_into_the_checkout(notebook_campaign):
    import nbformat
    import papermill as pm

    root, tmp = notebook_campaign
    from osbench_analysis.paths import DERIVED_DIR, GENERATED_DIR

    watched = (GENERATED_DIR, DERIVED_DIR, NOTEBOOKS)   # where a run could leave something
    before = [_tree(d) for d in watched]
    pm.execute_notebook(str(NOTEBOOKS / "analyze.ipynb"), str(tmp / "analyze-default.ipynb"), kernel_name="python3",
                        parameters=dict(campaigns=["nb"], root=str(root), n_resamples=300), progress_bar=False)
    assert [_tree(d) for d in watched] == before
    printed = "".join(o.get("text", "") for c in nbformat.read(tmp / "analyze-default.ipynb", as_version=4).cells
                      for o in c.get("outputs", []))
    assert "nothing written" in printed


@pytest.mark.slow
def test_explore_notebook_answers_its_questions_with_figures(notebook_campaign):
    """Two environments and two campaigns of one, sealed by the real store from the notebook's campaign."""
    import nbformat
    import papermill as pm

    from conftest import relabel

    root, tmp = notebook_campaign
    c = store.load_campaign("nb", root)
    if not (root / "nb-gvisor").exists():
        relabel(c, root, "nb-gvisor", "gvisor", slower=8.0, minutes=2)
        relabel(c, root, "nb-later", "native", slower=1.1, minutes=3)
    pm.execute_notebook(str(NOTEBOOKS / "explore.ipynb"), str(tmp / "explore.ipynb"), kernel_name="python3",
                        parameters=dict(root=str(root), probe="pipe_pingpong", placement="same_cpu",
                                        environments=["native", "gvisor"], campaigns=["nb-later", "nb-gvisor"],
                                        two_campaigns=["nb", "nb-later"]), progress_bar=False)
    executed = nbformat.read(tmp / "explore.ipynb", as_version=4)
    assert_figures_shown(executed, min_images=2)   # the runs of both environments, the two campaigns
    html = "".join(o.get("data", {}).get("text/html", "") for cell in executed.cells for o in cell.get("outputs", []))
    assert "ratio 7.27 [" in html and "ratio 1.10 [" in html    # exactly the slow-downs the relabelling made (8 / 1.1)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["analyze.ipynb", "explore.ipynb", "reference_comparisons.ipynb"])
def test_a_bad_analysis_option_stops_a_notebook_with_one_line(name, tmp_path, committed_root):
    import papermill as pm

    # the explorer reads campaigns before it checks the probe: a store that has some (not the suite's empty one)
    parameters = {"analyze.ipynb": dict(level=1.5), "explore.ipynb": dict(probe="no_such_probe", root=str(committed_root)),
                  "reference_comparisons.ipynb": dict(level=1.5)}[name]
    with pytest.raises(pm.PapermillExecutionError) as e:
        pm.execute_notebook(str(NOTEBOOKS / name), str(tmp_path / name), kernel_name="python3",
                            parameters=parameters, progress_bar=False)
    assert e.value.ename in ("AnalysisError", "ExploreError") and "\n" not in e.value.evalue
    assert "(got 1.5)" in e.value.evalue or "no_such_probe" in e.value.evalue
