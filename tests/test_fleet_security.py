"""A fleet that lets no one in: TLS with mutual authentication by default,
certificates made by `osbench fleet certs` (keys 0600), a plaintext scheduler
refused unless --insecure, and on a measuring host only the fleet's own task,
its parameters checked there before anything starts.  The slow test starts
the scheduler and the workers with the commands `osbench fleet certs` prints,
the workers in their own network namespaces, and tries to get in without a
certificate, with another CA's, and in plaintext."""
import asyncio
import contextlib
import dataclasses
import json
import os
import re
import shutil
import socket
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
from osbench_analysis.fleet import task as fleet_task
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
        # a certificate is a role (OU) and a name (CN); a client's may only connect, never serve
        from cryptography.hazmat.primitives.asymmetric import ed25519
        from cryptography.x509.oid import ExtendedKeyUsageOID

        from osbench_analysis.store import signature

        kind = role if role in ("scheduler", "client") else "host"
        assert signature.certificate_identity(cert) == (kind, role)
        assert isinstance(cert.public_key(), ed25519.Ed25519PublicKey)
        usage = list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
        assert usage == ([ExtendedKeyUsageOID.CLIENT_AUTH] if role == "client" else
                         [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
        ctx = ssl.create_default_context(cafile=str(files.ca))
        ctx.load_cert_chain(str(files.cert), str(files.key))  # the key is the certificate's
    assert not (out / "ca-key.pem").exists() and sorted(p.name for p in out.iterdir()) == \
        ["ca.pem", "client", "h1", "h2", "h3", "scheduler"]  # the CA's key is not kept
    other = fleet_certs.make_certs(["h1"], tmp_path / "other", "lab0")
    with pytest.raises(Exception):
        _load(other.files("client").cert).verify_directly_issued_by(ca)
    # the exact commands, with these files
    assert (f"DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES='[]' dask scheduler --protocol tls --port 8786 "
            f"--no-dashboard --dashboard-address 127.0.0.1:0 --tls-ca-file {out}/scheduler/ca.pem") in printed
    for h in ("h1", "h2", "h3"):
        assert (f"DASK_DISTRIBUTED__WORKER__HTTP__ROUTES='[]' DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False "
                f"DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL=5s "
                f"dask worker tls://lab0:8786 --name {h} --nthreads 1 --resources MEASURE=1 --no-dashboard "
                f"--dashboard-address 127.0.0.1:0 --no-nanny --tls-ca-file {out}/{h}/ca.pem --tls-cert "
                f"{out}/{h}/cert.pem --tls-key {out}/{h}/key.pem --preload osbench_analysis.fleet.guard") in printed
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
    certs.files("client").key.chmod(0o644)
    with pytest.raises(fleet.FleetError, match="readable by others .mode 0644.*chmod 600"):
        fleet.fleet_run("tls://127.0.0.1:1", ["h1"], **certs.files("client").parameters())
    certs.files("client").key.chmod(0o600)
    with pytest.raises(fleet.FleetError, match="not found: tls_key="):
        fleet.fleet_run("tls://127.0.0.1:1", ["h1"], **dict(certs.files("client").parameters(), tls_key="/nonexistent"))
    said = []
    with cluster(["h1"], tmp_path, tls=False) as c:
        with pytest.raises(fleet.FleetError, match="is plaintext"):
            fleet.fleet_run(c.address, ["h1"], output=str(tmp_path / "c"), say=said.append, **TINY)
        r = c.run(["h1"], tmp_path / "c", campaign_id="in", say=said.append)
        assert [o.status for o in r.outcomes] == ["stored"] and said[0] == fleet_security.INSECURE_WARNING
        assert store.signed_by(tmp_path / "c" / "in-h1") == "unsigned (local)"  # no key, no signature
        assert cli.main(["fleet", "run", "--scheduler", c.address, "--hosts", "h1", "--insecure",
                         "--output", str(tmp_path / "c"), "--campaign-id", "cli", "--probes", "null_syscall"]) == 0
        assert "INSECURE" in capsys.readouterr().err


def test_a_worker_without_the_guard_is_not_given_work(tmp_path, fake_fleet_task):
    with cluster(["h1", "h2"], tmp_path, h2={"preload": []}) as c:
        r = c.run(["h1", "h2"], tmp_path / "c", campaign_id="g")
        assert [o.status for o in r.outcomes] == ["stored", "unguarded"]
        assert "does not run the fleet guard" in r.outcomes[1].message
        assert fake_fleet_task["ran"] == {"g-h1": "h1"}  # nothing ran on h2


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
    # what a worker takes from the wire before the checks: plain data only, msgpack's arrays as lists
    assert fleet_guard.plain({"a": [1, 2.5, None, ("x", True)]}) == {"a": [1, 2.5, None, ["x", True]]}
    for bad in ({1: "a"}, b"bytes", {"a": Path("/")}):
        with pytest.raises(fleet_guard.NotFleetWork):
            fleet_guard.plain(bad)
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


class Evil:
    """A pickle that writes a file when it is unpickled (the review's I15-I19 payload)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('unpickled')",))


def _send(address, files, msg, timeout=10.0) -> str:
    """Connect to a fleet process with a role's certificate, send one message, say what came back."""
    from distributed.comm import connect
    from distributed.security import Security

    async def attempt():
        sec = Security(tls_ca_file=str(files.ca), tls_client_cert=str(files.cert), tls_client_key=str(files.key),
                       require_encryption=True)
        try:
            comm = await connect(address, timeout=timeout, **sec.get_connection_args("client"))
        except Exception as e:
            return f"refused at connection: {type(e).__name__}"
        try:
            await comm.write(msg)
            return f"answered: {await asyncio.wait_for(comm.read(), timeout)!r}"[:300]
        except Exception as e:
            return f"dropped: {type(e).__name__}"
        finally:
            comm.abort()

    return asyncio.run(attempt())


def test_no_certificate_is_root_by_pickle_and_a_certificate_is_a_role(tmp_path, fake_fleet_task):
    """The review's I15-I22: pickles in the fleet's own request, in Dask's task and scatter messages,
    from a client, a host and the scheduler's own key; other roles' keys as a client's; a worker
    under another host's name; the HTTP port.  Nothing is unpickled, nothing is accepted."""
    from distributed import Client
    from distributed.protocol.serialize import ToPickle

    marker = tmp_path / "unpickled"
    evil = ToPickle(Evil(marker))
    with cluster(["h1", "h2"], tmp_path) as c:
        files = {role: c.certs.files(role) for role in ("client", "scheduler", "h1", "h2")}
        h1 = c.workers["h1"].address
        seen = {
            # I15/I16: the fleet's own request with a pickle for an argument, to the scheduler ...
            "client: fleet request": _send(c.address, files["client"], {
                "op": "osbench_fleet_start", "host": "h1", "campaign_id": "x-h1", "profile": None,
                "parameters": {"note": evil}, "wait": False}),
            # ... and Dask's own task and scatter messages (I15-I17, I19)
            "client: update-graph": _send(c.address, files["client"], {"op": "update-graph", "graph": evil}),
            "client: scatter": _send(c.address, files["client"], {"op": "scatter", "data": {"k": evil},
                                                                  "workers": [h1]}),
            # I18: scatter straight to the measuring worker
            "client to worker: update_data": _send(h1, files["client"], {"op": "update_data", "data": {"k": evil}}),
            "host h2 to worker h1": _send(h1, files["h2"], {"op": "osbench_fleet_measure", "parameters": evil}),
            # even the scheduler's key makes no worker unpickle
            "scheduler to worker": _send(h1, files["scheduler"], {
                "op": "osbench_fleet_measure", "campaign_id": "x-h1", "profile": None,
                "parameters": {"note": evil}, "wait": False}),
            # I20/I21: a host's key and the scheduler's key acting as a client
            "host h1 as client": _send(c.address, files["h1"], {"op": "osbench_fleet_hosts"}),
            "scheduler as client": _send(c.address, files["scheduler"], {"op": "osbench_fleet_hosts"}),
        }
        print(json.dumps(seen, indent=1))  # for the report (-s)
        assert not marker.exists(), seen
        for what, outcome in seen.items():
            assert outcome.startswith(("dropped", "refused at connection")), (what, outcome)
        assert _send(c.address, files["client"], {"op": "osbench_fleet_hosts"}).startswith("answered")
        # a Dask-serialized (pickled) frame is not even decoded: the host refuses it as not plain data
        from distributed.protocol.serialize import to_serialize

        answer = _send(c.address, files["client"], {
            "op": "osbench_fleet_start", "host": "h1", "campaign_id": "x-h1", "profile": None,
            "parameters": {"note": to_serialize(Evil(marker))}, "wait": False})
        assert "'state': 'refused'" in answer and "distributed.protocol.serialize.Serialized" in answer, answer
        # Dask's Client (submit, scatter, run, plugins, upload_file) is not even let in
        with pytest.raises(Exception):
            Client(c.address, security=security(c.certs, "client"), timeout="5s")
        for folder in ("h1", "scheduler"):  # I20/I21 through osbench itself
            with pytest.raises(fleet.FleetError, match="closed the connection|cannot reach"):
                fleet.fleet_run(c.address, ["h1"], output=str(tmp_path / "c"), say=lambda m: None,
                                **c.certs.files(folder).parameters(), **TINY)
        # I22: a worker with h1's certificate under the name h2 is not registered
        from distributed import Worker

        rogue = dict(name="h2-rogue", nthreads=1, host="127.0.0.1", security=security(c.certs, "worker", "h1"),
                     preload=[fleet_certs.GUARD_MODULE])
        with pytest.raises(Exception):
            c.call(asyncio.wait_for(Worker(c.address, **rogue), 30))
        assert sorted(str(w.name) for w in c.scheduler.workers.values()) == ["h1", "h2"]
        # I23: no HTTP port is left open, not even on loopback
        for server in (c.scheduler, *c.workers.values()):
            assert all(sock.fileno() == -1 for sock in server.http_server._sockets.values())
        assert not marker.exists()
        r = c.run(["h1", "h2"], tmp_path / "c", campaign_id="ok")  # the fleet itself still works
        assert [o.status for o in r.outcomes] == ["stored", "stored"]


def test_a_dashboard_is_kept_only_when_asked_for_and_on_loopback_and_a_failed_guard_closes_the_port(
        tmp_path, monkeypatch):
    import urllib.request

    monkeypatch.setenv(fleet_guard.DASHBOARD_ENV, "1")
    with cluster(["h1"], tmp_path) as c:  # the scheduler's dashboard asked on 127.0.0.1
        port = c.scheduler.http_server.port
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            assert r.status == 200

    class Broken:  # a server the guard cannot set up (no security, no rpc): its ports are closed
        listeners = [type("L", (), {"stopped": False, "stop": lambda self: setattr(self, "stopped", True)})()]

    import contextvars

    with pytest.raises(SystemExit, match="guard failed"):  # in a context of its own, as a server's start-up task is
        contextvars.copy_context().run(fleet_guard.dask_setup, type("Worker", (Broken,), {})())
    assert Broken.listeners[0].stopped


def test_the_client_stores_only_a_campaign_signed_by_the_host_it_asked(tmp_path, capsys):
    from osbench_analysis.store import signature, synthetic

    certs = fleet_certs.make_certs(["h1", "h2"], tmp_path / "certs", "127.0.0.1")
    other = fleet_certs.make_certs(["h2"], tmp_path / "other", "127.0.0.1")
    ca = certs.files("client").ca.read_bytes()
    sent = {}
    for h in ("h1", "h2"):
        path = synthetic.write_synthetic(tmp_path / h, f"s-{h}", seed=3, hostname=h)
        result = {"campaign_id": f"s-{h}", "data": store.campaign_bytes(path)}
        sent[h] = dict(result, signature=fleet_task.sign_result(result, str(certs.files(h).key),
                                                                 str(certs.files(h).cert)))
    out = tmp_path / "out"
    forged = dict(sent["h2"], signature=fleet_task.sign_result(sent["h2"], str(certs.files("h1").key),
                                                               str(certs.files("h1").cert)))
    foreign = dict(sent["h2"], signature=fleet_task.sign_result(sent["h2"], str(other.files("h2").key),
                                                                str(other.files("h2").cert)))
    for got, message in ((forged, "signed by host 'h1', not by 'h2'"), (foreign, "not issued by the fleet's CA"),
                         (dict(sent["h2"], signature=sent["h1"]["signature"]), "is for campaign 's-h1'")):
        with pytest.raises(store.CampaignCorrupted, match=message):
            store.import_campaign(out, got["data"], got["signature"], ca, "h2")
    assert not (out / "s-h2").exists()
    path = store.import_campaign(out, sent["h2"]["data"], sent["h2"]["signature"], ca, "h2")
    assert store.signed_by(path) == "signed by host h2" == store.signed_by(path, ca)
    assert store.load_campaign("s-h2", out).manifest.hostname == "h2"
    with pytest.raises(store.CampaignCorrupted, match="not issued by the fleet's CA"):
        store.signed_by(path, other.files("client").ca.read_bytes())
    local = synthetic.write_synthetic(out, "local-1", seed=4)
    assert cli.main(["verify", "--root", str(out), "--ca", str(certs.files("client").ca)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said == ["local-1: seal intact, unsigned (local)", "s-h2: seal intact, signed by host h2"]
    assert cli.main(["verify", "s-h2", "--root", str(out), "--ca", str(other.files("client").ca)]) == 1
    assert "s-h2: DAMAGED: " in capsys.readouterr().out
    assert local.name == "local-1"
    # the samples rewritten and the seal recomputed (the review's T9/T10): the seal holds, the signature not
    (path / store.SAMPLES_FILE).chmod(0o644)
    path.chmod(0o755)
    (path / store.SEAL_FILE).chmod(0o644)
    import hashlib

    (path / store.SAMPLES_FILE).write_bytes((path / store.SAMPLES_FILE).read_bytes() + b"\0")
    digest = {n: hashlib.sha256((path / n).read_bytes()).hexdigest() for n in (store.MANIFEST_FILE,
                                                                              store.SAMPLES_FILE)}
    (path / store.SEAL_FILE).write_text("".join(f"{d}  {n}\n" for n, d in digest.items()))
    with pytest.raises(store.CampaignCorrupted, match="signature does not match"):
        store.load_campaign("s-h2", out)
    assert cli.main(["verify", "--root", str(out)]) == 1
    said = capsys.readouterr().out
    assert "local-1: seal intact, unsigned (local)" in said and "s-h2: DAMAGED: " in said
    assert "signature does not match" in said
    assert signature.SIGNATURE_FILE == "SIGNATURE.json"


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


def _listening(pid: int) -> list[tuple[str, int]]:
    """The TCP ports process `pid` listens on, read in its own network namespace (/proc/PID/net)."""
    import ipaddress

    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table, family in (("tcp", 4), ("tcp6", 6)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] != "0A" or f[9] not in inodes:  # 0A: LISTEN
                continue
            hexip, hexport = f[1].split(":")
            raw = bytes.fromhex(hexip)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # each 32-bit word is host order
            found.append((str(ipaddress.ip_address(raw)), int(hexport, 16)))
    return found


def _knock(host: str, port: int, ca: Path) -> dict:
    """What a port answers without a certificate: plain HTTP, and TLS without a client certificate."""
    seen = {}
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(b"GET /json/identity.json HTTP/1.0\r\n\r\n")
        try:
            seen["http"] = s.recv(64)
        except OSError as e:
            seen["http"] = type(e).__name__.encode()
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.check_hostname = False
    try:
        with socket.create_connection((host, port), timeout=5) as raw, ctx.wrap_socket(raw) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            seen["tls"] = s.recv(64) or b"closed"
    except (OSError, ssl.SSLError) as e:
        seen["tls"] = type(e).__name__.encode()
    return seen


@pytest.mark.slow
def test_no_one_without_the_fleets_certificate_gets_in_and_the_fleet_measures_end_to_end(tmp_path, capsys):
    if shutil.which("ip") is None or os.geteuid() != 0:
        pytest.fail("this test needs iproute2 and root (both are here on the CI machines)")
    from test_fleet import start_process, stop, wait_for_hosts

    certs = fleet_certs.make_certs(["h1", "h2"], tmp_path / "certs", "127.0.0.1", _free_port())
    other = fleet_certs.make_certs(["h1"], tmp_path / "other-ca", "127.0.0.1").files("client").parameters()
    procs = []
    deadline = time.monotonic() + 240  # the whole test is bounded in time
    try:
        procs.append(start_process(venv_argv(certs.scheduler_argv()), certs.environment("scheduler")))
        with _namespaced_hosts(["h1", "h2", "lab1"], tmp_path) as hosts:
            ns_address = {}
            for name, ns, gateway in hosts[:2]:
                env = {**certs.environment("worker"), fleet.FLEET_DIR_ENV: str(tmp_path / name),
                       "OSBENCH_LOCK_FILE": str(tmp_path / f"{name}.lock")}
                # the printed command, with the address this namespace reaches the scheduler at
                worker = venv_argv(dataclasses.replace(certs, scheduler_host=gateway).worker_argv(name))
                procs.append(start_process(["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                                            f'hostname {name} && exec "$@"', "sh", *worker], env))
                ns_address[procs[-1].pid] = gateway[:-1] + "2"
            addrs = wait_for_hosts(certs, ["h1", "h2"], max(1, deadline - time.monotonic()))
            assert addrs["h1"].startswith("tls://10.213.0.2:") and addrs["h2"].startswith("tls://10.213.1.2:")
            # from another machine of the lab (its own namespace): the scheduler lets no one in
            _, lab1, lab1_gateway = hosts[2]
            port = certs.address.rsplit(":", 1)[1]
            seen = {"scheduler": _intrude(f"tls://{lab1_gateway}:{port}", certs.files("client").ca, other, lab1),
                    "worker h1": _intrude(addrs["h1"], certs.files("client").ca, other)}
            # every port a fleet process listens on, without a certificate: nothing (the review's I23)
            ports = {}
            for p in procs:
                pid = p.pid  # `sh -c '... && exec dask worker'`: the same pid
                listening = _listening(pid)
                assert listening and all(ip in ("0.0.0.0", "::") for ip, _ in listening), listening
                for n in sorted({n for _, n in listening}):  # the wildcard: knock at the host's address
                    ports[f"pid {pid} port {n}"] = _knock(ns_address.get(p.pid, "127.0.0.1"), n,
                                                          certs.files("client").ca)
            print(json.dumps({"intrusions": seen, "ports": {k: {a: b.decode("latin-1") for a, b in v.items()}
                                                            for k, v in ports.items()}}, indent=1))  # for the report
            for who, outcome in seen.items():
                assert set(outcome) == {"tls_without_certificate", "certificate_of_another_ca", "plaintext"}
                # the server ends the handshake: an alert, or it just closes (seen both ways)
                assert re.search("CERTIFICATE_REQUIRED|SSLEOFError|closed by the server",
                                 outcome["tls_without_certificate"]), (who, outcome)
                assert re.search(r"CommClosedError.*SSL\w*Error", outcome["certificate_of_another_ca"]), (who, outcome)
                assert re.search("CommClosedError.*(reset|closed)", outcome["plaintext"]), (who, outcome)
            assert len(ports) == 3, ports  # one port per process: Dask's TLS comm, no HTTP (v4 and v6)
            for where, answer in ports.items():
                assert not answer["http"].startswith(b"HTTP") and not answer["tls"].startswith(b"HTTP"), (where, answer)
            # with the fleet's client certificate, still no Dask client (submit, scatter, run, ...)
            from distributed import Client

            with pytest.raises(Exception):
                Client(certs.address, security=security(certs, "client"), timeout="10s")
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
            assert store.signed_by(c.path) == f"signed by host {name}"
            ids[name] = c.manifest.host["host_id"]
        assert ids["h1"] != ids["h2"]  # the stable host id tells the two hosts apart
    finally:
        stop(procs)

