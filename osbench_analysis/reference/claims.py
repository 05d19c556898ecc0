"""Comparisons the published studies state, recomputed from data/reference under every defensible reading.

Each claim in data/reference/headline_claims.json quotes the source (the quote
is checked against the source text), says where it stands, what the paper
stated (``expect``, with a tolerance from a fixed set of ``rules``) and lists
its *readings*: the defensible ways of turning the sentence into arithmetic on
the printed cells (which column stands for "FreeBSD", which rows the sentence
covers, which aggregate, which split of an ambiguous cell).  Every reading is
computed; none is adjusted to make a claim hold.

Verdict per reading: the factor and whether it meets the stated expectation,
and whether it is on a knife edge: within ``KNIFE_EDGE_BAND`` (5 %) of one of
the expectation's thresholds of meaning, or printing as the same number at
``PRINT_DIGITS`` significant digits.  The published numbers are single runs
without intervals, and the thresholds (1.2 for "slightly", 2 for "far") are our
conventions, not the authors': a factor 1 % past such a threshold neither
confirms nor refutes the sentence.  ``band_sensitivity`` gives the verdict
counts under narrower and wider bands.

Some readings are rejected before any verdict, by a rule stated in the claims
file and checked here (``REJECTION_RULES``): ``plausible`` rejects a reading
that implies a time per operation more than ``max_ratio`` times away from what
the same study measured for that operation on the same system (a split of a
flattened cell that makes a 100,000-switch game last 145 µs or 551 s);
``same_machine`` rejects a reading that compares two systems on two machines
when the study measured both systems' OSes on one.  Rejected readings are listed, never counted.

Verdict class per claim (``VERDICT_CLASSES``), decided from the remaining
readings in this order of precedence (the first that applies):

1. ``not checkable`` - the paper gives no numbers to check (figures, cited work);
2. ``circular``      - the data reading was itself chosen with this sentence
   (``circular`` in the claim says how), so agreement proves nothing;
3. ``arithmetic checked`` - the claim states tolerance rule 'arithmetic' (its number is the paper's own
   division of two of its cells) and every reading reproduces it: the division is re-done, which
   confirms the arithmetic, not the comparison; a reading that does not reproduce it falls through;
4. ``knife-edge``    - some reading lies within KNIFE_EDGE_BAND of a threshold;
5. ``depends``       - the readings disagree: it holds under some, fails under others;
6. ``holds`` / ``fails`` - every reading agrees.

Factors are slowdowns: cost(slower) / cost(faster), where the cost is the
value when lower is better and its inverse when higher is better, so a factor
above 1 means the system the paper calls slower is indeed slower (the
arithmetic on the cells is in factors.py: ``compute_factor``, ``cost``).
"""
from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import pandas as pd

from osbench_analysis.reference import studies as reference
# ClaimError and compute_factor are this module's too
from osbench_analysis.reference import factors as printed   # the arithmetic on a study's printed cells
from osbench_analysis.reference.factors import COMPARISON_KINDS, ClaimError, compute_factor
from osbench_analysis.formatting import sig3

#: Factors and thresholds are printed to this many significant digits; a reading whose printed factor equals
#: a printed threshold is on a knife edge.
PRINT_DIGITS = 3
#: A reading within this relative distance of a threshold of meaning is on a knife edge too: the published
#: numbers carry no interval, and a factor 1 % past a conventional bound (1.2 for 'slightly') decides nothing.
KNIFE_EDGE_BAND = 0.05
#: The bands band_sensitivity() compares (0: print precision alone).
SENSITIVITY_BANDS = (0.0, 0.02, 0.05, 0.10)
#: A stated tolerance below this is the paper's own rounding allowance (rule 'arithmetic'), not a threshold of meaning.
ROUNDING_ALLOWANCE = 0.06
#: The tolerance rule of a number the paper computes itself from two of its cells (see tolerance_rule()).
ARITHMETIC_RULE = "arithmetic"
VERDICT_CLASSES = ("holds", "arithmetic checked", "fails", "depends", "knife-edge", "circular", "not checkable")
#: The order in which a claim's class is decided (the first that applies), as the paper states it.
VERDICT_PRECEDENCE = ("not checkable", "circular", "arithmetic checked", "knife-edge", "depends", "holds", "fails")
#: Rules by which a reading is rejected as implausible before any verdict (see the module docstring).
REJECTION_RULES = ("plausible", "same_machine")
#: Verdict of the primary reading alone (kept for the compact tables).
VERDICTS = ("supported", "not supported", "not checkable")
EXPECT_KINDS = ("approx", "range", "similar", "similar_to_claim", "below_claims", "not_checkable")

