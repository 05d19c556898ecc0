"""Campaigns on many hosts through Dask distributed (`osbench fleet run`,
notebooks/fleet.ipynb).

On every measured host runs a Dask worker named after the host, with one
thread and the resource MEASURE=1 (docs/fleet.md).  fleet_run submits one
task per host, pinned to that worker; the task only starts the host's own
runner as a subprocess -- exactly `osbench run`, so the host lock, the
journal and --resume apply unchanged -- and sends the sealed campaign back
as bytes.  The client verifies every seal on arrival and stores the
campaigns without overwriting.  A host that fails or disappears is reported
and the others are kept; running the same command again (same --campaign-id)
skips the hosts already stored and resumes the others from their journals.

Security (fleet_security, fleet_certs, fleet_guard): the client reaches the
scheduler over TLS with mutual authentication (a plaintext scheduler only
with insecure=True); the workers preload fleet_guard, which lets only
measure_on_this_host run; that task checks its parameters on the host before
it starts anything, and they reach `osbench run` as an argument list, never
through a shell.
"""
from __future__ import annotations

import datetime as dt
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from osbench_analysis.measure import config
from osbench_analysis.fleet import security as fleet_security
from osbench_analysis.store import campaigns as store
from osbench_analysis.fleet import task
from osbench_analysis.fleet.certs import GUARD_MODULE, QUIET_WORKER_ENV
from osbench_analysis.fleet.task import (FLEET_DIR_ENV, HostFailed, cli_arguments, host_root,  # noqa: F401  (re-exported)
                                          measure_on_this_host, runner_environment)
from osbench_analysis.fleet.security import FleetError, check_campaign_id, check_client, check_host, client_security

__all__ = ["FleetError", "HostFailed", "QUIET_WORKER_ENV", "fleet_run", "measure_on_this_host", "ssh_cluster"]

#: a host whose Dask worker is gone this long is reported as vanished (its task is cancelled)
VANISHED_AFTER_S = 20.0


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


def _workers_by_name(client) -> dict[str, str]:
    return {w.get("name"): addr for addr, w in client.scheduler_info(n_workers=-1)["workers"].items()}


def _guarded_workers(client) -> set[str]:
    """Names of the workers that preload fleet_guard (they say so in their metrics)."""
    from osbench_analysis.fleet.guard import GUARD_METRIC

    return {w.get("name") for w in client.scheduler_info(n_workers=-1)["workers"].values()
            if (w.get("metrics") or {}).get(GUARD_METRIC) == 1}


def fleet_run(scheduler, hosts: list[str], profile: str | None = None, output: str | None = None,
              campaign_id: str | None = None, wait: bool = False, tls_ca_file: str | None = None,
              tls_cert: str | None = None, tls_key: str | None = None, insecure: bool = False, say=print,
              **parameters) -> FleetResult:
    """Measure one campaign on every host (see the module docstring).

    scheduler: the Dask scheduler's address (tls://host:8786), or a
    distributed.Client.  hosts: the Dask worker names (one per measured
    host).  campaign_id: the fleet's prefix; host h's campaign is
    <prefix>-<h>.  Give the same prefix again to resume the hosts that did
    not finish.  tls_ca_file, tls_cert, tls_key: the client's files from
    `osbench fleet certs`; insecure=True accepts a plaintext scheduler (one
    trusted machine only)."""
    from distributed import Client, wait as wait_futures

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
    own_client = not hasattr(scheduler, "submit")
    if own_client:
        security = client_security(str(scheduler), tls_ca_file, tls_cert, tls_key, insecure, say)
    else:
        check_client(scheduler, insecure, say)
    root = Path(output) if output else store.default_root()
    root.mkdir(parents=True, exist_ok=True)
    try:
        client = Client(scheduler, security=security, timeout="20s") if own_client else scheduler
    except (OSError, TimeoutError) as e:
        raise FleetError(f"cannot reach the Dask scheduler at {scheduler!r}: {e}") from None
    result = FleetResult(prefix)
    try:
        present = _workers_by_name(client)
        guarded = _guarded_workers(client)
        futures = {}
        for h in hosts:
            cid = host_campaign_id(prefix, h)
            if (root / cid / store.SEAL_FILE).is_file():
                store.verify_seal(root / cid)
                result.outcomes.append(HostOutcome(h, cid, "already_stored", path=str(root / cid)))
            elif h not in present:
                result.outcomes.append(HostOutcome(h, cid, "absent", f"no Dask worker named {h!r} "
                                                   f"(connected: {', '.join(sorted(map(str, present))) or 'none'})"))
            elif h not in guarded and not insecure:  # a worker that would run anyone's function
                result.outcomes.append(HostOutcome(h, cid, "unguarded", f"the Dask worker {h!r} is not guarded: it "
                                                   f"does not preload {GUARD_MODULE}, or has no TLS; start it as "
                                                   f"`osbench fleet certs` prints (docs/fleet.md)"))
            else:
                futures[client.submit(task.measure_on_this_host, cid, profile, parameters, wait,
                                      key=f"osbench-{cid}-{uuid.uuid4().hex[:8]}", workers=[h],
                                      allow_other_workers=False, resources={"MEASURE": 1}, pure=False)] = (h, cid)
        say(f"fleet {prefix}: measuring on {', '.join(h for h, _ in futures.values()) or 'no host'}; "
            f"re-run with --campaign-id {prefix} to resume hosts that do not finish")
        missing_since: dict[str, float] = {}
        pending = set(futures)
        while pending:
            try:
                done, pending = wait_futures(pending, timeout=2, return_when="FIRST_COMPLETED")
            except TimeoutError:  # distributed's wait raises where concurrent.futures' returns
                done = set()
            for fut in done:
                h, cid = futures[fut]
                result.outcomes.append(_receive(fut, h, cid, root, say))
            names = _workers_by_name(client) if pending else {}
            for fut in list(pending):
                h, cid = futures[fut]
                if h in names:
                    missing_since.pop(h, None)
                elif time.monotonic() - missing_since.setdefault(h, time.monotonic()) > VANISHED_AFTER_S:
                    fut.cancel()
                    pending.discard(fut)
                    result.outcomes.append(HostOutcome(h, cid, "vanished", f"the Dask worker {h!r} left the "
                                                       f"scheduler for more than {VANISHED_AFTER_S:.0f} s"))
                    say(f"{h}: vanished")
    finally:
        if own_client:
            client.close()
    order = {h: i for i, h in enumerate(hosts)}
    result.outcomes.sort(key=lambda o: order[o.host])
    return result


def _receive(fut, host: str, campaign_id: str, root: Path, say) -> HostOutcome:
    try:
        got = fut.result()
        path = store.import_campaign(root, got["data"])
        if path.name != campaign_id:
            raise store.CampaignCorrupted(f"{host} sent campaign {path.name!r}, expected {campaign_id!r}")
    except Exception as e:  # one host's failure is reported; the others are kept
        say(f"{host}: failed: {e}")
        return HostOutcome(host, campaign_id, "failed", f"{type(e).__name__}: {e}")
    say(f"{host}: stored {campaign_id} (measured on {got['hostname']})")
    return HostOutcome(host, campaign_id, "stored", path=str(path))
