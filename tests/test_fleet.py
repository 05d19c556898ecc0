"""Campaigns on many hosts through Dask distributed: one task per host
(client.submit), its sealed and signed campaign read as plain data, verified and
stored on arrival; a failed, absent or vanished host is reported and the others
are kept.  Every cluster here speaks TLS with the fleet's own certificates
(`osbench fleet certs`), on 127.0.0.1: in this process, as the printed commands,
and as one SSHCluster call; the fleet patches nothing of Dask.  The attacks of
the threat model (docs/fleet.md) are in test_fleet_security.py."""
import asyncio
import contextlib
import dataclasses
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from osbench_analysis import cli
from osbench_analysis.fleet import run as fleet
from osbench_analysis.fleet import certs as fleet_certs
from osbench_analysis.fleet import security as fleet_security
from osbench_analysis.fleet import task as fleet_task
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import synthetic

import distributed  # noqa: F401  (the fleet extra, osbench[fleet]: where it is installed, these tests run, not skip)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TINY = dict(probes=["null_syscall"], runs=2, batches=2, min_batch_ms=1.0, precision_target=0.0,
            placements=["same_cpu"], variants={})


def security(certs: fleet_certs.FleetCerts, role: str, folder: str | None = None):
    """distributed's Security for one role (client, scheduler, worker) with the files of `folder`."""
    from distributed.security import Security

    f = certs.files(folder or role)
    return Security(tls_ca_file=str(f.ca), require_encryption=True,
                    **{f"tls_{role}_cert": str(f.cert), f"tls_{role}_key": str(f.key)})


@dataclasses.dataclass
class Fleet:
    """A fleet in this process: its scheduler and workers on their own event loop, in a thread."""
    address: str
    certs: fleet_certs.FleetCerts | None
    scheduler: object
    workers: dict
    loop: object

    def call(self, coroutine, timeout=60):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def client_files(self, folder: str = "client") -> dict:
        return self.certs.files(folder).parameters() if self.certs else {"insecure": True}

    def run(self, hosts, out, **kw):
        kw.setdefault("say", lambda m: None)
        return fleet.fleet_run(self.address, hosts, output=str(out), **{**self.client_files(), **TINY, **kw})


@contextlib.contextmanager
def cluster(names, tmp_path, tls=True, **options):
    """A Dask scheduler and one worker per name (one thread, MEASURE=1) in this process, on the
    thread CLUSTER_THREAD, with certificates from `osbench fleet certs` (tls=False: plaintext);
    options[name]: the Worker's own options, its class under "cls" and the certificate folder it
    uses under "certs" (a rogue worker)."""
    from distributed import Scheduler, Worker

    certs = fleet_certs.make_certs(names, tmp_path / f"certs-{uuid.uuid4().hex[:6]}", "127.0.0.1") if tls else None
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name=CLUSTER_THREAD, daemon=True)
    thread.start()

    async def start(cls, *args, **kwargs):
        return await cls(*args, **kwargs)

    async def start_all():
        s = await start(Scheduler, host="127.0.0.1", dashboard_address="127.0.0.1:0",
                        **({"protocol": "tls", "security": security(certs, "scheduler")} if tls else {}))
        workers = {}
        for n in names:
            opts = dict(options.get(n, {}))
            folder = opts.pop("certs", n)  # a rogue worker: another role's certificate
            opts = {"name": n, "nthreads": 1, "host": "127.0.0.1", "resources": {"MEASURE": 1},
                    "dashboard_address": "127.0.0.1:0",
                    **({"security": security(certs, "worker", folder)} if tls else {}), **opts}
            workers[n] = await start(opts.pop("cls", Worker), s.address, **opts)
        return s, workers

    s, workers = asyncio.run_coroutine_threadsafe(start_all(), loop).result(60)
    f = Fleet(s.address, certs, s, workers, loop)
    try:
        yield f
    finally:
        async def stop():
            for w in workers.values():
                await w.close()
            await s.close()

        with contextlib.suppress(Exception):
            f.call(stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)


_cluster = cluster
#: the thread the in-process scheduler and workers run on (their tasks run on threads named after the worker)
CLUSTER_THREAD = "fleet-cluster"


#: what fake_task does; the in-process workers share this module
FAKE: dict = {}


