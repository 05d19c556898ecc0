"""A fleet that lets no one in: TLS with mutual authentication by default,
certificates made by `osbench fleet certs` (keys 0600), a plaintext scheduler
refused unless --insecure, and on a measuring host only the fleet's own task,
its parameters checked there before anything starts.  The slow test starts
the scheduler and the workers with the commands `osbench fleet certs` prints,
the workers in their own network namespaces, and tries to get in without a
certificate, with another CA's, and in plaintext."""
import dataclasses
import json
import os
import re
import shutil
import ssl
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from osbench_analysis import cli
from osbench_analysis.fleet import run as fleet
from osbench_analysis.fleet import certs as fleet_certs
from osbench_analysis.fleet import guard as fleet_guard
from osbench_analysis.fleet import security as fleet_security
from osbench_analysis.store import campaigns as store
from osbench_analysis.errors import OsbenchError

distributed = pytest.importorskip("distributed")

from test_fleet import TINY, _free_port, _namespaced_hosts, cluster, security, use_fake_task, venv_argv  # noqa: E402


@pytest.fixture
def fake_fleet_task(tmp_path, monkeypatch):
    return use_fake_task(tmp_path, monkeypatch)


def _load(path):
    from cryptography import x509

    return x509.load_pem_x509_certificate(Path(path).read_bytes())


