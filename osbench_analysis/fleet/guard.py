"""Dask preload for a fleet's scheduler and measuring workers
(`dask scheduler|worker ... --preload osbench_analysis.fleet.guard`, as
`osbench fleet certs` prints them): a fleet process runs no Dask task and
unpickles nothing it receives; the fleet's work travels as plain data.

Who may talk to whom is read off the peer's certificate (its role, the OU
`osbench fleet certs` writes, and its name, the CN), right after the TLS
handshake and before a byte of Dask's protocol is read (fleet/wire.py):

* the scheduler accepts clients and measuring hosts.  A client may call only
  `identity` and the fleet's three operations (FLEET_HOSTS, FLEET_START,
  FLEET_POLL); a host only what a Dask worker sends its scheduler; a worker
  registers only under the name its certificate gives (a host's key cannot act
  as a client, nor as another host);
* a measuring worker accepts only the scheduler, and only these operations:
  MEASURE (start or resume a campaign, its parameters checked on the host
  before anything starts: fleet/security.py check_task) and POLL (how it is
  going; a finished campaign comes back as tar bytes signed with the host's
  own key);
* every read in these processes refuses pickles (fleet/wire.py), every Dask
  task is refused, Dask's handlers that run a caller's function stay blocked,
  and the HTTP server (dashboard, /info, /metrics) is closed: it has no
  authentication.  OSBENCH_FLEET_DASHBOARD=1 keeps it when it listens on
  loopback only (`--dashboard-address 127.0.0.1:8787`), for an SSH tunnel.

Without TLS (a fleet started --insecure on one trusted machine) there are no
roles to check: the guard still refuses pickles, tasks and HTTP, and the
campaigns come back unsigned.
"""
from __future__ import annotations

import ipaddress
import logging
import os
from time import time

from osbench_analysis.fleet import wire

logger = logging.getLogger(__name__)

#: Dask handlers that run a caller's function, per server class (distributed's `blocked_handlers`)
BLOCKED = {
    "Worker": ("run", "run_coroutine", "upload_file", "plugin-add", "plugin-remove", "actor_execute",
               "actor_attribute", "update_data", "get_data"),
    "Nanny": ("run", "plugin_add", "plugin_remove"),
    "Scheduler": ("run_function", "register_scheduler_plugin", "unregister_scheduler_plugin",
                  "register_worker_plugin", "unregister_worker_plugin", "register_nanny_plugin",
                  "unregister_nanny_plugin"),
}
CLIENT_ROLE, SCHEDULER_ROLE, HOST_ROLE = "client", "scheduler", "host"
#: the fleet's operations: on the scheduler (from a client) and on a measuring worker (from the scheduler)
FLEET_HOSTS, FLEET_START, FLEET_POLL = "osbench_fleet_hosts", "osbench_fleet_start", "osbench_fleet_poll"
MEASURE, POLL = "osbench_fleet_measure", "osbench_fleet_poll_host"
CLIENT_OPS = frozenset({"identity", "subscribe_worker_status", "close", FLEET_HOSTS, FLEET_START, FLEET_POLL})
#: what a Dask worker sends its scheduler (registration, heartbeats, its stream)
HOST_OPS = frozenset({"register-worker", "heartbeat_worker", "unregister", "close", "close-stream", "keep-alive",
                      "log-event",
                      "worker-status-change", "task-finished", "task-erred", "release-worker-data", "add-keys",
                      "long-running", "reschedule", "request-refresh-who-has"})
WORKER_OPS = frozenset({"close", "close-stream", "terminate", "identity", MEASURE, POLL})
PEERS = {"Scheduler": {CLIENT_ROLE: CLIENT_OPS, HOST_ROLE: HOST_OPS},
         "Worker": {SCHEDULER_ROLE: WORKER_OPS},
         "Nanny": {SCHEDULER_ROLE: frozenset({"close", "terminate", "identity", "kill", "restart"})}}
PLAINTEXT_OPS = {"Scheduler": CLIENT_OPS | HOST_OPS, "Worker": WORKER_OPS, "Nanny": PEERS["Nanny"][SCHEDULER_ROLE]}
DASHBOARD_ENV = "OSBENCH_FLEET_DASHBOARD"
#: the longest a poll waits on the host for its campaign to end
LONG_POLL_S = 30.0


class NotFleetWork(PermissionError):
    """Something a fleet process refuses: a Dask task, a value that is not plain data."""


def _refuse(what: str):
    raise NotFleetWork(f"this measuring host runs no Dask task, only osbench's fleet operations; refused {what}")


