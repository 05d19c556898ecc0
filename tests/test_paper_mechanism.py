"""Section 4.1's decomposition of a crossing and the application workloads, the title page's round and the
Method's story of which number is quoted, all generated from the committed campaign round."""
import dataclasses
import types

import pandas as pd
import pytest


from osbench_analysis import stats
from osbench_analysis.analysis import pipeline as analysis
from osbench_analysis.analysis import architectures
from osbench_analysis.analysis import crossing_counts, host_calls, mechanism
from osbench_analysis.report import paper
from osbench_analysis.report import mechanism as paper_mechanism
from osbench_analysis.catalog import registry
from osbench_analysis.analysis import reproducibility
from osbench_analysis.formatting import time_with_ci_tex
from osbench_analysis.paths import CAMPAIGNS_DIR

# its shared fixture takes over a second: the whole file is in the full suite (make test), not the fast tier
pytestmark = pytest.mark.slow

ROUND = "20261126T113057Z"
ENVS = ("native", "gvisor", "gvisor-gofer", "uml", "fuse-nocache")


@pytest.fixture(scope="module")
def result(committed_root):
    ids = [f"{ROUND}-vm-{e}" for e in ENVS]
    if not all((CAMPAIGNS_DIR / i).is_dir() for i in ids):
        pytest.skip(f"campaign round {ROUND} not in this checkout")
    # what the section reads: the crossings, the native prices of every counted event and the workloads
    probes = {*architectures.CROSSING_PROBES, "open_close", *registry.APPLICATION_PROBES,
              *(probe for piece in mechanism.PIECES for probe, _ in piece.price),
              *(p for p, _ in host_calls.PRICES.values()), *(p for p, _ in host_calls.SWITCH_BY_NAME),
              *(p for p, _ in host_calls.SIGNAL_BY_NAME)}
    return analysis.analyze(ids, committed_root, pool=False, probes=sorted(probes))


def test_the_accounting_table_prints_the_analysis_figures_and_the_counts(result):
    counts = crossing_counts.load_counts()
    if counts.empty:
        pytest.skip("no crossing counts committed in this checkout")
    summary, terms = paper_mechanism.decomposition(result, counts)
    tex = paper_mechanism.mechanism_tex(result, counts)
    assert "\\label{tab:mechanism}" in tex and tex.startswith("\\paragraph{What one crossing is made of.}")
    done = summary[summary["status"] != "not decomposed"]
    assert set(done["environment"]) == {"gvisor", "gvisor-gofer", "uml", "fuse-nocache"}
    lines = tex.splitlines()
    for r in done.itertuples():
        i = next(i for i, line in enumerate(lines) if line.startswith(
            f"{paper_mechanism._env(r.environment)} & {paper_mechanism._op(r.crossing_probe)} & "))
        row = lines[i]
        rest = row.rpartition(" & ")[2]
        assert time_with_ci_tex(r.crossing_ns, r.crossing_low_ns, r.crossing_high_ns) in row
        assert time_with_ci_tex(r.pieces_ns, r.pieces_low_ns, r.pieces_high_ns) in row
        mine = terms[(terms["environment"] == r.environment) & (terms["crossing_probe"] == r.crossing_probe)]
        n = mine.set_index("piece")["count"]
        unpriced = (f" ({paper_mechanism._n(r.host_calls_unpriced)} unpriced)"
                    if r.by_name is True and abs(r.host_calls_unpriced) >= 0.005 else "")
        assert (f" & {paper_mechanism._n(n['host system call'])}{unpriced} & "
                f"{paper_mechanism._n(n['context switch'])} (") in row
        # the priced events are the counts times the prices, and the rest is the crossing minus them
        assert r.pieces_ns == pytest.approx((mine["count"] * mine["price_ns"]).sum(), rel=1e-9)
        if r.status == "exceeds":
            assert "pieces exceed it by" in rest and "$-$" not in rest
        else:
            assert r.unexplained_ns == pytest.approx(r.crossing_ns - r.pieces_ns, rel=1e-9)
            assert time_with_ci_tex(r.unexplained_ns, r.unexplained_low_ns, r.unexplained_high_ns) in rest
    # what the FUSE server's requests say of its switches, from the counts
    assert "Each request the FUSE server answers costs" in tex
    assert tex.count("$-$") == 0 and "Sentry" not in tex    # no negative rest, nothing named without evidence
    # an argument chosen by the data's shape, not one templated sentence per cell (review W9): the crossings the
    # priced events mostly cover are named together, those they fall short of apart, and every crossing once
    text = tex[:tex.index("\\begin{table}")]
    assert "is not accounted for by these events" not in text and "probe code e" not in tex
    share = done["pieces_ns"] / done["crossing_ns"]
    covered = text[text.index("The priced events cover"):]
    covered = covered[:covered.index(".")]
    for r, sh in zip(done.itertuples(), share):
        name = f"{paper_mechanism._env(r.environment)}'s"
        assert (name in covered) == (sh >= 0.5), (r.environment, sh)
    short = done[(share < 0.5) & (done["status"] == "rest")]
    assert ("The accounting falls short for" in text) == bool(len(short))
    n_up = int((done["status"] == "adds up").sum())
    assert (f"In {n_up} of the" if n_up else "In none of the") + f" {len(done)} decomposed crossings" in text
    # the calls left unpriced: each crossing's most frequent one, named
    from osbench_analysis.report import accounting
    for r in done.itertuples():
        top = accounting.unpriced_calls(r)
        if top and top[0][1] >= 0.5:
            assert f"\\texttt{{{top[0][0]}}} under" in text


