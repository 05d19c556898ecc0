"""Every number in data/reference reads as in its seed document; slips in the data are caught."""
import copy
import json

import pandas as pd
import pytest

from osbench_analysis.reference import studies as reference
from osbench_analysis.reference import claims as reference_claims
from osbench_analysis.reference import sourcecheck as sc

SEEDS = sc.default_seeds_dir()


def _seeds():
    """The folder of source texts; a test that needs it skips, in one line saying how to supply it, where a
    clone has none (CI has it: there these tests run, and fail on a real mismatch)."""
    if not SEEDS.is_dir():
        pytest.skip(sc.seeds_missing_reason(SEEDS))
    return SEEDS

SOURCES = reference.load_sources()
TABLES = reference.load_table_specs()


def _values(source_id, table_id):
    csv = reference.default_reference_dir() / source_id / f"{table_id}.csv"
    return pd.read_csv(csv, dtype=str, keep_default_na=False) if csv.is_file() else None


def _seed(source_id):
    return sc.read_seed(_seeds(), SOURCES[source_id]["seed_file"])


@pytest.mark.parametrize("source_id, spec", TABLES, ids=[f"{s}/{t['table_id']}" for s, t in TABLES])
def test_table_reads_exactly_as_in_the_seed(source_id, spec):
    assert sc.check_table(_seed(source_id), spec, _values(source_id, spec["table_id"])) == []


def test_seed_documents_are_the_ones_transcribed():
    for source_id, src in SOURCES.items():
        assert sc.seed_sha256(_seeds(), src["seed_file"]) == src["seed_sha256"], source_id


def test_check_all_is_clean():
    assert sc.check_all(seeds_dir=_seeds()).empty


def _lmbench():
    spec = next(t for s, t in TABLES if s == "papadimitriou_macos_freebsd" and t["table_id"] == "table2_lmbench")
    return _seed("papadimitriou_macos_freebsd"), spec, _values("papadimitriou_macos_freebsd", "table2_lmbench")


def test_a_changed_digit_is_caught():
    seed, spec, values = _lmbench()
    hit = (values["metric_id"] == "process_fork_exit") & (values["system_id"] == "linux_hppc")
    values.loc[hit, "cell_as_published"] = "81.5116"   # printed 81.5161
    problems = sc.check_table(seed, spec, values)
    assert len(problems) == 1 and "process fork+exit" in problems[0] and "81.5161" in problems[0]


def test_swapped_columns_are_caught():
    seed, spec, values = _lmbench()
    spec = copy.deepcopy(spec)
    spec["columns"][1]["system_id"], spec["columns"][2]["system_id"] = spec["columns"][2]["system_id"], spec["columns"][1]["system_id"]
    assert len(sc.check_table(seed, spec, values)) >= 20


def test_a_dropped_row_is_caught():
    seed, spec, values = _lmbench()
    spec = copy.deepcopy(spec)
    spec["rows"] = [r for r in spec["rows"] if r["label_as_published"] != "page fault"]
    assert sc.check_table(seed, spec, values)


def test_a_correction_cannot_hide_the_printed_cell():
    # the malformed cell must stay as printed; "fixing" it in the CSV breaks the match with the source
    seed, spec, values = _lmbench()
    hit = (values["metric_id"] == "af_unix_bandwidth") & (values["system_id"] == "freebsd_hppc")
    values.loc[hit, "cell_as_published"] = "2276.84000"
    assert any("AF_UNIX socket bandwidth" in p for p in sc.check_table(seed, spec, values))


def test_in_text_value_slip_is_caught():
    spec = next(t for s, t in TABLES if t["table_id"] == "text_background")
    values = _values("miao_minix3_linux", "text_background")
    values.loc[(values["metric_id"] == "rpc_cost") & (values["system_id"] == "mach"), "cell_as_published"] = "320"
    problems = sc.check_table(_seed("miao_minix3_linux"), spec, values)
    assert len(problems) == 1 and "320" in problems[0]


def test_in_text_values_must_be_whole_numbers_in_order():
    # '95' must be the in-kernel figure after '81', not the '95%' said of L4Linux earlier
    spec = next(t for s, t in TABLES if t["table_id"] == "text_background")
    values = _values("miao_minix3_linux", "text_background")
    swapped = values.copy()
    a = (swapped["system_id"] == "mklinux_user")
    b = (swapped["system_id"] == "mklinux_inkernel")
    swapped.loc[a, "cell_as_published"], swapped.loc[b, "cell_as_published"] = "95", "81"
    assert sc.check_table(_seed("miao_minix3_linux"), spec, swapped)


def test_spaced_thousands_table_is_rebuilt_cell_by_cell():
    spec = next(t for s, t in TABLES if t["table_id"] == "table3_pingpong")
    values = _values("mcgarry_netbsd_freebsd", "table3_pingpong")
    hit = (values["metric_id"] == "exp3_game_completion")
    # the alternative split of '140 551 275 145' rebuilds the same characters but fails the number check:
    values.loc[hit & (values["system_id"] == "netbsd_2_0"), "cell_as_published"] = "140"
    values.loc[hit & (values["system_id"] == "freebsd_5_3"), "cell_as_published"] = "551 275 145"
    assert sc.check_table(_seed("mcgarry_netbsd_freebsd"), spec, values) == []
    assert reference.parse_cell("551 275 145").value == 551275145.0  # why the cell notes give the reasoning


def test_table_block_needs_a_unique_start():
    with pytest.raises(ValueError, match="exactly one"):
        sc.table_block("a\nTable\nx\nTable\nend\n", "Table", "end")
    assert sc.table_block("a\nstart\n\n x \t y \nend\n", "start", "end") == ["x y"]


def test_claim_quotes_appear_in_their_seed():
    for claim in reference_claims.load_claims():
        assert sc.quote_in_seed(_seed(claim["source_id"]), claim["quote"]), claim["claim_id"]


def test_report_without_seed_folder_says_so(tmp_path):
    problems, verdict = sc.transcription_report(seeds_dir=tmp_path / "missing")
    assert problems.empty and "not found" in verdict
