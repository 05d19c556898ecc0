"""Views of the probe catalog: the parameter sets a profile measures, the primitives, and the catalog as a
table and as text (`osbench probes`, docs/catalog.md)."""
from __future__ import annotations

from osbench_analysis.catalog.registry import CANARY_PROBES, PROBES


def profile_variants(profile: str) -> dict[str, list[dict]]:
    """The parameter sets a profile measures, derived from the registry:
    every probe's primitive variants (``variants``), at the first point of its
    sweep for ``quick`` and at every point for ``full``.  Probes with neither
    are measured at their defaults (left out of the mapping)."""
    out: dict[str, list[dict]] = {}
    for name, p in PROBES.items():
        if p.hidden or p.control:
            continue
        sets = [dict(v) for v in p.variants] or [{}]
        if p.sweep:
            key, points = p.sweep
            points = points if profile == "full" else points[:1]
            sets = [{**s, key: x} for s in sets for x in points]
        if sets != [{}]:
            out[name] = sets
    return out


def primitives() -> list[tuple[str, dict]]:
    """Every primitive of the catalog: (probe, parameters) for each probe and
    each of its primitive variants (sweep points are not primitives)."""
    return [(n, dict(v)) for n, p in PROBES.items() if not p.hidden and not p.control
            for v in (p.variants or ({},))]


def catalog_table():
    """The catalog as a table, grouped by family: probe, unit, what it mirrors,
    parameters (default), primitive variants, sweep points, how it runs."""
    import pandas as pd

    rows = []
    for p in PROBES.values():
        if p.hidden or p.control:
            continue
        how = [s for s, on in (("two-party", p.two_party), ("native parent", p.in_native_parent),
                                ("workdir", p.uses_workdir)) if on]
        rows.append({
            "family": p.family, "probe": p.name, "unit": p.unit, "mirrors": p.mirrors,
            "params": ", ".join(f"{q.name}={q.default} ({'|'.join(map(str, q.choices)) if q.choices else f'{q.lo}..{q.hi}'})"
                                for q in p.params),
            "variants": "; ".join(",".join(f"{k}={v}" for k, v in s.items()) for s in p.variants),
            "sweep": f"{p.sweep[0]}: {', '.join(map(str, p.sweep[1]))}" if p.sweep else "",
            "runs": ", ".join(how),
        })
    order = list(dict.fromkeys(r["family"] for r in rows))
    df = pd.DataFrame(rows)
    df["_f"] = df["family"].map(order.index)
    return df.sort_values(["_f"], kind="stable").drop(columns="_f").reset_index(drop=True)


def format_catalog(width: int = 100) -> str:
    """`osbench probes`: the catalog grouped by family, each probe with what it mirrors."""
    import textwrap

    df = catalog_table()
    lines = [f"{len(df)} probes, {len(primitives())} primitives (a probe's primitive variants counted apiece)"]
    for family, part in df.groupby("family", sort=False):
        lines.append(f"\n[{family}]")
        for r in part.itertuples():
            lines.append(f"  {r.probe:22s} {r.unit}")
            extra = [x for x in (r.params and f"params: {r.params}", r.variants and f"primitives: {r.variants}",
                                 r.sweep and f"sweep {r.sweep}", r.runs and f"runs: {r.runs}") if x]
            for text in [f"mirrors: {r.mirrors}", *extra]:
                lines.extend(textwrap.wrap(text, width, initial_indent=" " * 25, subsequent_indent=" " * 27))
    lines.append(f"\n[host-state controls, measured in every campaign and environment] {', '.join(CANARY_PROBES)}")
    return "\n".join(lines)
