"""Campaigns on many hosts through Dask distributed (`osbench fleet run`,
notebooks/fleet.ipynb).

On every measured host runs a Dask worker named after the host (its
certificate's name) with the fleet's guard (docs/fleet.md).  fleet_run opens
one TLS connection to the scheduler and asks, as plain data, for each host's
campaign; the scheduler relays the request to that host's worker, which checks
it and starts the host's own runner as a subprocess -- exactly `osbench run`,
so the host lock, the journal and --resume apply unchanged.  The client polls
until each host's sealed campaign comes back as bytes, signed with the host's
key; it stores a campaign only if the seal holds and the signature is that
host's (store/signature.py), never overwriting.  A host that fails or
disappears is reported and the others are kept; running the same command again
(same --campaign-id) skips the hosts already stored and resumes the others
from their journals.

Security (fleet/security.py, certs.py, guard.py, wire.py): TLS with mutual
authentication and a role in every certificate (a plaintext scheduler only
with insecure=True); no Dask task and no pickle anywhere in the fleet's
scheduler and workers; the parameters are checked on the host before anything
starts, and reach `osbench run` as an argument list, never through a shell.
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from pathlib import Path

from osbench_analysis.measure import config
from osbench_analysis.fleet import security as fleet_security
from osbench_analysis.store import campaigns as store
from osbench_analysis.fleet.certs import GUARD_MODULE, QUIET_WORKER_ENV
from osbench_analysis.fleet.task import (FLEET_DIR_ENV, HostFailed, cli_arguments, host_root,  # noqa: F401  (re-exported)
                                          measure_on_this_host, runner_environment)
from osbench_analysis.fleet.security import FleetError, check_campaign_id, check_host, client_security

__all__ = ["FleetError", "HostFailed", "QUIET_WORKER_ENV", "fleet_run", "measure_on_this_host", "ssh_cluster"]

#: a host whose Dask worker is gone (or forgot the campaign: restarted) this long is reported as vanished
VANISHED_AFTER_S = 20.0
#: how long each poll waits on the host for its campaign to end (a long poll: the measured host's worker
#: is asked about once per POLL_WAIT_S, and a finished campaign is picked up at once)
POLL_WAIT_S = 5.0


def host_campaign_id(prefix: str, host: str) -> str:
    return check_campaign_id(f"{prefix}-{check_host(host)}")


def ssh_cluster_spec(scheduler_host: str, hosts: list[str], remote_python: str,
                     connect_options: dict | None = None, insecure: bool = False) -> dict:
    """SpecCluster arguments for Dask's SSH deployment with one worker per host
    named after it (one thread, MEASURE=1): SSHCluster itself names workers
    0, 1, 2, ..., which fleet_run could not pin to.  The scheduler listens
    on tls:// (tcp:// only when insecure) and both preload fleet_guard."""
    from distributed.deploy.ssh import Scheduler, Worker

    for h in [scheduler_host, *hosts]:
        check_host(h)
    connect = connect_options or {}
    guard = {"preload": [GUARD_MODULE]}
    protocol = "tcp" if insecure else "tls"
    sched = {"cls": Scheduler, "options": {"address": scheduler_host, "connect_options": connect,
                                           "kwargs": {"dashboard_address": None, "protocol": protocol, **guard},
                                           "remote_python": remote_python}}
    workers = {h: {"cls": Worker, "options": {
        "address": h, "connect_options": connect, "remote_python": remote_python,
        "kwargs": {"name": h, "nthreads": 1, "resources": {"MEASURE": 1}, "dashboard_address": None, **guard}}}
        for h in hosts}
    return {"scheduler": sched, "workers": workers}


def ssh_tls_config(remote_tls_dir: str) -> dict:
    """Dask configuration the SSH-started scheduler and workers inherit (Dask
    sends the client's configuration along): each remote machine reads its own
    role folder from `osbench fleet certs` at the same path, remote_tls_dir."""
    d = remote_tls_dir.rstrip("/")
    return {"distributed.comm.require-encryption": True, "distributed.comm.tls.ca-file": f"{d}/ca.pem",
            "distributed.scheduler.http.routes": [], "distributed.worker.http.routes": [],
            **{f"distributed.comm.tls.{role}.{kind}": f"{d}/{kind}.pem"
               for role in ("scheduler", "worker") for kind in ("cert", "key")}}