CLAIM_COLUMNS = ["claim_id", "source_id", "statement", "verdict_class", "stated", "computed_factor", "factor_min",
                 "factor_max", "n_readings", "n_hold", "knife_edge", "verdict", "reading", "readings_summary", "detail",
                 "quote", "location", "stated_value_origin", "tolerance_reason", "circular_reason", "not_checkable_reason"]
READING_COLUMNS = ["claim_id", "source_id", "reading_id", "reading", "primary", "stated", "factor", "holds",
                   "nearest_threshold", "distance_to_threshold", "knife_edge", "rejected", "detail"]


# --------------------------------------------------------------------------- loading

def claims_path(root: str | Path | None = None) -> Path:
    return Path(root or reference.default_reference_dir()) / "headline_claims.json"


def load_rules(root: str | Path | None = None) -> dict[str, str]:
    return json.loads(claims_path(root).read_text(encoding="utf-8"))["rules"]


def tolerance_rule(claim: dict) -> str:
    """The name of the rule a claim's ``tolerance_reason`` states ("rule 'arithmetic': ..." -> 'arithmetic'), '' if none."""
    m = re.match(r"rule '([a-z_]+)'", str(claim.get("tolerance_reason") or ""))
    return m.group(1) if m else ""


def _normalise_claim(c: dict) -> dict:
    """Every claim with a `readings` list (a claim with one `comparison` has one reading)."""
    c = copy.deepcopy(c)
    for key in ("claim_id", "source_id", "statement", "quote", "location", "expect"):
        if not c.get(key):
            raise ClaimError(f"claim {c.get('claim_id')!r} lacks '{key}'")
    if c["expect"].get("kind") not in EXPECT_KINDS:
        raise ClaimError(f"claim {c['claim_id']}: expectation kind {c['expect'].get('kind')!r} not one of {EXPECT_KINDS}")
    if "readings" not in c:
        comp = c.pop("comparison", None)
        c["readings"] = [] if comp is None else [{"reading_id": "as_stated", "reading": c.pop("reading", "") or "as stated",
                                                   "primary": True, "comparison": comp}]
    readings = c["readings"]
    if c["expect"]["kind"] == "not_checkable":
        if readings:
            raise ClaimError(f"claim {c['claim_id']}: a not-checkable claim has no readings")
        if not c["expect"].get("reason"):
            raise ClaimError(f"claim {c['claim_id']}: not_checkable needs a reason")
        return c
    if not readings:
        raise ClaimError(f"claim {c['claim_id']}: a checkable claim needs at least one reading")
    ids = [r.get("reading_id") for r in readings]
    if len(set(ids)) != len(ids) or not all(ids):
        raise ClaimError(f"claim {c['claim_id']}: reading ids must be present and unique (got {ids})")
    primaries = [r for r in readings if r.get("primary")]
    if len(primaries) > 1:
        raise ClaimError(f"claim {c['claim_id']}: more than one primary reading")
    if not primaries:
        readings[0]["primary"] = True
    for r in readings:
        if not r.get("reading"):
            raise ClaimError(f"claim {c['claim_id']}/{r['reading_id']}: say in words what the reading takes ('reading')")
        if r.get("comparison", {}).get("kind") not in COMPARISON_KINDS:
            raise ClaimError(f"claim {c['claim_id']}/{r['reading_id']}: comparison kind "
                             f"{r.get('comparison', {}).get('kind')!r} not one of {COMPARISON_KINDS}")
    if c.get("circular") is not None and not str(c["circular"]).strip():
        raise ClaimError(f"claim {c['claim_id']}: 'circular' must say how the data reading was chosen with the sentence")
    if tolerance_rule(c) == ARITHMETIC_RULE and not (c["expect"]["kind"] == "approx"
                                                     and c["expect"]["rel_tol"] < ROUNDING_ALLOWANCE
                                                     and all(_two_cells(r["comparison"]) for r in readings)):
        raise ClaimError(f"claim {c['claim_id']}: rule '{ARITHMETIC_RULE}' (the paper's division of two cells) needs an "
                         f"'approx' expectation with rel_tol under {ROUNDING_ALLOWANCE} and readings that divide two "
                         "cells ('value_ratio', or 'pair' of one metric); got "
                         f"{c['expect']} and {[r['comparison']['kind'] for r in readings]}")
    return c


