"""Dask preload for a fleet's scheduler and measuring workers
(`dask scheduler|worker ... --preload osbench_analysis.fleet_guard`, as
`osbench fleet certs` prints them): the only work a measuring host accepts
is the fleet's own task.

TLS keeps out whoever holds no certificate of the fleet's CA; this keeps a
certified client to the fleet's task.  On a worker it blocks Dask's handlers
that run a function of the caller's choosing (`Client.run`, plugins, actors,
file uploads) and replaces any task whose function is not
`fleet.measure_on_this_host` by one that fails with the reason; that task
checks its own parameters (fleet_security.check_task) before it starts
anything.  On the scheduler it blocks `Client.run_on_scheduler` and plugin
registration.  A worker says it is guarded (its metric GUARD_METRIC, which
fleet.fleet_run checks before it gives the worker work) only when all of this
is in place and it speaks TLS with encryption required: Dask logs and ignores
an exception in a preload, so a guard that failed, or a worker anyone can
reach, must not look guarded.
"""
from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

#: Dask handlers that run a caller's function, per server class (distributed's `blocked_handlers`)
BLOCKED = {
    "Worker": ("run", "run_coroutine", "upload_file", "plugin-add", "plugin-remove", "actor_execute",
               "actor_attribute"),
    "Nanny": ("run", "plugin_add", "plugin_remove"),
    "Scheduler": ("run_function", "register_scheduler_plugin", "unregister_scheduler_plugin",
                  "register_worker_plugin", "unregister_worker_plugin", "register_nanny_plugin",
                  "unregister_nanny_plugin"),
}


#: the worker metric by which a client sees that a worker is guarded (fleet.fleet_run checks it)
GUARD_METRIC = "osbench_fleet_guard"


class NotFleetWork(PermissionError):
    """A task this measuring host refuses: only the fleet's own task runs here."""


def _refuse(what: str):
    raise NotFleetWork(f"this measuring host runs only osbench's fleet task "
                       f"(osbench_analysis.fleet.measure_on_this_host); refused {what}")


def allowed(run_spec) -> bool:
    from osbench_analysis import fleet

    return getattr(run_spec, "func", None) is fleet.measure_on_this_host


def _guard_tasks(worker) -> None:
    from dask._task_spec import Task

    execute = worker.execute

    async def guarded_execute(key, *, stimulus_id):
        ts = worker.state.tasks.get(key)
        if ts is not None and ts.run_spec is not None and not allowed(ts.run_spec):
            func = getattr(ts.run_spec, "func", None)
            what = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', type(ts.run_spec).__name__)}"
            logger.warning("osbench fleet guard: refused task %s (%s)", key, what)
            ts.run_spec = Task(key, _refuse, what)
        return await execute(key, stimulus_id=stimulus_id)

    worker.execute = guarded_execute


def _guarded(worker) -> int:
    return 1


def dask_setup(server) -> None:
    name = type(server).__name__
    blocked = BLOCKED.get(name)
    if blocked is None:
        raise RuntimeError(f"{__name__} guards a Scheduler, Worker or Nanny (got {name})")
    server.blocked_handlers = sorted(set(server.blocked_handlers or ()) | set(blocked))
    if name == "Worker":
        _guard_tasks(server)
    logger.info("osbench fleet guard on %s: blocked %s", name, ", ".join(blocked))
    if not (server.security.require_encryption and server.security.tls_ca_file):
        logger.error("osbench fleet guard: this %s has no TLS with encryption required, so it is not reported "
                     "as guarded and gets no fleet work; start it with --tls-ca-file, --tls-cert and --tls-key "
                     "as `osbench fleet certs` prints (docs/fleet.md)", name)
    elif name == "Worker":
        server.metrics[GUARD_METRIC] = _guarded