def ssh_cluster(scheduler_host: str, hosts: list[str], remote_python: str, connect_options: dict | None = None, *,
                tls_ca_file: str | None = None, tls_cert: str | None = None, tls_key: str | None = None,
                remote_tls_dir: str | None = None, insecure: bool = False, say=print):
    """Start the scheduler on scheduler_host and a named measuring worker on
    every host over SSH (docs/fleet.md); close it when done.  tls_ca_file,
    tls_cert, tls_key: the client's files (`osbench fleet certs` DIR/client);
    remote_tls_dir: where each remote machine keeps its own role folder
    (DIR/<host>, DIR/scheduler on the scheduler's machine)."""
    import dask
    from distributed import SpecCluster

    spec = ssh_cluster_spec(scheduler_host, hosts, remote_python, connect_options, insecure)
    if insecure:
        say(fleet_security.INSECURE_WARNING)
        return SpecCluster(**spec, name="osbench-fleet")
    if not remote_tls_dir:
        raise FleetError("ssh_cluster needs remote_tls_dir: the folder where each remote machine keeps its "
                         "`osbench fleet certs` role folder (or insecure=True on one trusted machine)")
    security = client_security(f"tls://{scheduler_host}", tls_ca_file, tls_cert, tls_key, say=say)
    with dask.config.set(ssh_tls_config(remote_tls_dir)):  # read when the remote processes start
        return SpecCluster(**spec, security=security, name="osbench-fleet")


@dataclass
class HostOutcome:
    host: str
    campaign_id: str
    status: str          # stored | already_stored | failed | vanished | absent | unguarded
    message: str = ""
    path: str = ""


@dataclass
class FleetResult:
    prefix: str
    outcomes: list[HostOutcome] = field(default_factory=list)

    @property
    def campaigns(self) -> list[str]:
        return [o.campaign_id for o in self.outcomes if o.status in ("stored", "already_stored")]

    @property
    def unfinished(self) -> list[HostOutcome]:
        return [o for o in self.outcomes if o.status not in ("stored", "already_stored")]

    def table(self):
        import pandas as pd

        return pd.DataFrame([vars(o) for o in self.outcomes])


def scheduler_address(scheduler) -> str:
    """The address of a scheduler given as an address, a distributed.Client or a cluster."""
    if isinstance(scheduler, str):
        return scheduler
    for attr in ("scheduler_address",):
        if isinstance(getattr(scheduler, attr, None), str):
            return getattr(scheduler, attr)
    address = getattr(getattr(scheduler, "scheduler", None), "address", None)
    if not isinstance(address, str):
        raise FleetError(f"scheduler must be an address such as tls://lab0:8786 (got {scheduler!r})")
    return address


