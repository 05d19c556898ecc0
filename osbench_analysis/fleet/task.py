"""The one task a fleet's measuring host runs (fleet/guard.py lets nothing else run there):
`measure_on_this_host`, exactly `osbench run` on this host as a subprocess, its sealed campaign sent
back as bytes.  Its parameters are checked on the host before anything starts (security.check_task)."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from osbench_analysis.fleet.security import check_task
from osbench_analysis.measure import journal
from osbench_analysis.store import campaigns as store
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


def measure_on_this_host(campaign_id: str, profile: str | None, parameters: dict, wait: bool = False) -> dict:
    """The fleet task, run by the host's Dask worker: this host's own runner
    measures (or resumes) campaign_id; returns {campaign_id, hostname, data}
    with the sealed folder as tar bytes.  Raises HostFailed with the runner's
    error otherwise, and an OsbenchError, before anything starts, for a
    campaign id or parameters `osbench run` would refuse (fleet_security.check_task)."""
    import socket

    check_task(campaign_id, profile, parameters, wait, _worker_name())
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


def _worker_name() -> str | None:
    """The name of the Dask worker running this task (the measured host), None outside one."""
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return None