def test_certs_keep_keys_private_chain_to_their_own_ca_and_print_the_commands(tmp_path, capsys):
    out = tmp_path / "certs"
    old = os.umask(0)  # even with no umask at all, no key is readable by anyone else
    try:
        assert cli.main(["fleet", "certs", "--hosts", "h1,h2,h3", "--out", str(out), "--scheduler-host", "lab0"]) == 0
    finally:
        os.umask(old)
    printed = capsys.readouterr().out
    from cryptography import x509

    ca = _load(out / "ca.pem")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for role in ("scheduler", "client", "h1", "h2", "h3"):
        files = fleet_certs.role_files(out, role)
        assert stat.S_IMODE(files.key.stat().st_mode) == 0o600
        assert stat.S_IMODE(files.cert.parent.stat().st_mode) == 0o700
        cert = _load(files.cert)
        cert.verify_directly_issued_by(ca)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName)
        assert names == ["lab0" if role == "scheduler" else role]
        ctx = ssl.create_default_context(cafile=str(files.ca))
        ctx.load_cert_chain(str(files.cert), str(files.key))  # the key is the certificate's
    assert not (out / "ca-key.pem").exists() and sorted(p.name for p in out.iterdir()) == \
        ["ca.pem", "client", "h1", "h2", "h3", "scheduler"]  # the CA's key is not kept
    other = fleet_certs.make_certs(["h1"], tmp_path / "other", "lab0")
    with pytest.raises(Exception):
        _load(other.files("client").cert).verify_directly_issued_by(ca)
    # the exact commands, with these files
    assert f"dask scheduler --protocol tls --port 8786 --no-dashboard --tls-ca-file {out}/scheduler/ca.pem" in printed
    for h in ("h1", "h2", "h3"):
        assert (f"dask worker tls://lab0:8786 --name {h} --nthreads 1 --resources MEASURE=1 --no-dashboard "
                f"--no-nanny --tls-ca-file {out}/{h}/ca.pem --tls-cert {out}/{h}/cert.pem "
                f"--tls-key {out}/{h}/key.pem --preload osbench_analysis.fleet.guard") in printed
    assert (f"osbench fleet run --scheduler tls://lab0:8786 --hosts h1,h2,h3 --tls-ca-file {out}/client/ca.pem "
            f"--tls-cert {out}/client/cert.pem --tls-key {out}/client/key.pem") in printed
    # never overwritten; host names that could be anything else are refused
    assert cli.main(["fleet", "certs", "--hosts", "h1", "--out", str(out)]) == 2
    assert "never overwritten" in capsys.readouterr().err
    for bad in ("h1;reboot", "../h1", "client", "-h1"):
        assert cli.main(["fleet", "certs", f"--hosts={bad}", "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and repr(bad) in err
    assert not (tmp_path / "x").exists()


def test_a_plaintext_scheduler_is_refused_unless_insecure_and_then_every_command_says_so(tmp_path, fake_fleet_task,
                                                                                         capsys):
    for address in ("tcp://127.0.0.1:1", "127.0.0.1:1"):  # Dask reads no scheme as tcp
        assert cli.main(["fleet", "run", "--scheduler", address, "--hosts", "h1"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1
        assert "is plaintext" in err and "osbench fleet certs" in err and "--insecure" in err and address in err
    certs = fleet_certs.make_certs(["h1"], tmp_path / "certs", "127.0.0.1")
    with pytest.raises(fleet.FleetError, match="needs tls_ca_file, tls_cert and tls_key .missing: tls_key"):
        fleet.fleet_run("tls://127.0.0.1:1", ["h1"], tls_ca_file=certs.files("client").ca,
                        tls_cert=certs.files("client").cert)
    with pytest.raises(fleet.FleetError, match="not found: tls_key="):
        fleet.fleet_run("tls://127.0.0.1:1", ["h1"], **dict(certs.files("client").parameters(), tls_key="/nonexistent"))
    said = []
    with cluster(["h1"], tmp_path, tls=False) as client:
        with pytest.raises(fleet.FleetError, match="is plaintext"):
            fleet.fleet_run(client, ["h1"], output=str(tmp_path / "c"), say=said.append, **TINY)
        r = fleet.fleet_run(client, ["h1"], output=str(tmp_path / "c"), campaign_id="in", insecure=True,
                            say=said.append, **TINY)
        assert [o.status for o in r.outcomes] == ["stored"] and said[0] == fleet_security.INSECURE_WARNING
        assert cli.main(["fleet", "run", "--scheduler", client.scheduler.address, "--hosts", "h1", "--insecure",
                         "--output", str(tmp_path / "c"), "--campaign-id", "cli", "--probes", "null_syscall"]) == 0
        assert "INSECURE" in capsys.readouterr().err


def test_a_worker_without_tls_is_not_reported_guarded_even_with_the_guard(tmp_path):
    with cluster(["h1", "h2"], tmp_path, tls=False, h1={"preload": [fleet_certs.GUARD_MODULE]}) as client:
        assert fleet._guarded_workers(client) == set()
        with pytest.raises(Exception, match="'run' handler has been explicitly disallowed"):
            client.run(os.getpid, workers=[a for a, w in client.scheduler_info()["workers"].items()
                                            if w["name"] == "h1"])
    with cluster(["h1", "h2"], tmp_path) as client:
        assert fleet._guarded_workers(client) == {"h1", "h2"}


def test_a_worker_without_the_guard_is_not_given_work(tmp_path, fake_fleet_task):
    with cluster(["h1", "h2"], tmp_path, h2={"preload": []}) as client:
        r = fleet.fleet_run(client, ["h1", "h2"], output=str(tmp_path / "c"), campaign_id="g", say=lambda m: None,
                            **TINY)
        assert [o.status for o in r.outcomes] == ["stored", "unguarded"]
        assert "does not preload osbench_analysis.fleet.guard" in r.outcomes[1].message
        assert fake_fleet_task["ran"] == {"g-h1": "h1"}  # nothing was sent to h2


def test_the_host_checks_a_task_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setenv(fleet.FLEET_DIR_ENV, str(tmp_path / "host"))
    refused = [
        ("../etc", None, {}, "campaign id must match"),
        ("a b-h1", None, {}, "campaign id must match"),
        ("f-h1", None, {"output": "/etc"}, "a fleet task cannot set \\['output'\\]"),
        ("f-h1", None, {"campaign_id": "x"}, "cannot set \\['campaign_id'\\]"),
        ("f-h1", "evil", {}, "profile must be one of"),
        ("f-h1", None, {"runs": 0}, "runs must be an integer from 1 to 1000 .got 0."),
        # I27: accepted-but-abusive values, refused by the same config.validate as `osbench run`
        ("f-h1", None, {"probes": ["fork_exit"], "variants": {"fork_exit": [{"parent_mb": 100000}]}}, "parent_mb"),
        ("f-h1", None, {"probes": ["files_in_folder"], "variants": {"files_in_folder": [{"files": 10 ** 9}]}},
         "files_in_folder.files"),
        ("f-h1", None, {"probes": ["memcpy_bw"], "variants": {"memcpy_bw": [{"bytes": -1}]}}, "memcpy_bw.bytes"),
        ("f-h1", None, {"timeout_s": 1e300}, "timeout_s"),
        ("f-h1", None, {"runs": 10 ** 9}, "runs must be an integer from 1 to 1000"),
        ("f-h1", None, {"batches": 10 ** 9}, "batches must be an integer from 1 to 10000"),
        ("f-h1", None, {"note": "a\0b"}, "note must be a string without NUL"),
        ("f-h1", None, {"probes": ["nope"]}, "nope"),
        ("f-h1", None, {"environment": "nope"}, "nope"),
        ("f-h1", None, {"placements": ["everywhere"]}, "placements must be"),
        ("f-h1", None, {"command_prefix": ["sh", "-c", "touch /tmp/x"]}, "command_prefix sh -c 'touch /tmp/x' is not"),
        ("f-h1", None, {"command_prefix": ["nice", "-n", "5", "sh"]}, "is not accepted by a fleet"),
    ]
    for cid, profile, params, message in refused:
        with pytest.raises(OsbenchError, match=message):  # what the CLI prints as one line
            fleet.measure_on_this_host(cid, profile, params)
    with pytest.raises(fleet.FleetError, match="wait must be True or False"):
        fleet.measure_on_this_host("f-h1", None, {}, wait="yes")
    assert not (tmp_path / "host").exists()  # nothing started, not even the host's folder
    with pytest.raises(fleet.FleetError, match="not this host's"):
        fleet_security.check_task("f-h2", None, {}, False, host="h1")
    cfg = fleet_security.check_task("f-h1", "quick", dict(TINY, command_prefix=["nice", "-n", "5"]), False, "h1")
    assert cfg.command_prefix == ["nice", "-n", "5"] and cfg.runs == 2
    # the client refuses the same before it connects anywhere
    for hosts in (["h1 h2"], ["../x"], ["h1", "h1"], "h1"):
        with pytest.raises(fleet.FleetError, match="host"):
            fleet.fleet_run("tls://127.0.0.1:1", hosts)
    with pytest.raises(fleet.FleetError, match="is not accepted by a fleet"):
        fleet.fleet_run("tls://127.0.0.1:1", ["h1"], command_prefix=["bash"])


def test_a_guarded_worker_runs_only_the_fleet_task(tmp_path):
    guard = {"preload": [fleet_certs.GUARD_MODULE]}
    with cluster(["h1"], tmp_path, h1=guard) as client:
        with pytest.raises(Exception, match="'run' handler has been explicitly disallowed"):
            client.run(os.getpid)
        with pytest.raises(fleet_guard.NotFleetWork, match="refused posix.getpid"):
            client.submit(os.getpid, workers=["h1"], pure=False).result(timeout=30)
        with pytest.raises(fleet.FleetError, match="not this host's"):
            client.submit(fleet.measure_on_this_host, "f-h2", None, {}, workers=["h1"], pure=False).result(timeout=30)
        # the fleet's function, with a task inside an argument (Dask would run it inline) or another's result
        from dask._task_spec import Task

        inline = Task("inline-1", fleet.measure_on_this_host, "f-h1", None, Task(None, os.getpid), False)
        with pytest.raises(fleet_guard.NotFleetWork, match="an argument of type dask._task_spec.Task"):
            client.get({"inline-1": inline}, "inline-1", workers=["h1"])
        data = client.scatter({"runs": 1}, workers=["h1"])
        with pytest.raises(fleet_guard.NotFleetWork, match="depends on other tasks"):
            client.submit(fleet.measure_on_this_host, "f-h1", None, data, workers=["h1"], pure=False).result(timeout=30)
    assert fleet_guard.plain({"a": [1, 2.5, None, ("x", True)]}) == {"a": [1, 2.5, None, ("x", True)]}
    with pytest.raises(fleet_guard.NotFleetWork, match="pathlib"):
        fleet_guard.plain({"a": [Path("/")]})


# --- trying to get in: a TLS scheduler, workers in their own network namespaces ---------------

INTRUDER = r"""
import json, socket, ssl, sys
from distributed import Client
from distributed.security import Security
address, ca, other = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
host, port = address.split("://")[1].rsplit(":", 1)
seen = {}
def attempt(name, fn):
    try:
        fn()
        seen[name] = "connected"
    except BaseException as e:
        seen[name] = f"{type(e).__name__}: {e}"[:300]
def tls_without_certificate():
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    with socket.create_connection((host, int(port)), timeout=5) as raw, ctx.wrap_socket(raw) as s:
        s.sendall(b"\0" * 8)
        if not s.recv(1):
            raise ConnectionError("closed by the server")
def client(address, security=None):
    with Client(address, security=security, timeout="6s") as c:
        c.scheduler_info()
attempt("tls_without_certificate", tls_without_certificate)
# trusts the fleet's CA (public), presents a certificate another CA signed
attempt("certificate_of_another_ca", lambda: client(address, Security(tls_ca_file=ca,
        tls_client_cert=other["tls_cert"], tls_client_key=other["tls_key"], require_encryption=True)))
attempt("plaintext", lambda: client(address.replace("tls://", "tcp://")))
print(json.dumps(seen))
"""


def _intrude(address: str, ca: Path, other: dict, netns: str | None = None) -> dict:
    argv = [sys.executable, "-c", INTRUDER, address, str(ca), json.dumps(other)]
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_no_one_without_the_fleets_certificate_gets_in_and_the_fleet_measures_end_to_end(tmp_path, capsys):
    if shutil.which("ip") is None or os.geteuid() != 0:
        pytest.fail("this test needs iproute2 and root (both are here on the CI machines)")
    certs = fleet_certs.make_certs(["h1", "h2"], tmp_path / "certs", "127.0.0.1", _free_port())
    other = fleet_certs.make_certs(["h1"], tmp_path / "other-ca", "127.0.0.1").files("client").parameters()
    procs = []
    deadline = time.monotonic() + 240  # the whole test is bounded in time
    try:
        procs.append(subprocess.Popen(venv_argv(certs.scheduler_argv()), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True))
        with _namespaced_hosts(["h1", "h2", "lab1"], tmp_path) as hosts:
            for name, ns, gateway in hosts[:2]:
                env = {**os.environ, fleet.FLEET_DIR_ENV: str(tmp_path / name),
                       "OSBENCH_LOCK_FILE": str(tmp_path / f"{name}.lock"), **fleet_certs.QUIET_WORKER_ENV}
                # the printed command, with the address this namespace reaches the scheduler at
                worker = venv_argv(dataclasses.replace(certs, scheduler_host=gateway).worker_argv(name))
                procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                                               f'hostname {name} && exec "$@"', "sh", *worker],
                                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                              start_new_session=True))
            from distributed import Client

            with Client(certs.address, security=security(certs, "client"), timeout="30s") as client:
                client.wait_for_workers(2, timeout=max(1, deadline - time.monotonic()))
                addrs = {w["name"]: a for a, w in client.scheduler_info()["workers"].items()}
                assert addrs["h1"].startswith("tls://10.213.0.2:") and addrs["h2"].startswith("tls://10.213.1.2:")
                # from another machine of the lab (its own namespace): the scheduler lets no one in
                _, lab1, lab1_gateway = hosts[2]
                port = certs.address.rsplit(":", 1)[1]
                seen = {"scheduler": _intrude(f"tls://{lab1_gateway}:{port}", certs.files("client").ca, other, lab1),
                        "worker h1": _intrude(addrs["h1"], certs.files("client").ca, other)}
                print(json.dumps(seen, indent=1))  # the refusals observed, for the report (-s)
                for who, outcome in seen.items():
                    assert set(outcome) == {"tls_without_certificate", "certificate_of_another_ca", "plaintext"}
                    # the server ends the handshake: an alert, or it just closes (seen both ways)
                    assert re.search("CERTIFICATE_REQUIRED|SSLEOFError|closed by the server",
                                     outcome["tls_without_certificate"]), (who, outcome)
                    assert re.search(r"CommClosedError.*SSL\w*Error", outcome["certificate_of_another_ca"]), (who, outcome)
                    assert re.search("CommClosedError.*(reset|closed)", outcome["plaintext"]), (who, outcome)
                # with the fleet's certificate, still only the fleet's task
                with pytest.raises(fleet_guard.NotFleetWork):
                    client.submit(os.getpid, workers=["h1"], pure=False).result(timeout=30)
                assert sorted(w["name"] for w in client.scheduler_info()["workers"].values()) == ["h1", "h2"]
            # end to end: the printed `osbench fleet run`, with the campaign parameters
            argv = certs.fleet_run_argv()
            assert argv[:3] == ["osbench", "fleet", "run"]
            assert cli.main([*argv[1:], "--probes", "null_syscall", "--runs", "2", "--batches", "2",
                             "--min-batch-ms", "1", "--precision-target", "0", "--placements", "same_cpu",
                             "--variants", "{}", "--output", str(tmp_path / "campaigns"), "--campaign-id", "ns"]) == 0
        assert time.monotonic() < deadline
        ids = {}
        for name in ("h1", "h2"):
            c = store.load_campaign(f"ns-{name}", tmp_path / "campaigns")
            assert c.manifest.hostname == name and len(c.runs) == 2 and c.errors.empty
            ids[name] = c.manifest.host["host_id"]
        assert ids["h1"] != ids["h2"]  # the stable host id tells the two hosts apart
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)
