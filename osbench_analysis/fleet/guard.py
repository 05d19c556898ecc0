"""Dask preload for a fleet's scheduler and measuring workers
(`dask scheduler|worker ... --preload osbench_analysis.fleet.guard`, as
`osbench fleet certs` prints them): the only work a measuring host accepts
is the fleet's own task.

TLS keeps out whoever holds no certificate of the fleet's CA; this keeps a
certified client to the fleet's task.  On a worker it blocks Dask's handlers
that run a function of the caller's choosing (`Client.run`, plugins, actors,
file uploads), and rebuilds every task before it runs: only
`fleet.measure_on_this_host` with plain data for arguments (strings,
numbers, None, lists and dicts of them: no nested task, which Dask would run
inline, no reference to another task's result); anything else is replaced
by a task that fails with the reason.  The fleet task then checks its
parameters (fleet_security.check_task) before it starts anything.  On the
scheduler it blocks `Client.run_on_scheduler` and plugin registration.

A worker says it is guarded (its metric GUARD_METRIC, which
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
                       f"(osbench_analysis.fleet.task.measure_on_this_host); refused {what}")


_SCALARS = (str, int, float, bool, type(None))


def plain(value, depth: int = 0):
    """`value` as plain data (str, int, float, bool, None, and lists, tuples and
    dicts of them), taking apart Dask's own containers without running them;
    NotFleetWork for anything else (a task, a reference, an object)."""
    from dask._task_spec import DataNode, Dict, List, Tuple

    if depth > 16:
        raise NotFleetWork("an argument nested deeper than 16 levels")
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind in (list, tuple, List, Tuple):
        items = value.args if kind in (List, Tuple) else value
        return (tuple if kind in (tuple, Tuple) else list)(plain(v, depth + 1) for v in items)
    if kind is dict:
        return {plain(k, depth + 1): plain(v, depth + 1) for k, v in value.items()}
    if kind is Dict:
        flat = [plain(v, depth + 1) for v in value.args]
        return dict(zip(flat[::2], flat[1::2]))
    if kind is DataNode:
        return plain(value.value, depth + 1)
    raise NotFleetWork(f"an argument of type {kind.__module__}.{kind.__qualname__}")


def vetted(key, run_spec):
    """The fleet task rebuilt from plain data, or NotFleetWork saying what was refused."""
    from dask._task_spec import Task

    from osbench_analysis.fleet import task as fleet

    func = getattr(run_spec, "func", None)
    if type(run_spec) is not Task or func is not fleet.measure_on_this_host:
        what = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', type(run_spec).__name__)}"
        raise NotFleetWork(what)
    if run_spec.dependencies:
        raise NotFleetWork("a fleet task that depends on other tasks")
    return Task(key, fleet.measure_on_this_host, *[plain(a) for a in run_spec.args],
                **{str(k): plain(v) for k, v in run_spec.kwargs.items()})


def _guard_tasks(worker) -> None:
    from dask._task_spec import Task

    execute = worker.execute

    async def guarded_execute(key, *, stimulus_id):
        ts = worker.state.tasks.get(key)
        if ts is not None and ts.run_spec is not None:
            try:
                ts.run_spec = vetted(key, ts.run_spec)
            except NotFleetWork as e:
                logger.warning("osbench fleet guard: refused task %s (%s)", key, e)
                ts.run_spec = Task(key, _refuse, str(e))
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
