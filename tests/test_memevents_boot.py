"""The memory-system model in a real guest (seconds, marked slow; skipped where `make envs` has not built
seL4 or the model): its windows are the task's batches, its counts the clock's, its known answer the
geometry's, and a boot without it counts the same."""
import pytest

from osbench_analysis import environments
from osbench_analysis.catalog import registry
from osbench_analysis.environments import RoundJob, memevents
from osbench_analysis.worker.main import WorkerRequest

pytestmark = pytest.mark.slow


def sel4_round(tmp_path, events: str):
    env = environments.get("sel4")
    if not env.availability() or memevents.available():
        pytest.skip(f"sel4 or the model not built: {env.availability().reason} {memevents.available()}")
    probes = ("sel4_call_space", "sel4_page_pass", "sel4_line_pass_64k")
    jobs = [RoundJob(WorkerRequest(p, {}, 200_000, 1, 2, registry.PROBES[p].max_iterations, memory_events=events),
                     [], tmp_path / f"job-{i}.jsonl", 120.0) for i, p in enumerate(probes)]
    with env.session(tmp_path / "scratch") as sess:
        return list(sess.run_round(jobs, cpus=None))


def test_the_model_counts_the_clocks_instructions_and_the_known_answer_in_sel4(tmp_path):
    plain = sel4_round(tmp_path / "plain", "")
    model = sel4_round(tmp_path / "model", "warm")
    for p, m in zip(plain, model):
        assert p.status == m.status == "ok", (p.message, m.message)
        # the model changes no count, and sees exactly the clock's instructions between the task's two RDTSCs
        assert [b["elapsed_ns"] for b in p.batches] == [b["elapsed_ns"] for b in m.batches]
        assert "mem_insns" not in p.batches[-1]
        assert all(b["mem_insns"] == b["elapsed_ns"] for b in m.batches if "mem_insns" in b)
        assert m.facts["memory_events"] == "warm" and "memory_problem" not in m.facts
    call, passes, lines = (o.batches[-1] for o in model)
    # a round trip between address spaces: two kernel entries, two CR3 writes (no PCID)
    assert call["cr3_writes"] == 2 * call["iterations"] and call["kernel_entries"] >= 2 * call["iterations"]
    # 128 pages a pass through a 64-entry data TLB: 128 misses a pass
    assert passes["dtlb_misses"] == pytest.approx(128 * passes["iterations"], abs=4)
    # one byte of each line of 64 KiB, twice L1D: 1,024 L1D misses a pass, L2 and the TLB hold it all
    n = lines["iterations"]
    assert lines["l1d_misses"] == pytest.approx(1024 * n, abs=4 + 0.02 * 1024 * n)
    assert lines["l2_misses"] <= 4 and lines["dtlb_misses"] <= 4
