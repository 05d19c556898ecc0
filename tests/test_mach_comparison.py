"""The emulated-CPU comparison (microkernel.py) on sample rows shaped like a
campaign's: exact counts, boot ranges, ratios, the tables and the figure."""
import json
import re

import numpy as np
import pandas as pd
import pytest

from osbench_analysis.analysis import microkernel
from osbench_analysis.catalog import registry


def rows(env, probe, per_op_by_boot, params=None, warm_per_op=None):
    """Measured batches per boot (a list of per-op counts per boot), plus a warm-up batch that must not count."""
    spec = registry.PROBES[probe]
    pj = json.dumps(registry.resolve_params(spec, params or {}), sort_keys=True)
    out = []
    for run, batches in enumerate(per_op_by_boot):
        out.append({"environment": env, "probe": probe, "params_json": pj, "run": run, "warmup": True,
                    "iterations": 10, "elapsed_ns": 10 * (warm_per_op or 10 * batches[0])})
        out += [{"environment": env, "probe": probe, "params_json": pj, "run": run, "warmup": False,
                 "iterations": 1000, "elapsed_ns": int(1000 * x)} for x in batches]
    return out


def samples():
    data = rows("mach", "mach_null_trap", [[76, 76, 76]] * 3)
    data += rows("linux-tcg", "null_syscall", [[326, 326, 326]] * 3)
    data += rows("mach", "mach_rpc_task", [[1664, 1664, 1664.5], [1664, 1664, 1664], [1664, 1664.5, 1664]])
    data += rows("linux-tcg", "pipe_pingpong", [[10865, 11075, 10865], [10900, 10865, 10865], [10865, 10865, 10990]])
    data += rows("linux-tcg-nomitig", "pipe_pingpong", [[10600, 10600, 10600]] * 2)
    return pd.DataFrame(data)


def test_identical_counts_are_exact_and_the_ratio_is_exact_too():
    tab = microkernel.comparison(samples()).set_index("mach_probe")
    r = tab.loc["mach_null_trap"]
    assert r["mach_exact"] and r["linux_exact"] and r["ratio_exact"]
    assert r["mach_median"] == 76 and r["linux_median"] == 326 and r["mach_boots"] == 3
    assert np.isclose(r["ratio"], 326 / 76)
    assert "(exact)" in microkernel.count_tex(microkernel._stats(r, "mach"))


def test_counts_that_differ_keep_their_range_min_and_mean():
    tab = microkernel.comparison(samples()).set_index("mach_probe")
    r = tab.loc["mach_rpc_task"]
    assert not r["linux_exact"] and not r["ratio_exact"]
    assert r["linux_min"] == 10865 and r["linux_mean"] > r["linux_median"]   # the interrupt tail stays visible
    assert r["linux_lo"] <= r["linux_median"] <= r["linux_hi"]
    assert r["ratio_lo"] <= r["ratio"] <= r["ratio_hi"]
    assert r["linux_nomitig_exact"] and r["linux_nomitig_median"] == 10600
    assert np.isclose(r["linux_coverage"], 0.75)   # 3 boots: 1 - 2^-2


def test_pairs_never_measured_stay_empty_not_zero():
    tab = microkernel.comparison(samples()).set_index("mach_probe")
    r = tab.loc["mach_task_create"]
    assert r["mach_boots"] == 0 and np.isnan(r["ratio"])
    assert microkernel.count_tex(microkernel._stats(r, "mach")) == "--"


