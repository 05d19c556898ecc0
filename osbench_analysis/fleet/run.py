"""Campaigns on many hosts with Dask distributed (`osbench fleet run`, notebooks/fleet.ipynb).

Dask as designed (docs/fleet.md, whose threat model says what each key can do): a
`distributed.Client` on TLS (the fleet's certificates, `distributed.Security`,
encryption required) submits, for every host, the package's task
`task.measure_campaign` with `client.submit(..., workers=[that host's worker],
pure=False, resources={"MEASURE": 1})`: exactly `osbench run` on that host (its host
lock, journal and resume), its sealed campaign returned as bytes with the host's
signature.  Futures, scheduling and cancellation are Dask's.  The client reads results
with msgpack only (`deserializers=["msgpack"]`): a result that is not plain data is
refused, never unpickled.  It stores a campaign only if its seal holds and its
signature is by the certificate of the host it asked (store/signature.py), never
overwriting.  A host that fails or disappears is reported and the others are kept;
running the same command again (same campaign id) skips the hosts already stored and
resumes the others from their journals.
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from pathlib import Path

from osbench_analysis.fleet import security as fleet_security
from osbench_analysis.fleet import task
from osbench_analysis.fleet.certs import QUIET_WORKER_ENV
from osbench_analysis.fleet.security import FleetError, check_campaign_id, check_host, client_security
from osbench_analysis.fleet.task import (FLEET_DIR_ENV, HostFailed, cli_arguments, host_root,  # noqa: F401  (re-exported)
                                          measure_on_this_host, runner_environment)
from osbench_analysis.measure import config
from osbench_analysis.store import campaigns as store

__all__ = ["FleetError", "HostFailed", "QUIET_WORKER_ENV", "client_security", "connected_hosts", "fleet_run",
           "measure_on_this_host", "ssh_tls_config"]

#: what the client deserializes: plain data only (a pickle from a host is refused)
PLAIN = ["msgpack"]
#: the resource every measuring worker declares once (`--resources MEASURE=1`): one campaign per host at a time
RESOURCES = {"MEASURE": 1}
#: a host whose Dask worker is gone this long is reported as vanished (its task is cancelled)
VANISHED_AFTER_S = 20.0
#: how often the client looks at what finished and who is still connected
POLL_S = 2.0
#: how long a run waits for a named host that has not joined yet: a cluster object (SSHCluster) is handed
#: back once its worker processes started, and each registers with the scheduler a moment later
JOIN_WAIT_S = 10.0


def host_campaign_id(prefix: str, host: str) -> str:
    return check_campaign_id(f"{prefix}-{check_host(host)}")


def ssh_tls_config(remote_tls_dir: str) -> dict:
    """Dask configuration for SSHCluster (docs/fleet.md): the SSH-started scheduler and workers
    inherit the client's Dask configuration, so each remote machine reads its own role folder of
    `osbench fleet certs` at the same path, remote_tls_dir."""
    d = remote_tls_dir.rstrip("/")
    return {"distributed.comm.require-encryption": True, "distributed.comm.tls.ca-file": f"{d}/ca.pem",
            **{f"distributed.comm.tls.{role}.{kind}": f"{d}/{kind}.pem"
               for role in ("scheduler", "worker") for kind in ("cert", "key")}}


@dataclass
class HostOutcome:
    host: str
    campaign_id: str
    status: str          # stored | already_stored | failed | vanished | absent
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
    """The address of a scheduler given as an address or a cluster (SSHCluster, a dask-jobqueue cluster)."""
    address = scheduler if isinstance(scheduler, str) else getattr(scheduler, "scheduler_address", None)
    if not isinstance(address, str):
        raise FleetError(f"scheduler must be an address such as tls://lab0:8786 or a Dask cluster (got {scheduler!r})")
    return address


def open_client(scheduler, tls_ca_file=None, tls_cert=None, tls_key=None, insecure: bool = False, say=print):
    """A distributed.Client of the fleet's scheduler (an address or a cluster) with the client's
    certificate, reading plain data only."""
    security = client_security(scheduler_address(scheduler), tls_ca_file, tls_cert, tls_key, insecure, say)
    from distributed import Client  # client_security said so, in one line, if the fleet extra is missing

    try:
        return Client(scheduler, security=security, deserializers=PLAIN, timeout="20s", set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise FleetError(f"cannot reach the Dask scheduler at {scheduler_address(scheduler)!r}: {e}") from None


def hosts_of(client) -> dict[str, str]:
    """{host: worker address}: each connected worker says which host it is (its certificate's name);
    a worker that cannot be reached (or answers with anything but a name) is left out."""
    found = client.run(task.host_identity, on_error="ignore")
    return {name: address for address, name in found.items() if isinstance(name, str)}


def await_hosts(client, hosts, timeout: float | None = None) -> dict[str, str]:
    """hosts_of, once every host named has joined or after ``timeout`` seconds (default JOIN_WAIT_S)."""
    deadline = time.monotonic() + (JOIN_WAIT_S if timeout is None else timeout)
    present = hosts_of(client)
    while not set(hosts) <= set(present) and time.monotonic() < deadline:
        time.sleep(0.2)
        present = hosts_of(client)
    return present


def connected_hosts(scheduler, tls_ca_file: str | None = None, tls_cert: str | None = None,
                    tls_key: str | None = None, insecure: bool = False, say=print) -> dict[str, str]:
    """The measuring hosts connected to the fleet's scheduler now: {host: worker address}."""
    with open_client(scheduler, tls_ca_file, tls_cert, tls_key, insecure, say) as client:
        return hosts_of(client)


def fleet_run(scheduler, hosts: list[str], profile: str | None = None, output: str | None = None,
              campaign_id: str | None = None, wait: bool = False, tls_ca_file: str | None = None,
              tls_cert: str | None = None, tls_key: str | None = None, insecure: bool = False, say=print,
              **parameters) -> FleetResult:
    """Measure one campaign on every host (see the module docstring).

    scheduler: the Dask scheduler's address (tls://host:8786) or a Dask cluster.  hosts: the
    measured hosts (their certificates' names).  campaign_id: the fleet's prefix; host h's
    campaign is <prefix>-<h>.  Give the same prefix again to resume the hosts that did not
    finish.  tls_ca_file, tls_cert, tls_key: the client's files from `osbench fleet certs`;
    insecure=True accepts a plaintext scheduler (one trusted machine only): its campaigns come
    back unsigned."""
    if not hosts or not isinstance(hosts, (list, tuple)) or len(set(hosts)) != len(hosts):
        raise FleetError(f"hosts must be a list of distinct host names (got {hosts!r})")
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
    root = Path(output) if output else store.default_root()
    with open_client(scheduler, tls_ca_file, tls_cert, tls_key, insecure, say) as client:
        tls = fleet_security.scheme(scheduler_address(scheduler)) == "tls"
        ca_pem = Path(tls_ca_file).read_bytes() if tls else None
        root.mkdir(parents=True, exist_ok=True)
        result = _measure(client, prefix, list(hosts), profile, parameters, wait, root, ca_pem, say)
    order = {h: i for i, h in enumerate(hosts)}
    result.outcomes.sort(key=lambda o: order[o.host])
    return result


def _measure(client, prefix, hosts, profile, parameters, wait, root: Path, ca_pem, say) -> FleetResult:
    todo = [h for h in hosts if not (root / host_campaign_id(prefix, h) / store.SEAL_FILE).is_file()]
    result, present, futures = FleetResult(prefix), await_hosts(client, todo), {}
    for h in hosts:
        cid = host_campaign_id(prefix, h)
        if (root / cid / store.SEAL_FILE).is_file():
            store.verify_seal(root / cid)
            result.outcomes.append(HostOutcome(h, cid, "already_stored", path=str(root / cid)))
        elif h not in present:
            result.outcomes.append(HostOutcome(h, cid, "absent", f"no Dask worker of host {h!r} (connected: "
                                                                 f"{', '.join(sorted(present)) or 'none'})"))
        else:
            future = client.submit(task.measure_campaign, cid, profile, parameters, wait, workers=[present[h]],
                                   allow_other_workers=False, resources=RESOURCES, pure=False)
            futures[future] = (h, cid)
    say(f"fleet {prefix}: measuring on {', '.join(h for h, _ in futures.values()) or 'no host'}; "
        f"re-run with --campaign-id {prefix} to resume hosts that do not finish")
    pending, missing_since = set(futures), {}
    while pending:
        deadline = time.monotonic() + POLL_S
        while not any(f.done() for f in pending) and time.monotonic() < deadline:
            time.sleep(0.1)  # the futures' states are kept by the client's own thread
        for f in [f for f in pending if f.done()]:
            pending.discard(f)
            result.outcomes.append(_outcome(f, *futures[f], root, ca_pem, say))
        connected = set(client.nthreads()) if pending else set()
        for f in list(pending):
            h, cid = futures[f]
            if present[h] in connected:
                missing_since.pop(h, None)
            elif time.monotonic() - missing_since.setdefault(h, time.monotonic()) > VANISHED_AFTER_S:
                f.cancel()
                pending.discard(f)
                say(f"{h}: vanished")
                result.outcomes.append(HostOutcome(h, cid, "vanished", f"the Dask worker of {h!r} left the scheduler "
                                                                       f"for more than {VANISHED_AFTER_S:.0f} s"))
    return result


def _outcome(future, host, cid, root: Path, ca_pem, say) -> HostOutcome:
    """What a host's finished task brought: its campaign stored, or why not."""
    try:
        got = future.result()
        if not isinstance(got, dict) or got.get("state") not in ("done", "failed"):
            raise store.CampaignCorrupted(f"{host} sent {type(got).__name__}, not a fleet result")
        if got["state"] == "failed":
            say(f"{host}: failed: {got.get('message')}")
            return HostOutcome(host, cid, "failed", str(got.get("message")))
        if got.get("campaign_id") != cid or not isinstance(got.get("data"), bytes):
            raise store.CampaignCorrupted(f"{host} sent {got.get('campaign_id')!r}, expected {cid!r}")
        if ca_pem is not None and not isinstance(got.get("signature"), dict):
            raise store.CampaignCorrupted(f"{host} sent campaign {cid!r} unsigned; a TLS fleet's hosts sign "
                                          f"what they send")
        path = store.import_campaign(root, got["data"], signature=got.get("signature"), ca_pem=ca_pem,
                                     host=host if ca_pem is not None else None)
        if path.name != cid:
            raise store.CampaignCorrupted(f"{host} sent campaign {path.name!r}, expected {cid!r}")
    except Exception as e:  # one host's failure is reported; the others are kept
        say(f"{host}: failed: {type(e).__name__}: {e}")
        return HostOutcome(host, cid, "failed", f"{type(e).__name__}: {e}")
    signed = f"signed by {host}" if ca_pem is not None else "unsigned: insecure fleet"
    say(f"{host}: stored {cid} (measured on {got.get('hostname')}, {signed})")
    return HostOutcome(host, cid, "stored", path=str(path))