def test_an_excess_is_said_and_marked_never_printed_as_a_negative_rest(result):
    counts = crossing_counts.load_counts()
    if counts.empty:
        pytest.skip("no crossing counts committed in this checkout")
    many = counts.copy()
    m = (many["environment"] == "uml") & (many["counter"] == "context_switches")
    many.loc[m, "median"] = 500.0        # 500 switches per UML getpid: far more than its crossing
    summary, _ = paper_mechanism.decomposition(result, many)
    uml = summary[summary["environment"] == "uml"].iloc[0]
    assert uml["status"] == "exceeds" and pd.isna(uml["unexplained_ns"])
    tex = paper_mechanism.mechanism_tex(result, many)
    ex = time_with_ci_tex(uml["excess_ns"], uml["excess_low_ns"], uml["excess_high_ns"])
    assert f"pieces exceed it by {ex}" in tex and f"more than the crossing, by {ex}" in tex
    assert "and in 1 they exceed it" in tex and "$-$" not in tex


def test_a_price_missing_from_the_data_is_said_not_crashed_on(result):
    r = dataclasses.replace(result, samples=result.samples[result.samples["probe"] != "pipe_pingpong"])
    summary, _ = paper_mechanism.decomposition(r, crossing_counts.load_counts())
    gv = summary[summary["environment"] == "gvisor"].iloc[0]
    assert pd.isna(gv["pieces_ns"]) and "pipe round trip" in gv["verdict"]
    tex = paper_mechanism.mechanism_tex(r, crossing_counts.load_counts())
    assert "gVisor's crossing (null system call) is not decomposed: native prices not measured on this host: pipe round trip." in tex
    assert " & -- & not decomposed \\\\" in tex


def test_the_crossing_is_the_host_backed_folders_one(result):
    """gVisor (gofer) measured stat on its host volume (9p) and on the Sentry's tmpfs: two conditions, and the
    crossing is the first one's, never their runs mixed."""
    cc = result.crossing_costs.set_index("environment")
    s = result.samples[~result.samples["warmup"]]
    gofer = s[(s["environment"] == "gvisor-gofer") & (s["probe"] == "stat") & (s["variant"] == "fs=9p")
              & (s["placement"] == "same_cpu")]
    native = s[(s["environment"] == "native") & (s["probe"] == "stat") & (s["placement"] == "same_cpu")]
    d = architectures.geomean_difference_ci(stats.run_data(gofer), stats.run_data(native))
    assert cc.loc["gvisor-gofer", "cost_ns"] == pytest.approx(d.diff)