def _two_cells(comparison: dict) -> bool:
    """The comparison divides one printed cell by another (what rule 'arithmetic' re-does)."""
    metrics = comparison.get("metric_ids")
    return comparison["kind"] == "value_ratio" or (comparison["kind"] == "pair" and metrics != "all" and len(metrics) == 1)


def load_claims(root: str | Path | None = None) -> list[dict]:
    """The claims, each with its readings (validated)."""
    claims = [_normalise_claim(c) for c in json.loads(claims_path(root).read_text(encoding="utf-8"))["claims"]]
    ids = [c["claim_id"] for c in claims]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise ClaimError(f"claim ids appear twice: {sorted(dup)}")
    return claims


# --------------------------------------------------------------------------- expectations

def _stated(expect: dict) -> str:
    kind = expect["kind"]
    if kind == "approx":
        return f"≈ {expect['value']:g} (±{expect['rel_tol']:.0%})"
    if kind == "range":
        lo, hi = expect.get("min"), expect.get("max")
        if lo is not None and hi is not None:
            return f"between {lo:.3g} and {hi:.3g}"
        return f"≥ {lo:.3g}" if lo is not None else f"≤ {hi:.3g}"
    if kind == "similar":
        return f"within ×{expect['max_ratio']:g} either way"
    if kind == "similar_to_claim":
        return f"within ×{expect['max_ratio']:g} of {expect['claim']}"
    if kind == "below_claims":
        return f"≥ {expect.get('min', 0):g} and below {', '.join(expect['claims'])}"
    return "—"


def thresholds(expect: dict, factors: dict[str, float]) -> list[float]:
    """The values at which the verdict of this expectation changes.  The edges of a paper's own arithmetic
    (a tolerance under ROUNDING_ALLOWANCE) are rounding allowances, not thresholds of meaning, and are left out."""
    kind = expect["kind"]
    if kind == "approx":
        if expect["rel_tol"] < ROUNDING_ALLOWANCE:
            return []
        return [expect["value"] * (1 - expect["rel_tol"]), expect["value"] * (1 + expect["rel_tol"])]
    if kind == "range":
        return [t for t in (expect.get("min"), expect.get("max")) if t is not None]
    if kind == "similar":
        return [expect["max_ratio"], 1 / expect["max_ratio"]]
    if kind == "similar_to_claim":
        other = factors[expect["claim"]]
        return [other * expect["max_ratio"], other / expect["max_ratio"]]
    if kind == "below_claims":
        return [t for t in [expect.get("min")] + [factors[c] for c in expect["claims"]] if t is not None]
    return []


def meets(factor: float, expect: dict, factors: dict[str, float]) -> bool:
    kind = expect["kind"]
    if kind == "approx":
        return abs(factor / expect["value"] - 1.0) <= expect["rel_tol"]
    if kind == "range":
        lo, hi = expect.get("min"), expect.get("max")
        return (lo is None or factor >= lo) and (hi is None or factor <= hi)
    if kind == "similar":
        return max(factor, 1 / factor) <= expect["max_ratio"]
    if kind == "similar_to_claim":
        other = factors[expect["claim"]]
        return max(factor, other) / min(factor, other) <= expect["max_ratio"]
    if kind == "below_claims":
        return factor >= expect.get("min", -math.inf) and all(factor < factors[c] for c in expect["claims"])
    raise ClaimError(f"expectation kind {kind!r} cannot be met by a factor")


