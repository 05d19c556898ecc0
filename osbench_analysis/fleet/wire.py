"""What a fleet's scheduler and measuring workers read off the network: plain data, from a peer
whose certificate says who it is (fleet/guard.py installs this on every fleet process).

Dask's messages are msgpack, but any part of one may carry a pickle -- a `__Pickled__` part,
which distributed 2026.8 unpickles on every read, before any handler, plugin or check sees the
message, or a `__Serialized__` frame whose serializer is pickle.  Dask has no switch left against
the first (`distributed.scheduler.pickle: False` now stops the scheduler from starting); its
`deserializers` option limits only the second.  So a fleet process reads *strictly*:

* `distributed.protocol.pickle.loads` (every unpickling in distributed goes through it) refuses
  while STRICT is set; it is set for every read on a comm made strict here, in every task that
  serves a connection a guarded listener accepted, and, from the guard on, in the server's own
  start-up task (the worker's stream from the scheduler, its heartbeats);
* strict comms do not deserialize `__Serialized__` frames at all (`comm.deserialize = False`);
* a guarded listener looks at the peer's certificate right after the TLS handshake, before it
  reads a byte of Dask's own handshake, and drops a peer whose role may not talk to it;
* after the handshake, every message is checked against the operations that role may call.

A refused read raises NotPlainData; Dask then drops the connection.
"""
from __future__ import annotations

import contextvars
import logging

logger = logging.getLogger(__name__)

STRICT = contextvars.ContextVar("osbench_fleet_strict", default=False)


class NotPlainData(PermissionError):
    """Something a fleet process refuses to read: a pickle, an operation the peer's role may not
    call, or a peer without the right certificate."""


def install() -> None:
    """Gate distributed's one unpickling function on STRICT (once per process)."""
    from distributed.protocol import pickle as dask_pickle

    if getattr(dask_pickle.loads, "osbench_strict", False):
        return
    real = dask_pickle.loads

    def loads(*args, **kwargs):
        if STRICT.get():
            raise NotPlainData("a fleet process unpickles nothing it receives (docs/fleet.md)")
        return real(*args, **kwargs)

    loads.osbench_strict = True
    dask_pickle.loads = loads


def peer_identity(comm) -> tuple[str | None, str | None]:
    """(role, name) from the verified certificate of a TLS comm's peer (its OU and CN);
    (None, None) without one (plaintext, or no certificate)."""
    cert = (getattr(comm, "extra_info", None) or {}).get("peercert") or {}
    subject = {k: v for rdn in cert.get("subject", ()) for k, v in rdn}
    return subject.get("organizationalUnitName"), subject.get("commonName")


def _ops(msg) -> list:
    if isinstance(msg, dict):
        return [msg.get("op")]
    if isinstance(msg, (list, tuple)) and all(isinstance(m, dict) for m in msg):
        return [m.get("op") for m in msg]
    return [None]


def make_strict(comm, allowed_ops: frozenset | None = None, who: str = "peer") -> None:
    """Every later read on `comm` refuses pickles; with allowed_ops, also any message that is not
    a request for one of them (what a listener's peer may send)."""
    if getattr(comm, "osbench_strict", False):
        return
    comm.deserialize = False
    comm.allow_offload = False  # decode in this task, where STRICT is set
    read = comm.read

    async def strict_read(deserializers=None):
        token = STRICT.set(True)
        try:
            msg = await read(deserializers=None)
        finally:
            STRICT.reset(token)
        if allowed_ops is not None:
            refused = [op for op in _ops(msg) if op not in allowed_ops]
            if refused:
                logger.warning("osbench fleet guard: refused %s from %s %s", refused, who, comm.peer_address)
                comm.abort()
                raise NotPlainData(f"a {who} may not call {refused[0]!r} here")
        return msg

    comm.read = strict_read
    comm.osbench_strict = True


def guard_listener(listener, allowed: dict, plaintext_ops: frozenset | None) -> None:
    """Accept on `listener` only peers whose certificate role is a key of `allowed` (role ->
    operations that role may call); plaintext_ops: what any peer may call on a listener without
    TLS (a fleet someone chose to run --insecure), None to refuse plaintext peers too."""
    on_connection = listener.on_connection

    async def checked(comm, handshake_overrides=None):
        STRICT.set(True)  # the rest of this connection's task (its handlers too) unpickles nothing
        role, name = peer_identity(comm)
        ops = allowed.get(role) if role else None
        if ops is None and role is None and plaintext_ops is not None and not comm.peer_address.startswith("tls"):
            ops = plaintext_ops
        if ops is None:
            logger.warning("osbench fleet guard: refused a connection from %s (certificate role %r, name %r)",
                           comm.peer_address, role, name)
            comm.abort()
            from distributed.comm.core import CommClosedError

            raise CommClosedError(f"a {role or 'peer without a role'} may not connect here")
        comm.osbench_peer = (role, name)
        make_strict(comm)  # Dask's own handshake is read strictly, then every request is checked
        await on_connection(comm, handshake_overrides)
        comm.osbench_strict = False
        make_strict(comm, frozenset(ops), role or "plaintext peer")

    listener.on_connection = checked


def strict_pool(pool) -> None:
    """Every comm `pool` (a server's ConnectionPool: its calls to other servers) hands out reads strictly."""
    connect = pool.connect

    async def strict_connect(addr, timeout=None):
        comm = await connect(addr, timeout=timeout)
        make_strict(comm)
        return comm

    pool.connect = strict_connect