def test_workloads_not_measured_in_the_environments_are_said_and_get_no_empty_table(result):
    native, slow = paper_mechanism.applications(result)
    assert set(native["probe"]) == {"app_compile", "app_tar", "app_kv"} and slow.empty
    tex = paper_mechanism.applications_tex(result)
    assert "\\begin{table}" not in tex
    assert "they were not measured in gVisor, gVisor (gofer), User-mode Linux, FUSE (no cache) (only on native Linux)" in tex
    for r in native.itertuples():
        assert time_with_ci_tex(r.estimate_ns, r.ci_low_ns, r.ci_high_ns) in tex


def test_a_workload_measured_in_an_environment_stands_beside_its_crossing_factor(result):
    er = result.environment_ratios
    cross = er[(er["environment"] == "gvisor") & (er["probe"] == "null_syscall") & (er["placement"] == "same_cpu")].iloc[0]
    app = cross.copy()
    app["probe"], app["variant"], app["ratio"], app["ci_low"], app["ci_high"] = "app_compile", "", 3.0, 2.5, 3.6
    r = dataclasses.replace(result, environment_ratios=pd.concat([er, app.to_frame().T], ignore_index=True))
    tex = paper_mechanism.applications_tex(r)
    row = next(line for line in tex.splitlines() if line.startswith("gVisor ($\\times$ native)"))
    cells = [c.strip() for c in row.rstrip(" \\").split("&")]
    assert cells[1:4] == ["3.00 [2.50, 3.60]", "--", "--"]
    assert cells[4] == f"{cross['ratio']:.3g} [{cross['ci_low']:.3g}, {cross['ci_high']:.3g}]"
    assert "Measured in 1 environment, they take from 3.00 [2.50, 3.60] (compile of a small C file under gVisor)" in tex
    assert "\\label{tab:apps}" in tex and "User-mode Linux ($\\times$ native) & -- & -- & --" in tex


def test_the_title_page_names_the_round_not_every_campaign(result, committed_root):
    # the round's start in words, never its campaign id (ids are in the reproduction appendix)
    stamp = ROUND[:15]
    words = f"Measured {stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]} UTC"
    assert paper.campaign_round_line(result) == words and ROUND[:8] not in words
    assert paper.text_macros(result)["osbCampaignRound"] == words
    every = reproducibility.catalog_manifests(committed_root)
    older = [c for c in every if c.startswith("20261123T135922Z") and every[c].environment != "native"]
    if not older:
        pytest.skip("no earlier round in this checkout")
    fake = types.SimpleNamespace(manifests={**result.manifests, older[0]: every[older[0]]},
                                 primary_ids=[*result.primary_ids, older[0]], sweep_manifests={})
    assert paper.campaign_round_line(fake) == "Measured in 2 campaign rounds, 2026-11-23 to 2026-11-26"


def test_the_method_tells_one_story_of_the_number_quoted(result):
    text = result.methods_tex(paper=True)
    assert "The package's stopping rule and its warnings use a condition's typical run" in text
    assert "The tables and sentences of this paper quote the mean over runs" in text
    assert "quote the typical run and" not in text          # the package's own count is not the paper's
    est = result.estimates
    warned = int((est["warning"].fillna("") != "").mul(est["heterogeneous"].astype(bool)).sum())
    assert f"(here {warned} of {len(est)} conditions)" in text
    assert "Here" in result.methods_tex()                  # the notebooks' wording keeps its count
    one = reproducibility.quoting_sentence(1)
    assert "abstract and the Conclusion all quote each condition in its one campaign" in one and "pooled" not in one
    assert "pooled over 3 campaigns" in reproducibility.quoting_sentence(3)
    assert reproducibility.paper_macros(result)["osbReproQuoting"] == one