def _nearest(factor: float, ts: list[float]) -> tuple[float, float]:
    """(nearest threshold, relative distance to it) or (NaN, inf) without thresholds."""
    ts = [t for t in ts if t and t > 0 and factor > 0]
    if not ts:
        return math.nan, math.inf
    t = min(ts, key=lambda t: abs(math.log(factor / t)))
    return t, abs(factor / t - 1.0)


# --------------------------------------------------------------------------- evaluation

def _primary(claim: dict) -> dict:
    return next(r for r in claim["readings"] if r.get("primary"))


def ties(factor: float, threshold: float, digits: int = PRINT_DIGITS, band: float = KNIFE_EDGE_BAND) -> bool:
    """The factor is on the threshold's knife edge: within `band` of it (relative), or printing as the same
    number at ``digits`` significant digits."""
    if not (factor > 0 and threshold > 0):
        return False
    return bool(f"{factor:.{digits}g}" == f"{threshold:.{digits}g}" or abs(factor / threshold - 1.0) <= band)


def _pair_cells(ref: pd.DataFrame, source_id: str, comparison: dict, overrides: dict | None) -> list[dict]:
    """The printed cells a one-metric pair reading divides (the only kind a rejection rule inspects)."""
    if comparison["kind"] != "pair" or comparison["metric_ids"] == "all" or len(comparison["metric_ids"]) != 1:
        raise ClaimError("a rejection rule applies to a 'pair' reading of one metric")
    out = []
    for side in ("slower", "faster"):
        system, table = printed.side(comparison[side], comparison.get("table_id"))
        out.append(printed.cell(ref, source_id, table, comparison["metric_ids"][0], system, overrides))
    return out


def implausible(ref: pd.DataFrame, claim: dict, reading: dict) -> str:
    """Why a reading is rejected before any verdict ('' when it is kept), by the rules of REJECTION_RULES:

    * the claim's ``plausibility`` {operations, operation, reference: {table_id, metric_id}, max_ratio}: a cell
      divided by ``operations`` must lie within ``max_ratio`` of the same system's reference cell (the study's
      own time for one such operation), either way;
    * ``same_machine``: a one-metric pair reading that compares two OSes on two machines is rejected when the
      study measured both OSes on one machine (a same-machine reading of the sentence exists)."""
    why = []
    plaus = claim.get("plausibility")
    if plaus and reading.get("comparison", {}).get("kind") == "pair":
        for cell in _pair_cells(ref, claim["source_id"], reading["comparison"], reading.get("values")):
            per_op = cell["value"] / plaus["operations"]
            known = printed.cell(ref, claim["source_id"], plaus["reference"]["table_id"], plaus["reference"]["metric_id"],
                          cell["system_id"])["value"]
            off = max(per_op / known, known / per_op)
            if off > plaus["max_ratio"]:
                why.append(f"implies {_plain_time_us(per_op)} per {plaus['operation']} on {cell['system_as_published']} against "
                           f"the {known:g} µs the study measured (the plausibility rule: within {plaus['max_ratio']:g} times)")
    comp = reading.get("comparison", {})
    if comp.get("kind") == "pair" and {"hardware", "os"} <= set(ref.columns):
        sides = {side: printed.side(comp[side], comp.get("table_id")) for side in ("slower", "faster")}
        metric = printed.metric_list(ref, claim["source_id"], sides["slower"][1], comp["metric_ids"],
                                     [sides["slower"][0], sides["faster"][0]])[0]
        cells = {side: printed.cell(ref, claim["source_id"], table, metric, system, reading.get("values"))
                 for side, (system, table) in sides.items()}
        s, f = cells["slower"], cells["faster"]
        if s["hardware"] != f["hardware"] and s["os"] != f["os"]:
            shared = _machine_with_both(ref, claim["source_id"], s, f)
            if shared:
                why.append(f"compares {s['system_as_published']} with {f['system_as_published']} on another machine "
                           "where the study measured both OSes on one (the same-machine rule)")
    return "; ".join(why)


