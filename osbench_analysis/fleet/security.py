"""Who may talk to a fleet, and what a fleet request may ask of a host.

The fleet's workers run as root on the measured hosts.  So a fleet speaks TLS
with mutual authentication by default (Dask's own
`distributed.security.Security`: one CA of the fleet's own, a certificate per
host, one for the scheduler and one for the client, each naming its role,
`require_encryption=True`; docs/fleet.md's threat model); a plaintext `tcp://`
scheduler is refused unless the caller says `insecure=True` (one trusted
machine), and then every command says so.  The parameters a client sends are
checked here, on the host, before anything starts (`check_task`), exactly as
`osbench run` checks them.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from osbench_analysis.measure import config
from osbench_analysis.store import campaigns as store
from osbench_analysis.errors import OsbenchError

#: the security files, by the names `osbench fleet run` and notebooks/fleet.ipynb take
TLS_PARAMETERS = ("tls_ca_file", "tls_cert", "tls_key")
#: a measured host's Dask worker name: a hostname label sequence (no spaces, quotes, slashes)
HOST_PATTERN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$")
#: campaign parameters a fleet task may carry; the host chooses where it stores (output) and the
#: client's prefix names the campaign, so neither comes from the task's parameters
TASK_PARAMETERS = frozenset(config.CampaignConfig.__dataclass_fields__) - {"output", "campaign_id", "profile"}
#: `command_prefix` wraps every worker on the host, as root: a fleet accepts only these
#: scheduling wrappers (each a whole prefix), never a program of the client's choosing
ALLOWED_PREFIXES = {
    "nice": re.compile(r"nice -n -?\d{1,2}"),
    "chrt": re.compile(r"chrt -[frbo] \d{1,2}"),
    "ionice": re.compile(r"ionice -c [1-3](?: -n [0-7])?"),
}
INSECURE_WARNING = ("osbench fleet: INSECURE: plaintext Dask connection without authentication; anyone who "
                    "reaches the scheduler can run code as root on every measured host (use only on one "
                    "trusted machine; docs/fleet.md sets up TLS)")


class FleetError(OsbenchError):
    """A fleet that cannot be started (no scheduler, a bad host list, missing or plaintext security)."""


def check_host(name) -> str:
    if not isinstance(name, str) or not HOST_PATTERN.match(name):
        raise FleetError(f"host must be a host name (letters, digits, '.', '-'; at most 63 characters, "
                         f"starting and ending with a letter or digit) (got {name!r})")
    return name


def check_campaign_id(campaign_id) -> str:
    if not isinstance(campaign_id, str) or not store.ID_PATTERN.match(campaign_id):
        raise FleetError(f"campaign id must match {store.ID_PATTERN.pattern} (got {campaign_id!r})")
    return campaign_id


def scheme(address: str) -> str:
    """The Dask protocol of an address; Dask reads an address without one as tcp."""
    return address.split("://", 1)[0] if "://" in address else "tcp"


def refusal(address: str) -> str:
    return (f"the Dask scheduler {address!r} is plaintext: anyone who reaches it could run code as root on "
            f"every measured host; use a tls:// scheduler with tls_ca_file, tls_cert and tls_key "
            f"(--tls-ca-file/--tls-cert/--tls-key; make them with `osbench fleet certs --hosts h1,h2 --out DIR`, "
            f"docs/fleet.md), or insecure=True (--insecure) on one trusted machine")


def client_security(address: str, tls_ca_file=None, tls_cert=None, tls_key=None, insecure: bool = False,
                    say=print):
    """The distributed Security for a client of the scheduler at `address`:
    TLS with the client's certificate and key, encryption required; None for
    a plaintext scheduler the caller explicitly accepted (insecure=True, and
    the warning said).  Raises FleetError otherwise."""
    files = {"tls_ca_file": tls_ca_file, "tls_cert": tls_cert, "tls_key": tls_key}
    dask_security()  # the extra is there
    if scheme(address) != "tls":
        if not insecure:
            raise FleetError(refusal(address))
        say(INSECURE_WARNING)
        return None
    missing = [k for k, v in files.items() if not v]
    if missing:
        raise FleetError(f"a tls:// scheduler needs tls_ca_file, tls_cert and tls_key (missing: {', '.join(missing)}; "
                         f"`osbench fleet certs` makes them, docs/fleet.md)")
    absent = [f"{k}={v!r}" for k, v in files.items() if not Path(v).is_file()]
    if absent:
        raise FleetError(f"security file(s) not found: {', '.join(absent)}; give the files "
                         f"`osbench fleet certs` wrote (ca.pem, client/cert.pem, client/key.pem)")
    check_key_mode(tls_key)
    Security = dask_security()

    return Security(tls_ca_file=str(tls_ca_file), tls_client_cert=str(tls_cert), tls_client_key=str(tls_key),
                    require_encryption=True)


def dask_security():
    """distributed's Security class; FleetError (one line) where the fleet extra is not installed."""
    try:
        from distributed.security import Security
    except ImportError:
        raise FleetError("the fleet needs Dask distributed, an optional extra: pip install -e '.[fleet]' in a "
                         "checkout (osbench-analysis[fleet]); `make install` includes it") from None
    return Security


