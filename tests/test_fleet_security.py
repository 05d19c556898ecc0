"""The fleet's threat model (docs/fleet.md) re-run as attacks: what TLS with mutual
authentication keeps out (no certificate, another CA's, plaintext, HTTP), what the
signatures keep out (a campaign under another host's name), what the client refuses (a
pickle from a host), and the stated limits of stock Dask (a host's key acting as a client,
unregistering another host, making the scheduler and the client unpickle), each asserted
as the threat model states it: if Dask closes a limit, its test fails and the docs must
change.  The slow test starts the scheduler and the workers with the printed commands on
127.0.0.1 and knocks at every port they listen on."""
import asyncio
import contextlib
import json
import os
import signal
import socket
import ssl
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

import distributed  # the fleet extra: its tests fail, not skip, where it is installed
from osbench_analysis import cli
from osbench_analysis.fleet import run as fleet
from osbench_analysis.fleet import certs as fleet_certs
from osbench_analysis.fleet import security as fleet_security
from osbench_analysis.fleet import task as fleet_task
from osbench_analysis.store import campaigns as store
from osbench_analysis.errors import OsbenchError

from test_fleet import CLUSTER_THREAD, TINY, _free_port, cluster, security, use_fake_task, venv_argv  # noqa: E402


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
    # the exact commands, with these files: one per machine, stock Dask's
    assert (f"\ndask scheduler --protocol tls --port 8786 --dashboard-address 127.0.0.1:8787 "
            f"--tls-ca-file {out}/scheduler/ca.pem --tls-cert {out}/scheduler/cert.pem "
            f"--tls-key {out}/scheduler/key.pem\n") in printed
    for h in ("h1", "h2", "h3"):
        assert (f"\nDASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL=5s "
                f"dask worker tls://lab0:8786 --name {h} --nthreads 1 --resources MEASURE=1 --no-nanny --no-dashboard "
                f"--dashboard-address 127.0.0.1:0 --tls-ca-file {out}/{h}/ca.pem --tls-cert "
                f"{out}/{h}/cert.pem --tls-key {out}/{h}/key.pem\n") in printed
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


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
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




# --- attacks: the threat model's lines, one by one --------------------------------------

#: where each planted pickle was unpickled: the name of the thread (the in-process cluster runs on
#: test_fleet.CLUSTER_THREAD, its tasks on threads named after their worker; anything else: the client)
UNPICKLED: list[str] = []


def _unpickled():
    UNPICKLED.append(threading.current_thread().name)
    return RuntimeError("planted")


class Planted(Exception):
    """An object whose unpickling runs code (here: records the thread that unpickled it)."""

    def __reduce__(self):
        return _unpickled, ()


def raise_planted():
    raise Planted()


def return_planted():
    return Planted()


def which_worker():
    from distributed import get_worker

    return str(get_worker().name)


def _client_side(names) -> list[str]:
    """The unpickling threads that are not the cluster's: the client's."""
    return [t for t in names if t != CLUSTER_THREAD and not t.startswith(("h1-", "h2-"))]


def _as_client(c, folder: str):
    """Dask's own Client with the files of `folder` used as a client's."""
    from distributed import Client
    from distributed.security import Security

    f = c.certs.files(folder)
    return Client(c.address, security=Security(tls_ca_file=str(f.ca), tls_client_cert=str(f.cert),
                                                              tls_client_key=str(f.key), require_encryption=True),
                  deserializers=fleet.PLAIN, timeout="10s", set_as_default=False)


def _send(address, files, msg, timeout=10.0) -> str:
    """Connect to a fleet process with a role's files as a client's, send one message, say what came back."""
    from distributed.comm import connect
    from distributed.security import Security

    async def attempt():
        sec = Security(tls_ca_file=str(files.ca), tls_client_cert=str(files.cert),
                                      tls_client_key=str(files.key), require_encryption=True)
        try:
            comm = await connect(address, timeout=timeout, **sec.get_connection_args("client"))
        except Exception as e:
            return f"refused at connection: {type(e).__name__}: {e}"[:300]
        try:
            await comm.write(msg)
            return f"answered: {await asyncio.wait_for(comm.read(), timeout)!r}"[:300]
        except Exception as e:
            return f"dropped: {type(e).__name__}"
        finally:
            comm.abort()

    return asyncio.run(attempt())