def _plain_time_us(us: float) -> str:
    """A time in µs as plain text in a readable unit: '1.45 ns', '5.51 ms', '551 s'."""
    scale, unit = next(((k, u) for k, u in ((1e6, "s"), (1e3, "ms"), (1.0, "µs")) if abs(us) >= k), (1e-3, "ns"))
    return f"{sig3(us / scale)} {unit}"


def _machine_with_both(ref: pd.DataFrame, source_id: str, a: dict, b: dict) -> str:
    """A machine on which the study has a value of this metric for a's OS and for b's OS ('' when none)."""
    t = ref[(ref["source_id"] == source_id) & (ref["table_id"] == a["table_id"]) & (ref["metric_id"] == a["metric_id"])
            & ref["value"].notna()]
    by_machine = t.groupby("hardware")["os"].apply(set)
    return next((hw for hw, oses in by_machine.items() if {a["os"], b["os"]} <= oses), "")


class Evaluated:
    """Every reading of every claim computed once (its factor, the thresholds of its expectation, whether it
    holds, why it is rejected): the readings and the verdict classes under any knife-edge band follow from
    it without computing a factor again (a paper's build asks for several bands and both tables)."""

    def __init__(self, ref: pd.DataFrame, claims: list[dict] | None = None):
        self.claims = load_claims() if claims is None else [_normalise_claim(c) for c in claims]
        printed.forget_indexes()      # the frame may have been edited since it was last indexed
        # expectations may name other claims: those use the other claim's primary reading
        computed = {(c["claim_id"], r["reading_id"]): compute_factor(ref, c["source_id"], r["comparison"], r.get("values"))
                    for c in self.claims for r in c["readings"]}
        factors = {c["claim_id"]: computed[c["claim_id"], _primary(c)["reading_id"]][0]
                   for c in self.claims if c["readings"]}
        self._rows, self._thresholds = [], []
        for c in self.claims:
            for r in c["readings"]:
                expect = r.get("expect") or c["expect"]
                factor, detail = computed[c["claim_id"], r["reading_id"]]
                ts = thresholds(expect, factors)
                t, dist = _nearest(factor, ts)
                rejected = implausible(ref, c, r)
                if rejected and r.get("primary"):
                    raise ClaimError(f"claim {c['claim_id']}: its primary reading {r['reading_id']} is rejected ({rejected})")
                self._rows.append({"claim_id": c["claim_id"], "source_id": c["source_id"], "reading_id": r["reading_id"],
                                   "reading": r["reading"], "primary": bool(r.get("primary")), "stated": _stated(expect),
                                   "factor": factor, "holds": meets(factor, expect, factors), "nearest_threshold": t,
                                   "distance_to_threshold": dist, "knife_edge": False, "rejected": rejected,
                                   "detail": detail})
                self._thresholds.append(ts)

    def readings(self, band: float = KNIFE_EDGE_BAND) -> pd.DataFrame:
        """One row per claim x reading (evaluate_readings)."""
        rows = [row | {"knife_edge": any(ties(row["factor"], x, band=band) for x in ts)}
                for row, ts in zip(self._rows, self._thresholds)]
        return pd.DataFrame(rows, columns=READING_COLUMNS)

    def verdicts(self, band: float = KNIFE_EDGE_BAND) -> pd.DataFrame:
        """One row per claim (evaluate_claims)."""
        per_claim: dict[str, list[dict]] = {}
        for row, ts in zip(self._rows, self._thresholds):
            per_claim.setdefault(row["claim_id"], []).append(
                row | {"knife_edge": any(ties(row["factor"], x, band=band) for x in ts)})
        rows = []
        for c in self.claims:
            base = {k: c.get(k, "") for k in ("claim_id", "source_id", "statement", "quote", "location",
                                              "stated_value_origin", "tolerance_reason")}
            base["circular_reason"] = c.get("circular") or ""
            r = per_claim.get(c["claim_id"], [])
            if not r:
                rows.append(base | {"verdict_class": "not checkable", "stated": "—", "computed_factor": math.nan,
                                    "factor_min": math.nan, "factor_max": math.nan, "n_readings": 0, "n_hold": 0,
                                    "knife_edge": False, "verdict": "not checkable", "reading": "", "readings_summary": "",
                                    "detail": c["expect"]["reason"], "not_checkable_reason": c["expect"]["reason"]})
                continue
            p = next(x for x in r if x["primary"])
            cls = _class(r, c.get("circular"), tolerance_rule(c))
            r = _kept(r)
            factors = [x["factor"] for x in r if x["factor"] is not None and not math.isnan(x["factor"])]
            rows.append(base | {"verdict_class": cls, "stated": p["stated"],
                                "computed_factor": p["factor"], "factor_min": min(factors, default=math.nan),
                                "factor_max": max(factors, default=math.nan), "n_readings": len(r),
                                "n_hold": sum(bool(x["holds"]) for x in r), "knife_edge": any(x["knife_edge"] for x in r),
                                "verdict": "supported" if p["holds"] else "not supported", "reading": p["reading"],
                                "readings_summary": _summary(r), "detail": p["detail"], "not_checkable_reason": ""})
        return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def evaluate_readings(ref: pd.DataFrame, claims: list[dict] | None = None,
                      band: float = KNIFE_EDGE_BAND) -> pd.DataFrame:
    """One row per claim x reading: the factor, whether it meets the stated expectation, the nearest threshold,
    whether it ties it at print precision, and why it is rejected ('' when it is kept)."""
    return Evaluated(ref, claims).readings(band)


