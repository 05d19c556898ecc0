"""Which campaigns pool (reproducibility.py pools them): the *comparable* campaigns of a campaign are those
of the same machine (hosts.identity: CPU, kernel, ..., never the name; a derived identity merged into the
recorded one of its machine, hosts.identity.merges: issue 37), environment, probe code
(``probes.source_sha256``) and environment configuration; the campaign round they were measured in.

Nothing here reads files except ``catalog_manifests`` (the catalog)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

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


# ------------------------------------------------------------------ machines compared like with like (issue 42)

def with_software(t: pd.DataFrame, sw: dict, baseline: str | None) -> pd.DataFrame:
    """``t`` with ``probe_source`` and ``configuration`` per row from ``sw`` (environment -> software() of
    its campaign): a ratio or crossing cost (``baseline`` named) is of one probe code only when the
    environment's and the baseline's campaigns ran the same, else its source reads 'a / b'."""
    if t.empty or "environment" not in t:
        return t
    src = [sw.get(e, ("unknown", ""))[0] for e in t["environment"]]
    if baseline is not None:
        base = sw.get(baseline, ("unknown", ""))[0]
        src = [s if s == base else f"{s} / {base}" for s in src]
    return t.assign(probe_source=src, configuration=[sw.get(e, ("unknown", ""))[1] for e in t["environment"]])


def like_with_like(t: pd.DataFrame) -> pd.DataFrame:
    """Of per-host rows (with_software's columns), those a comparison across machines may use: never a
    configuration the package flags as faulty, never a ratio or cost whose two campaigns ran different
    probe code (issue 42, item 4); rows are then compared only with rows of the same ``probe_source``
    (spread_table and the paper's tables group by it)."""
    if t.empty or "configuration" not in t:
        return t
    return t[(t["configuration"].fillna("") == "") & ~t["probe_source"].astype(str).str.contains(" / ")]


def compared(t: pd.DataFrame) -> pd.DataFrame:
    """like_with_like's rows of the conditions (and probe code) that two hosts or more measured: what a
    comparison across machines shows."""
    t = like_with_like(t)
    if t.empty:
        return t
    by = [k for k in ("environment", "probe", "variant", "placement", "probe_source") if k in t.columns]
    return t[t.groupby(by, dropna=False)["host"].transform("nunique") >= 2]
