"""The catalog's probes (issue 9 section 2) do the work they claim, counted by
the probe and checked from outside, and leave nothing behind: no child, no
descriptor or port, no file in their private folder, on success and failure."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from osbench_analysis.measure import config
from osbench_analysis.catalog import registry, views
from osbench_analysis.worker.main import Batcher, ProbeFailed, WorkerRequest
from conftest import child_pids

CATALOG_FAMILIES = ("entry", "ipc", "service", "files", "memory_bw", "sweeps")
CATALOG = [n for n, p in registry.PROBES.items() if p.family in CATALOG_FAMILIES]
CPUS = sorted(os.sched_getaffinity(0))


def request(probe, params=None, workdir=None, child_cpu=-1):
    return WorkerRequest(probe=probe, params=params or {}, min_batch_ns=1, warmup=0, batches=1,
                         max_iterations=10**6, workdir=workdir, child_cpu=child_cpu)




def fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def run_batches(probe, n, params=None, workdir=None, child_cpu=-1, batches=2):
    with Batcher(request(probe, params, workdir, child_cpu)) as b:
        return [b.run(n) for _ in range(batches)]


# (probe, iterations, params): small batches, each probe's own sweep points at their smallest
CASES = [
    ("read_devzero", 2000, {}), ("write_devnull", 2000, {}), ("fstat", 2000, {}),
    ("select_fds", 500, {"fds": 10}), ("select_fds", 200, {"fds": 100}),
    ("poll_fds", 500, {"fds": 10}), ("poll_fds", 200, {"fds": 100}),
    ("sigaction_install", 2000, {}), ("signal_catch", 1000, {}), ("signal_send", 2000, {}),
    ("pagefault_file", 300, {"file_kb": 1024}), ("mmap_file", 20, {"region_kb": 1024}),
    ("clock_gettime", 10000, {}),
    ("pipe_bw", 50, {}), ("unix_bw", 50, {}), ("unix_pingpong", 300, {}), ("tcp_pingpong", 300, {}),
    ("udp_pingpong", 300, {}), ("ctxsw_ring", 100, {"processes": 2}), ("ctxsw_ring", 50, {"processes": 8}),
    ("service_direct", 2000, {"bytes": 0}), ("service_direct", 2000, {"bytes": 64}),
    ("service_pipe", 300, {"bytes": 0}), ("service_pipe", 300, {"bytes": 64}),
    ("service_unix", 300, {"bytes": 0}), ("service_unix", 300, {"bytes": 64}),
    ("service_shm", 300, {"bytes": 0}), ("service_shm", 300, {"bytes": 64}),
    ("file_write", 3000, {"buffer": 256}), ("file_read", 3000, {"buffer": 1024}),
    ("file_copy", 3000, {"buffer": 4096}), ("files_in_folder", 2, {"files": 300}),
    ("memcpy_bw", 3, {"bytes": 1 << 20}), ("malloc_memcpy", 2000, {}),
    ("socket_bind_open", 200, {"sockets": 50}), ("mmap_window_maps", 200, {"maps": 300}),
    ("thread_create_alive", 50, {"threads": 20}),
]


def test_every_catalog_probe_has_a_case():
    assert {c[0] for c in CASES} == set(CATALOG)


@pytest.mark.slow
@pytest.mark.parametrize("probe,n,params", CASES, ids=[f"{c[0]}-{json.dumps(c[2])}" for c in CASES])
def test_work_done_and_nothing_left_behind(probe, n, params, tmp_path):
    """work_done is each probe's own proof (bytes the reader counted, fds
    reported ready, signals the handler caught, replies checked, files
    removed...); afterwards no child, descriptor or file of the probe remains."""
    spec = registry.PROBES[probe]
    kids, before = child_pids(), fds()
    child_cpu = CPUS[-1] if spec.two_party and len(CPUS) > 1 else -1
    results = run_batches(probe, n, params, str(tmp_path) if spec.uses_workdir else None, child_cpu)
    assert [r["work_done"] for r in results] == [spec.expected_work(n, params)] * 2
    assert all(r["elapsed_ns"] > 0 for r in results)
    assert child_pids() <= kids
    assert fds() <= before
    if spec.uses_workdir:
        assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_page_faults_are_real_faults(tmp_path):
    # one fault per touched page, counted by the kernel (getrusage minflt), not by the probe
    r = run_batches("pagefault_file", 512, {"file_kb": 4096}, str(tmp_path), batches=1)[0]
    assert r["work_done"] == 512 and r["minflt"] >= 0.9 * 512
    # the same number of touches one page apart would be served by fault-around: far fewer faults
    m = run_batches("mmap_file", 4, {"region_kb": 4096}, str(tmp_path), batches=1)[0]
    assert m["minflt"] >= 4 * 64 * 0.9       # 4 maps x 64 touches (one per 64 KiB)


@pytest.mark.slow
def test_signal_handler_is_restored():
    before = signal.getsignal(signal.SIGUSR1)
    run_batches("signal_catch", 100, batches=1)
    assert signal.getsignal(signal.SIGUSR1) == before


@pytest.mark.slow
def test_files_in_folder_really_creates_files(tmp_path):
    (tmp_path / "f7").write_text("in the way")     # O_EXCL creation must collide with it
    with pytest.raises(ProbeFailed, match="create f7 failed"):
        run_batches("files_in_folder", 1, {"files": 20}, str(tmp_path), batches=1)
    assert os.listdir(tmp_path) == ["f7"]            # its own f0..f6 were removed on the error path


@pytest.mark.slow
@pytest.mark.parametrize("probe,params,match", [
    ("select_fds", {"fds": 5000}, "fds must be"), ("ctxsw_ring", {"processes": 500}, "processes must be"),
    ("service_pipe", {"bytes": 1 << 20}, "bytes must be"), ("socket_bind_open", {"sockets": 10**7}, "hard limit"),
])
def test_refused_sizes_fail_cleanly(probe, params, match, tmp_path):
    kids, before = child_pids(), fds()
    with pytest.raises(ProbeFailed, match=match):
        run_batches(probe, 10, params, str(tmp_path), batches=1)
    assert child_pids() <= kids and fds() <= before and os.listdir(tmp_path) == []


def _descendants(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for task in os.listdir(f"/proc/{p}/task") if os.path.isdir(f"/proc/{p}/task") else []:
            try:
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids = {int(x) for x in f.read().split()}
            except OSError:
                kids = set()
            todo.extend(kids - out)
            out |= kids
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("probe", ["service_shm", "tcp_pingpong", "ctxsw_ring"])
def test_killed_worker_leaves_no_partner(probe, tmp_path):
    """Ctrl-C / a timeout kills the worker mid-batch: its native parent and the
    partners (server, echo, ring) die with it (PR_SET_PDEATHSIG)."""
    req = WorkerRequest(probe=probe, params={"processes": 4} if probe == "ctxsw_ring" else {}, min_batch_ns=1,
                        warmup=0, batches=1, max_iterations=10**9, iterations=10**9)
    w = subprocess.Popen([sys.executable, "-m", "osbench_analysis.worker.main", "--request", req.to_json()],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while time.time() < deadline and len(_descendants(w.pid)) < 2:
            time.sleep(0.1)
        partners = _descendants(w.pid)
        assert len(partners) >= 2, "the native parent and its partner never started"
    finally:
        w.kill()
        w.wait()
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(p) for p in partners):
        time.sleep(0.1)
    assert not any(_alive(p) for p in partners)


# ---------------------------------------------------------------- catalog, profiles

def test_quick_profile_covers_every_primitive_at_one_sweep_point():
    conds = config.validate(config.make_config("quick"))
    measured = {(c.probe, c.params_json) for c in conds}
    for probe, params in views.primitives():
        spec = registry.PROBES[probe]
        full = registry.resolve_params(spec, params)
        if spec.sweep:
            full[spec.sweep[0]] = spec.sweep[1][0]
        assert (probe, json.dumps(full, sort_keys=True)) in measured, (probe, params)
    for probe, spec in registry.PROBES.items():
        if spec.sweep and not spec.hidden:
            values = {json.loads(pj)[spec.sweep[0]] for p, pj in measured if p == probe}
            assert values == {spec.sweep[1][0]}, probe
    assert {c.placement for c in conds} == {"same_cpu", "cross_cpu"}


def test_full_profile_adds_every_sweep_point_and_unpinned():
    conds = config.validate(config.make_config("full"))
    for probe, spec in registry.PROBES.items():
        if spec.sweep and not spec.hidden:
            values = {c.params[spec.sweep[0]] for c in conds if c.probe == probe}
            assert values == set(spec.sweep[1]), probe
    assert "unpinned" in {c.placement for c in conds}
    assert len(conds) > len(config.validate(config.make_config("quick")))


def test_profile_variants_follow_a_probe_selection():
    cfg = config.make_config("quick", probes=["select_fds", "null_syscall"])
    assert cfg.variants == {"select_fds": [{"fds": 10}, {"fds": 100}]}


def test_catalog_table_groups_every_probe_by_family_with_what_it_mirrors():
    t = views.catalog_table()
    assert set(t["probe"]) == set(registry.DEFAULT_PROBES)
    assert (t["mirrors"].str.len() > 10).all()
    families = list(t["family"])
    assert families == sorted(families, key=list(dict.fromkeys(families)).index)  # contiguous groups
    text = views.format_catalog()
    for family in CATALOG_FAMILIES:
        assert f"[{family}]" in text
    assert f"{len(views.primitives())} primitives" in text


def test_osbench_probes_prints_the_catalog(capsys):
    from osbench_analysis import cli

    assert cli.main(["probes"]) == 0
    out = capsys.readouterr().out
    assert "[service]" in out and "service_shm" in out and "mirrors: lmbench 'simple read'" in out


# ---------------------------------------------------------------- sweeps and the service table, from real runs

def _samples(conditions, runs=3, n=300, tmp_path=None):
    """Samples rows as a campaign stores them, from real batches: `runs`
    Batchers (one per run) per (probe, params, placement)."""
    import pandas as pd

    rows = []
    for probe, params, placement in conditions:
        spec = registry.PROBES[probe]
        full = registry.resolve_params(spec, params)
        for run in range(runs):
            child = CPUS[-1] if placement == "cross_cpu" else -1
            for batch, r in enumerate(run_batches(probe, n, params, str(tmp_path), child, batches=3)):
                rows.append({"campaign_id": "t", "environment": "native", "probe": probe,
                             "variant": registry.variant_label(spec, full), "params_json": json.dumps(full, sort_keys=True),
                             "placement": placement, "run": run, "batch": batch, "warmup": False,
                             "iterations": r["iterations"], "elapsed_ns": r["elapsed_ns"],
                             "per_op_ns": r["elapsed_ns"] / r["iterations"]})
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_sweep_fit_and_figure_from_a_real_sweep(tmp_path):
    from osbench_analysis.plots import sweeps as plots_sweeps
    from osbench_analysis.analysis import sweeps

    s = _samples([("mmap_window_maps", {"maps": m}, "same_cpu") for m in (0, 2000)], tmp_path=tmp_path)
    fits = sweeps.fit_sweeps(s)
    assert list(fits) == [("mmap_window_maps", "native", "same_cpu")]
    t = sweeps.sweep_table(fits)
    r = t.iloc[0]
    assert (r["points"], r["runs"], r["x"]) == (2, 6, "maps")
    assert r["slope_ci_low_ns"] <= r["slope_ns"] <= r["slope_ci_high_ns"]
    fig = plots_sweeps.sweeps_figure(fits)
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 1
    assert "slope" in fig.axes[0].get_title()


@pytest.mark.slow
def test_service_table_puts_each_server_round_trip_beside_the_direct_call(tmp_path):
    from osbench_analysis.analysis import service_ipc

    conds = [("service_direct", {}, "same_cpu"), ("service_pipe", {}, "same_cpu"), ("service_shm", {}, "same_cpu")]
    t = service_ipc.service_table(_samples(conds, runs=3, n=500, tmp_path=tmp_path))
    assert list(t["transport"]) == ["direct", "pipe", "shared memory + futex"]
    server = t[t["transport"] != "direct"]
    # a request to another process costs at least two context switches: always slower than the system call
    assert (server["ratio_low"] > 1).all()
    assert (t["ci_low_ns"] <= t["estimate_ns"]).all() and (t["estimate_ns"] <= t["ci_high_ns"]).all()
    assert "x direct" in service_ipc.format_service_table(t)
