"""The mechanism probes (issue #22) do the work they claim: every trapped call
reaches the SIGSYS handler and returns its value, every breakpoint reaches
the SIGTRAP handler, every traced system call is seen at its stops; the
seccomp filter stays in osbench-parent, and no tracee is left behind."""
import os

import pytest

from osbench_analysis.catalog import registry
from osbench_analysis.worker.main import Batcher, WorkerRequest
from conftest import child_pids

pytestmark = pytest.mark.slow  # every test starts a worker's parent process

MECHANISM = ("seccomp_trap", "signal_trap_self", "ptrace_syscall_stop", "ptrace_sysemu_stop")


def request(probe, iterations, **params):
    return WorkerRequest(probe=probe, params=params, min_batch_ns=1, warmup=0, batches=2,
                         max_iterations=10**6, iterations=iterations)


@pytest.fixture(autouse=True)
def nothing_left_behind():
    before = child_pids()
    yield
    assert child_pids() <= before, "a probe left a child (alive or zombie)"


def seccomp_mode(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Seccomp:"))


def test_the_mechanism_family_is_registered_with_what_it_mirrors():
    for name in MECHANISM:
        p = registry.PROBES[name]
        assert p.family == "mechanism" and p.mirrors and p.unit
    assert registry.PROBES["seccomp_trap"].in_native_parent
    assert registry.PROBES["ptrace_syscall_stop"].forks and registry.PROBES["ptrace_syscall_stop"].two_party


@pytest.mark.parametrize("probe,n", [("seccomp_trap", 500), ("signal_trap_self", 500),
                                     ("ptrace_syscall_stop", 200), ("ptrace_sysemu_stop", 200)])
def test_every_iteration_is_the_mechanism_it_names(probe, n):
    with Batcher(request(probe, n)) as b:
        for _ in range(3):  # setup per batch: filters and tracees must not pile up
            assert b.run(n)["work_done"] == n  # a failed batch raises ProbeFailed


def test_the_seccomp_filter_lives_in_the_native_parent_only():
    assert seccomp_mode(os.getpid()) == 0
    with Batcher(request("seccomp_trap", 100)) as b:
        assert b.run(100)["work_done"] == 100
        assert seccomp_mode(b.native.proc.pid) == 2   # SECCOMP_MODE_FILTER
    assert seccomp_mode(os.getpid()) == 0


def test_a_trap_costs_more_than_the_system_call_it_replaces():
    """A seccomp trap is a system call plus a signal delivery and a sigreturn:
    never cheaper than the plain call (a filter that did not trap would be)."""
    def best_ns(probe, n):
        with Batcher(request(probe, n)) as b:
            return min(b.run(n)["elapsed_ns"] / n for _ in range(5))
    assert best_ns("seccomp_trap", 2000) > 2 * best_ns("null_syscall", 2000)