def test_the_guest_kernels_own_tmpfs_gets_its_own_rows_below_the_crossings(result):
    from osbench_analysis.report import sections as paper_sections

    g = paper_sections.guest_crossing_costs(result).set_index("environment")
    assert set(g.index) == {"gvisor", "gvisor-gofer", "uml"}          # the sandboxes with a kernel of their own
    s = result.samples[~result.samples["warmup"] & (result.samples["probe"] == "stat")
                       & (result.samples["placement"] == "same_cpu")]
    uml = s[(s["environment"] == "uml") & (s["variant"] == "workdir_fs=guest-tmpfs,fs=tmpfs")]
    native = s[s["environment"] == "native"]
    d = architectures.geomean_difference_ci(stats.run_data(uml), stats.run_data(native))
    assert g.loc["uml", "cost_ns"] == pytest.approx(d.diff)
    tex = paper_sections.crossing_tex(paper_sections.SectionInputs.build(result))
    table = tex[tex.index("\\begin{table}"):tex.index("\\label{tab:crossing}")]
    below = table.split("\\midrule")[-1]
    row = next(line for line in below.splitlines() if line.startswith("User-mode Linux & stat & tmpfs (guest's own)"))
    assert time_with_ci_tex(d.diff, d.ci_low, d.ci_high) in row
    # the prose sets it against the same sandbox's intercepted getpid, not the table's cells in a row (review W9)
    from osbench_analysis.report.sections.common import _time
    call = result.crossing_costs
    call = call[(call["environment"] == "uml") & (call["probe"] == "null_syscall") & (call["placement"] == "same_cpu")]
    ratio = d.diff / float(call["cost_ns"].iloc[0])
    word = "less" if ratio < 0.8 else "more" if ratio > 1.25 else "about as much"
    sentence = tex[tex.index("Served instead by the tmpfs"):]
    sentence = sentence[:sentence.index(".\n") if ".\n" in sentence else len(sentence)]
    assert f"under User-mode Linux ({_time(d.diff)} against {_time(float(call['cost_ns'].iloc[0]))})" in sentence
    assert word in sentence


def test_a_workload_slowdown_pooled_over_rounds_replaces_the_one_campaign_ratio_and_says_so(result):
    er = result.environment_ratios
    cross = er[(er["environment"] == "gvisor") & (er["probe"] == "null_syscall") & (er["placement"] == "same_cpu")].iloc[0]
    app = cross.copy()
    app["probe"], app["variant"], app["ratio"], app["ci_low"], app["ci_high"] = "app_tar", "", 3.0, 2.5, 3.6
    pooled = pd.DataFrame([{"host": result.hosts[0], "environment": "gvisor", "probe": "app_tar", "variant": "",
                            "placement": "same_cpu", "n_campaigns": 2, "ratio": 4.0, "ci_low": 2.0, "ci_high": 8.0}])
    r = dataclasses.replace(result, environment_ratios=pd.concat([er, app.to_frame().T], ignore_index=True),
                            pooling=types.SimpleNamespace(ratios=pooled))
    _, slow = paper_mechanism.applications(r)
    row = slow[(slow["environment"] == "gvisor") & (slow["probe"] == "app_tar")].iloc[0]
    assert (row["ratio"], row["ci_low"], row["ci_high"]) == (4.0, 2.0, 8.0)
    tex = paper_mechanism.applications_tex(r)
    assert "over the host's 2 rounds that measured it" in tex and "4.00 [2.00, 8.00]" in tex
    # a pooled ratio of another host is not used
    other = dataclasses.replace(r, pooling=types.SimpleNamespace(ratios=pooled.assign(host="someone-else")))
    assert paper_mechanism.applications(other)[1].query("probe == 'app_tar'")["ratio"].iloc[0] == 3.0