_SCALARS = (str, int, float, bool, type(None))


def plain(value, depth: int = 0):
    """`value` as plain data (str, int, float, bool, None, lists and str-keyed dicts of them),
    tuples (msgpack's arrays) read as lists; NotFleetWork for anything else."""
    if depth > 16:
        raise NotFleetWork("a value nested deeper than 16 levels")
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind in (list, tuple):
        return [plain(v, depth + 1) for v in value]
    if kind is dict and all(type(k) is str for k in value):
        return {k: plain(v, depth + 1) for k, v in value.items()}
    raise NotFleetWork(f"a value of type {kind.__module__}.{kind.__qualname__}")


def _tls(server) -> bool:
    return bool(server.security.require_encryption and server.security.tls_ca_file)


def _close_http(server) -> None:
    """Close the server's HTTP port unless asked for (DASHBOARD_ENV) and bound to loopback only."""
    http = getattr(server, "http_server", None)
    if http is None:
        return
    hosts = [s.getsockname()[0] for s in getattr(http, "_sockets", {}).values()]
    if os.environ.get(DASHBOARD_ENV) == "1" and hosts and all(ipaddress.ip_address(h).is_loopback for h in hosts):
        logger.warning("osbench fleet guard: the HTTP dashboard stays open on %s (%s=1); it has no "
                       "authentication: reach it through an SSH tunnel only", hosts, DASHBOARD_ENV)
        return
    http.stop()
    server.services.pop("dashboard", None)
    logger.info("osbench fleet guard: HTTP server closed (it has no authentication; docs/fleet.md)")


def _guard_tasks(worker) -> None:
    from dask._task_spec import Task

    execute = worker.execute

    async def refuse_every_task(key, *, stimulus_id):
        ts = worker.state.tasks.get(key)
        if ts is not None and ts.run_spec is not None:
            logger.warning("osbench fleet guard: refused task %s", key)
            ts.run_spec = Task(key, _refuse, f"task {key!r}")
        return await execute(key, stimulus_id=stimulus_id)

    worker.execute = refuse_every_task


def _no_plugins(worker) -> None:
    """The scheduler hands every registering worker its worker plugins, pickled (Dask's shuffle
    plugin among them): a fleet worker takes none (and unpickles none)."""
    async def plugin_add(name=None, plugin=None, **kwargs):
        logger.info("osbench fleet guard: worker plugin %r not installed", name)
        return {"status": "OK"}

    worker.plugin_add = plugin_add


def _bind_names(scheduler) -> None:
    """A worker registers only under the name its certificate gives it, with a host's certificate."""
    add_worker = scheduler.handlers["register-worker"]

    async def register_worker(comm, **msg):
        role, name = getattr(comm, "osbench_peer", (None, None))
        if role != HOST_ROLE or name != str(msg.get("name")):
            logger.warning("osbench fleet guard: refused worker %r from %s: its certificate is %s %r",
                           msg.get("name"), comm.peer_address, role, name)
            await comm.write({"status": "error", "time": time(),
                              "message": f"worker name {msg.get('name')!r} does not match its certificate "
                                         f"({role} {name!r}); start it with --name {name}"})
            return
        return await add_worker(comm, **msg)

    scheduler.handlers["register-worker"] = register_worker


def _fleet_operations(scheduler, tls: bool) -> None:
    """The client's three operations; the scheduler relays them to the named host's worker."""
    from distributed.core import send_recv

    def worker_of(host):
        return next((ws for ws in scheduler.workers.values() if str(ws.name) == host), None)

    async def ask(host, op, **args) -> dict:
        ws = worker_of(host) if isinstance(host, str) else None
        if ws is None:
            return {"state": "absent", "message": f"no Dask worker named {host!r}"}
        try:
            comm = await scheduler.rpc.connect(ws.address)
        except OSError as e:
            return {"state": "absent", "message": f"cannot reach the Dask worker {host!r}: {e}"}
        try:
            role, name = wire.peer_identity(comm)
            if tls and (role, name) != (HOST_ROLE, host):
                return {"state": "failed", "message": f"the worker registered as {host!r} presents the certificate "
                                                      f"of {role} {name!r}"}
            reply = await send_recv(comm, op=op, **args)
        except OSError as e:  # the connection was lost: the worker is gone
            return {"state": "absent", "message": f"lost the Dask worker {host!r}: {e}"}
        except Exception as e:  # an error the worker sent back
            return {"state": "failed", "message": f"the Dask worker {host!r} did not answer {op}: {e}"}
        finally:
            scheduler.rpc.reuse(ws.address, comm)
        if not isinstance(reply, dict) or not isinstance(reply.get("state"), str):
            return {"state": "unguarded", "message": f"the Dask worker {host!r} does not run the fleet guard"}
        return reply

    def hosts(comm):
        return {str(ws.name): ws.address for ws in scheduler.workers.values()}

    async def start(comm, host=None, campaign_id=None, profile=None, parameters=None, wait=False):
        return await ask(host, MEASURE, campaign_id=campaign_id, profile=profile, parameters=parameters, wait=wait)

    async def poll(comm, host=None, campaign_id=None, wait_s=0):
        return await ask(host, POLL, campaign_id=campaign_id, wait_s=wait_s)

    scheduler.handlers.update({FLEET_HOSTS: hosts, FLEET_START: start, FLEET_POLL: poll})