def fake_task(campaign_id, profile, parameters, wait=False, host=None):
    """Stands in for task.measure_on_this_host in the in-process fleet: checks the request as the
    real one does, then sends a synthetic campaign, or fails on the hosts in FAKE["fail"]
    (FAKE["sleep"]: seconds to take first)."""
    time.sleep(FAKE.get("sleep", 0))
    fleet_security.check_task(campaign_id, profile, parameters, wait, host)
    FAKE["ran"][campaign_id] = host
    if host in FAKE["fail"]:
        raise fleet.HostFailed(f"{host}: runs must be >= 1 (got 0)")
    path = synthetic.write_synthetic(FAKE["hosts"] / host, campaign_id, seed=len(campaign_id), hostname=host)
    return {"campaign_id": campaign_id, "hostname": host, "data": store.campaign_bytes(path)}


def use_fake_task(tmp_path, monkeypatch) -> dict:
    """The host's measurement replaced by fake_task (task.measure_campaign calls it by its module's name)."""
    FAKE.clear()
    FAKE.update(ran={}, fail=set(), hosts=tmp_path / "hosts")
    monkeypatch.setattr(fleet_task, "measure_on_this_host", fake_task)
    return FAKE


@pytest.fixture
def fake_fleet_task(tmp_path, monkeypatch):
    return use_fake_task(tmp_path, monkeypatch)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_one_campaign_per_host_failures_reported_others_kept_and_a_rerun_resumes(tmp_path, fake_fleet_task,
                                                                                monkeypatch):
    """The in-process fleet: the measurement is replaced by one that sends a synthetic campaign."""
    monkeypatch.setattr(fleet, "JOIN_WAIT_S", 1.0)      # h3 never joins: its wait, shortened
    fake_fleet_task["fail"].add("h2")

    def ran_on():
        found = dict(fake_fleet_task["ran"])
        fake_fleet_task["ran"].clear()
        return found

    out = tmp_path / "campaigns"
    with _cluster(["h1", "h2"], tmp_path) as c:
        assert c.address.startswith("tls://")
        t0 = time.monotonic()
        r = c.run(["h1", "h2", "h3"], out, campaign_id="f")
        assert time.monotonic() - t0 >= fleet.JOIN_WAIT_S   # h3 was given its time to join
        status = {o.host: o.status for o in r.outcomes}
        assert status == {"h1": "stored", "h2": "failed", "h3": "absent"}
        assert ran_on() == {"f-h1": "h1", "f-h2": "h2"}  # each host's campaign ran on that host
        assert "runs must be >= 1" in r.outcomes[1].message and "no Dask worker of host 'h3'" in r.outcomes[2].message
        camp = store.load_campaign("f-h1", out)
        assert camp.manifest.hostname == "h1" and store.signed_by(camp.path) == "signed by host h1"
        assert sorted(store.catalog(out)["campaign_id"]) == ["f-h1"]

        fake_fleet_task["fail"].clear()
        again = c.run(["h1", "h2"], out, campaign_id="f")
        assert {o.host: o.status for o in again.outcomes} == {"h1": "already_stored", "h2": "stored"}
        assert ran_on() == {"f-h2": "h2"}  # the stored host is not measured again
        assert fleet.connected_hosts(c.address, **c.client_files()).keys() == {"h1", "h2"}


def test_a_received_campaign_is_verified_and_never_overwrites(tmp_path):
    path = synthetic.write_synthetic(tmp_path / "a", "x", seed=1)
    data = store.campaign_bytes(path)
    out = tmp_path / "out"
    assert store.import_campaign(out, data) == out / "x"
    assert store.import_campaign(out, data) == out / "x"  # the same campaign again: accepted as is
    other = store.campaign_bytes(synthetic.write_synthetic(tmp_path / "b", "x", seed=2))
    with pytest.raises(store.CampaignExists, match="never overwritten"):
        store.import_campaign(out, other)
    damaged = bytearray(data)
    damaged[data.index(b"PAR1") + 100] ^= 1  # a byte of the Parquet file, flipped in transit
    with pytest.raises(store.CampaignCorrupted, match="does not match its seal"):
        store.import_campaign(tmp_path / "out2", bytes(damaged))
    assert not (tmp_path / "out2" / "x").exists() and [p.name for p in (tmp_path / "out2").iterdir()] == []


