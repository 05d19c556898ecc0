"""A sweep campaign (native, only the swept probes, every point) beside a round's campaign of the whole
catalog: the analysis keeps the round's campaign as the primary, fits the sweeps from the sweep campaign
alone, never pools it, and the paper gets a Scalability appendix that quotes measured values and names the
fitted line as a fit."""
import dataclasses
import datetime as dt
import json
import re

import numpy as np
import pytest

from osbench_analysis import formatting, stats
from osbench_analysis.analysis import pipeline as analysis
from osbench_analysis.report import sections as paper_sections
from osbench_analysis.catalog import registry
from osbench_analysis.store import campaigns as store
from osbench_analysis.analysis import sweeps
from osbench_analysis.paths import CAMPAIGNS_DIR

ROUND = "20261126T113057Z-vm-native"
#: relative growth of each sweep over its range in the synthetic campaign (0: constant)
GROWTH = {"fork_alive": 0.5, "mmap_window_maps": 0.0, "socket_bind_open": 0.3, "thread_create_alive": 0.2,
          "fork_exit": 1.0, "ctxsw_ring": 0.6, "files_in_folder": 0.1}


def _template() -> store.Campaign:
    if not (CAMPAIGNS_DIR / ROUND / store.SEAL_FILE).is_file():
        pytest.skip(f"campaign {ROUND} not in this checkout")
    return store.load_campaign(CAMPAIGNS_DIR / ROUND)


def _copy(root, c: store.Campaign) -> None:
    store.write_campaign(root, c.id, c.samples, dataclasses.replace(c.manifest, files={}))