def test_without_the_fleets_key_nothing_gets_in(tmp_path):
    """Mutual TLS: no certificate, another CA's certificate, plaintext: nothing."""
    from distributed import Client

    other = fleet_certs.make_certs(["h1"], tmp_path / "other", "127.0.0.1")
    with cluster(["h1"], tmp_path) as c:
        host, port = c.address.split("://")[1].rsplit(":", 1)
        seen = {}
        ctx = ssl.create_default_context(cafile=str(c.certs.files("client").ca))
        ctx.check_hostname = False
        try:
            with socket.create_connection((host, int(port)), timeout=5) as raw, ctx.wrap_socket(raw) as s:
                s.sendall(b"\0" * 8)
                seen["no certificate"] = "answered" if s.recv(1) else "closed"
        except (OSError, ssl.SSLError) as e:
            seen["no certificate"] = type(e).__name__
        for what, kwargs in (("another CA", {"security": security(other, "client")}),
                             ("plaintext", {"address": c.address.replace("tls://", "tcp://")})):
            try:
                with Client(kwargs.get("address", c.address), security=kwargs.get("security"), timeout="5s",
                            set_as_default=False) as cl:
                    seen[what] = f"connected to {cl.scheduler_info()['id']}"
            except Exception as e:
                seen[what] = f"{type(e).__name__}: {e}"[:200]
        with socket.create_connection((host, int(port)), timeout=5) as s:  # plain HTTP at Dask's port
            s.sendall(b"GET /info/main/workers.html HTTP/1.0\r\n\r\n")
            try:
                seen["plain HTTP"] = s.recv(64).decode("latin-1") or "closed"
            except OSError as e:
                seen["plain HTTP"] = type(e).__name__
        print(json.dumps(seen, indent=1))  # for the report (-s)
        assert seen["no certificate"] in ("closed", "SSLError", "SSLEOFError", "ConnectionResetError"), seen
        assert not seen["another CA"].startswith("connected") and not seen["plaintext"].startswith("connected"), seen
        assert not seen["plain HTTP"].startswith("HTTP"), seen


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_pickle_from_a_host_is_refused_by_the_client(tmp_path, fake_fleet_task):
    """A rogue worker h2 sends its result pickled (whatever the client asked for): refused, never
    unpickled; the honest h1 is stored.  A task returning an object that is not plain data: refused too."""
    from distributed import Worker

    class PicklingWorker(Worker):
        async def get_data(self, comm, keys, who=None, serializers=None):
            return await super().get_data(comm, keys, who=who, serializers=["pickle"])

    UNPICKLED.clear()
    with cluster(["h1", "h2"], tmp_path, h2={"cls": PicklingWorker}) as c:
        r = c.run(["h1", "h2"], tmp_path / "c", campaign_id="p")
        assert [o.status for o in r.outcomes] == ["stored", "failed"], r.table()
        assert "serialized with pickle but only able to deserialize data with ['msgpack']" in r.outcomes[1].message
        with _as_client(c, "client") as client:
            with pytest.raises(TypeError, match="only able to deserialize data with .'msgpack'."):
                client.submit(return_planted, workers=[c.workers["h1"].address], pure=False).result(timeout=30)
            with pytest.raises(TypeError, match="serialized with pickle"):
                client.submit(return_planted, workers=[c.workers["h2"].address], pure=False).result(timeout=30)
    assert _client_side(UNPICKLED) == []  # nothing planted was unpickled by the client
    assert not (tmp_path / "c" / "p-h2").exists()


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_campaign_forged_under_another_hosts_name_is_not_stored(tmp_path, fake_fleet_task, monkeypatch):
    """A rogue worker with h1's key registers as "h2" (Dask does not bind names to certificates)
    and says it is h2: its campaign p-h2 is signed with h1's key, and is not stored."""
    real = fleet_task.host_identity
    monkeypatch.setattr(fleet_task, "host_identity", lambda dask_worker=None: "h2" if str(
        (dask_worker or distributed.get_worker()).name) == "h2" else real(dask_worker))
    with cluster(["h1", "h2"], tmp_path, h2={"certs": "h1"}) as c:
        assert sorted(str(w.name) for w in c.scheduler.workers.values()) == ["h1", "h2"]
        r = c.run(["h1", "h2"], tmp_path / "c", campaign_id="fg")
        assert [o.status for o in r.outcomes] == ["stored", "failed"], r.table()
        assert "signed by host 'h1', not by 'h2'" in r.outcomes[1].message
        assert fake_fleet_task["ran"] == {"fg-h1": "h1", "fg-h2": "h2"}  # the rogue did make one up
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["fg-h1"]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_stated_limits_a_hosts_key_acts_as_a_client_and_makes_the_scheduler_and_the_client_unpickle(
        tmp_path, fake_fleet_task):
    """docs/fleet.md's limits L1 and L2, as stated: stock Dask serves a host's key like the client's.
    If a Dask release closes one of them, this test fails and the threat model must say so."""
    from distributed.core import rpc
    from distributed.protocol.serialize import ToPickle

    UNPICKLED.clear()
    with cluster(["h1", "h2"], tmp_path) as c:
        h1, h2 = (c.workers[h].address for h in ("h1", "h2"))
        # L1: client.submit with h1's key runs a function on h2
        with _as_client(c, "h1") as client:
            assert client.submit(which_worker, workers=[h2], pure=False).result(timeout=30) == "h2"
        # L1: h1's key used as the client's key by osbench itself: the campaigns are measured and stored
        r = fleet.fleet_run(c.address, ["h1", "h2"], output=str(tmp_path / "c"), campaign_id="hk",
                            say=lambda m: None, **c.certs.files("h1").parameters(), **TINY)
        assert [o.status for o in r.outcomes] == ["stored", "stored"]
        # L1: a pickled part in any message from h1's key is unpickled by the scheduler
        assert _send(c.address, c.certs.files("h1"), {"op": "identity", "x": ToPickle(Planted())}).startswith(
            "answered")
        assert UNPICKLED == [CLUSTER_THREAD]  # the scheduler's thread
        # L2: an exception a host's task raises is unpickled by the client
        UNPICKLED.clear()
        with _as_client(c, "client") as client:
            with pytest.raises(RuntimeError, match="planted"):
                client.submit(raise_planted, workers=[h1], pure=False).result(timeout=30)
        assert _client_side(UNPICKLED), UNPICKLED
        # L1: h1's key unregisters h2 (Dask's `unregister` takes any worker's address)
        async def unregister():
            sec = security(c.certs, "client", "h1")
            async with rpc(c.address, connection_args=sec.get_connection_args("client")) as scheduler:
                return await scheduler.unregister(address=h2, stimulus_id="attack")
        assert c.call(unregister()) == "OK"
        deadline = time.monotonic() + 10
        while h2 in c.scheduler.workers and time.monotonic() < deadline:
            time.sleep(0.1)
        assert h2 not in c.scheduler.workers


