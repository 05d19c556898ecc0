"""What a fleet's measuring host does for the fleet (fleet/guard.py lets nothing else run there):
`measure_on_this_host`, exactly `osbench run` on this host as a subprocess, its sealed campaign
sent back as tar bytes with the host's signature; HostJobs runs it in a thread of the host's Dask
worker, one per campaign, and says how each is going.  The parameters are checked on the host
before anything starts (security.check_task)."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
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


class HostJobs:
    """The fleet's campaigns on this host, each measured in a thread of the Dask worker; start()
    checks a request before anything starts, poll() says how a campaign is going.  Several
    campaigns may be asked for at once: each is an `osbench run`, so the host lock decides
    (refused while the host measures, or waiting with wait=True)."""

    def __init__(self, host: str, key_file: str | None = None, cert_file: str | None = None):
        self.host, self.key_file, self.cert_file = host, key_file, cert_file
        self.jobs: dict[str, dict] = {}
        self.finished: dict[str, threading.Event] = {}
        self.lock = threading.Lock()

    def start(self, campaign_id, profile, parameters, wait) -> dict:
        try:
            check_task(campaign_id, profile, parameters, wait, self.host)
        except OsbenchError as e:
            return {"state": "refused", "message": f"{type(e).__name__}: {e}"}
        with self.lock:
            if self.jobs.get(campaign_id, {}).get("state") == "running":
                return {"state": "running"}
            job = self.jobs[campaign_id] = {"state": "running"}
            self.finished[campaign_id] = threading.Event()
        threading.Thread(target=self._run, args=(job, self.finished[campaign_id], campaign_id, profile, parameters,
                                                 wait),
                         name=f"osbench-fleet-{campaign_id}", daemon=True).start()
        return {"state": "started"}

    def _run(self, job: dict, finished: threading.Event, campaign_id, profile, parameters, wait) -> None:
        try:
            result = measure_on_this_host(campaign_id, profile, parameters, wait, self.host)
            if self.key_file:
                result["signature"] = sign_result(result, self.key_file, self.cert_file)
            outcome = {"state": "done", **result}
        except Exception as e:  # reported to the client, who keeps the other hosts
            outcome = {"state": "failed", "message": f"{type(e).__name__}: {e}"}
        with self.lock:
            job.clear()
            job.update(outcome)
        finished.set()

    def wait(self, campaign_id, timeout_s: float) -> None:
        """Block (a thread, not the worker's event loop) until the campaign is no longer running,
        at most timeout_s: the client's long poll, so the measured host is asked rarely."""
        event = self.finished.get(campaign_id) if isinstance(campaign_id, str) else None
        if event is not None:
            event.wait(timeout_s)

    def poll(self, campaign_id) -> dict:
        with self.lock:
            job = self.jobs.get(campaign_id) if isinstance(campaign_id, str) else None
            return dict(job) if job is not None else {"state": "unknown"}