def sweep_campaign(root, base: store.Campaign, cid: str, *, minutes: int = 90, probes=None, seed: int = 0):
    """A sealed native campaign of the swept probes at every point of their sweeps, made from the round's
    first-point batches with each point's times scaled by 1 + GROWTH * (x - x0) / (x1 - x0) and a little
    run-to-run noise; its manifest's config names only those probes, with every point as a variant."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    swept = {p: v for p, v in sweeps.swept_probes().items() if probes is None or p in probes}
    parts = []
    for probe, (x, points) in swept.items():
        first = base.samples[base.samples["probe"] == probe]
        assert len(first), probe
        spec = registry.PROBES[probe]
        for point in points:
            part = first.copy()
            params = {**json.loads(part["params_json"].iloc[0]), x: point}
            part["params_json"] = json.dumps(params, sort_keys=True)
            part["variant"] = registry.variant_label(spec, params, part["fs_type"].iloc[0] if spec.uses_workdir else "")
            scale = 1 + GROWTH[probe] * (point - points[0]) / (points[-1] - points[0])
            noise = np.exp(rng.normal(0, 0.01, part["run"].max() + 1))[part["run"].to_numpy()]
            part["elapsed_ns"] = (part["elapsed_ns"] * scale * noise).round().astype("int64")
            part["per_op_ns"] = part["elapsed_ns"] / part["iterations"]
            parts.append(part)
    s = pd.concat(parts, ignore_index=True).assign(campaign_id=cid)
    created = (dt.datetime.fromisoformat(base.manifest.created_utc) + dt.timedelta(minutes=minutes)).isoformat()
    cfg = dict(base.manifest.config, campaign_id=cid, campaign_set=[cid], probes=list(swept), canaries=None,
               variants={p: [{x: v} for v in pts] for p, (x, pts) in swept.items()}, profile="quick")
    m = dataclasses.replace(base.manifest, campaign_id=cid, created_utc=created, files={}, config=cfg)
    return store.load_campaign(store.write_campaign(root, cid, s, m))


def test_a_campaign_of_the_swept_probes_at_every_point_is_a_sweep_campaign():
    every = {p: [{x: v} for v in pts] for p, (x, pts) in sweeps.swept_probes().items()}
    assert sweeps.sweep_only({"probes": list(every), "variants": every})
    assert sweeps.sweep_only({"probes": ["fork_alive", "canary_cpu"], "variants": {"fork_alive": every["fork_alive"]}})
    # one point only, or another probe beside the swept ones: an ordinary campaign
    assert not sweeps.sweep_only({"probes": ["fork_alive"], "variants": {"fork_alive": [{"alive": 0}]}})
    assert not sweeps.sweep_only({"probes": ["fork_alive", "null_syscall"], "variants": every})
    assert not sweeps.sweep_only({"probes": [], "variants": every}) and not sweeps.sweep_only(None)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_sweep_campaign_feeds_the_sweeps_and_never_replaces_the_round(tmp_path):
    base = _template()
    _copy(tmp_path, base)
    sw = sweep_campaign(tmp_path, base, "20261126T131000Z-vm-native")
    # the sweep campaign is the newest native one; the round's stays the primary
    assert [r.campaign_id for r in analysis.select_campaigns(root=tmp_path)] == [ROUND]
    # the round's other probes are analysed as ever: only the swept ones matter here
    a = analysis.analyze(root=tmp_path, probes=sorted(sweeps.swept_probes()))
    assert a.campaign_ids == [ROUND] and a.primary_ids == [ROUND]
    assert [r.campaign_id for r in a.sweep_campaigns] == [sw.id] and list(a.sweep_manifests) == [sw.id]
    assert set(a.estimates["campaign_id"]) == {ROUND} and len(a.campaign_ratios) == 0
    assert a.pooling.n_campaigns_max == 1          # never pooled with the round
    # every sweep fitted from the sweep campaign's three points; the synthetic growth comes back
    t = a.sweeps.set_index(["probe", "placement"])
    assert set(t.index.get_level_values(0)) == set(sweeps.swept_probes())
    assert (t["points"] == 3).all()
    for probe, growth in GROWTH.items():
        r = t.loc[(probe, "same_cpu")]
        assert r["growth_ci_low"] - 0.05 <= growth <= r["growth_ci_high"] + 0.05, probe
    assert t.loc[("fork_alive", "same_cpu"), "verdict"] == "linear growth"
    assert t.loc[("mmap_window_maps", "same_cpu"), "verdict"] in ("constant", "inconclusive")

    tex = paper_sections.scalability_tex(a)
    assert tex.startswith("\\clearpage\n\\section{Scalability sweeps}\\label{sec:scalability}")
    assert "answer no question of the paper's body" in tex
    assert "McGarry's scalability tests: processes alive, windows mapped, sockets open, threads alive" in tex
    assert sw.id not in tex and "\\label{tab:sweeps}" in tex and "generated/sweeps_paper" in tex
    # the sentence of a sweep quotes what was measured at each point (the geometric mean of the runs' medians
    # with its interval over runs), the measured change, and the slope named as a fit
    fit = a.sweep_fits[("fork_alive", "native", "same_cpu")]
    pts = stats.sweep_points(fit)
    first = pts.iloc[0]
    runs0 = fit.points[fit.points["x"] == 0]["run_value_ns"]
    assert first.estimate_ns == pytest.approx(float(np.exp(np.log(runs0).mean())))
    assert first.ci_low_ns < first.estimate_ns < first.ci_high_ns
    sentence = tex[tex.index("Creating and reaping a process"):].split(". ")[0]
    assert sentence.startswith("Creating and reaping a process took "
                               + formatting.time_with_ci_tex(first.estimate_ns, first.ci_low_ns, first.ci_high_ns)
                               + " with 0 processes alive")
    rel, lo, hi = stats.measured_change(fit)
    assert f"{100 * rel:+.1f}\\% [{100 * lo:.1f}, {100 * hi:.1f}] measured" in sentence
    assert rel == pytest.approx(pts.iloc[-1].estimate_ns / first.estimate_ns - 1)
    assert lo < rel < hi and lo - 0.05 <= GROWTH["fork_alive"] <= hi + 0.05
    assert "least-squares slope fitted over every run" in sentence
    # the fitted value at the first point is nowhere quoted as a time
    fitted0, unit = formatting.format_time_ns(fit.intercept_ns)
    if fitted0 != formatting.format_time_ns(first.estimate_ns)[0]:
        assert f" {fitted0} [" not in tex and f" {fitted0} {unit}" not in tex
    row = next(line for line in tex.splitlines() if line.startswith("fork with processes alive (one CPU) & processes alive"))
    assert f"{fit.slope_ns:.3g}" in row.replace("$-$", "-")
    # the table has a row per fitted sweep and placement
    assert len(re.findall(r"\\\\(\[2pt\])?$", tex.split("\\midrule")[1], re.M)) == len(a.sweeps)
    # the measured points the PDF check reads: per operation, and per unit for the rounds of units
    table = paper_sections.sweep_points_table(a)
    fa = table[(table.probe == "fork_alive") & (table.placement == "same_cpu")]
    assert list(fa["x"]) == [0, 100, 1000] and fa["estimate_ns"].iloc[0] == pytest.approx(first.estimate_ns)
    assert set(table[table.probe == "files_in_folder"]["per_unit"]) == {True, False}

    # the reproduction table lists the sweep campaign with what it is for
    from osbench_analysis.report import paper

    # a long id may break at its hyphens in the printed table (\allowbreak{}): read it whole
    repro = paper_sections.reproduce_tex(a, paper.other_campaigns(a, tmp_path)).replace("\\allowbreak{}", "")
    assert sw.id.replace("_", "\\_") in repro and "(sweeps)" in repro and "scalability sweeps alone" in repro
    # and the title page names its round beside the round's
    assert paper.campaign_round_line(a) == "Measured 2026-11-26 11:30 UTC; scalability sweeps 2026-11-26 13:10 UTC"


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_paper_figure_has_a_panel_per_sweep_at_the_text_width(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from osbench_analysis.plots import sweeps as plots_sweeps
    from osbench_analysis.report.pdf_check import smallest_print_font_pt

    base = _template()
    s = sweep_campaign(tmp_path, base, "s-native").samples
    fits = sweeps.fit_sweeps(s)
    fig = plots_sweeps.paper_sweeps_figure(fits)
    assert len([ax for ax in fig.axes if ax.get_visible()]) == len(sweeps.swept_probes())
    assert smallest_print_font_pt(fig) >= 7.5


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_only_a_sweep_campaign_is_the_primary_when_it_is_all_there_is(tmp_path):
    base = _template()
    sw = sweep_campaign(tmp_path, base, "20261126T131000Z-vm-native", probes=["fork_alive", "thread_create_alive"])
    assert [r.campaign_id for r in analysis.select_campaigns(root=tmp_path)] == [sw.id]
    refs, extra = analysis.select_sweep_campaigns(analysis.select_campaigns(root=tmp_path), tmp_path)
    assert [r.campaign_id for r in refs] == [sw.id] and extra == []


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_named_sweep_campaign_beside_the_round_is_read_for_the_sweeps(tmp_path):
    base = _template()
    _copy(tmp_path, base)
    sw = sweep_campaign(tmp_path, base, "20261126T131000Z-vm-native", probes=["socket_bind_open"])
    refs = analysis.select_campaigns([ROUND, sw.id], tmp_path)
    kept, swept = analysis.select_sweep_campaigns(refs, tmp_path, [ROUND, sw.id])
    assert [r.campaign_id for r in kept] == [ROUND] and [r.campaign_id for r in swept] == [sw.id]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_sweep_whose_operation_is_a_round_of_its_units_is_quoted_per_unit(tmp_path):
    """files_in_folder's operation is a round of `files` files: its time per operation grows with the files by
    construction, and the paper quotes the measured time per file at each point and its measured change."""
    base = _template()
    s = sweep_campaign(tmp_path, base, "s-native", probes=["files_in_folder", "socket_bind_open"]).samples
    fits = sweeps.fit_sweeps(s)
    t = sweeps.sweep_table(fits)
    r = next(t[t["probe"] == "files_in_folder"].itertuples())
    fit = fits[("files_in_folder", "native", "same_cpu")]
    c = paper_sections.sweep_change(r, fit)
    per_file = stats.sweep_points(fit, per_unit=True)
    per_op = stats.sweep_points(fit)
    assert list(per_file["x"]) == [1000, 10000, 65534]
    assert per_file["estimate_ns"].to_numpy() == pytest.approx(per_op["estimate_ns"].to_numpy() / per_file["x"])
    # per op +10% from 1000 to 65534 files (GROWTH): per file about 1.1 * 1000 / 65534 - 1, measured
    assert c.per == "file" and c.rel == pytest.approx(per_file["estimate_ns"].iloc[-1] / per_file["estimate_ns"].iloc[0] - 1)
    assert c.rel == pytest.approx(1.1 * 1000 / 65534 - 1, abs=0.02) and c.verdict == "falls"
    other = next(t[t["probe"] == "socket_bind_open"].itertuples())
    assert paper_sections.sweep_change(other, fits[("socket_bind_open", "native", "same_cpu")]).per == ""
    sentence = paper_sections._sweep_sentence(r, fit)
    p0 = per_file.iloc[0]
    assert sentence.startswith("Creating and removing a file took, per file, "
                               + formatting.time_with_ci_tex(p0.estimate_ns, p0.ci_low_ns, p0.ci_high_ns)
                               + " with 1000 files in the folder")
    assert "the time per file falls from the first point to the last" in sentence


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_committed_sweep_campaign_is_read_beside_the_committed_round(committed_root):
    sweep_id = "20261126T120746Z-vm-native"
    if not (CAMPAIGNS_DIR / sweep_id / store.SEAL_FILE).is_file():
        pytest.skip(f"campaign {sweep_id} not in this checkout")
    cat = store.catalog(committed_root)
    host = cat.loc[cat["campaign_id"] == sweep_id, "host"].iloc[0]   # its own host, whichever is newest here
    refs = analysis.select_campaigns(root=committed_root, host=host)
    native = [r.campaign_id for r in refs if r.environment == "native"]
    assert len(native) == 1 and native[0] != sweep_id
    assert sweep_id in analysis.sweep_campaign_ids(store.catalog(committed_root))
    _, swept = analysis.select_sweep_campaigns(refs, committed_root)
    assert [r.campaign_id for r in swept] == [sweep_id]
