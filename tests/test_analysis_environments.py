"""Several environments and several campaigns of one environment, through
analysis, the reference comparison and the paper (issue: a second
environment broke paper.tex, the Method paragraph described whichever
campaign sorted first, two native campaigns beside another environment
crashed the analysis).  The extra environments' campaigns are written by the
real store from a real campaign's samples, relabelled (never a sealed folder
edited).  The PDF of a paper over several environments, several campaigns of one among them, is built
and checked by tests/test_paper_layouts.py (four environments, 1 to 9 hosts, 1 to 3 rounds a host)."""
import pytest

from osbench_analysis.analysis import pipeline as analysis
from osbench_analysis.report import paper
from osbench_analysis.report import reference_compare
from osbench_analysis.store import campaigns as store

from conftest import relabel


@pytest.fixture(scope="module")
def three(tiny_campaign, tmp_path_factory):
    """native (the real one), a later native, and a 'gvisor' 40x slower, in a root of their own."""
    root = tmp_path_factory.mktemp("envs")
    native = relabel(tiny_campaign, root, "a-native", "native", minutes=0)
    later = relabel(tiny_campaign, root, "b-native-later", "native", slower=1.05, minutes=5)
    gv = relabel(tiny_campaign, root, "0-gvisor", "gvisor", slower=40.0, minutes=2)  # sorts first by name
    return root, native, later, gv


def test_default_selection_is_newest_per_environment_with_the_baseline_first(three):
    root, native, later, gv = three
    refs = analysis.select_campaigns(None, root)
    assert [r.campaign_id for r in refs] == [later.id, gv.id]


def test_two_native_campaigns_beside_another_environment(three):
    root, native, later, gv = three
    r = analysis.analyze([native.id, later.id, gv.id], root=root, n_resamples=300)
    assert r.primary_ids == [native.id, gv.id] and r.baseline_id == native.id
    er = r.environment_ratios
    assert set(er["environment"]) == {"gvisor"} and set(er["baseline"]) == {"native"}
    assert ((er["ratio"] > 30) & (er["ratio"] < 50)).all()        # 40x slower by construction
    assert (er["ci_low"] <= er["ratio"]).all() and (er["ratio"] <= er["ci_high"]).all()
    cr = r.campaign_ratios
    assert set(cr["campaign_id"]) == {later.id} and set(cr["baseline"]) == {native.id}
    cc = r.crossing_costs
    assert list(cc["environment"]) == ["gvisor"]
    assert (cc["ci_low_ns"] < cc["cost_ns"]).all() and (cc["cost_ns"] > 0).all()
    # the reference comparison reads this analysis, it does not re-run statistics
    env = reference_compare.environment_ratios(r)
    assert list(env["ratio"]) == list(er["ratio"])


def test_baseline_must_be_among_the_environments(three):
    root, native, later, gv = three
    with pytest.raises(analysis.AnalysisError, match="baseline environment 'uml' is not among"):
        analysis.analyze([native.id, gv.id], root=root, baseline="uml", n_resamples=200)


def test_macros_keep_native_names_and_key_the_others(three, tmp_path):
    root, native, later, gv = three
    r = analysis.analyze([gv.id, native.id], root=root, n_resamples=300)   # gvisor named first on purpose
    macros = paper.paper_macros(r)
    assert "osbNullSyscallSameCpu" in macros and "osbGvisorNullSyscallSameCpu" in macros
    assert "osbRatioGvisorNullSyscallSameCpu" in macros and "osbCrossingGvisorSameCpu" in macros
    null = r.estimates[(r.estimates.campaign_id == native.id) & (r.estimates.probe == "null_syscall")].iloc[0]
    scale = {"ns": 1, r"\textmu s": 1e3, "ms": 1e6}[macros["osbNullSyscallSameCpuUnit"]]
    assert float(macros["osbNullSyscallSameCpu"]) * scale == pytest.approx(null.estimate_ns, rel=0.01)
    # the Method paragraph describes the native campaign, not whichever sorts or is named first
    assert macros["osbBaselineCampaign"] == paper.tex_escape(native.id)
