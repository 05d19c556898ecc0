"""The exploration API answers its questions from the data: selection, per-run
summary, the runs' verdict, comparisons; analysis options fail as one line."""
import numpy as np
import pandas as pd
import pytest

from osbench_analysis import cli, formatting
from osbench_analysis.analysis import pipeline as analysis
from osbench_analysis.explore import questions as explore


@pytest.fixture(autouse=True, scope="module")
def committed_store(committed_root):
    """The questions a user asks without naming a root read the committed campaigns (a copy: never the
    checkout's data/campaigns, where a clone's own rounds land)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OSBENCH_DATA_DIR", str(committed_root))
        yield committed_root


def _committed(environment: str) -> str:
    """The committed campaign of an environment that analyze() reads by default (a newer campaign measured for
    the sweeps alone is not it)."""
    return next(r.campaign_id for r in analysis.select_campaigns() if r.environment == environment)


def _frame(run_medians_by_env: dict, batches: int = 12, noise: float = 0.01, seed: int = 1) -> pd.DataFrame:
    """Samples of one condition per environment whose runs have the given medians (ns)."""
    rng = np.random.default_rng(seed)
    rows = []
    for env, medians in run_medians_by_env.items():
        for run, m in enumerate(medians):
            for b, e in enumerate(rng.normal(0, noise, batches)):
                rows.append(dict(campaign_id=f"c-{env}", environment=env, host="h", probe="p", variant="",
                                 placement="same_cpu", run=run, batch=b, per_op_ns=m * np.exp(e), flagged=False))
    return pd.DataFrame(rows)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_samples_keep_only_the_condition_asked_for_with_flags():
    s = explore.samples("pipe_pingpong", placement="same_cpu", environments=["native", "gvisor"])
    assert set(s["environment"]) == {"native", "gvisor"} and set(s["placement"]) == {"same_cpu"}
    assert set(s["probe"]) == {"pipe_pingpong"} and s["flagged"].dtype == bool
    assert s.groupby("campaign_id")["environment"].nunique().eq(1).all()
    # the newest campaign of each environment, as analyze() selects them (never a sweep campaign beside a round)
    assert set(s["campaign_id"]) == {_committed("native"), _committed("gvisor")}


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_samples_say_what_exists_when_asked_for_something_absent():
    with pytest.raises(explore.ExploreError, match="have: .*null_syscall"):
        explore.samples("no_such_probe")
    gvisor = _committed("gvisor")
    placements = set(explore.samples("pipe_pingpong", campaigns=[gvisor])["placement"])
    missing = next(p for p in ("cross_cpu", "same_cpu", "unpinned") if p not in placements)
    with pytest.raises(explore.ExploreError, match="gvisor.*has placements"):
        explore.samples("pipe_pingpong", placement=missing, environments=["native", "gvisor"])


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_run_summary_is_one_row_per_run_with_its_median():
    s = explore.samples("null_syscall", environments=["native"])
    r = explore.run_summary(s)
    assert len(r) == s.groupby(["campaign_id", "placement", "run"]).ngroups
    med = s.groupby(["placement", "run"])["per_op_ns"].median()
    assert np.allclose(r.set_index(["placement", "run"])["median_ns"].loc[med.index], med)
    assert (r["flagged"] <= r["batches"]).all() and (r["spread"] >= 0).all()


def test_verdict_tells_alike_runs_from_a_slow_minority_and_from_one_run():
    alike = explore.runs_agree(_frame({"a": [100.0] * 8}))
    assert alike["verdict"].tolist() == ["agree"] and "batch noise" in alike["reason"][0]
    minority = _frame({"a": [100.0] * 6 + [150.0] * 3})
    v = explore.runs_agree(minority)
    assert v["verdict"].tolist() == ["slow minority"] and "3 of 9 runs are 1.50x slower" in v["reason"][0]
    slow = explore.run_summary(minority).set_index("run")["slow"]
    assert slow[slow].index.tolist() == [6, 7, 8]
    one = explore.runs_agree(_frame({"a": [100.0]}))
    assert one["verdict"].tolist() == ["too few runs"]


def test_compare_gives_the_ratio_with_an_interval_that_holds_it():
    s = _frame({"base": [100.0, 102, 98, 101, 99], "other": [200.0, 204, 196, 202, 198]})
    c = explore.compare(s, "environment", "other", "base")
    row = c.iloc[0]
    assert row["ci_low"] < 2.0 < row["ci_high"] and row["different"]
    assert row["sentence"].startswith("other is 2.00x slower than base")
    with pytest.raises(explore.ExploreError, match="have: base, other"):
        explore.compare(s, "environment", "third", "base")


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_analyze_restricted_to_probes_and_environments():
    native = _committed("native")
    r = analysis.analyze([native], probes=["null_syscall"], n_resamples=200)
    assert set(r.estimates["probe"]) == {"null_syscall"}
    with pytest.raises(analysis.AnalysisError, match="probes .*no_such.* not in the selected"):
        analysis.analyze([native], probes=["no_such"])
    with pytest.raises(analysis.AnalysisError, match="environments"):
        analysis.analyze(environments=["nowhere"])


def test_readable_table_has_a_unit_per_row_and_three_digits():
    est = pd.DataFrame(dict(environment=["native", "native"], campaign_id=["a", "b"], probe=["x", "y"],
                            variant=["", ""], placement=["same_cpu"] * 2, estimate_ns=[181.234, 6170.5],
                            ci_low_ns=[170.0, 5800.0], ci_high_ns=[221.0, 6900.0], confidence=[0.95, 0.93],
                            quoted=["typical run"] * 2, ci_method=["runs-os"] * 2, n_runs=[8, 5],
                            flagged_fraction=[0.1, 0.0], warning=["w" * 120, ""]))
    t = formatting.readable_estimates(est)
    assert t["time"].tolist() == ["181 ns", "6.17 µs"] and t["interval"].tolist()[1] == "[5.80, 6.90] µs"
    assert "campaign_id" in t                                     # two campaigns of one environment
    assert t["warning"][0] == "w1" and t.attrs["legend"]["w1"] == "w" * 60   # a warning of no known kind
    assert formatting.readable_estimates(est, compact=False)["warning"][0] == "w" * 120
    assert "campaign_id" not in formatting.readable_estimates(est.iloc[:1])


BAD_OPTIONS = [("--level", "1.5", "level"), ("--level", "0", "level"), ("--n-resamples", "5", "n_resamples"),
               ("--seed", "-1", "seed"), ("--baseline", "", "baseline")]


@pytest.mark.parametrize("option,value,name", BAD_OPTIONS, ids=[f"{o}={v}" for o, v, _ in BAD_OPTIONS])
@pytest.mark.parametrize("command", ["analyze", "paper", "reference"])
def test_each_bad_analysis_option_is_one_line_from_the_cli(command, option, value, name, capsys, tmp_path,
                                                           committed_store):
    rc = cli.main([command, option, value, "--out-dir", str(tmp_path / "out"), "--root", str(committed_store)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"osbench {command}: error: {name}") and "(got " in err
    assert not (tmp_path / "out").exists()     # checked before anything was read or written


def test_a_bad_ci_method_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["analyze", "--ci-method", "bogus"])
    assert e.value.code == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err


def test_settings_refuse_a_method_that_does_not_go_with_the_estimator():
    with pytest.raises(analysis.AnalysisError, match="does not go with estimator 'mean'"):
        analysis.AnalysisSettings(estimator="mean", ci_method="runs-os")


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_explorer_widget_follows_what_is_picked():
    from osbench_analysis.explore import widgets

    ex = widgets.Explorer(probe="pipe_pingpong", placement="same_cpu", environments=["native", "gvisor"])
    assert set(ex._samples["environment"]) == {"native", "gvisor"} and set(ex._samples["probe"]) == {"pipe_pingpong"}
    ex.probe.value = "null_syscall"
    assert set(ex._samples["probe"]) == {"null_syscall"}
    ex.environments.value = ("native",)
    assert set(ex._samples["environment"]) == {"native"}
    # the plot, the runs' verdicts (no comparison with one environment), as the Output's state
    assert [o["output_type"] for o in ex.output.outputs] == ["display_data", "display_data"]
    assert ex._samples["campaign_id"].iloc[0] in ex.output.outputs[1]["data"]["text/html"]
    # each campaign listed with the host that measured it (issue #28)
    labels = dict(ex.campaigns.options)
    older = [c for c in labels.values() if "native" in c][-1]
    label = next(k for k, v in labels.items() if v == older)
    assert label.startswith(older + " · ") and ("Intel" in label or "AMD" in label)
    ex.campaigns.value = (older,)
    assert set(ex._samples["campaign_id"]) == {older} and ex.probe.value == "null_syscall"


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_screen_figures_are_one_per_family_titled_with_environments_told_apart():
    r = analysis.analyze(probes=["null_syscall", "pipe_pingpong", "fork_exit"], environments=["native", "gvisor"],
                         n_resamples=200)
    figs = r.screen_figures()
    assert {"per_op_Kernel entry", "per_op_IPC", "per_op_Processes"} <= set(figs)
    for name, fig in figs.items():
        ax = fig.axes[0]
        assert ax.get_title() and fig.get_size_inches()[1] < 12, name
        styles = {(tuple(line.get_color()) if not isinstance(line.get_color(), str) else line.get_color(),
                   line.get_marker()) for line in ax.get_lines() if line.get_marker() not in (None, "None", "", "|", "_")}  # not the caps
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert set(labels) <= {"native", "gvisor"} and len(styles) == len(labels), name
    # the names without drawing; only the figures asked for drawn, each the same as among all of them
    assert r.screen_figure_names() == list(figs)
    one = r.screen_figures(["ratio_IPC"])
    assert list(one) == ["ratio_IPC"] and one["ratio_IPC"].axes[0].get_title() == figs["ratio_IPC"].axes[0].get_title()
    with pytest.raises(analysis.AnalysisError, match="no screen figure named 'ratio_Nothing'.*per_op_IPC"):
        r.screen_figures(["ratio_Nothing"])


def test_every_registered_environment_looks_the_same_in_every_figure():
    from osbench_analysis import environments
    from osbench_analysis.plots import forest as plots

    # the kernel-version sweep's guests (Environment.in_all False) are drawn in their own figure only (plots/versions.py)
    assert [e.name for e in environments.REGISTRY if e.in_all] == list(plots.KNOWN_ENVIRONMENTS)
    everyone = plots.environment_styles(plots.KNOWN_ENVIRONMENTS)
    assert len(set(everyone.values())) == len(everyone)               # ten environments, ten looks
    alone = plots.environment_styles(["uml", "gvisor"])                  # whatever is drawn beside it
    assert alone["gvisor"] == everyone["gvisor"] and alone["uml"] == everyone["uml"]
    # names outside the registry (an environment with its campaign) take looks no name drawn has
    mixed = plots.environment_styles(["native", "native 20261123T1", "native 20261126T1"])
    assert len(set(mixed.values())) == 3 and mixed["native"] == everyone["native"]


def test_a_forest_gives_each_environment_on_a_row_its_own_line():
    from osbench_analysis.plots import forest as plots

    envs = ["native", "gvisor", "gvisor-ptrace", "gvisor-gofer", "uml", "fuse", "fuse-nocache"]
    rows = [dict(environment=e, probe="stat", variant="", placement="same_cpu", estimate_ns=100.0 * (k + 1),
                 ci_low_ns=90.0 * (k + 1), ci_high_ns=110.0 * (k + 1)) for k, e in enumerate(envs)]
    rows.append(dict(environment="native", probe="getpid", variant="", placement="same_cpu", estimate_ns=50.0,
                     ci_low_ns=45.0, ci_high_ns=55.0))
    fig = plots.environment_forest(pd.DataFrame(rows), value="estimate_ns", low="ci_low_ns", high="ci_high_ns",
                                   xlabel="time per operation (ns, log scale)", title="t")
    ax = fig.axes[0]
    ys = sorted(y for line in ax.get_lines() if line.get_marker() not in ("|", "None", None)
                for y in line.get_ydata())
    assert len(ys) == 8 and min(np.diff(ys)) >= 0.99          # no two points share a line
    assert ax.get_xlabel() == "time per operation (log scale)"  # the ticks carry the unit
    assert [t.get_text() for t in fig.legends[0].get_texts()] == envs   # the registry's order


def test_the_compact_table_says_once_what_every_row_says():
    est = pd.DataFrame(dict(environment=["native", "gvisor"], probe=["x", "x"], variant=["", ""],
                            placement=["same_cpu"] * 2, estimate_ns=[181.234, 6170.5], ci_low_ns=[170.0, 5800.0],
                            ci_high_ns=[221.0, 1302e3], confidence=[0.95, 0.95], quoted=["typical run"] * 2,
                            ci_method=["runs-os"] * 2, n_runs=[8, 5], flagged_fraction=[0.1, 0.0],
                            warning=["w " * 200, ""], n_campaigns=[1, 1], interval_over=["within one campaign"] * 2))
    t = formatting.readable_estimates(est)
    assert not {"confidence", "quoted", "campaigns", "interval over"} & set(t.columns)
    assert t.attrs["caption"] == ("Every row: 95% intervals, quoted: typical run (runs-os), each interval within "
                                  "one campaign.")
    assert "variant" not in t and "warning" in t                           # empty: left out; one: kept
    assert list(t.columns[:3]) == ["probe", "placement", "time"]          # what is measured, then the estimate
    assert t["interval"][t["environment"] == "gvisor"].item() == "[5.80, 1300] µs"   # three digits, never four
    html = formatting.show(t).to_html()
    assert "Every row: 95% intervals" in html
    full = formatting.readable_estimates(est, compact=False)
    assert {"confidence", "quoted", "campaigns", "interval over"} <= set(full.columns)


def test_a_user_error_shows_as_one_line_in_a_notebook():
    with pytest.raises(analysis.AnalysisError) as e:
        analysis.AnalysisSettings(level=1.5)
    lines = e.value._render_traceback_()      # what IPython shows instead of the traceback
    assert len(lines) == 1 and lines[0].startswith("AnalysisError: level must be") and "(got 1.5)" in lines[0]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_two_campaigns_by_default_are_two_that_measured_the_probe():
    from osbench_analysis.store import campaigns as store

    cat = store.catalog()
    sweep = analysis.sweep_campaign_ids(cat)
    # the host with the most native campaigns (after `make all` the newest host may have only its own one)
    host = cat.loc[cat["environment"] == "native", "host"].value_counts().idxmax()
    pair = explore.newest("native", 2, probe="pipe_pingpong", placement="same_cpu", host=host)
    held = explore.samples("pipe_pingpong", placement="same_cpu", campaigns=pair)
    assert set(held["campaign_id"]) == set(pair)
    assert not set(explore.newest("native", 2, host=host)) & sweep   # the whole catalog's, not the swept probes'
    if sweep:   # a named campaign without the probe says so, instead of a comparison failing later
        with pytest.raises(explore.ExploreError, match="has no pipe_pingpong batches"):
            explore.samples("pipe_pingpong", placement="same_cpu", campaigns=[*pair, sorted(sweep)[0]])


def test_a_forest_within_a_decade_labels_its_ticks_as_times():
    from osbench_analysis.plots import forest as plots

    t = pd.DataFrame(dict(environment=["native"] * 3, probe=["a", "b", "c"], variant=[""] * 3, placement=["same_cpu"] * 3,
                          estimate_ns=[1600.0, 3100.0, 12000.0], ci_low_ns=[1550.0, 3000.0, 11500.0],
                          ci_high_ns=[1700.0, 3300.0, 13500.0]))
    fig = plots.environment_forest(t, value="estimate_ns", low="ci_low_ns", high="ci_high_ns", xlabel="x", title="t")
    fig.canvas.draw()
    labels = [x.get_text() for x in fig.axes[0].get_xticklabels(minor=True) + fig.axes[0].get_xticklabels()]
    shown = [x for x in labels if x]
    assert shown and all(x.endswith(("ns", "µs", "ms", " s")) for x in shown), shown   # never '3x10^3'


def test_a_pooled_row_reads_short_and_says_over_how_many_campaigns():
    est = pd.DataFrame(dict(environment=["native", "native"], probe=["x", "x"], variant=["", ""],
                            campaign_id=["20261126T123020Z-vm-native",
                                         "pooled:20261126T113057Z-vm-native,20261126T123020Z-vm-native"],
                            placement=["same_cpu"] * 2, estimate_ns=[100.0, 106.0], ci_low_ns=[99.0, 55.4],
                            ci_high_ns=[102.0, 201.0], confidence=[0.95, 0.95],
                            quoted=["typical run", "mean over campaigns"], ci_method=["runs-os", "pooled-t"],
                            n_runs=[6, None], flagged_fraction=[0.0, float("nan")], warning=["", ""],
                            n_campaigns=[1, 2], interval_over=["within one campaign", "over campaigns"]))
    t = formatting.readable_estimates(est)
    assert t["campaign_id"].tolist() == ["11-26 12:30", "pooled (2)"]     # its start; a pooled row apart, short
    assert t["quoted"].tolist() == ["typical", "pooled"] and "interval over" not in t and "campaigns" not in t
    assert t.attrs["legend"]["pooled"].startswith("mean over campaigns (pooled-t), its campaign 'pooled (n)'")
    assert "&lt;NA&gt;" not in formatting.show(t).to_html()
    full = formatting.readable_estimates(est, compact=False)
    assert full["interval over"].tolist() == ["within one campaign", "over campaigns"]


def test_warnings_read_as_short_codes_with_their_legend():
    texts = ["runs are not alike: 1 of 6 runs is 1.16x slower than the others (beyond batch noise, p=0.002)",
             "only 2 run(s): run-to-run variance is poorly estimated; multimodal: two modes",
             "", "something new: said in full in table(full=True)"]
    codes, legend = formatting.warning_codes(texts)
    assert codes == ["minority", "few-runs, modes", "", "w1"]
    assert set(legend) == {"minority", "few-runs", "modes", "w1"} and legend["w1"] == "something new"
    t = pd.DataFrame({"probe": ["x"], "time": ["1 ns"], "warning": [codes[1]]})
    t.attrs["legend"] = legend
    html = formatting.show(t).to_html()
    assert "minority = a minority of runs is slower" in html
    assert "width: 30em" not in html             # a column of short codes is not given a sentence's width
    assert "width: 30em" in formatting.show(t.assign(warning=[texts[0]])).to_html()    # one of sentences is


def test_the_table_filter_keeps_the_rows_picked_and_lets_unknown_columns_through():
    from osbench_analysis.explore import widgets

    t = pd.DataFrame(dict(probe=["a", "a", "b"], environment=["native", "gvisor", "native"],
                          host=["h1", "h2", "h1"], time=["1 ns", "2 ns", "3 ns"], host_label=["x", "y", "x"]))
    t.attrs["caption"] = "Every row: 95% intervals."
    f = widgets.TableFilter(t)
    assert list(f.lists) == ["probe", "environment", "host"]
    assert list(f.lists["host"].options) == [widgets.ALL, "h1", "h2"]
    f.lists["probe"].value = "a"
    f.lists["host"].value = "h1"
    rows = f.rows()
    assert rows["time"].tolist() == ["1 ns"] and list(rows.columns) == list(t.columns)
    assert rows.attrs["caption"] == "Every row: 95% intervals."
    f.lists["environment"].value = "gvisor"
    assert f.rows().empty


def test_widgets_show_their_content_as_state_not_as_captured_output():
    # what a widget shows travels as its Output's state: a runner (nbclient) that captures output into an
    # Output widget sends it back to the kernel while waiting for the cell's reply, and papermill hung so
    from osbench_analysis.explore import widgets

    t = pd.DataFrame(dict(probe=["a", "b"], environment=["native", "native"], time=["1 ns", "3 ns"]))
    f = widgets.TableFilter(t)
    (shown,) = f.output.outputs
    assert shown["output_type"] == "display_data" and ">3 ns<" in shown["data"]["text/html"]
    f.lists["probe"].value = "a"
    (shown,) = f.output.outputs
    assert ">1 ns<" in shown["data"]["text/html"] and ">3 ns<" not in shown["data"]["text/html"]
    f.lists["probe"].value = widgets.ALL
    f.table = t.iloc[0:0]
    f.refresh()
    assert f.output.outputs == ({"output_type": "stream", "name": "stdout", "text": "no row has these values\n"},)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_guests_are_one_call_and_asking_samples_for_one_says_so(tmp_path):
    table, figure = explore.guests()
    assert {"GNU Mach primitive", "Linux counterpart", "GNU Mach", "Linux"} <= set(table.columns) and len(table)
    assert figure is not None and len(figure.axes) >= 2
    with pytest.raises(explore.ExploreError, match=r"count guest instructions, not ns: explore\.guests\(\)"):
        explore.samples("null_syscall", environments=["mach"])
    empty, none = explore.guests(tmp_path / "no-such-folder")
    assert empty.empty and none is None


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_two_campaigns_compares_the_newest_pair_and_a_single_round_gets_a_note_not_an_error(committed_store, tmp_path):
    from osbench_analysis.store import campaigns as store
    from osbench_analysis.store import synthetic

    base = store.load_campaign(_committed("native"), committed_store)
    synthetic.write_synthetic(tmp_path, "20300101T120000Z-vm-native", base=base, seed=1)
    one = explore.two_campaigns("native", "null_syscall", placement="same_cpu", root=tmp_path)
    assert one.pair == [] and one.table.empty and one.figure is None
    assert one.note.startswith("nothing to compare yet: native has 1 campaign(s)") and "make measure" in one.note
    synthetic.write_synthetic(tmp_path, "20300102T120000Z-vm-native", base=base, seed=2,
                              created_utc="2030-01-02T12:00:00+00:00")
    two = explore.two_campaigns("native", "null_syscall", placement="same_cpu", root=tmp_path)
    assert two.pair == ["20300101T120000Z-vm-native", "20300102T120000Z-vm-native"] and two.note == ""
    assert len(two.table) == 1 and two.figure is not None