def verdict_class(readings: pd.DataFrame, circular: str | None = None, rule: str = "") -> str:
    """The class of one claim from its evaluated readings and its tolerance rule (tolerance_rule()), in the
    order of VERDICT_PRECEDENCE (rejected readings set aside first; see the module docstring)."""
    return _class(readings.to_dict("records"), circular, rule)


def _kept(readings: list[dict]) -> list[dict]:
    """The readings no rule rejected (an empty or missing `rejected`)."""
    return [r for r in readings if not isinstance(r.get("rejected"), str) or r["rejected"] == ""]


def _class(readings: list[dict], circular: str | None, rule: str) -> str:
    readings = _kept(readings)
    if not readings:
        return "not checkable"
    if circular:
        return "circular"
    if rule == ARITHMETIC_RULE and all(r["holds"] for r in readings):
        return "arithmetic checked"
    if any(r["knife_edge"] for r in readings):
        return "knife-edge"
    if len({bool(r["holds"]) for r in readings}) > 1:
        return "depends"
    return "holds" if bool(readings[0]["holds"]) else "fails"


def _summary(readings: list[dict]) -> str:
    return "; ".join(f"{r['reading']}: {sig3(r['factor'])} {'holds' if r['holds'] else 'fails'}"
                     + (" (knife-edge)" if r["knife_edge"] else "") for r in readings)


def evaluate_claims(ref: pd.DataFrame, claims: list[dict] | None = None,
                    band: float = KNIFE_EDGE_BAND) -> pd.DataFrame:
    """One row per claim: what was stated, its readings' factors and the verdict class.

    `computed_factor`, `verdict`, `reading` and `detail` are those of the primary reading (the one the
    sentence most plausibly means); `factor_min`/`factor_max`, `n_hold` of `n_readings` and
    `readings_summary` cover every reading."""
    return Evaluated(ref, claims).verdicts(band)


def band_sensitivity(ref: pd.DataFrame, claims: list[dict] | None = None,
                     bands: tuple[float, ...] = SENSITIVITY_BANDS, evaluated: Evaluated | None = None) -> pd.DataFrame:
    """How the verdict counts move with the knife-edge band: one row per band (0 = print precision alone),
    one column per verdict class, and how many claims change class against KNIFE_EDGE_BAND's.  `evaluated`:
    the claims already evaluated on `ref` (Evaluated), else they are."""
    ev = Evaluated(ref, claims) if evaluated is None else evaluated
    base = ev.verdicts(KNIFE_EDGE_BAND).set_index("claim_id")["verdict_class"]
    rows = []
    for b in bands:
        cls = ev.verdicts(b).set_index("claim_id")["verdict_class"]
        counts = cls.value_counts()
        rows.append({"band": b, **{v: int(counts.get(v, 0)) for v in VERDICT_CLASSES},
                     "changed": int((cls != base.reindex(cls.index)).sum())})
    return pd.DataFrame(rows, columns=["band", *VERDICT_CLASSES, "changed"])