def test_the_memory_models_known_answers_are_no_mach_versus_linux_row_even_when_measured():
    data = pd.DataFrame(rows("mach", "mach_null_trap", [[76, 76]] * 2) + rows("mach", "mach_page_pass", [[1300, 1300]] * 2))
    hidden = {n for n, s in registry.PROBES.items() if s.guest == "mach" and s.hidden}
    assert "mach_page_pass" in hidden
    tab = microkernel.comparison(data)
    assert "mach_null_trap" in set(tab["mach_probe"]) and not hidden & set(tab["mach_probe"])


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_tables_and_figure_are_written(tmp_path):
    tab = microkernel.comparison(samples())
    pub = pd.DataFrame([{"system_as_published": "Mach", "cell_as_published": "114", "unit_label": "µs",
                         "hardware": "unnamed", "semantics": "smallest message"}])
    files = microkernel.write_tables(tab, pub, tmp_path, {"qemu": "QEMU 7.2"})
    names = {f.name for f in files}
    assert {"microkernel_table.tex", "microkernel_published.tex", "microkernel_caveats.tex",
            "microkernel.pdf", "microkernel.csv"} <= names
    table = (tmp_path / "microkernel_table.tex").read_text()
    assert "guest instructions per operation" in table and "326 (exact)" in table
    assert not re.search(r"\bns\b|\\textmu", table)   # never host time in this table
    assert "not the Hurd" in (tmp_path / "microkernel_caveats.tex").read_text()


def test_published_figures_come_from_the_reference_data():
    pub = microkernel.published()
    assert set(pub["metric_id"]) == set(microkernel.PUBLISHED_METRICS)
    assert {"Mach", "L3"} <= set(pub["system_as_published"]) or len(pub) >= 2


@pytest.mark.slow
def test_the_host_analysis_never_takes_a_guest_campaign(tiny_campaign, tmp_path):
    from osbench_analysis.analysis import pipeline as analysis
    from conftest import relabel

    native = relabel(tiny_campaign, tmp_path, "native-copy", "native", minutes=0)
    guest = relabel(tiny_campaign, tmp_path, "guest-copy", "mach")
    assert [r.campaign_id for r in analysis.select_campaigns(root=tmp_path)] == [native.id]
    with pytest.raises(analysis.AnalysisError, match="guest instructions"):
        analysis.select_campaigns([guest.id], root=tmp_path)


def test_boots_that_agree_are_exact_even_when_batches_within_a_boot_differ():
    data = rows("mach", "mach_null_trap", [[76, 80, 76]] * 3) + rows("linux-tcg", "null_syscall", [[326, 330, 326]] * 2)
    r = microkernel.comparison(pd.DataFrame(data)).set_index("mach_probe").loc["mach_null_trap"]
    assert r["mach_exact"] and r["linux_exact"] and r["ratio_exact"]
    assert r["mach_min"] == 76 and r["mach_mean"] > 76   # the tail inside a boot is kept


def test_section_numbers_come_from_the_table_and_name_the_unit():
    tab = microkernel.comparison(samples())
    text = microkernel.section_tex(tab, pd.DataFrame([{"system_as_published": "Mach", "metric_id": "rpc_cost"}]))
    ratios = tab["ratio"].dropna()
    # the range of Linux / Mach the prose quotes is the table's, and the one exact ratio is counted as such
    assert f"{microkernel.sig3(ratios.min())}--{microkernel.sig3(ratios.max())} times" in text
    assert re.search(r"1 of the 2 ratios are exact; in the other 1 the boots differ slightly .*(leaves their median "
                     r"counts, and so the ratios, the same|moves a ratio by at most [0-9.]+\\\\% over its range)", text)
    assert "guest instructions" in text and "not a time" in text
    # the figure's caption names a filled marker only because some count here is exact
    assert "filled markers: every boot counted the same" in text
    none_exact = tab.assign(**{c: False for c in tab.columns if c.endswith("_exact")})
    assert "filled" not in microkernel._marker_words(none_exact)
    assert "no ratio is exact: the boots of each kernel differ slightly" in microkernel._exactness(
        none_exact[np.isfinite(none_exact["ratio"])], 0)
    assert "\\input{generated/microkernel_table}" in text and "\\label{fig:microkernel}" in text
    assert "tab:microkernel-published" in text
    assert not re.search(r"\bns\b", text.replace("nanoseconds", ""))


def test_mitigations_off_factor_is_reported_when_measured():
    tab = microkernel.comparison(samples())
    text = microkernel.findings_tex(tab)
    off = 10600 / tab.set_index("mach_probe").loc["mach_rpc_task", "mach_median"]
    assert f"mitigations=off}} the factor is {microkernel.sig3(off)}--{microkernel.sig3(off)}" in text
    change = 100 * (1 - 10600 / tab.set_index("mach_probe").loc["mach_rpc_task", "linux_median"])
    assert f"at most {microkernel.sig3(change)}\\%" in text


