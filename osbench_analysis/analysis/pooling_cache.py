"""Each host's pooling over campaigns computed once per process (issue 33: analyze.ipynb's cross-host
section pooled the analysed host a second time, and every other host on every run).

``pool_campaigns`` is ``reproducibility.pool_campaigns`` remembered in memory by what its result is
computed from: the seal (SHA256SUMS) of every campaign under the root, the primary campaigns and the
settings.  A sealed campaign never changes; a campaign added, removed or re-sealed changes the key, so
a stale pooling is never returned.  Each caller gets its own copy (a caller may change its tables).
Nothing is written to disk.
"""
from __future__ import annotations

import copy
from pathlib import Path

#: key -> Pooling, oldest first; at most _MAX kept
_POOLINGS: dict = {}
_MAX = 16


def key(primary: dict, root=None, *, baseline: str = "native", level: float = 0.95, probes=None) -> tuple:
    """What a pooling is computed from: every campaign's (id, folder, seal) under root, the primary
    campaign ids in their order (it is the order of the pooled tables' rows), the baseline, the level and the probes (None: all)."""
    from osbench_analysis.store import campaigns as store

    seals = tuple((r.campaign_id, str(r.path), (Path(r.path) / store.SEAL_FILE).read_bytes())
                  for r in store.catalog(root).itertuples())
    return (seals, tuple(primary), baseline, float(level),
            None if probes is None else tuple(sorted({str(p) for p in probes})))


def pool_campaigns(primary: dict, root=None, *, baseline: str = "native", level: float = 0.95,
                   loaded: dict | None = None, probes: list[str] | None = None):
    """reproducibility.pool_campaigns, computed once per key (see the module's docstring); ``loaded``
    (campaigns already in memory) only spares reading them, it does not change the result."""
    from osbench_analysis.analysis import reproducibility

    k = key(primary, root, baseline=baseline, level=level, probes=probes)
    if k not in _POOLINGS:
        if len(_POOLINGS) >= _MAX:
            _POOLINGS.pop(next(iter(_POOLINGS)))
        _POOLINGS[k] = reproducibility.pool_campaigns(primary, root, baseline=baseline, level=level,
                                                      loaded=loaded, probes=probes)
    return copy.deepcopy(_POOLINGS[k])


def clear() -> None:
    """Forget every remembered pooling."""
    _POOLINGS.clear()


__all__ = ["clear", "key", "pool_campaigns"]