def flagged(claims: pd.DataFrame) -> pd.DataFrame:
    """Claims the data does not plainly support (every class but 'holds', 'arithmetic checked' and 'not checkable'),
    with their readings."""
    return claims[~claims["verdict_class"].isin(["holds", "arithmetic checked", "not checkable"])][
        ["claim_id", "verdict_class", "stated", "computed_factor", "readings_summary", "quote", "location"]].reset_index(drop=True)


# --------------------------------------------------------------------------- for the paper

def claims_table(ref: pd.DataFrame | None = None, claims: list[dict] | None = None,
                 root: str | Path | None = None, evaluated: Evaluated | None = None) -> pd.DataFrame:
    """The paper's table of published claims: one row per claim x reading, with the claim's verdict class.

    Columns: source_id, bibkey, claim_id, statement, quote, location, verdict_class, reading_id, reading,
    primary, stated, factor, holds, knife_edge, nearest_threshold, rejected, detail, circular_reason,
    not_checkable_reason.  Not-checkable claims appear once with an empty reading.  Ordered by source,
    then as the claims file lists them.  `evaluated`: these claims already evaluated on ref (Evaluated)."""
    if evaluated is None:
        ref = reference.load_reference(root) if ref is None else ref
        evaluated = Evaluated(ref, load_claims(root) if claims is None else claims)
    claims = evaluated.claims
    per_claim = evaluated.verdicts().set_index("claim_id")
    readings = evaluated.readings()
    keys = reference.bibkeys(root)
    rows = []
    for c in claims:
        pc = per_claim.loc[c["claim_id"]]
        base = {"source_id": c["source_id"], "bibkey": keys.get(c["source_id"], c["source_id"]), "claim_id": c["claim_id"],
                "statement": c["statement"], "quote": c["quote"], "location": c["location"],
                "verdict_class": pc["verdict_class"], "circular_reason": pc["circular_reason"],
                "not_checkable_reason": pc["not_checkable_reason"]}
        r = readings[readings["claim_id"] == c["claim_id"]]
        if r.empty:
            rows.append(base | {"reading_id": "", "reading": "", "primary": True, "stated": "—", "factor": math.nan,
                                "holds": None, "knife_edge": False, "nearest_threshold": math.nan, "rejected": "",
                                "detail": ""})
        for x in r.itertuples():
            rows.append(base | {"reading_id": x.reading_id, "reading": x.reading, "primary": x.primary, "stated": x.stated,
                                "factor": x.factor, "holds": bool(x.holds), "knife_edge": bool(x.knife_edge), "rejected": x.rejected,
                                "nearest_threshold": x.nearest_threshold, "detail": x.detail})
    cols = ["source_id", "bibkey", "claim_id", "statement", "quote", "location", "verdict_class", "reading_id", "reading",
            "primary", "stated", "factor", "holds", "knife_edge", "nearest_threshold", "rejected", "detail", "circular_reason",
            "not_checkable_reason"]
    return pd.DataFrame(rows, columns=cols)


def verdict_counts(claims: pd.DataFrame | None = None, by_source: bool = False) -> pd.DataFrame:
    """Claims per verdict class (every class present, zeros included), overall or per source, with the
    number of readings behind them.  `claims` is evaluate_claims output (computed from the data if None)."""
    claims = evaluate_claims(reference.load_reference()) if claims is None else claims
    keys = ["source_id"] if by_source else []
    groups = claims.groupby(keys) if keys else [((), claims)]
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        for vc in VERDICT_CLASSES:
            part = g[g["verdict_class"] == vc]
            rows.append(dict(zip(keys, key)) | {"verdict_class": vc, "n_claims": len(part),
                                                "n_readings": int(part["n_readings"].sum())})
    return pd.DataFrame(rows, columns=keys + ["verdict_class", "n_claims", "n_readings"])
