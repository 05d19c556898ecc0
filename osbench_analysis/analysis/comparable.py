"""Which campaigns pool (reproducibility.py pools them): the *comparable* campaigns of a campaign are those
of the same machine (hosts.identity: CPU, kernel, ..., never the name; a derived identity merged into the
recorded one of its machine, hosts.identity.merges: issue 37), environment, probe code
(``probes.source_sha256``) and environment configuration; the campaign round they were measured in.

Nothing here reads files except ``catalog_manifests`` (the catalog)."""
from __future__ import annotations

from pathlib import Path

from osbench_analysis.hosts.identity import host_identity, merges


def machine_keys(manifests) -> dict[str, str]:
    """identity key -> its machine's, of ``manifests`` merged into a recorded one (hosts.identity.merges)."""
    return {k: m.into for k, m in merges([host_identity(m.host or {}) for m in manifests])[0].items()}


def comparable_key(manifest, machines: dict | None = None) -> tuple[str, str, str, str]:
    """(host, environment, probe source hash, environment configuration): campaigns with the same
    key pool.  The host is the machine's (``machines``: machine_keys); the configuration is '' unless
    the environment ran in a way that changes its
    numbers (environments/uml.py measured_configuration: UML under the first XSAVE shim build)."""
    h, host, config = manifest.host or {}, host_identity(manifest.host or {}).key, ""
    host = (machines or {}).get(host, host)
    if (getattr(manifest, "environment_info", None) or {}).get("uml_kernel"):
        from osbench_analysis.environments.uml import measured_configuration

        config = measured_configuration(getattr(manifest, "environment_facts", None) or {}, manifest.environment_info)
    return (str(host), manifest.environment, str((h.get("probes") or {}).get("source_sha256", "unknown")), config)


def software(manifest) -> tuple[str, str]:
    """(probe source hash, environment configuration) of a campaign: what besides the machine its numbers
    depend on (comparable_key's last two parts); a configuration other than '' is one the package flags
    as making its numbers wrong (environments/uml.py measured_configuration)."""
    return comparable_key(manifest)[2:]


def round_of(manifest) -> str:
    """The campaign round: the campaigns one `osbench run` measured together,
    interleaved (config.campaign_set), named by its first campaign id."""
    members = (manifest.config or {}).get("campaign_set") or [manifest.campaign_id]
    return sorted(members)[0]


def comparable_campaigns(manifests: dict, catalog_manifests: dict) -> dict[str, list[str]]:
    """For each selected campaign (id -> Manifest), the ids of every campaign in
    ``catalog_manifests`` (id -> Manifest) with its comparable_key, itself
    included, oldest first (a derived identity's campaigns are its machine's: machine_keys)."""
    machines = machine_keys([*catalog_manifests.values(), *manifests.values()])
    by_key: dict[tuple, list] = {}
    for cid, m in catalog_manifests.items():
        by_key.setdefault(comparable_key(m, machines), []).append((m.created_utc, cid))
    return {cid: [c for _, c in sorted(by_key.get(comparable_key(m, machines), [(m.created_utc, cid)]))]
            for cid, m in manifests.items()}


def catalog_manifests(root=None) -> dict:
    """campaign id -> Manifest of every sealed campaign under root (manifests only: cheap; shared, read-only)."""
    from osbench_analysis.store import campaigns as store

    cat = store.catalog(root)
    return {r.campaign_id: store.parsed_manifest((Path(r.path) / store.MANIFEST_FILE).read_text())
            for r in cat.itertuples()}
