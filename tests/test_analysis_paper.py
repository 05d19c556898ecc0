"""From a real campaign to the paper's generated files: every number the paper
quotes is defined, comes from the data, and the PDF builds where TeX exists."""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from osbench_analysis.analysis import pipeline as analysis
from osbench_analysis.report import paper
from osbench_analysis.store import campaigns as store

PAPER_TEX = Path(paper.PAPER_DIR) / "paper.tex"


@pytest.fixture(scope="module")
def result(tiny_campaign):
    return analysis.analyze([tiny_campaign.id], root=tiny_campaign.path.parent, n_resamples=500)


def test_one_estimate_per_condition_with_an_interval_around_it(result, tiny_campaign):
    est = result.estimates
    measured = tiny_campaign.samples[~tiny_campaign.samples.warmup]
    assert len(est) == measured.groupby(["probe", "variant", "placement"]).ngroups
    assert (est["ci_low_ns"] <= est["estimate_ns"]).all() and (est["estimate_ns"] <= est["ci_high_ns"]).all()
    assert set(est["probe"]) == {"null_syscall", "fork_exit", "fork_exec", "pipe_pingpong"}  # crashed probe has no rows
    for _, r in est.iterrows():
        per_op = measured[(measured.probe == r.probe) & (measured.placement == r.placement)
                          & (measured.variant == r.variant)]["per_op_ns"]
        assert per_op.min() <= r.estimate_ns <= per_op.max()


def test_placement_ratios_cover_two_party_probes_only(result):
    pr = result.placement_ratios
    assert set(pr["probe"]) == {"fork_exit", "fork_exec", "pipe_pingpong"}
    assert (pr["ci_low"] <= pr["ratio"]).all() and (pr["ratio"] <= pr["ci_high"]).all()


def test_newest_campaign_of_each_environment_is_the_default(tiny_campaign, tiny_root):
    refs = analysis.select_campaigns(None, tiny_root)
    assert [r.campaign_id for r in refs] == [tiny_campaign.id]
    assert refs[0].environment == "native" and refs[0].host == tiny_campaign.manifest.host_identity.key
    with pytest.raises(store.StoreError, match="no campaigns under"):
        analysis.select_campaigns(None, "/nonexistent/campaigns")


def test_every_macro_the_paper_uses_is_generated_from_the_data(result, tmp_path, tiny_campaign):
    written = paper.write_generated(result, out_dir=tmp_path, campaigns_root=tiny_campaign.path.parent)
    names = {p.name for p in written}
    assert {"macros.tex", "per_op_table.tex", "methods.tex", "per_op_forest.pdf", "per_op_estimates.csv"} <= names
    defined = dict(re.findall(r"\\newcommand\{\\(osb[A-Za-z]+)\}\{(.*)\}", (tmp_path / "macros.tex").read_text()))
    used = set(re.findall(r"\\(osb[A-Za-z]+)", PAPER_TEX.read_text()))
    assert used and used <= set(defined), f"undefined in generated macros: {sorted(used - set(defined))}"
    # the paper's one estimand: the geometric mean of the run medians (paper_estimand)
    from osbench_analysis.report.estimand import paper_estimates

    est = paper_estimates(result.estimates)
    null = est[est.probe == "null_syscall"].iloc[0]
    scale = {"ns": 1, r"\textmu s": 1e3, "ms": 1e6}[defined["osbNullSyscallSameCpuUnit"]]
    assert float(defined["osbNullSyscallSameCpu"]) * scale == pytest.approx(null.estimate_ns, rel=0.01)
    assert float(defined["osbNullSyscallSameCpuLow"]) * scale == pytest.approx(null.ci_low_ns, rel=0.01)


