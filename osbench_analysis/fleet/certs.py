"""Certificates for a fleet without a PKI (`osbench fleet certs`): one CA of
the fleet's own, one certificate per measured host, one for the scheduler and
one for the client, all Ed25519 keys made with the `cryptography` library.

    DIR/ca.pem                      the CA certificate (public)
    DIR/<role>/{ca,cert,key}.pem    role: scheduler, client, or a host's name

A certificate is a role: its subject's OU says which (client, scheduler, host)
and its CN names it (a host's CN is the name its campaigns are signed with), and
its extended key usage says how it may connect: a client's only as a TLS client,
so it can never serve as a scheduler or worker.  What each key can do, and what
stock Dask cannot prevent, is docs/fleet.md's threat model.

Each role's folder is what that machine needs (copy DIR/h1 to h1); every key
file is created 0600 (never readable by others, not even for an instant) and
the folders 0700.  The CA's own key is not kept: a new host means running the
command again and handing out the new folders, so no file on any machine can
mint a certificate the fleet would accept.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import os
import shlex
import socket
from dataclasses import dataclass
from pathlib import Path

from osbench_analysis.fleet.security import FleetError, check_host
from osbench_analysis.store.signature import SIGNER_ROLE

ROLES = ("scheduler", "client")
#: the OU of each kind of certificate (a campaign's signature must be by a `host` certificate)
CLIENT_ROLE, SCHEDULER_ROLE = "client", "scheduler"
HOST_ROLE = SIGNER_ROLE
DEFAULT_PORT = 8786
#: how long fleet certificates may be valid at most: 100 years (N13: 1e9 days overflowed the date)
MAX_CERT_DAYS = 36_500
#: Environment for a measuring host's `dask worker`: its statistical profiler samples every thread
#: every 10 ms and its memory monitor wakes every 100 ms, on the CPUs being measured; both off or
#: slowed, the idle worker stays out of the measurement.
QUIET_WORKER_ENV = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
                    "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "5s"}
#: Dask's HTTP server (dashboard, /metrics) has no authentication: on loopback only, reached through an SSH tunnel
LOOPBACK_HTTP = "127.0.0.1"


@dataclass(frozen=True)
class RoleFiles:
    ca: Path
    cert: Path
    key: Path

    def options(self) -> list[str]:
        """The `dask scheduler|worker` and `osbench fleet run` options naming these files."""
        return ["--tls-ca-file", str(self.ca), "--tls-cert", str(self.cert), "--tls-key", str(self.key)]

    def parameters(self) -> dict:
        """The same as keyword arguments of fleet.fleet_run and notebooks/fleet.ipynb."""
        return {"tls_ca_file": str(self.ca), "tls_cert": str(self.cert), "tls_key": str(self.key)}


def role_files(out: str | Path, role: str) -> RoleFiles:
    d = Path(out) / role
    return RoleFiles(d / "ca.pem", d / "cert.pem", d / "key.pem")


def _name(common_name: str, role: str | None = None):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    ou = [x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, role)] if role else []
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "osbench fleet"), *ou,
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _alt_name(host: str):
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _sign(subject: str, public_key, issuer_key, issuer_name, days: int, ca: bool, role: str | None = None,
          alt_name: str | None = None):
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    now = dt.datetime.now(dt.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(_name(subject, role)).issuer_name(issuer_name or _name(subject))
         .public_key(public_key).serial_number(x509.random_serial_number())
         .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True))
    if ca:
        b = b.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                          content_commitment=False, key_encipherment=False, data_encipherment=False,
                                          key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
    else:  # the scheduler and the hosts both listen and connect; a client only connects
        usage = [ExtendedKeyUsageOID.CLIENT_AUTH] if role == CLIENT_ROLE else \
            [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        b = (b.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False,
                                           content_commitment=False, key_encipherment=False, data_encipherment=False,
                                           key_agreement=False, encipher_only=False, decipher_only=False),
                             critical=True)
             .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
             .add_extension(x509.SubjectAlternativeName([_alt_name(alt_name or subject)]), critical=False))
    return b.sign(issuer_key, None)  # Ed25519: the algorithm is the key's


def _write(path: Path, data: bytes, mode: int) -> None:
    # O_EXCL: never overwrite; the mode is set at creation, so a key is never readable by others
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # the umask could only have removed bits; say them exactly
        os.write(fd, data)
    finally:
        os.close(fd)


@dataclass
class FleetCerts:
    out: Path
    hosts: list[str]
    scheduler_host: str
    port: int = DEFAULT_PORT
    dashboard_port: int = 8787

    @property
    def address(self) -> str:
        return f"tls://{self.scheduler_host}:{self.port}"

    def files(self, role: str) -> RoleFiles:
        return role_files(self.out, role)

    def scheduler_argv(self) -> list[str]:
        return ["dask", "scheduler", "--protocol", "tls", "--port", str(self.port), "--dashboard-address",
                f"{LOOPBACK_HTTP}:{self.dashboard_port}", *self.files("scheduler").options()]

    def worker_argv(self, host: str) -> list[str]:
        return ["dask", "worker", self.address, "--name", host, "--nthreads", "1", "--resources", "MEASURE=1",
                "--no-nanny", "--no-dashboard", "--dashboard-address", f"{LOOPBACK_HTTP}:0", *self.files(host).options()]

    @staticmethod
    def environment(kind: str) -> dict[str, str]:
        """The environment a fleet's `dask scheduler` (kind "scheduler") or measuring `dask worker` runs in."""
        return dict(QUIET_WORKER_ENV) if kind == "worker" else {}

    def fleet_run_argv(self) -> list[str]:
        return ["osbench", "fleet", "run", "--scheduler", self.address, "--hosts", ",".join(self.hosts),
                *self.files("client").options()]

    def commands(self) -> str:
        """The exact commands that use these files, one block per machine."""
        def env(kind):
            return "".join(f"{k}={shlex.quote(v)} " for k, v in self.environment(kind).items())

        lines = [f"# on {self.scheduler_host}: the scheduler (it needs {self.out / 'scheduler'})",
                 f"{env('scheduler')}{shlex.join(self.scheduler_argv())}"]
        for h in self.hosts:
            lines += [f"# on {h}: its measuring worker (copy {self.out / h} there, to the same path, keeping 0600)",
                      f"{env('worker')}{shlex.join(self.worker_argv(h))}"]
        lines += ["# where the campaigns are collected (it needs the client folder)", shlex.join(self.fleet_run_argv())]
        return "\n".join(lines)


