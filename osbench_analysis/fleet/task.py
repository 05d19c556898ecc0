"""The Dask task of a fleet (docs/fleet.md): `measure_campaign` runs on a measured host's Dask
worker, exactly `osbench run` on this host as a subprocess, and returns plain data only (str,
bytes, dicts: what msgpack carries) -- the sealed campaign as tar bytes with the host's signature,
or why it failed.  The parameters are checked on the host before anything starts
(security.check_task); `host_identity` says which host a worker is (its certificate's name)."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from osbench_analysis.errors import OsbenchError
from osbench_analysis.fleet.security import check_task
from osbench_analysis.measure import journal
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import signature
from osbench_analysis.worker import launch

FLEET_DIR_ENV = "OSBENCH_FLEET_DIR"


class HostFailed(RuntimeError):
    """The runner on a host ended without a sealed campaign; the message is its last words."""


def host_root() -> Path:
    """Where a measured host keeps its own copy of fleet campaigns and their journals:
    $OSBENCH_FLEET_DIR, else $XDG_DATA_HOME/osbench/fleet (~/.local/share/osbench/fleet),
    which survives a reboot so an interrupted host can resume."""
    if os.environ.get(FLEET_DIR_ENV):
        return Path(os.environ[FLEET_DIR_ENV])
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "osbench" / "fleet"


def cli_arguments(profile: str | None, parameters: dict) -> list[str]:
    """`osbench run` options for campaign parameters (None: not given), each
    one argument `--name=value`, so a value can never be read as an option."""
    import json

    args = [f"--profile={profile}"] if profile else []
    for name, value in parameters.items():
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if name == "variants":
            text = json.dumps(value)
        elif name == "command_prefix":
            text = shlex.join(value)
        elif isinstance(value, (list, tuple)):
            text = ",".join(str(v) for v in value)
        else:
            text = str(value)
        args.append(f"{flag}={text}")
    return args


def runner_environment() -> dict[str, str]:
    """This Dask worker's environment without what Dask's nanny added to it
    (MALLOC_TRIM_THRESHOLD_, the *_NUM_THREADS limits, a fixed PYTHONHASHSEED):
    the probes must see the environment `osbench run` would give them --
    MALLOC_TRIM_THRESHOLD_ alone changes how glibc's malloc behaves."""
    import dask

    added = {"__DASK_PARENT_PID", "PYTHONHASHSEED"}
    for key in ("distributed.nanny.pre-spawn-environ", "distributed.nanny.environ"):
        added |= set(dask.config.get(key, {}) or {})
    return {k: v for k, v in os.environ.items() if k not in added}


def measure_on_this_host(campaign_id: str, profile: str | None, parameters: dict, wait: bool = False,
                         host: str | None = None) -> dict:
    """This host's own runner measures (or resumes) campaign_id; returns {campaign_id, hostname,
    data} with the sealed folder as tar bytes.  Raises HostFailed with the runner's error
    otherwise, and an OsbenchError, before anything starts, for a campaign id or parameters
    `osbench run` would refuse, or a campaign id not this host's (security.check_task)."""
    import socket

    check_task(campaign_id, profile, parameters, wait, host)
    root = host_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / campaign_id
    if not (target / store.SEAL_FILE).is_file():
        argv = [sys.executable, "-m", "osbench_analysis.cli", "run", "--output", str(root), "--no-progress",
                *cli_arguments(profile, parameters)]
        argv += ["--resume", campaign_id] if journal.find(root, campaign_id) else ["--campaign-id", campaign_id]
        if wait:
            argv.append("--wait")
        # Under the guard: if this Dask worker dies, the runner (and its worker) die with it;
        # the journal keeps what was measured for the next fleet run.
        r = subprocess.run(launch.guarded(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           start_new_session=True, env=runner_environment())
        if r.returncode != 0 or not (target / store.SEAL_FILE).is_file():
            tail = " | ".join(r.stderr.strip().splitlines()[-3:]) or f"exit status {r.returncode}"
            raise HostFailed(f"{socket.gethostname()}: {tail}")
    return {"campaign_id": campaign_id, "hostname": socket.gethostname(), "data": store.campaign_bytes(target)}


def sign_result(result: dict, key_file: str, cert_file: str) -> dict:
    """The host's signature over the campaign it sends (store/signature.py): its id and its seal."""
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(result["data"]), mode="r:") as tar:
        seal = tar.extractfile(f"{result['campaign_id']}/{store.SEAL_FILE}").read()
    return signature.sign(result["campaign_id"], seal, Path(key_file).read_bytes(), Path(cert_file).read_bytes())


def host_identity(dask_worker=None) -> str:
    """The host this Dask worker measures as: its TLS certificate's name (the CN that signs its
    campaigns), or, on a plaintext fleet, its Dask worker name (`client.run` passes dask_worker)."""
    from distributed import get_worker

    worker = dask_worker or get_worker()
    cert = worker.security.tls_worker_cert
    if not cert:
        return str(worker.name)
    from cryptography import x509

    return signature.certificate_identity(x509.load_pem_x509_certificate(Path(cert).read_bytes()))[1]


def measure_campaign(campaign_id: str, profile: str | None, parameters: dict, wait: bool = False) -> dict:
    """The fleet's Dask task, run on the host's worker: {"state": "done", campaign_id, hostname,
    data (tar bytes), signature (None on a plaintext fleet)} or {"state": "failed", message}.
    It never raises for a failure of the campaign: what a task raises reaches the client as a
    pickle (docs/fleet.md), so a host reports it as plain data."""
    from distributed import get_worker

    security = get_worker().security
    try:
        result = measure_on_this_host(campaign_id, profile, parameters, wait, host_identity())
        if security.tls_worker_key:
            result["signature"] = sign_result(result, security.tls_worker_key, security.tls_worker_cert)
        return {"state": "done", "signature": None, **result}
    except (OsbenchError, HostFailed, OSError) as e:
        return {"state": "failed", "message": f"{type(e).__name__}: {e}"}