def fleet_run(scheduler, hosts: list[str], profile: str | None = None, output: str | None = None,
              campaign_id: str | None = None, wait: bool = False, tls_ca_file: str | None = None,
              tls_cert: str | None = None, tls_key: str | None = None, insecure: bool = False, say=print,
              **parameters) -> FleetResult:
    """Measure one campaign on every host (see the module docstring).

    scheduler: the Dask scheduler's address (tls://host:8786; a
    distributed.Client or cluster stands for its scheduler's address).
    hosts: the Dask worker names (one per measured host).  campaign_id: the
    fleet's prefix; host h's campaign is <prefix>-<h>.  Give the same prefix
    again to resume the hosts that did not finish.  tls_ca_file, tls_cert,
    tls_key: the client's files from `osbench fleet certs`; insecure=True
    accepts a plaintext scheduler (one trusted machine only): its campaigns
    come back unsigned."""
    if not hosts or not isinstance(hosts, (list, tuple)) or len(set(hosts)) != len(hosts):
        raise FleetError(f"hosts must be a list of distinct Dask worker names (got {hosts!r})")
    for h in hosts:
        check_host(h)
    unknown = sorted(set(parameters) - fleet_security.TASK_PARAMETERS)
    if unknown:
        raise FleetError(f"unknown fleet parameter(s) {unknown}; campaign parameters: "
                         f"{sorted(fleet_security.TASK_PARAMETERS)}")
    cfg = config.make_config(profile or "quick", **parameters)  # names and profiles refused here, once
    fleet_security.check_command_prefix(cfg.command_prefix)
    prefix = campaign_id or f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}-fleet"
    for h in hosts:
        host_campaign_id(prefix, h)
    address = scheduler_address(scheduler)
    security = client_security(address, tls_ca_file, tls_cert, tls_key, insecure, say)
    ca_pem = Path(tls_ca_file).read_bytes() if security is not None else None
    root = Path(output) if output else store.default_root()
    root.mkdir(parents=True, exist_ok=True)
    conversation = _Conversation(address, security, ca_pem, root, say)
    result = _in_own_loop(conversation.run(prefix, list(hosts), profile, parameters, wait))
    order = {h: i for i, h in enumerate(hosts)}
    result.outcomes.sort(key=lambda o: order[o.host])
    return result


def connected_hosts(scheduler, tls_ca_file: str | None = None, tls_cert: str | None = None,
                    tls_key: str | None = None, insecure: bool = False, say=print) -> dict[str, str]:
    """The measuring hosts connected to the fleet's scheduler now: {worker name: address}."""
    address = scheduler_address(scheduler)
    security = client_security(address, tls_ca_file, tls_cert, tls_key, insecure, say)
    conversation = _Conversation(address, security, None, Path("."), say)
    return _in_own_loop(conversation.run(None, [], None, {}, False, hosts_only=True))