def test_campaign_parameters_become_the_same_osbench_run_options():
    note = "--output=/etc --resume x"  # a value is never read as an option
    args = fleet.cli_arguments("quick", dict(TINY, command_prefix=["nice", "-n", "5"], cpus=[0, 1], note=note,
                                             warmup=None))
    import argparse

    from osbench_analysis import cli

    parsed = argparse.ArgumentParser()
    sub = parsed.add_subparsers(dest="command")
    cli._add_run(sub)
    ns = vars(parsed.parse_args(["run", *args]))
    assert {k: ns[k] for k in TINY} == TINY and ns["command_prefix"] == ["nice", "-n", "5"] and ns["cpus"] == [0, 1]
    assert ns["note"] == note and ns["output"] is None and ns["resume"] is None and ns["warmup"] is None
    assert all(a.startswith("--") and "=" in a for a in args)


def process_certs(names, tmp_path) -> fleet_certs.FleetCerts:
    """Certificates for a fleet of processes on 127.0.0.1: a free port, the dashboard on a free loopback port."""
    made = fleet_certs.make_certs(names, tmp_path / "certs", "127.0.0.1", _free_port())
    return dataclasses.replace(made, dashboard_port=0)


def start_process(argv, env=None, **kw) -> subprocess.Popen:
    return subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, **kw)


def start_worker(certs, name, tmp_path, lock=None) -> subprocess.Popen:
    """A measuring host's worker as `osbench fleet certs` prints it, keeping its campaigns under tmp_path/name."""
    env = {**certs.environment("worker"), fleet.FLEET_DIR_ENV: str(tmp_path / name),
           "OSBENCH_LOCK_FILE": str(lock or tmp_path / f"{name}.lock")}
    return start_process(venv_argv(certs.worker_argv(name)), env)


def wait_for_hosts(certs, names, timeout_s=60) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            hosts = fleet.connected_hosts(certs.address, **certs.files("client").parameters(), say=lambda m: None)
            if set(names) <= set(hosts):
                return hosts
        except fleet.FleetError:
            pass  # the scheduler is not up yet
        if time.monotonic() > deadline:
            raise AssertionError(f"hosts {names} did not connect within {timeout_s} s")
        time.sleep(0.5)


def stop(procs) -> None:
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, 9)
        p.wait(timeout=10)


@pytest.fixture(scope="module")
def process_fleet(tmp_path_factory):
    """The scheduler and the workers of h1 and h2 as `osbench fleet certs` prints them, on loopback, each
    host with its own lock file: started once for the tests of worker processes (each test uses campaign
    ids of its own; a test that stops a worker starts it again, in .procs)."""
    from types import SimpleNamespace

    tmp = tmp_path_factory.mktemp("process-fleet")
    certs = process_certs(["h1", "h2"], tmp)
    locks = {h: tmp / f"{h}.lock" for h in ("h1", "h2")}
    procs = {"scheduler": start_process(venv_argv(certs.scheduler_argv()), certs.environment("scheduler"))}
    try:
        procs.update({h: start_worker(certs, h, tmp, locks[h]) for h in ("h1", "h2")})
        wait_for_hosts(certs, ["h1", "h2"])
        yield SimpleNamespace(certs=certs, tmp=tmp, locks=locks, procs=procs)
    finally:
        stop(procs.values())