def _host_operations(worker, tls: bool) -> None:
    from osbench_analysis.fleet import task

    if tls:
        from cryptography import x509

        from osbench_analysis.store import signature

        cert = worker.security.tls_worker_cert
        with open(cert, "rb") as f:
            role, host = signature.certificate_identity(x509.load_pem_x509_certificate(f.read()))
        jobs = task.HostJobs(host, worker.security.tls_worker_key, cert)
    else:
        jobs = task.HostJobs(str(worker.name))

    def measure(comm, campaign_id=None, profile=None, parameters=None, wait=False):
        try:
            args = plain([campaign_id, profile, parameters, wait])
        except NotFleetWork as e:
            return {"state": "refused", "message": f"NotFleetWork: {e}"}
        return jobs.start(*args)

    async def poll(comm, campaign_id=None, wait_s=0):
        """How the campaign is going; while it runs, wait up to wait_s (at most LONG_POLL_S) for it to end."""
        import asyncio

        got = jobs.poll(campaign_id)
        if got["state"] == "running" and type(wait_s) in (int, float) and wait_s > 0:
            await asyncio.get_running_loop().run_in_executor(None, jobs.wait, campaign_id, min(wait_s, LONG_POLL_S))
            got = jobs.poll(campaign_id)
        return got

    worker.handlers.update({MEASURE: measure, POLL: poll})


def dask_setup(server) -> None:
    """Dask calls this once the server listens.  Dask logs and ignores a preload that raises an
    Exception: so a guard that fails closes the server's ports and raises SystemExit, which Dask
    does not catch -- the process stops rather than serve unguarded."""
    try:
        _setup(server)
    except Exception as e:
        logger.exception("osbench fleet guard failed: %s stops", type(server).__name__)
        for listener in getattr(server, "listeners", ()):
            listener.stop()
        raise SystemExit(f"osbench fleet guard failed, {type(server).__name__} not started: {e}") from e


def _setup(server) -> None:
    name = type(server).__name__
    if name not in BLOCKED:
        raise RuntimeError(f"{__name__} guards a Scheduler, Worker or Nanny (got {name})")
    wire.install()
    tls = _tls(server)
    if tls:  # a key others can read is anyone's: refuse to serve with it (dask_setup closes the ports)
        from osbench_analysis.fleet.security import check_key_mode

        for key in (server.security.tls_scheduler_key, server.security.tls_worker_key):
            if key:
                check_key_mode(key)
    for comm in list(getattr(server, "_comms", {})):  # none yet: the loop did not run since listen()
        comm.abort()
    for listener in server.listeners:
        wire.guard_listener(listener, PEERS[name] if tls else {}, None if tls else PLAINTEXT_OPS[name])
    wire.strict_pool(server.rpc)
    server.blocked_handlers = sorted(set(server.blocked_handlers or ()) | set(BLOCKED[name]))
    _close_http(server)
    if name == "Worker":
        _guard_tasks(server)
        _no_plugins(server)
        _host_operations(server, tls)
    elif name == "Scheduler":
        if tls:
            _bind_names(server)
        _fleet_operations(server, tls)
    wire.STRICT.set(True)  # what this server starts from here on (the worker's scheduler stream) reads strictly
    if not tls:
        logger.error("osbench fleet guard: this %s has no TLS with encryption required: no certificate tells its "
                     "peers apart and its campaigns are unsigned; start it with --tls-ca-file, --tls-cert and "
                     "--tls-key as `osbench fleet certs` prints (docs/fleet.md)", name)
    logger.info("osbench fleet guard on %s: pickles refused, %s blocked, peers by certificate: %s", name,
                ", ".join(BLOCKED[name]), sorted(PEERS[name]) if tls else "none (plaintext)")
