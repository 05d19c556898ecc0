"""reference/interposition.py and its paragraph on small synthetic folders; the committed transcriptions
(data/reference/gvisor_perf_guide, vangoor_fuse) read by name."""
import pandas as pd
import pytest

from osbench_analysis.paths import REFERENCE_DIR
from osbench_analysis.reference import interposition as ip
from osbench_analysis.report.sections.interposition import YOUNG_NOT_COMPARED, interposition_tex


def _csv(d: dict) -> str:
    return "field,value\n" + "".join(f'{k},"{v}"\n' for k, v in d.items())


def _root(tmp_path, ptrace_ns=4000.0, fuse=("1", "3")):
    g = tmp_path / ip.GUIDE
    g.mkdir()
    (g / "syscall.csv").write_text("runtime_as_published,platform,metric_as_published,value_as_published,unit\n"
                                   f"runc,native,t,1000.0,ns\nrunsc,ptrace,t,{ptrace_ns},ns\n")
    setup = {"bibkey": "k", "call": "a call", "hardware": "a VM", "software": "an OS", "native": "runc",
             "note": "a note", "uncertainty": "no interval"}
    (g / "setup.csv").write_text(_csv(setup))
    f = tmp_path / ip.FUSE
    f.mkdir()
    (f / "abstract_figures.csv").write_text("publication,statement_as_published,quantity,low,high,unit\n"
                                            f"x,\"s\",latency_factor_vs_ext4,{fuse[0]},{fuse[1]},ratio\n")
    (f / "setup.csv").write_text(_csv({**setup, "bibkey": "v", "native": "Ext4"}))
    return tmp_path


def _measured():
    return pd.DataFrame({"environment": ["gvisor-ptrace", "gvisor", "fuse", "fuse-nocache", "uml"],
                         "probe": ["null_syscall", "null_syscall", "stat", "stat", "null_syscall"],
                         "ratio": [5.0, 3.0, 2.0, 40.0, 9.0], "ratio_low": [4.5, 2.0, 1.5, 35.0, 8.0],
                         "ratio_high": [5.5, 4.0, 2.5, 45.0, 10.0]})


def test_the_guide_factor_is_each_platform_over_the_native_runtime(tmp_path):
    tab = ip.guide_syscall(_root(tmp_path))
    assert dict(zip(tab["platform"], tab["factor"])) == {"native": 1.0, "ptrace": 4.0}


def test_comparison_pairs_only_matching_environments_and_says_where_ours_lies(tmp_path):
    cmp = ip.comparison(_measured(), _root(tmp_path))
    got = {(r.environment, r.probe): (r.their_low, r.their_high, r.relation) for r in cmp.itertuples()}
    assert got == {("gvisor-ptrace", "null_syscall"): (4.0, 4.0, "above"),
                   ("fuse", "stat"): (1.0, 3.0, "overlaps"), ("fuse-nocache", "stat"): (1.0, 3.0, "above")}
    assert ip.relation(0.5, 0.8, 1.0, 3.0) == "below"


def test_ours_straddling_their_point_overlaps(tmp_path):
    cmp = ip.comparison(_measured(), _root(tmp_path, ptrace_ns=5000.0))
    assert cmp.set_index("environment").loc["gvisor-ptrace", "relation"] == "overlaps"


def test_nothing_measured_gives_no_rows(tmp_path):
    assert ip.comparison(pd.DataFrame(), _root(tmp_path)).empty


def test_a_missing_folder_or_a_bad_range_is_one_error(tmp_path):
    with pytest.raises(ip.ReferenceDataError, match="missing"):
        ip.guide_syscall(tmp_path)
    with pytest.raises(ip.ReferenceDataError, match="positive"):
        ip.fuse_latency_range(_root(tmp_path, fuse=("4", "1")))


def test_the_paragraph_prints_their_factor_ours_with_its_interval_and_the_setting(tmp_path):
    text = interposition_tex(_measured(), _root(tmp_path))
    assert "under ptrace 4.00 times runc's" in text and "5.00 [4.50, 5.50]" in text and "(above it)" in text
    assert "from 1 to 3 times Ext4's" in text and "2.00 [1.50, 2.50]" in text and "(overlapping it)" in text
    assert "a VM" in text and "\\citep{k}" in text and "\\citet{v}" in text
    assert text.rstrip().endswith(YOUNG_NOT_COMPARED)
    assert "User-mode" not in text                  # UML has no published counterpart here


def test_the_committed_transcriptions_are_as_their_source_files_say():
    guide = ip.guide_syscall(REFERENCE_DIR)
    assert dict(zip(guide["runtime_as_published"], guide["value_ns"])) == {"runc": 1939.0, "runsc": 38219.0,
                                                                            "runsc-kvm": 763.0}
    assert dict(zip(guide["runtime_as_published"], guide["platform"]))["runsc"] == "ptrace"
    assert ip.fuse_latency_range(REFERENCE_DIR) == (1.0, 4.0)
    for name in (ip.GUIDE, ip.FUSE):
        s = ip.setup(name, REFERENCE_DIR)
        assert {"bibkey", "call", "hardware", "software", "native", "uncertainty"} <= set(s)
        assert f"{{{s['bibkey']}," in (REFERENCE_DIR.parent.parent / "paper" / "references.bib").read_text()
    assert (REFERENCE_DIR / ip.YOUNG / "SOURCE.md").exists()