@pytest.mark.slow
def test_worker_processes_measure_and_return_real_signed_campaigns(process_fleet, tmp_path):
    """The scheduler and two workers as `osbench fleet certs` prints them, on loopback."""
    import papermill as pm  # 1-3 s to import: not at collection

    certs, hosts_dir = process_fleet.certs, process_fleet.tmp
    out = tmp_path / "campaigns"
    wait_for_hosts(certs, ["h1", "h2"])
    client_files = certs.files("client")
    r = fleet.fleet_run(certs.address, ["h1", "h2"], output=str(out), campaign_id="lc", say=lambda m: None,
                        **client_files.parameters(), **TINY)
    assert [o.status for o in r.outcomes] == ["stored", "stored"], r.table()
    # the CLI and the notebook with the same parameters and the client's certificate: the same campaigns
    assert cli.main(["fleet", "run", "--scheduler", certs.address, "--hosts", "h1", "--probes", "null_syscall",
                     "--runs", "2", "--batches", "2", "--min-batch-ms", "1", "--precision-target", "0",
                     "--placements", "same_cpu", "--variants", "{}", "--output", str(out),
                     "--campaign-id", "cli", *client_files.options()]) == 0
    pm.execute_notebook(str(NOTEBOOKS / "fleet.ipynb"), str(tmp_path / "fleet.ipynb"), kernel_name="python3",
                        parameters=dict(TINY, scheduler=certs.address, hosts=["h1"], output=str(out),
                                        campaign_id="nb", **client_files.parameters()),
                        progress_bar=False)
    for h in ("h1", "h2"):
        c = store.load_campaign(f"lc-{h}", out)
        assert len(c.runs) == 2 and c.errors.empty
        assert c.manifest.host["host_id"] and c.manifest.hostname == socket.gethostname()
        assert store.signed_by(c.path, client_files.ca.read_bytes()) == f"signed by host {h}"
        assert (hosts_dir / h / f"lc-{h}" / store.SEAL_FILE).is_file()  # the host keeps its own copy
    a, b, c = (store.load_campaign(i, out).manifest.config for i in ("lc-h1", "cli-h1", "nb-h1"))
    for cfg in (a, b, c):
        for k in ("campaign_id", "campaign_set", "note", "preflight"):   # preflight: what it found, not a parameter
            cfg.pop(k)
    assert a == b == c


@pytest.mark.slow
def test_a_vanished_host_is_reported_the_others_kept_and_a_rerun_finishes_it(process_fleet, tmp_path, monkeypatch):
    """h2's runner waits for its host lock (held here) when its Dask worker is
    SIGKILLed: h2 is reported vanished, its runner dies with it, h1 is stored;
    the same command once h2 is back finishes h2 only."""
    from osbench_analysis.measure import hostlock

    # a host gone 1 s is vanished, looked for every 0.5 s (the defaults, 20 s and 2 s, are for real networks)
    monkeypatch.setattr(fleet, "VANISHED_AFTER_S", 1.0)
    monkeypatch.setattr(fleet, "POLL_S", 0.5)
    certs, locks, procs = process_fleet.certs, process_fleet.locks, process_fleet.procs
    out, params = tmp_path / "campaigns", dict(TINY, output=str(tmp_path / "campaigns"), campaign_id="vn",
                                               wait=True, say=lambda m: None, **certs.files("client").parameters())
    wait_for_hosts(certs, ["h1", "h2"])
    results = []
    with hostlock.measuring(["someone-else"], path=locks["h2"]):
        t = threading.Thread(target=lambda: results.append(fleet.fleet_run(certs.address, ["h1", "h2"], **params)))
        t.start()
        runner_pid = _wait_for_runner("vn-h2", 60)
        os.killpg(procs["h2"].pid, 9)  # the host disappears
        procs["h2"].wait(timeout=10)
        t.join(timeout=90)
    (r,) = results
    assert {o.host: o.status for o in r.outcomes} == {"h1": "stored", "h2": "vanished"}
    deadline = time.monotonic() + 10
    while Path(f"/proc/{runner_pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{runner_pid}").exists()  # the host's runner died with its Dask worker

    procs["h2"] = start_worker(certs, "h2", process_fleet.tmp, locks["h2"])
    wait_for_hosts(certs, ["h1", "h2"])
    again = fleet.fleet_run(certs.address, ["h1", "h2"], **params)
    assert {o.host: o.status for o in again.outcomes} == {"h1": "already_stored", "h2": "stored"}
    assert sorted(store.catalog(out)["campaign_id"]) == ["vn-h1", "vn-h2"]


