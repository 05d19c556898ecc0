"""Headline ratios the papers state, recomputed from data/reference.

Each claim in data/reference/headline_claims.json quotes the source, says
which cells it compares and what the paper stated, with a tolerance taken
from a fixed set of rules (the file's "rules").  A claim the data does not
support is reported as such, never adjusted.

Factors are slowdowns: cost(slower) / cost(faster), where the cost is the
value itself when lower is better and its inverse when higher is better, so a
factor above 1 means the system the paper calls slower is indeed slower.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis import reference

VERDICTS = ("supported", "not supported", "not checkable")
CLAIM_COLUMNS = ["claim_id", "source_id", "statement", "stated", "computed_factor", "verdict", "detail",
                 "quote", "location", "stated_value_origin", "reading", "tolerance_reason"]


class ClaimError(ValueError):
    """A claim names data that does not exist or an unknown comparison."""


def load_claims(root: str | Path | None = None) -> list[dict]:
    path = Path(root or reference.default_reference_dir()) / "headline_claims.json"
    return json.loads(path.read_text(encoding="utf-8"))["claims"]


def cost(value: float, higher_is_better) -> float:
    """Bigger is worse: the value if lower is better, its inverse if higher is better."""
    if higher_is_better is None or (isinstance(higher_is_better, float) and math.isnan(higher_is_better)):
        raise ClaimError("a metric without a better direction (higher_is_better null) cannot give a slowdown factor")
    return 1.0 / value if higher_is_better else float(value)


def _cell(ref: pd.DataFrame, source_id: str, table_id: str, metric_id: str, system_id: str) -> pd.Series:
    hit = ref[(ref["source_id"] == source_id) & (ref["table_id"] == table_id)
              & (ref["metric_id"] == metric_id) & (ref["system_id"] == system_id)]
    if len(hit) != 1:
        raise ClaimError(f"claim cell {source_id}/{table_id}/{metric_id}/{system_id} matches {len(hit)} rows (need 1)")
    row = hit.iloc[0]
    if pd.isna(row["value"]):
        raise ClaimError(f"claim cell {source_id}/{table_id}/{metric_id}/{system_id} has no usable value "
                         f"(printed {row['cell_as_published']!r})")
    return row


def _side(spec, default_table):
    if isinstance(spec, dict):
        return spec["system_id"], spec.get("table_id") or default_table
    return spec, default_table


def compute_factor(ref: pd.DataFrame, source_id: str, comparison: dict) -> tuple[float, str]:
    """(factor, how it was computed from which printed cells)."""
    kind = comparison["kind"]
    table = comparison.get("table_id")
    if kind == "pair":
        slow_sys, slow_table = _side(comparison["slower"], table)
        fast_sys, fast_table = _side(comparison["faster"], table)
        factors, parts = [], []
        for m in comparison["metric_ids"]:
            s = _cell(ref, source_id, slow_table, m, slow_sys)
            f = _cell(ref, source_id, fast_table, m, fast_sys)
            factor = cost(s["value"], s["higher_is_better"]) / cost(f["value"], f["higher_is_better"])
            factors.append(factor)
            parts.append(f"{m}: {slow_sys} {s['cell_as_published']} vs {fast_sys} {f['cell_as_published']} -> {factor:.4g}")
        if comparison.get("aggregate", "geomean") == "each":
            return min(factors), "; ".join(parts) + (" (smallest)" if len(factors) > 1 else "")
        value = float(np.exp(np.mean(np.log(factors))))
        return value, "; ".join(parts) + (" (geometric mean)" if len(factors) > 1 else "")
    if kind == "value_ratio":
        n = _cell(ref, source_id, table, comparison["metric_id"], comparison["numerator"])
        d = _cell(ref, source_id, table, comparison["metric_id"], comparison["denominator"])
        return n["value"] / d["value"], (f"{comparison['metric_id']}: {comparison['numerator']} {n['cell_as_published']} / "
                                         f"{comparison['denominator']} {d['cell_as_published']}")
    if kind == "spread":
        worst, parts = 0.0, []
        for m in comparison["metric_ids"]:
            costs = {s: cost(r["value"], r["higher_is_better"]) for s in comparison["systems"]
                     for r in [_cell(ref, source_id, table, m, s)]}
            hi, lo = max(costs, key=costs.get), min(costs, key=costs.get)
            spread = costs[hi] / costs[lo]
            worst = max(worst, spread)
            parts.append(f"{m}: slowest {hi} / fastest {lo} -> {spread:.4g}")
        return worst, "; ".join(parts)
    if kind == "winner":
        best, parts = math.inf, []
        for m in comparison["metric_ids"]:
            w = _cell(ref, source_id, table, m, comparison["winner"])
            for other in comparison["others"]:
                o = _cell(ref, source_id, table, m, other)
                margin = cost(o["value"], o["higher_is_better"]) / cost(w["value"], w["higher_is_better"])
                if margin < best:
                    best = margin
                    parts = [f"{m}: closest rival {other} {o['cell_as_published']} vs {comparison['winner']} "
                             f"{w['cell_as_published']} -> {margin:.4g}"]
        return best, "; ".join(parts) + (" (below 1: the rival is better)" if best < 1 else "")
    raise ClaimError(f"comparison kind {kind!r} unknown (pair, value_ratio, spread, winner)")


def _stated(expect: dict) -> str:
    kind = expect["kind"]
    if kind == "approx":
        return f"≈ {expect['value']:g} (±{expect['rel_tol']:.0%})"
    if kind == "range":
        lo, hi = expect.get("min"), expect.get("max")
        if lo is not None and hi is not None:
            return f"between {lo:.3g} and {hi:.3g}"
        return f"≥ {lo:.3g}" if lo is not None else f"≤ {hi:.3g}"
    if kind == "similar_to_claim":
        return f"within ×{expect['max_ratio']:g} of {expect['claim']}"
    if kind == "below_claims":
        return f"≥ {expect.get('min', 0):g} and below {', '.join(expect['claims'])}"
    return "—"


def _verdict(factor: float, expect: dict, factors: dict[str, float]) -> bool:
    kind = expect["kind"]
    if kind == "approx":
        return abs(factor / expect["value"] - 1.0) <= expect["rel_tol"]
    if kind == "range":
        lo, hi = expect.get("min"), expect.get("max")
        return (lo is None or factor >= lo) and (hi is None or factor <= hi)
    if kind == "similar_to_claim":
        other = factors[expect["claim"]]
        return max(factor, other) / min(factor, other) <= expect["max_ratio"]
    if kind == "below_claims":
        return factor >= expect.get("min", -math.inf) and all(factor < factors[c] for c in expect["claims"])
    raise ClaimError(f"expectation kind {kind!r} unknown (approx, range, similar_to_claim, below_claims, not_checkable)")


def evaluate_claims(ref: pd.DataFrame, claims: list[dict] | None = None) -> pd.DataFrame:
    """One row per claim: what was stated, the factor from the data, and whether the data supports it."""
    claims = load_claims() if claims is None else claims
    factors: dict[str, float] = {}
    rows = []
    # claims refer to other claims' factors, so compute all factors first
    for c in claims:
        if c["comparison"] is not None:
            factors[c["claim_id"]] = compute_factor(ref, c["source_id"], c["comparison"])[0]
    for c in claims:
        base = {k: c.get(k, "") for k in ("claim_id", "source_id", "statement", "quote", "location",
                                          "stated_value_origin", "reading", "tolerance_reason")}
        if c["expect"]["kind"] == "not_checkable":
            rows.append(base | {"stated": "—", "computed_factor": math.nan, "verdict": "not checkable",
                                "detail": c["expect"]["reason"]})
            continue
        factor, detail = compute_factor(ref, c["source_id"], c["comparison"])
        ok = _verdict(factor, c["expect"], factors)
        rows.append(base | {"stated": _stated(c["expect"]), "computed_factor": factor,
                            "verdict": "supported" if ok else "not supported", "detail": detail})
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def flagged(claims: pd.DataFrame) -> pd.DataFrame:
    """Claims the data does not support, with the cells behind each factor and the quote."""
    return claims[claims["verdict"] == "not supported"][
        ["claim_id", "stated", "computed_factor", "detail", "reading", "quote", "location"]].reset_index(drop=True)