def make_certs(hosts: list[str], out: str | Path, scheduler_host: str | None = None, port: int = DEFAULT_PORT,
               days: int = 825) -> FleetCerts:
    """A new CA and, signed by it, a certificate and key for the scheduler,
    the client and every host, under `out` (see the module docstring).
    Refuses to overwrite anything already there."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    if not hosts or len(set(hosts)) != len(hosts):
        raise FleetError(f"hosts must be distinct host names (got {hosts!r})")
    for h in hosts:
        check_host(h)
        if h in ROLES:
            raise FleetError(f"host {h!r} is a reserved folder name here ({', '.join(ROLES)}); rename the Dask worker")
    scheduler_host = check_host(scheduler_host or socket.gethostname())
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise FleetError(f"port must be an integer from 1 to 65535 (got {port!r})")
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_CERT_DAYS:
        raise FleetError(f"days must be a whole number from 1 to {MAX_CERT_DAYS} (100 years; got {days!r})")
    out = Path(out)
    roles = [*ROLES, *hosts]
    taken = [str(out / r) for r in (*roles, "ca.pem") if (out / r).exists()]
    if taken:
        raise FleetError(f"{', '.join(taken)} already exist(s): certificates are never overwritten; "
                         f"choose an empty --out folder")
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca_key = ed25519.Ed25519PrivateKey.generate()
    ca_cert = _sign("osbench fleet CA", ca_key.public_key(), ca_key, None, days, ca=True)
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    _write(out / "ca.pem", ca_pem, 0o644)
    for role in roles:
        key = ed25519.Ed25519PrivateKey.generate()
        kind = role if role in ROLES else HOST_ROLE
        cert = _sign(role, key.public_key(), ca_key, ca_cert.subject, days, ca=False, role=kind,
                     alt_name=scheduler_host if role == SCHEDULER_ROLE else role)
        files = role_files(out, role)
        files.cert.parent.mkdir(mode=0o700)
        os.chmod(files.cert.parent, 0o700)
        _write(files.ca, ca_pem, 0o644)
        _write(files.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
        _write(files.key, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()), 0o600)
    return FleetCerts(out.resolve(), list(hosts), scheduler_host, port)