@pytest.mark.slow
def test_paper_pdf_builds_from_generated_files(result, tmp_path, tiny_campaign):
    """The whole paper from one analysis: every section present, every reference
    and citation resolved, no forbidden word, every page and figure shows something."""
    from osbench_analysis.report import reference_compare

    shutil.copy(PAPER_TEX, tmp_path / "paper.tex")
    shutil.copy(PAPER_TEX.parent / "references.bib", tmp_path / "references.bib")
    paper.write_generated(result, out_dir=tmp_path / "generated", campaigns_root=tiny_campaign.path.parent)
    reference_compare.write_reference(result, out_dir=tmp_path / "generated")
    said = paper.build_pdf(tmp_path)   # runs check_paper on the PDF and its figures, and raises on any problem
    assert said.startswith("built") and int(re.search(r": (\d+) pages", said).group(1)) >= 5, said
    assert sorted((tmp_path / "paper-pages").glob("page*.png")), "the check rendered no page"
    text = subprocess.run(["pdftotext", str(tmp_path / "paper.pdf"), "-"], capture_output=True, text=True).stdout
    for section in ("Introduction", "Background", "Method", "Results", "Threats to validity", "Related work",
                    "Conclusion", "References", "Published results revisited", "Every condition measured on native Linux",
                    "Reproducing this paper"):
        assert section in text, section


def test_pdf_build_says_what_is_missing(tmp_path):
    assert "generated files missing" in paper.build_pdf(tmp_path)


@pytest.mark.parametrize("x,text", [(1234.5, "1234"), (72.66, "72.7"), (6.304, "6.30"), (0.1642, "0.164"),
                                    (999.6, "1000"), (np.nan, "n/a")])
def test_three_significant_digits(x, text):
    assert paper.sig3(x) == text


def test_time_units_and_macro_names():
    assert paper.format_time_ns(195.2) == ("195", "ns")
    assert paper.format_time_ns(6304.0) == ("6.30", r"\textmu s")
    assert paper.format_time_ns(1.25e6) == ("1.25", "ms")
    assert paper.macro_name("fork_exec", "linkage=static", "cross_cpu") == "osbForkExecLinkageStaticCrossCpu"
    assert paper.macro_name("run", "2") == "osbRunTwo"
    assert paper.tex_escape("a_b & 50%") == r"a\_b \& 50\%"


def test_reference_section_shows_every_reading_and_the_verdict_classes():
    import pandas as pd

    from osbench_analysis.reference import claims as reference_claims

    readings = pd.DataFrame({
        "source_id": ["a", "a", "a", "b", "b"], "bibkey": ["ka", "ka", "ka", "kb", "kb"],
        "claim_id": ["c1", "c2", "c2", "c3", "c4"], "statement": ["x 3x y", "z_1 faster", "z_1 faster", "w", "v"],
        "verdict_class": ["holds", "depends", "depends", "fails", "not checkable"],
        "stated": ["≈ 3 (±20%)", "≥ 1", "≥ 1", "≥ 1", "—"], "factor": [3.1, 1.09, 0.8, 0.5, float("nan")],
        "holds": [True, True, False, False, None]})
    counts = reference_claims.verdict_counts(pd.DataFrame({
        "source_id": ["a", "a", "b", "b", "b"], "verdict_class": ["holds", "depends", "fails", "not checkable",
                                                                "arithmetic checked"],
        "n_readings": [1, 2, 1, 0, 1]}))
    capture = pd.DataFrame({"source_id": ["a", "a", "b"], "kind": ["values", "values", "definitions"],
                            "n_values": [10, 5, 0]})
    tex = paper.reference_section_tex(readings, counts, capture)
    assert "The 2 published studies hold 2 tables with 15 published values" in tex
    assert "recomputed 5 comparisons" in tex and "(5 kept in all)" in tex
    assert "1 holds" in tex and "1 depends" in tex and "1 not checkable" in tex and "0 knife-edge" not in tex
    # the authors' own divisions are counted apart and the paper says they are not confirmations
    assert "1 arithmetic checked" in tex and "confirms the authors' arithmetic, not the comparison" in tex
    # the precedence is stated, in order, before the classes are counted
    assert tex.index("not checkable} when") < tex.index("knife-edge} when") < tex.index("holds or fails} when")
    # both readings of the depending claim, each marked; the not-checkable claim is not in the table
    assert r"1.09\,$\checkmark$; 0.800\,$\times$" in tex and r"z\_1 faster" in tex
    assert "~\\citep{ka}" in tex and "v~" not in tex
