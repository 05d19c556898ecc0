"""A worker's start-up: what it imports and reports (every condition of a campaign starts one, inside
UML each imported module costs milliseconds: docs/environments.md, 'Where a worker's start-up goes')."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from osbench_analysis.catalog import registry
from osbench_analysis.store.schema import HARNESS_FIELDS
from osbench_analysis.worker import launch, main
from osbench_analysis.worker.main import WorkerRequest

AVOIDED = ["argparse", "subprocess", "shutil", "hashlib", "platform", "socket", "difflib", "pandas", "numpy",
           "dataclasses", "inspect", "pathlib", "typing", "site", "osbench_analysis.catalog.registry",
           "osbench_analysis.store.schema", "osbench_analysis.worker.request"]


def _worker(req: WorkerRequest, *extra: str) -> subprocess.CompletedProcess:
    """The worker as the runner starts it (launch.worker_argv: the interpreter without site, -S), and on its
    stderr, last, which of AVOIDED it imported."""
    argv = launch.worker_argv(req)
    i = argv.index("-c")
    boot = argv[i + 1].replace("import run; run()", "import main; rc = main()")
    assert boot != argv[i + 1]
    code = "\n".join(["try:", f"    {boot}", "finally:", "    import json",
                      f"    print(json.dumps(sorted(set(sys.modules) & set({AVOIDED!r}))), file=sys.stderr)",
                      "sys.exit(rc)"])
    return subprocess.run([*argv[:i + 1], code, *argv[i + 2:], *extra], capture_output=True, text=True)


def _lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_a_later_worker_of_a_plain_probe_imports_none_of_what_it_can_do_without():
    req = WorkerRequest("null_syscall", {}, 200_000, 0, 1, 10**8, binaries_facts=False)
    r = _worker(req)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stderr.strip().splitlines()[-1]) == []
    lines = _lines(r.stdout)
    env = lines[0]
    assert env["kind"] == "environment" and "libc_sha256" not in env and env["kernel_release"]
    assert lines[-1] == {"kind": "done"}


def test_the_first_worker_reports_its_binaries_hashed_and_a_forking_probe_gets_its_subprocess():
    req = WorkerRequest("fork_exit", {}, 200_000, 0, 1, 10**6)
    r = _worker(req)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stderr.strip().splitlines()[-1]) == ["hashlib", "subprocess"]
    env = _lines(r.stdout)[0]
    assert len(env["libc_sha256"]) == 16 and len(env["probe_extension_sha256"]) == 16
    assert env["libc"].startswith("glibc ") and env["python"] == ".".join(map(str, sys.version_info[:3]))


@pytest.mark.parametrize("argv, says", [(["--bogus", "1"], "unexpected argument '--bogus'"),
                                        ([], "--request is required"),
                                        (["--request"], "unexpected argument '--request'")])
@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_bad_command_line_gets_the_usage_and_status_2(argv, says):
    r = subprocess.run([sys.executable, "-m", "osbench_analysis.worker.main", *argv], capture_output=True, text=True)
    assert r.returncode == 2 and says in r.stderr and r.stderr.startswith("usage: python -m osbench_analysis.worker.main")


def test_the_worker_is_started_without_site_and_told_where_the_package_and_cffi_are():
    req = WorkerRequest("null_syscall", {}, 200_000, 0, 1, 10**8)
    argv = launch.worker_argv(req, ["nice"])
    assert argv[:3] == ["nice", sys.executable, "-S"] and argv[-2] == "--request"
    paths = launch.worker_paths()
    assert any((Path(p) / "osbench_analysis" / "worker" / "main.py").is_file() for p in paths)
    assert any(list(Path(p).glob("_cffi_backend*")) for p in paths)


def test_the_request_carries_the_registry_facts_the_worker_would_otherwise_import():
    params = registry.resolve_params(registry.get_probe("fork_exec"), {"outstanding": 4})
    req = WorkerRequest("fork_exec", params, 200_000, 0, 1, 10**6)
    sent = json.loads(req.to_json())
    assert sent["probe_info"] == {"helper": "exit0", "size_param": "outstanding", "multiple": 4, "parent": "native",
                                  "library": "probes"}
    spec = registry.get_probe("exec_only")
    assert json.loads(WorkerRequest("exec_only", {}, 1, 0, 1, 1).to_json())["probe_info"]["helper"] == spec.helper
    assert WorkerRequest.from_json(req.to_json()) == req
    assert json.loads(WorkerRequest("test_crash_segv", {}, 1, 0, 1, 1).to_json())["probe_info"]["library"] == "test"


def test_the_workers_own_copy_of_the_harness_fields_is_the_schemas():
    assert main.HARNESS_FIELDS == HARNESS_FIELDS


def test_a_guest_reads_the_request_back_from_the_worker_command_line():
    from osbench_analysis.environments import qemu

    req = WorkerRequest("null_syscall", {}, 1, 0, 1, 10, settle_s=0.5)
    assert qemu.request_of(launch.worker_argv(req, ["nice"])) == req
