"""seL4 and Linux on Xen booted for real under QEMU (seconds each, marked slow; skipped where
`make envs` has not built them): every probe measured with its work, two boots identical (seL4),
a fault as a failed run, and nothing left running."""
import pytest

from osbench_analysis.catalog import registry
from test_qemu_boot import counts, needs, qemus_mentioning, round_of

pytestmark = pytest.mark.slow

SEL4_SET = [(n, {}) for n, p in registry.PROBES.items() if p.guest == "sel4" and not p.hidden]


def per_op(outcome) -> float:
    b = [x for x in outcome.batches if not x["warmup"]][-1]
    return b["elapsed_ns"] / b["iterations"]


@pytest.fixture(scope="module")
def sel4_boots(tmp_path_factory):
    """Two boots of seL4 (the fast path on), each measuring every seL4 probe: (first, second) outcomes."""
    env = needs("sel4")
    tmp = tmp_path_factory.mktemp("sel4")
    return (round_of(env, SEL4_SET, tmp / "a", timeout_s=120.0), round_of(env, SEL4_SET, tmp / "b", timeout_s=120.0))


def test_sel4_measures_every_primitive_with_its_work_and_two_boots_agree(sel4_boots):
    first, second = sel4_boots
    for (name, _), o, o2 in zip(SEL4_SET, first, second):
        assert o.status == "ok", (name, o.message)
        assert o.facts["time_unit"] == "guest instructions" and o.facts["guest_kernel"] == "sel4"
        assert o.facts["guest_fastpath"] == "1" and o.facts["guest_build"] == "release"
        assert all(b["work_done"] == b["iterations"] > 0 for b in o.batches), name
        assert counts(o) == counts(o2), f"{name}: two boots differ"
    by = dict(zip((n for n, _ in SEL4_SET), first))
    assert 100 < per_op(by["sel4_poll_ntfn"]) < 1000
    assert per_op(by["sel4_call_space"]) < per_op(by["sel4_call_space_8mr"])   # over 4 words: the slow path


def test_without_the_fastpath_the_round_trip_takes_the_slow_path(sel4_boots, tmp_path):
    """The slow-path kernel's round trip against the fast-path kernel's, measured in the boots above (a
    count does not depend on the jobs booted beside it: the boots are the same build, the same request)."""
    slow = needs("sel4-slowpath")
    f = dict(zip((n for n, _ in SEL4_SET), sel4_boots[0]))["sel4_call_space"]
    s = round_of(slow, [("sel4_call_space", {})], tmp_path / "s")[0]
    assert f.status == s.status == "ok" and f.facts["guest_fastpath"] == "1" and s.facts["guest_fastpath"] == "0"
    assert per_op(s) > 2.5 * per_op(f)


def test_a_fault_in_the_sel4_task_is_a_failed_run_with_its_line_and_later_jobs_did_not_run(tmp_path):
    env = needs("sel4")
    res = round_of(env, [("sel4_yield", {}), ("sel4_test_fault", {}), ("sel4_yield", {})], tmp_path,
                   timeout_s=60.0)
    assert [o.status for o in res] == ["ok", "crashed", "error"], [o.message for o in res]
    assert "fault of a root-task thread" in res[1].message and "not run" in res[2].message
    assert not qemus_mentioning(str(tmp_path))


def test_linux_on_xen_runs_the_linux_probes_and_every_system_call_costs_more(tmp_path):
    env = needs("xen-linux")
    res = round_of(env, [("null_syscall", {}), ("pipe_pingpong", {})], tmp_path, timeout_s=400.0)
    for o in res:
        assert o.status == "ok", o.message
        assert all(b["work_done"] == b["iterations"] for b in o.batches)
        assert o.facts["guest_kernel"] == "linux" and "xen_args" in o.facts
    # a PV system call enters Xen, which bounces it to Linux: bare linux-tcg's getpid is about 330
    assert min(b["elapsed_ns"] / b["iterations"] for b in res[0].batches if not b["warmup"]) > 600
