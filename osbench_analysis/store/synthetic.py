"""Synthetic campaigns written and sealed by the real store, for tests and
benchmarks that need many campaigns (benchmarks/analysis_scale.py, the fleet
tests) without measuring them: a real campaign's samples, every per-op time
scaled by one log-normal factor per campaign, under a new id and host."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from osbench_analysis.store import campaigns as store
from osbench_analysis.store.records import PARTIAL_KEY
from osbench_analysis.paths import CAMPAIGNS_DIR


def template(root: str | Path | None = None) -> store.Campaign:
    """The oldest campaign under root (default: this checkout's data/campaigns, whose oldest is committed)."""
    root = Path(root) if root is not None else CAMPAIGNS_DIR
    ids = sorted(p.name for p in root.iterdir() if (p / store.SEAL_FILE).is_file())
    return store.load_campaign(root / ids[0])


def write_synthetic(root: str | Path, campaign_id: str, base: store.Campaign | None = None, seed: int = 0,
                    hostname: str | None = None, sigma: float = 0.05, host: dict | None = None,
                    created_utc: str | None = None, campaign_set: list[str] | None = None,
                    partial: str = "") -> Path:
    """A sealed campaign like base with its times scaled by exp(N(0, sigma)).  ``host``: host facts to
    change (e.g. cpu_model: another host, hosts/identity.py; a hostname alone is the same host);
    ``created_utc``: when it was measured (default base's); ``campaign_set``: the round it belongs to,
    the ids measured with it (default base's); ``partial``: sealed as partial for that reason
    (records.PARTIAL_KEY, as measure/runner.py seals one)."""
    base = base or template()
    factor = float(np.exp(np.random.default_rng(seed).normal(0.0, sigma)))
    s = base.samples.copy()
    s["campaign_id"] = campaign_id
    s["elapsed_ns"] = (s["elapsed_ns"].astype("float64") * factor).round().astype(s["elapsed_ns"].dtype)
    s["per_op_ns"] = s["elapsed_ns"].astype("float64") / s["iterations"].astype("float64")
    host = dict(base.manifest.host, hostname=hostname or base.manifest.hostname, **(host or {}))
    config = dict(base.manifest.config, campaign_id=campaign_id, note=f"synthetic: {base.id} x {factor:.4f}")
    if campaign_set is not None:
        config["campaign_set"] = list(campaign_set)
    info = {**base.manifest.environment_info, **({PARTIAL_KEY: partial} if partial else {})}
    manifest = dataclasses.replace(base.manifest, campaign_id=campaign_id, host=host, files={}, config=config,
                                   environment_info=info,
                                   **({"created_utc": created_utc, "finished_utc": created_utc} if created_utc else {}))
    return store.write_campaign(root, campaign_id, s, manifest)