def _wait_for_runner(campaign_id: str, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for p in os.listdir("/proc"):
            try:
                cmd = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if (b"osbench_analysis.cli" in cmd and campaign_id.encode() in cmd and b"run" in cmd
                    and not cmd[0].endswith(b"osbench-guard")):
                return int(p)
        time.sleep(0.1)
    raise AssertionError(f"no runner for {campaign_id} started within {timeout_s} s")


def venv_argv(argv: list[str]) -> list[str]:
    """A printed `dask ...` command, run with this environment's dask."""
    return [str(Path(sys.executable).parent / argv[0]), *argv[1:]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- Dask as designed: no patches, tested bounds ------------------------------------------

FLEET_SOURCES = Path(fleet.__file__).resolve().parent


def _patches_of_dask(source: str) -> list[str]:
    """Assignments to an attribute of a dask or distributed module (or of anything imported from
    one), and every setattr/delattr: what monkeypatching Dask looks like."""
    import ast

    tree = ast.parse(source)
    dask_names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            dask_names |= {(a.asname or a.name).split(".")[0] for a in node.names
                           if a.name.split(".")[0] in ("dask", "distributed")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("dask", "distributed"):
            dask_names |= {a.asname or a.name for a in node.names}

    def root(target):
        while isinstance(target, (ast.Attribute, ast.Subscript)):
            target = target.value
        return target.id if isinstance(target, ast.Name) else None

    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        found += [f"line {node.lineno}: {ast.unparse(t)}" for t in targets
                  if isinstance(t, ast.Attribute) and root(t) in dask_names]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_fleet_patches_nothing_of_dask():
    # the check itself catches the patches the fleet used to make
    assert len(_patches_of_dask("import distributed.protocol.pickle as p\np.loads = None\n"
                                "from distributed import comm\ncomm.tcp.TCP.read = None\n"
                                "import dask\nsetattr(dask, 'x', 1)\n")) == 3
    assert _patches_of_dask("from distributed import Client\nclient = Client()\nclient.x = 1\n") == []
    sources = sorted(FLEET_SOURCES.glob("*.py"))
    assert {p.name for p in sources} >= {"run.py", "task.py", "certs.py", "security.py"}
    found = {p.name: _patches_of_dask(p.read_text()) for p in sources}
    assert not any(found.values()), found


def test_the_installed_dask_is_within_the_fleet_extras_tested_bounds():
    import importlib.metadata
    import tomllib

    from packaging.requirements import Requirement

    root = Path(__file__).resolve().parent.parent
    extra = [Requirement(r) for r in tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["fleet"]]
    assert {r.name for r in extra} == {"distributed", "asyncssh"}
    lock = (root / "requirements.lock").read_text()
    for r in extra:
        installed = importlib.metadata.version(r.name)
        assert installed in r.specifier, (r, installed)
        assert f"\n{r.name}=={installed} " in lock  # make install installs the extra, as locked


# --- one SSHCluster call, against sshd on 127.0.0.1 ---------------------------------------

SSHD = "/usr/sbin/sshd"   # Debian's openssh-server (environments/install.py installs it)


@contextlib.contextmanager
def _machines(tmp_path, environments: dict[str, dict]):
    """One sshd on 127.0.0.1 per "machine", each giving its sessions that machine's environment
    (sshd's SetEnv), as a real machine's own configuration would; yields {machine: asyncssh
    connect options}.  Each sshd is stopped on exit."""
    if not os.path.exists(SSHD):
        pytest.fail(f"{SSHD} is missing: `make setup` installs openssh-server (as root)")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    ssh = tmp_path / "ssh"
    ssh.mkdir(mode=0o700)
    for key in ("id", "host"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh / key)], check=True)
    (ssh / "authorized_keys").write_text((ssh / "id.pub").read_text())
    (ssh / "authorized_keys").chmod(0o600)
    procs, options = [], {}
    try:
        for name, env in environments.items():
            port = _free_port()
            (ssh / f"{name}.conf").write_text("\n".join([
                f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {ssh / 'host'}", f"PidFile {ssh / name}.pid",
                f"AuthorizedKeysFile {ssh / 'authorized_keys'}", "StrictModes no", "UsePAM no",
                "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
                "SetEnv " + " ".join(f"{k}={v}" for k, v in env.items())]) + "\n")
            procs.append(subprocess.Popen([SSHD, "-D", "-e", "-f", str(ssh / f"{name}.conf")],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
            deadline = time.monotonic() + 10
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
                assert time.monotonic() < deadline and procs[-1].poll() is None, f"sshd for {name} did not start"
                time.sleep(0.1)
            options[name] = {"port": port, "known_hosts": None, "client_keys": [str(ssh / "id")],
                             "username": os.environ.get("USER") or "root"}
        yield options
    finally:
        stop(procs)


@pytest.mark.slow
def test_one_sshcluster_call_starts_the_scheduler_and_three_hosts_that_measure(tmp_path):
    """Dask's own SSHCluster (workers named 0, 1, 2) over SSH to 127.0.0.1: each "machine" has its
    own role folder in its environment; the fleet finds each host by its certificate and stores
    three signed campaigns."""
    from distributed import SSHCluster

    hosts = ["h1", "h2", "h3"]
    certs = fleet_certs.make_certs(hosts, tmp_path / "certs", "127.0.0.1")

    def tls(role, folder):
        f = certs.files(folder)
        return {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True", "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": f.ca,
                f"DASK_DISTRIBUTED__COMM__TLS__{role}__CERT": f.cert, f"DASK_DISTRIBUTED__COMM__TLS__{role}__KEY": f.key}

    environments = {"lab0": tls("SCHEDULER", "scheduler"),
                    **{h: {**tls("WORKER", h), **fleet.QUIET_WORKER_ENV, fleet.FLEET_DIR_ENV: tmp_path / h,
                           "OSBENCH_LOCK_FILE": tmp_path / f"{h}.lock"} for h in hosts}}
    client = certs.files("client").parameters()
    out = tmp_path / "campaigns"
    with _machines(tmp_path, environments) as machines:
        t0 = time.monotonic()
        with SSHCluster(["127.0.0.1"] * 4, connect_options=[machines[m] for m in ("lab0", *hosts)],
                        remote_python=shlex.quote(sys.executable), worker_class="distributed.Worker",
                        scheduler_options={"protocol": "tls", "host": "127.0.0.1", "port": 0,
                                           "dashboard_address": "127.0.0.1:0"},
                        worker_options={"nthreads": 1, "resources": {"MEASURE": 1}, "host": "127.0.0.1",
                                        "dashboard_address": "127.0.0.1:0"},
                        security=fleet.client_security("tls://127.0.0.1", **client)) as cluster:
            started = time.monotonic() - t0
            assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
            # SSHCluster returns once the worker processes started, not once each registered with the
            # scheduler (Dask's behaviour): a host may join a moment later
            deadline = time.monotonic() + 30
            while (got := sorted(fleet.connected_hosts(cluster, **client, say=lambda m: None))) != hosts \
                    and time.monotonic() < deadline:
                time.sleep(0.2)
            assert got == hosts
            r = fleet.fleet_run(cluster, hosts, output=str(out), campaign_id="ssh", say=lambda m: None, **client, **TINY)
        print(f"SSHCluster: scheduler and 3 workers started in {started:.1f} s")  # for the report (-s)
    assert [o.status for o in r.outcomes] == ["stored"] * 3, r.table()
    for h in hosts:
        c = store.load_campaign(f"ssh-{h}", out)
        assert store.signed_by(c.path, certs.files("client").ca.read_bytes()) == f"signed by host {h}"
        assert (tmp_path / h / f"ssh-{h}" / store.SEAL_FILE).is_file()  # measured by that "machine"'s worker


def test_ssh_tls_config_names_each_machines_own_role_folder_as_dask_reads_it():
    """What SSHCluster's remote processes inherit (docs/fleet.md): Dask's own Security reads it."""
    import dask
    from distributed.security import Security

    with dask.config.set(fleet.ssh_tls_config("/etc/osbench-fleet/")):
        sec = Security()
    assert sec.require_encryption is True and sec.tls_ca_file == "/etc/osbench-fleet/ca.pem"
    assert (sec.tls_worker_cert, sec.tls_worker_key) == ("/etc/osbench-fleet/cert.pem", "/etc/osbench-fleet/key.pem")
    assert (sec.tls_scheduler_cert, sec.tls_scheduler_key) == (sec.tls_worker_cert, sec.tls_worker_key)


@pytest.mark.slow
def test_without_the_extra_the_fleet_says_so_in_one_line_and_certs_and_verify_still_work(tmp_path):
    """Dask is the optional extra osbench[fleet]: here made unimportable in a fresh interpreter."""
    code = ("import sys; sys.modules['distributed'] = None\n"
            "from osbench_analysis import cli\n"
            f"assert cli.main(['fleet', 'certs', '--hosts', 'h1', '--out', {str(tmp_path / 'c')!r}]) == 0\n"
            f"assert cli.main(['verify', '--root', {str(tmp_path / 'none')!r}]) == 0\n"
            "sys.exit(cli.main(['fleet', 'run', '--scheduler', 'tls://127.0.0.1:1', '--hosts', 'h1']))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(r.stderr.strip().splitlines()) == 1 and "pip install -e '.[fleet]'" in r.stderr, r.stderr