def test_the_client_key_registers_a_worker_that_can_never_serve(tmp_path):
    """The client's certificate is clientAuth only: a worker started with it registers (Dask accepts
    any key of the fleet's CA), but no one can fetch anything from it: its port cannot serve TLS."""
    from distributed.comm import connect

    with cluster(["h1", "rogue"], tmp_path, rogue={"certs": "client"}) as c:
        rogue = c.workers["rogue"].address
        assert rogue in c.scheduler.workers and fleet.connected_hosts(
            c.address, **c.client_files(), say=lambda m: None) == {"h1": c.workers["h1"].address}  # unreachable
        sec = security(c.certs, "scheduler")

        async def reach():
            comm = await connect(rogue, timeout=5, **sec.get_connection_args("scheduler"))
            comm.abort()

        with pytest.raises(OSError, match="TLS certificate does not match"):
            c.call(reach())


# --- the printed commands as processes on 127.0.0.1 ---------------------------------------


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
def test_the_printed_commands_listen_on_tls_and_loopback_only_measure_and_stop_on_one_sigterm(tmp_path, capsys):
    """The scheduler and two workers started with the commands `osbench fleet certs` prints: every
    port is Dask's TLS port (no HTTP answer) or on 127.0.0.1 (the dashboard); the printed
    `osbench fleet run` stores both campaigns signed; one SIGTERM stops each process, the
    scheduler first (the audit's worker hung after "scheduler-close")."""
    from test_fleet import process_certs, start_process, start_worker, wait_for_hosts

    certs = process_certs(["h1", "h2"], tmp_path)
    ca = certs.files("client").ca
    procs = [start_process(venv_argv(certs.scheduler_argv()), certs.environment("scheduler"))]
    stopped = {}
    try:
        procs += [start_worker(certs, h, tmp_path) for h in ("h1", "h2")]
        hosts = wait_for_hosts(certs, ["h1", "h2"])
        tls_ports = [certs.port, *(int(hosts[h].rsplit(":", 1)[1]) for h in ("h1", "h2"))]
        seen = {}
        for p, tls_port in zip(procs, tls_ports):
            listening = _listening(p.pid)
            assert tls_port in {n for _, n in listening}, listening
            for ip, n in sorted(set(listening)):
                if n == tls_port:
                    seen[f"pid {p.pid} TLS port {n}"] = {k: v.decode("latin-1") for k, v in _knock("127.0.0.1", n, ca).items()}
                else:
                    seen[f"pid {p.pid} port {n}"] = ip
        with capsys.disabled():
            print(json.dumps(seen, indent=1))  # for the report (-s)
        for where, what in seen.items():
            if "TLS" in where:
                assert not what["http"].startswith("HTTP") and not what["tls"].startswith("HTTP"), (where, what)
            else:
                assert what == "127.0.0.1", (where, what)  # Dask's HTTP server: loopback only
        argv = certs.fleet_run_argv()
        assert cli.main([*argv[1:], "--probes", "null_syscall", "--runs", "2", "--batches", "2", "--min-batch-ms", "1",
                         "--precision-target", "0", "--placements", "same_cpu", "--variants", "{}",
                         "--output", str(tmp_path / "campaigns"), "--campaign-id", "pc"]) == 0
        capsys.readouterr()
        assert cli.main(["verify", "--root", str(tmp_path / "campaigns"), "--ca", str(certs.out / "ca.pem")]) == 0
        assert capsys.readouterr().out.splitlines() == ["pc-h1: seal intact, signed by host h1",
                                                        "pc-h2: seal intact, signed by host h2"]
    finally:
        for name, p in zip(("scheduler", "h1", "h2"), procs):
            t0 = time.monotonic()
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
                stopped[name] = round(time.monotonic() - t0, 2)
            except subprocess.TimeoutExpired:
                stopped[name] = "hung"
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
    print("seconds to stop on one SIGTERM:", stopped)  # for the report (-s)
    assert all(v != "hung" for v in stopped.values()), stopped