def test_no_mach_campaign_writes_no_section(tmp_path):
    (tmp_path / "out").mkdir()
    stale = tmp_path / "out" / "microkernel.tex"
    stale.write_text("stale")
    assert microkernel.write_section(tmp_path / "out", root=tmp_path / "empty") == []
    assert not stale.exists()


def test_published_table_has_one_row_per_published_comparison():
    pub = pd.DataFrame([{"metric_id": "rpc_cost", "system_as_published": s, "cell_as_published": c,
                         "unit_label": "µs", "semantics": "one RPC"} for s, c in (("Mach", "230"), ("L4", "10"))]
                       + [{"metric_id": "message_cost", "system_as_published": "L3", "cell_as_published": "10",
                           "unit_label": "µs", "semantics": "smallest message"}])
    body = microkernel.published_tex(pub).split("\\midrule")[1].split("\\bottomrule")[0]
    assert body.count("\\\\") == 2 and "Mach 230, L4 10" in body


def test_conclusion_sentence_quotes_the_tables_range_or_nothing():
    tab = microkernel.comparison(samples())
    ratios = tab["ratio"].dropna()
    s = microkernel.conclusion_sentence(tab)
    assert f"{microkernel.sig3(ratios.min())}--{microkernel.sig3(ratios.max())} times" in s and "over 2 pairs" in s
    assert microkernel.conclusion_sentence(tab.assign(ratio=np.nan)) == ""
    assert microkernel.conclusion_sentence(None) == ""


def test_on_screen_the_counts_read_in_three_digits_and_each_kernel_has_its_look():
    from osbench_analysis.plots import forest as plots
    from osbench_analysis.plots import microkernel as plots_microkernel

    tab = microkernel.comparison(samples())
    shown = microkernel.screen_table(tab)
    assert "guest instructions per operation" in shown.attrs["caption"] and "not a time" in shown.attrs["caption"]
    row = shown.set_index("GNU Mach primitive").loc["mach_null_trap"]
    assert row["GNU Mach"] == "76.0" and row["Linux"] == "326"
    assert (shown.set_index("GNU Mach primitive")["GNU Mach"] != "").all()
    fig = plots_microkernel.plot_microkernel(tab, screen=True)
    colours = {tuple(np.round(line.get_color(), 3)) for line in fig.axes[0].get_lines()
               if line.get_marker() not in ("|", "None", None)}
    looks = plots.environment_styles(["mach", "linux-tcg"])
    assert {tuple(np.round(looks[e][0], 3)) for e in looks} <= colours
    assert microkernel.screen_table(tab.iloc[0:0]).empty


def test_boots_of_two_campaigns_are_not_merged_run_by_run():
    one = pd.DataFrame(rows("mach", "mach_null_trap", [[76, 76, 76]] * 3)).assign(campaign_id="round1")
    two = pd.DataFrame(rows("mach", "mach_null_trap", [[80, 80, 80]] * 3)).assign(campaign_id="round2")
    linux = pd.DataFrame(rows("linux-tcg", "null_syscall", [[326, 326, 326]] * 3)).assign(campaign_id="round1")
    r = microkernel.comparison(pd.concat([one, two, linux], ignore_index=True)).set_index("mach_probe").loc[
        "mach_null_trap"]
    assert r["mach_boots"] == 6 and (r["mach_lo"], r["mach_hi"]) == (76, 80)


def test_one_boot_is_not_exact_however_alike_its_batches():
    """A boot has nothing to repeat against (the quick profile's budget may leave a guest's repeat out): one boot's
    identical batches do not make it exact, and its range is its one median."""
    one = pd.DataFrame(rows("mach", "mach_null_trap", [[76, 76, 76]]) + rows("linux-tcg", "null_syscall", [[326] * 3]))
    r = microkernel.comparison(one).set_index("mach_probe").loc["mach_null_trap"]
    assert r["mach_boots"] == 1 and not r["mach_exact"] and not r["linux_exact"] and not r["ratio_exact"]
    assert r["mach_lo"] == r["mach_hi"] == 76 and np.isnan(r["mach_coverage"])
