"""A comparison's factor from the printed cells of a published table: the arithmetic behind every reading of a
claim (claims.py), with nothing about what the sentence expects.

Factors are slowdowns: cost(slower) / cost(faster), where the cost is the value when lower is better and its
inverse when higher is better, so a factor above 1 means the system the paper calls slower is indeed slower.
A reading may split an ambiguous printed cell its own way (``overrides``); the data is never changed.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

COMPARISON_KINDS = ("pair", "value_ratio", "value", "spread", "winner", "contrast", "fraction_won", "min_of")
AGGREGATES = ("geomean", "each", "max", "sum")


class ClaimError(ValueError):
    """A claim names data that does not exist, an unknown comparison, or is malformed."""


def cost(value: float, higher_is_better) -> float:
    """Bigger is worse: the value if lower is better, its inverse if higher is better."""
    if higher_is_better is None or (isinstance(higher_is_better, float) and math.isnan(higher_is_better)):
        raise ClaimError("a metric without a better direction (higher_is_better null) cannot give a slowdown factor")
    return 1.0 / value if higher_is_better else float(value)


_INDEX_CACHE: list[tuple[pd.DataFrame, dict]] = []


def forget_indexes() -> None:
    """Index the frames again when next asked: one may have been edited since it was indexed."""
    _INDEX_CACHE.clear()


def _index(ref: pd.DataFrame) -> dict:
    """(source, table, metric, system) -> list of row dicts; cached for the last few frames seen (the same
    frame is read thousands of times while the claims are evaluated)."""
    for frame, index in _INDEX_CACHE:
        if frame is ref:
            return index
    index: dict = {}
    for row in ref.to_dict("records"):
        index.setdefault((row["source_id"], row["table_id"], row["metric_id"], row["system_id"]), []).append(row)
    _INDEX_CACHE.insert(0, (ref, index))
    del _INDEX_CACHE[4:]
    return index


def cell(ref: pd.DataFrame, source_id: str, table_id: str, metric_id: str, system_id: str,
         overrides: dict | None = None) -> dict:
    """The one printed cell a reading names, as a row dict (``overrides``: the reading's split of an ambiguous cell)."""
    hit = _index(ref).get((source_id, table_id, metric_id, system_id), [])
    if len(hit) != 1:
        raise ClaimError(f"claim cell {source_id}/{table_id}/{metric_id}/{system_id} matches {len(hit)} rows (need 1)")
    row = dict(hit[0])
    key = f"{table_id}/{metric_id}/{system_id}"
    if overrides and key in overrides:
        row["value"] = float(overrides[key])
        row["cell_as_published"] = f"{overrides[key]:g} (this reading's split of {row['cell_as_published']!r})"
    if pd.isna(row["value"]):
        raise ClaimError(f"claim cell {source_id}/{table_id}/{metric_id}/{system_id} has no usable value "
                         f"(printed {row['cell_as_published']!r})")
    return row


def side(spec, default_table) -> tuple[str, str]:
    """(system, table) of one side of a comparison: a system id, or a dict naming its own table."""
    if isinstance(spec, dict):
        return spec["system_id"], spec.get("table_id") or default_table
    return spec, default_table


def metric_list(ref: pd.DataFrame, source_id: str, table_id: str, metric_ids, systems: list[str]) -> list[str]:
    """The metric ids a comparison names; "all" is every directed metric of the table with a value for every system."""
    if metric_ids != "all":
        return list(metric_ids)
    t = ref[(ref["source_id"] == source_id) & (ref["table_id"] == table_id) & ref["value"].notna()
            & ref["higher_is_better"].map(lambda h: h is not None and h == h)]
    have = t.groupby("metric_id")["system_id"].apply(set)
    out = [m for m in dict.fromkeys(t["metric_id"]) if set(systems) <= have[m]]
    if not out:
        raise ClaimError(f"{source_id}/{table_id}: no directed metric has values for all of {systems}")
    return out


def compute_factor(ref: pd.DataFrame, source_id: str, comparison: dict, overrides: dict | None = None) -> tuple[float, str]:
    """(factor, how it was computed from which printed cells)."""
    kind = comparison["kind"]
    table = comparison.get("table_id")
    if kind == "pair":
        slow_sys, slow_table = side(comparison["slower"], table)
        fast_sys, fast_table = side(comparison["faster"], table)
        metric_ids = metric_list(ref, source_id, slow_table, comparison["metric_ids"], [slow_sys, fast_sys])
        aggregate = comparison.get("aggregate", "geomean")
        if aggregate not in AGGREGATES:
            raise ClaimError(f"aggregate {aggregate!r} not one of {AGGREGATES}")
        factors, parts, slow_vals, fast_vals, directions = [], [], [], [], set()
        for m in metric_ids:
            s = cell(ref, source_id, slow_table, m, slow_sys, overrides)
            f = cell(ref, source_id, fast_table, m, fast_sys, overrides)
            factor = cost(s["value"], s["higher_is_better"]) / cost(f["value"], f["higher_is_better"])
            factors.append(factor)
            slow_vals.append(s["value"])
            fast_vals.append(f["value"])
            directions.add(bool(s["higher_is_better"]))
            parts.append(f"{m}: {slow_sys} {s['cell_as_published']} vs {fast_sys} {f['cell_as_published']} -> {factor:.4g}")
        many = len(factors) > 1
        if aggregate == "each":
            return min(factors), "; ".join(parts) + (" (smallest)" if many else "")
        if aggregate == "max":
            return max(factors), "; ".join(parts) + (" (largest)" if many else "")
        if aggregate == "sum":
            if len(directions) != 1:
                raise ClaimError("aggregate 'sum' needs metrics with one better direction")
            hib = directions.pop()
            value = sum(fast_vals) / sum(slow_vals) if hib else sum(slow_vals) / sum(fast_vals)
            return value, "; ".join(parts) + (f" (ratio of the sums {sum(slow_vals):g} and {sum(fast_vals):g})" if many else "")
        value = float(np.exp(np.mean(np.log(factors))))
        return value, "; ".join(parts) + (" (geometric mean)" if many else "")
    if kind == "value_ratio":
        n = cell(ref, source_id, table, comparison["metric_id"], comparison["numerator"], overrides)
        d = cell(ref, source_id, comparison.get("denominator_table_id") or table,
                  comparison.get("denominator_metric_id") or comparison["metric_id"], comparison["denominator"], overrides)
        return n["value"] / d["value"], (f"{comparison['metric_id']}: {comparison['numerator']} {n['cell_as_published']} / "
                                         f"{comparison['denominator']} {d['cell_as_published']}")
    if kind == "value":
        c = cell(ref, source_id, table, comparison["metric_id"], comparison["system_id"], overrides)
        return float(c["value"]), f"{comparison['metric_id']}: {comparison['system_id']} {c['cell_as_published']} as printed"
    if kind == "spread":
        worst, parts = 0.0, []
        metric_ids = metric_list(ref, source_id, table, comparison["metric_ids"], comparison["systems"])
        for m in metric_ids:
            costs = {s: cost(r["value"], r["higher_is_better"]) for s in comparison["systems"]
                     for r in [cell(ref, source_id, table, m, s, overrides)]}
            hi, lo = max(costs, key=costs.get), min(costs, key=costs.get)
            spread = costs[hi] / costs[lo]
            worst = max(worst, spread)
            parts.append(f"{m}: slowest {hi} / fastest {lo} -> {spread:.4g}")
        return worst, "; ".join(parts) + (" (largest)" if len(parts) > 1 else "")
    if kind == "winner":
        best, parts = math.inf, []
        for m in comparison["metric_ids"]:
            w = cell(ref, source_id, table, m, comparison["winner"], overrides)
            for other in comparison["others"]:
                o = cell(ref, source_id, table, m, other, overrides)
                margin = cost(o["value"], o["higher_is_better"]) / cost(w["value"], w["higher_is_better"])
                if margin < best:
                    best = margin
                    parts = [f"{m}: closest rival {other} {o['cell_as_published']} vs {comparison['winner']} "
                             f"{w['cell_as_published']} -> {margin:.4g}"]
        return best, "; ".join(parts) + (" (below 1: the rival is better)" if best < 1 else "")
    if kind == "contrast":
        num, num_detail = compute_factor(ref, source_id, comparison["numerator"], overrides)
        den, den_detail = compute_factor(ref, source_id, comparison["denominator"], overrides)
        return num / den, f"[{num_detail}] / [{den_detail}] = {num:.4g} / {den:.4g}"
    if kind == "min_of":
        # a sentence with several parts that must all hold ("A and B both beat C"): the weakest part decides
        got = [compute_factor(ref, source_id, c, overrides) for c in comparison["comparisons"]]
        i = int(np.argmin([g[0] for g in got]))
        return got[i][0], "; ".join(f"[{d}]" for _, d in got) + f" (weakest part: {got[i][0]:.4g})"
    if kind == "fraction_won":
        wins, total, lost = 0, 0, []
        for part in comparison["tables"]:
            tid = part["table_id"]
            systems = [comparison["winner"], comparison["loser"]]
            for m in metric_list(ref, source_id, tid, part.get("metric_ids", "all"), systems):
                w = cell(ref, source_id, tid, m, comparison["winner"], overrides)
                lo = cell(ref, source_id, tid, m, comparison["loser"], overrides)
                total += 1
                if cost(w["value"], w["higher_is_better"]) < cost(lo["value"], lo["higher_is_better"]):
                    wins += 1
                else:
                    lost.append(f"{tid}/{m}")
        return wins / total, (f"{comparison['winner']} better than {comparison['loser']} on {wins} of {total} rows"
                              + (f"; not on {', '.join(lost)}" if lost else ""))
    raise ClaimError(f"comparison kind {kind!r} unknown ({', '.join(COMPARISON_KINDS)})")