def check_key_mode(path) -> None:
    """A private key must be readable by its owner only (0600, as `osbench fleet certs` makes it)."""
    import os
    import stat

    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        raise FleetError(f"the private key {str(path)!r} is readable by others (mode {mode:04o}): whoever reads it "
                         f"holds its role in the fleet; chmod 600 it (`osbench fleet certs` makes keys 0600)")


def check_command_prefix(prefix) -> None:
    if not prefix:
        return
    joined = shlex.join(prefix) if isinstance(prefix, (list, tuple)) and all(isinstance(a, str) for a in prefix) \
        else repr(prefix)
    allowed = ALLOWED_PREFIXES.get(prefix[0]) if isinstance(prefix, (list, tuple)) and prefix else None
    if allowed is None or not allowed.fullmatch(joined):
        raise FleetError(f"command_prefix {joined} is not accepted by a fleet: it would run a program of the "
                         f"client's choosing as root on every host; accepted: "
                         f"{', '.join(p.pattern for p in ALLOWED_PREFIXES.values())}")


def check_task(campaign_id, profile, parameters, wait, host: str | None) -> config.CampaignConfig:
    """Everything a fleet task asks of this host, checked before anything
    starts: the campaign id (and that it is this host's: <prefix>-<host>),
    the parameters (known names only, then config.make_config and
    config.validate, exactly as `osbench run`), the environments, and the
    command prefix.  Returns the campaign's configuration; raises an
    OsbenchError that says what was refused."""
    check_campaign_id(campaign_id)
    if host is not None and not campaign_id.endswith("-" + check_host(host)):
        raise FleetError(f"campaign id {campaign_id!r} is not this host's (<prefix>-{host})")
    if not isinstance(wait, bool):
        raise FleetError(f"wait must be True or False (got {wait!r})")
    if not isinstance(parameters, dict):
        raise FleetError(f"parameters must be a dict of campaign parameters (got {type(parameters).__name__})")
    unknown = sorted(set(parameters) - TASK_PARAMETERS)
    if unknown:
        raise FleetError(f"a fleet task cannot set {unknown}; accepted: {sorted(TASK_PARAMETERS)}")
    if profile is not None and (not isinstance(profile, str) or profile not in config.PROFILES):
        raise FleetError(f"profile must be one of {sorted(config.PROFILES)} (got {profile!r})")
    cfg = config.make_config(profile or "quick", **parameters)
    check_command_prefix(cfg.command_prefix)
    config.validate(cfg)
    config.resolve_environments(cfg.environment)
    return cfg
