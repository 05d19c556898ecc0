"""What run_campaign.ipynb shows after measuring (issue 21): one row per
(environment, condition) with a fresh index and whole-number counts, and the
failed workers, or one sentence when none failed."""
import pandas as pd

from osbench_analysis.report import run_report


def test_the_summary_has_one_index_and_whole_counts_across_environments(tiny_campaign):
    table = run_report.summary([tiny_campaign, tiny_campaign])
    assert list(table.index) == list(range(len(table)))
    assert table.columns[0] == "environment"
    for col in run_report.COUNTS:
        assert pd.api.types.is_integer_dtype(table[col]), col
    assert "0.0" not in table[list(run_report.COUNTS)].to_string()


def test_failures_are_a_table_and_none_is_one_sentence(tiny_campaign):
    # tiny_campaign holds test_crash_segv's crashed workers
    failed = run_report.failures([tiny_campaign, tiny_campaign])
    assert isinstance(failed, pd.DataFrame) and list(failed.index) == list(range(len(failed)))
    assert set(failed["probe"]) == {"test_crash_segv"} and failed.columns[0] == "environment"
    shown = run_report.failures([])
    assert shown == "no worker failed" and repr(shown) == "no worker failed"
    assert shown._repr_markdown_() == "no worker failed"


def test_the_readable_summary_has_a_unit_per_row_and_guests_count_instructions(tiny_campaign, monkeypatch):
    table = run_report.readable_summary([tiny_campaign])
    assert table.columns[0] == "environment" and "raw_median_per_op_ns" not in table
    assert table["raw median per op"].str.fullmatch(r"\d[\d.]* (ns|µs|ms)").all()
    assert pd.api.types.is_integer_dtype(table["operations per batch"])
    # an emulated guest's per-op numbers are guest instructions, not ns
    import osbench_analysis.analysis.pipeline as analysis

    plain = analysis.overview(tiny_campaign)
    monkeypatch.setattr(run_report, "summary", lambda cs: plain.assign(environment="mach")[
        ["environment", *plain.columns]])
    guest = run_report.readable_summary([tiny_campaign])
    assert guest["raw median per op"].str.endswith(" instructions").all()
