"""A worker's start-up: what it imports and reports (every condition of a campaign starts one, inside
UML each imported module costs milliseconds: docs/environments.md, 'Where a worker's start-up goes')."""
import json
import subprocess
import sys

import pytest

from osbench_analysis.worker.main import WorkerRequest

AVOIDED = ["argparse", "subprocess", "shutil", "hashlib", "platform", "socket", "difflib", "pandas", "numpy"]


def _worker(req: WorkerRequest, *extra: str) -> subprocess.CompletedProcess:
    """The worker as the runner starts it (`python -m osbench_analysis.worker.main`), and on its stderr, last,
    which of AVOIDED it imported."""
    code = "\n".join(["import json, runpy, sys", "sys.argv[0] = 'worker'", "try:",
                      "    runpy.run_module('osbench_analysis.worker.main', run_name='__main__', alter_sys=True)",
                      "finally:",
                      f"    print(json.dumps(sorted(set(sys.modules) & set({AVOIDED!r}))), file=sys.stderr)"])
    return subprocess.run([sys.executable, "-c", code, "--request", req.to_json(), *extra],
                          capture_output=True, text=True)


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
