"""analysis/crossing_counts.py: the records measure/counting.py writes, read into one table keyed by the host's
identity; the committed record of this checkout reads."""
import json

import pytest

from osbench_analysis.analysis import crossing_counts


def record(host_cpu="AMD EPYC 9R14", started="2026-11-26T18:00:00Z", syscalls=4.25, error=False):
    rec = [{"environment": "gvisor", "probe": "null_syscall", "n_low": 2000, "n_high": 22000,
            "per_operation": {"syscalls": {"min": syscalls - 0.1, "median": syscalls, "max": syscalls + 0.1, "n": 3}}}]
    if error:
        rec.append({"environment": "uml", "probe": "null_syscall", "error": "environment 'uml' is not available"})
    return {"kind": "crossing_counts", "version": 1, "records": rec,
            "provenance": {"started_utc": started, "host": {"cpu_model": host_cpu, "cpu_count_logical": 2,
                                                            "kernel_release": "6.18", "hostname": "vm"}}}


def test_records_are_read_into_rows_keyed_by_host_identity(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(record(error=True)))
    t = crossing_counts.load_counts(tmp_path)
    assert len(t) == 1 and t.iloc[0]["median"] == 4.25 and t.iloc[0]["source"] == "a.json"
    assert t.iloc[0]["host"].startswith("amd-epyc")
    assert crossing_counts.per_operation(t, t.iloc[0]["host"], "gvisor", "null_syscall") == {"syscalls": 4.25}
    assert crossing_counts.not_counted(record(error=True)) == [("uml", "null_syscall", "environment 'uml' is not available")]


def test_the_newest_record_wins_and_a_host_without_counts_borrows_the_newest_hosts(tmp_path):
    (tmp_path / "1.json").write_text(json.dumps(record(started="2026-11-26T18:00:00Z", syscalls=4.0)))
    (tmp_path / "2.json").write_text(json.dumps(record(started="2026-11-27T18:00:00Z", syscalls=5.0)))
    t = crossing_counts.load_counts(tmp_path)
    assert list(t["median"]) == [5.0]
    native = t.assign(environment="native")
    both = crossing_counts.pd.concat([t, native], ignore_index=True)
    h = t.iloc[0]["host"]
    assert crossing_counts.counts_host_for(both, h, "gvisor", "null_syscall", "native") == h
    assert crossing_counts.counts_host_for(both, "elsewhere", "gvisor", "null_syscall", "native") == h
    assert crossing_counts.counts_host_for(t, h, "gvisor", "null_syscall", "native") == ""   # no native counts


def test_a_file_that_is_not_a_record_is_refused_in_one_line(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"kind": "campaign"}))
    with pytest.raises(crossing_counts.CountsError, match="kind 'campaign', expected 'crossing_counts'"):
        crossing_counts.load_counts(tmp_path)
    assert crossing_counts.load_counts(tmp_path / "missing").empty


def test_the_committed_counts_cover_every_decomposed_crossing():
    from osbench_analysis.analysis import mechanism

    t = crossing_counts.load_counts()
    if t.empty:
        pytest.skip("no counts committed in this checkout")
    for env, probes in mechanism.ENVIRONMENT_CROSSINGS.items():
        for probe in probes:
            assert crossing_counts.counts_host_for(t, "", env, probe, "native"), (env, probe)