def _in_own_loop(coroutine):
    """Run a coroutine on an event loop of its own, in a thread: a notebook's kernel already runs one here."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="osbench-fleet") as pool:
        return pool.submit(asyncio.run, coroutine).result()


class _Conversation:
    """The client's side of a fleet run: one TLS connection to the scheduler, on which it asks for
    the hosts, starts each host's campaign and polls them, reading plain data only (fleet/wire.py)."""

    def __init__(self, address, security, ca_pem, root: Path, say):
        self.address, self.security, self.ca_pem, self.root, self.say = address, security, ca_pem, root, say

    async def call(self, op: str, **args):
        from distributed.core import send_recv

        return await send_recv(self.comm, op=op, **args)

    async def run(self, prefix, hosts, profile, parameters, wait, hosts_only: bool = False):
        from distributed.comm import connect

        from osbench_analysis.fleet import guard, wire

        wire.install()
        wire.STRICT.set(True)  # the client unpickles nothing the scheduler sends either
        args = self.security.get_connection_args("client") if self.security is not None else {}
        try:
            self.comm = await connect(self.address, timeout="20s", deserialize=False, **args)
        except (OSError, TimeoutError, TypeError) as e:
            raise FleetError(f"cannot reach the Dask scheduler at {self.address!r}: {e}") from None
        wire.make_strict(self.comm)
        try:
            role, _ = wire.peer_identity(self.comm)
            if self.security is not None and role != guard.SCHEDULER_ROLE:
                raise FleetError(f"{self.address} presents a {role} certificate, not the scheduler's")
            try:
                present = await self.call(guard.FLEET_HOSTS)
            except OSError as e:  # CommClosedError too: a certificate whose role may not ask is dropped
                raise FleetError(f"the Dask scheduler at {self.address} closed the connection ({e}): it takes "
                                 f"requests only from the fleet's client certificate (DIR/client of "
                                 f"`osbench fleet certs`)") from None
            if not isinstance(present, dict):
                raise FleetError(f"the Dask scheduler at {self.address} does not run the fleet guard "
                                 f"({GUARD_MODULE}): start it as `osbench fleet certs` prints (docs/fleet.md)")
            if hosts_only:
                return present
            return await self._measure(prefix, hosts, profile, parameters, wait, present)
        finally:
            await self.comm.close()

    async def _measure(self, prefix, hosts, profile, parameters, wait, present) -> FleetResult:
        import asyncio

        from osbench_analysis.fleet import guard

        result = FleetResult(prefix)
        pending: dict[str, str] = {}
        for h in hosts:
            cid = host_campaign_id(prefix, h)
            if (self.root / cid / store.SEAL_FILE).is_file():
                store.verify_seal(self.root / cid)
                result.outcomes.append(HostOutcome(h, cid, "already_stored", path=str(self.root / cid)))
            elif h not in present:
                result.outcomes.append(HostOutcome(h, cid, "absent", f"no Dask worker named {h!r} "
                                                   f"(connected: {', '.join(sorted(map(str, present))) or 'none'})"))
            else:
                got = await self.call(guard.FLEET_START, host=h, campaign_id=cid, profile=profile,
                                      parameters=parameters, wait=wait)
                if isinstance(got, dict) and got.get("state") in ("started", "running"):
                    pending[h] = cid
                else:
                    result.outcomes.append(self._unfinished(h, cid, got))
        self.say(f"fleet {prefix}: measuring on {', '.join(pending) or 'no host'}; "
                 f"re-run with --campaign-id {prefix} to resume hosts that do not finish")
        missing_since: dict[str, float] = {}
        while pending:
            for h, cid in list(pending.items()):
                got = await self.call(guard.FLEET_POLL, host=h, campaign_id=cid,
                                      wait_s=POLL_WAIT_S / len(pending))
                state = got.get("state") if isinstance(got, dict) else None
                if state == "running":
                    missing_since.pop(h, None)
                    continue
                if state in ("absent", "unknown") and \
                        time.monotonic() - missing_since.setdefault(h, time.monotonic()) <= VANISHED_AFTER_S:
                    await asyncio.sleep(1.0 / len(pending))  # the scheduler answered at once: not a long poll
                    continue
                del pending[h]
                outcome = self._store(h, cid, got) if state == "done" else self._unfinished(h, cid, got)
                result.outcomes.append(outcome)
        return result

    def _unfinished(self, host, cid, got) -> HostOutcome:
        state = got.get("state") if isinstance(got, dict) else None
        message = str(got.get("message", "")) if isinstance(got, dict) else repr(got)
        if state in ("absent", "unknown"):
            self.say(f"{host}: vanished")
            return HostOutcome(host, cid, "vanished", f"the Dask worker {host!r} left the scheduler, or lost the "
                                                      f"campaign, for more than {VANISHED_AFTER_S:.0f} s")
        status = "unguarded" if state == "unguarded" else "failed"
        self.say(f"{host}: {status}: {message}")
        return HostOutcome(host, cid, status, message)

    def _store(self, host, cid, got) -> HostOutcome:
        try:
            if got.get("campaign_id") != cid or not isinstance(got.get("data"), bytes):
                raise store.CampaignCorrupted(f"{host} sent {got.get('campaign_id')!r}, expected {cid!r}")
            if self.ca_pem is not None and not isinstance(got.get("signature"), dict):
                raise store.CampaignCorrupted(f"{host} sent campaign {cid!r} unsigned; a TLS fleet's hosts sign "
                                              f"what they send (is it started as `osbench fleet certs` prints?)")
            path = store.import_campaign(self.root, got["data"], signature=got.get("signature"), ca_pem=self.ca_pem,
                                         host=host if self.ca_pem is not None else None)
            if path.name != cid:
                raise store.CampaignCorrupted(f"{host} sent campaign {path.name!r}, expected {cid!r}")
        except Exception as e:  # one host's failure is reported; the others are kept
            self.say(f"{host}: failed: {e}")
            return HostOutcome(host, cid, "failed", f"{type(e).__name__}: {e}")
        signed = f"signed by {host}" if self.ca_pem is not None else "unsigned: insecure fleet"
        self.say(f"{host}: stored {cid} (measured on {got.get('hostname')}, {signed})")
        return HostOutcome(host, cid, "stored", path=str(path))
