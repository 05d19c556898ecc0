"""Published results as data: the tables of the published studies under data/reference.

Layout (documented in docs/reference_data.md)::

    data/reference/<source_id>/source.json        citation, seed file + sha256, systems, fair comparison pairs
    data/reference/<source_id>/<table_id>.json    table provenance: caption, where it sits in the source text,
                                                  columns -> systems, rows -> metrics, metric units/semantics
    data/reference/<source_id>/<table_id>.csv     one row per metric x system, the cell exactly as printed
    data/reference/probe_mapping.csv              published metric -> our probe (exact / close / none)
    data/reference/headline_claims.json           ratios the papers state, checked by reference_claims

Cells are kept exactly as printed (``cell_as_published``).  Where a cell is
visibly wrong the CSV says so (``correction`` = ``corrected``, ``set_na``, or
``reattributed`` when the cited source gives the value to another system,
with a ``note``); ``value`` is what analyses use, ``value_published`` is what
the number in the cell reads as.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.catalog.registry import DEFAULT_PROBES
from osbench_analysis.store.schema import ARCH_CLASSES

# unit code -> (label as written in tables and docs, how it converts to a common form)
UNITS: dict[str, tuple[str, str]] = {
    "us_per_op": ("µs per operation", "identity_us"),
    "us_total": ("µs for n_ops operations in total", "total_us_over_n_ops"),
    "count_per_window": ("operations counted in a window of window_s seconds", "window_over_count"),
    "loops_per_s": ("loops per second (lps)", "per_second"),
    "loops_per_min": ("loops per minute (lpm)", "per_minute"),
    "requests_per_s": ("requests per second", "per_second"),
    "mails_per_s": ("mails per second", "per_second"),
    "jobs_per_min": ("jobs per minute", "per_minute"),
    "KB_per_s": ("KB per second (1 KB = 1024 B)", "kb_to_mb"),
    "MB_per_s": ("MB per second (1 MB = 1024 KB)", "identity_mb"),
    "s_total": ("seconds for an operation suite", "none"),
    "events_per_s": ("events per second (system counter)", "none"),
    "percent": ("percent", "none"),
    "pages": ("memory pages (page size not stated)", "none"),
    "MB": ("megabytes", "none"),
    "processes": ("number of processes", "none"),
    "load_average": ("load average", "none"),
}

# unit text printed inside a cell -> unit code; 'lmp' is the MINIX paper's spelling of lpm
CELL_UNIT_SUFFIXES: dict[str, str] = {
    "lps": "loops_per_s", "loop/s": "loops_per_s", "lpm": "loops_per_min", "lmp": "loops_per_min",
    "KBps": "KB_per_s", "reqs/sec": "requests_per_s", "mails/sec": "mails_per_s", "%": "percent", "MB": "MB",
}

TABLE_KINDS = ("values", "in_text", "systems", "figures_only")
#: "reattributed": the value is kept and the row names the system the cited source gives it to.
CORRECTIONS = ("", "corrected", "set_na", "reattributed")
MATCHES = ("exact", "close", "none")
VALUE_CSV_COLUMNS = ["metric_id", "system_id", "cell_as_published", "correction", "value_corrected", "note"]
MAPPING_COLUMNS = ["source_id", "table_id", "metric_id", "probe", "probe_variant", "match",
                   "our_ops_per_published_op", "method_difference"]

# What load_reference returns, in this order.
REFERENCE_COLUMNS = [
    "source_id", "table_id", "table_number", "caption_as_published", "metric_id", "metric_as_published",
    "system_id", "system_as_published", "os", "os_version", "hardware", "arch_class",
    "cell_as_published", "value_published", "correction", "value_corrected", "value", "note",
    "unit", "unit_label", "unit_as_printed", "semantics", "op", "higher_is_better", "primitive", "window_s", "n_ops",
    "convertible", "not_convertible_reason", "design_caveat", "us_per_op", "MB_per_s", "conversion",
    "citation", "seed_file",
]



class ReferenceDataError(ValueError):
    """The reference data on disk is inconsistent; the message names the file and the fix."""


def default_reference_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "data" / "reference"


# ---------------------------------------------------------------------------
# cells

@dataclass(frozen=True)
class ParsedCell:
    value: float          # NaN unless status == "number"
    unit: str | None      # unit code printed in the cell, if any
    status: str           # number | published_na | malformed


# Thousands may be grouped by commas ("15,333") or spaces ("954 660"), as printed.
_NUMBER = re.compile(r"^(?P<num>\d{1,3}(?:[ ,]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?P<rest>.*)$")


def parse_cell(text: str) -> ParsedCell:
    """Read a printed cell: a number with optional thousands separators and unit suffix."""
    cell = str(text).strip()
    if cell == "None":
        return ParsedCell(math.nan, None, "published_na")
    m = _NUMBER.match(cell)
    if not m:
        return ParsedCell(math.nan, None, "malformed")
    rest = m.group("rest").strip()
    if rest and rest not in CELL_UNIT_SUFFIXES:
        return ParsedCell(math.nan, None, "malformed")
    value = float(m.group("num").replace(",", "").replace(" ", ""))
    return ParsedCell(value, CELL_UNIT_SUFFIXES.get(rest), "number")


# ---------------------------------------------------------------------------
# conversion to a common form

def convert_value(value: float, unit: str, *, window_s: float | None = None,
                  n_ops: float | None = None) -> tuple[str, float, str]:
    """(common unit, converted value, formula) for one published value.

    Common units: 'us_per_op' for costs and rates of operations, 'MB_per_s'
    for bandwidths.  Units with no per-operation meaning raise
    ReferenceDataError: callers decide convertibility from the metric record.
    """
    if unit not in UNITS:
        raise ReferenceDataError(f"unit {unit!r} unknown (known: {', '.join(UNITS)})")
    how = UNITS[unit][1]
    v = float(value)
    if how == "identity_us":
        return "us_per_op", v, "as published"
    if how == "total_us_over_n_ops":
        if not n_ops:
            raise ReferenceDataError(f"unit us_total needs n_ops > 0 (got {n_ops!r})")
        return "us_per_op", v / n_ops, f"µs total / {n_ops:g} operations"
    if how == "window_over_count":
        if not window_s:
            raise ReferenceDataError(f"unit count_per_window needs window_s > 0 (got {window_s!r})")
        return "us_per_op", window_s * 1e6 / v, f"{window_s:g} s x 1e6 / count"
    if how == "per_second":
        return "us_per_op", 1e6 / v, "1e6 / (per second)"
    if how == "per_minute":
        return "us_per_op", 60e6 / v, "60e6 / (per minute)"
    if how == "kb_to_mb":
        return "MB_per_s", v / 1024.0, "KB/s / 1024"
    if how == "identity_mb":
        return "MB_per_s", v, "as published"
    raise ReferenceDataError(f"unit {unit!r} ({UNITS[unit][0]}) has no per-operation or bandwidth form")


def _normalise_row(row) -> tuple[float, float, str]:
    if not row["convertible"] or pd.isna(row["value"]):
        return math.nan, math.nan, ""
    common, converted, formula = convert_value(row["value"], row["unit"], window_s=row["window_s"], n_ops=row["n_ops"])
    if common == "us_per_op":
        return converted, math.nan, formula
    return math.nan, converted, formula


def normalise(ref: pd.DataFrame) -> pd.DataFrame:
    """Add us_per_op, MB_per_s and the formula used; non-convertible rows keep NaN and their reason."""
    out = ref.copy()
    converted = [_normalise_row(r) for _, r in out.iterrows()]
    out["us_per_op"] = [c[0] for c in converted]
    out["MB_per_s"] = [c[1] for c in converted]
    out["conversion"] = [c[2] for c in converted]
    if "unit_as_printed" in out.columns:
        misprinted = (out["unit_as_printed"] != out["unit"]) & (out["conversion"] != "")
        out.loc[misprinted, "conversion"] = [
            f"{c} (printed as {UNITS[p][0]}; read as {UNITS[u][0]}, see the table's issues)"
            for c, p, u in zip(out.loc[misprinted, "conversion"], out.loc[misprinted, "unit_as_printed"], out.loc[misprinted, "unit"])]
    return out


# ---------------------------------------------------------------------------
# loading and validation

def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ReferenceDataError(f"{path}: not valid JSON ({e})") from None


_BIBKEY = re.compile(r"^[A-Za-z][A-Za-z0-9_:-]*$")


def load_sources(root: str | Path | None = None) -> dict[str, dict]:
    """source_id -> source record (citation, seed file, systems, comparison pairs)."""
    root = Path(root or default_reference_dir())
    if not root.is_dir():
        raise ReferenceDataError(f"reference data folder {root} does not exist")
    sources = {}
    for path in sorted(root.glob("*/source.json")):
        src = _read_json(path)
        if src.get("source_id") != path.parent.name:
            raise ReferenceDataError(f"{path}: source_id {src.get('source_id')!r} must equal its folder name {path.parent.name!r}")
        for key in ("citation", "seed_file", "seed_sha256", "systems", "bibkey"):
            if not src.get(key):
                raise ReferenceDataError(f"{path}: '{key}' is missing or empty")
        if not _BIBKEY.match(src["bibkey"]):
            raise ReferenceDataError(f"{path}: bibkey {src['bibkey']!r} is not a usable BibTeX key (letters, digits, _ : -)")
        for s in src["systems"]:
            for key in ("system_id", "label_as_published", "os", "os_version", "hardware", "arch_class"):
                if not s.get(key):
                    raise ReferenceDataError(f"{path}: system {s.get('system_id')!r} lacks '{key}'")
            if s["arch_class"] not in ARCH_CLASSES:
                raise ReferenceDataError(f"{path}: system {s['system_id']!r} arch_class {s['arch_class']!r} "
                                         f"not one of {ARCH_CLASSES}")
        ids = {s["system_id"] for s in src["systems"]}
        for pair in src.get("comparison_pairs", []):
            for side in ("subject", "baseline"):
                if pair.get(side) not in ids:
                    raise ReferenceDataError(f"{path}: comparison pair {side} {pair.get(side)!r} is not a system of this source")
        sources[path.parent.name] = src
    if not sources:
        raise ReferenceDataError(f"no <source>/source.json under {root}")
    return sources


def bibkeys(root: str | Path | None = None) -> dict[str, str]:
    """source_id -> BibTeX key of each published study (its source.json 'bibkey'), for \\cite{}."""
    return {sid: src["bibkey"] for sid, src in load_sources(root).items()}


def bibkey(source_id: str, root: str | Path | None = None) -> str:
    """The BibTeX key of one published study, e.g. bibkey('miao_minix3_linux') for \\cite{...}."""
    keys = bibkeys(root)
    if source_id not in keys:
        raise ReferenceDataError(f"no published study {source_id!r} (known: {', '.join(keys)})")
    return keys[source_id]


def load_table_specs(root: str | Path | None = None) -> list[tuple[str, dict]]:
    """(source_id, table record) for every table JSON, sorted by source then table."""
    root = Path(root or default_reference_dir())
    specs = []
    for path in sorted(root.glob("*/*.json")):
        if path.name == "source.json":
            continue
        spec = _read_json(path)
        if spec.get("table_id") != path.stem:
            raise ReferenceDataError(f"{path}: table_id {spec.get('table_id')!r} must equal the file name {path.stem!r}")
        if spec.get("kind") not in TABLE_KINDS:
            raise ReferenceDataError(f"{path}: kind {spec.get('kind')!r} not one of {TABLE_KINDS}")
        for mid, m in spec.get("metrics", {}).items():
            _validate_metric(path, mid, m)
        specs.append((path.parent.name, spec))
    return specs


def _validate_metric(path: Path, mid: str, m: dict) -> None:
    where = f"{path}: metric {mid!r}"
    for key in ("name_as_published", "unit", "semantics", "primitive"):
        if not m.get(key):
            raise ReferenceDataError(f"{where} lacks '{key}'")
    if m["unit"] not in UNITS:
        raise ReferenceDataError(f"{where}: unit {m['unit']!r} unknown (known: {', '.join(UNITS)})")
    if m.get("unit_as_printed"):
        # the source prints one unit but the benchmark reports another: both recorded, the reason required
        if m["unit_as_printed"] not in UNITS:
            raise ReferenceDataError(f"{where}: unit_as_printed {m['unit_as_printed']!r} unknown (known: {', '.join(UNITS)})")
        if not m.get("unit_note"):
            raise ReferenceDataError(f"{where}: unit_as_printed differs from unit: add a unit_note saying why the printed unit is wrong")
    if "higher_is_better" not in m:
        raise ReferenceDataError(f"{where} lacks 'higher_is_better' (true, false, or null with higher_is_better_note)")
    if m["higher_is_better"] is None and not m.get("higher_is_better_note"):
        raise ReferenceDataError(f"{where}: higher_is_better is null without a higher_is_better_note saying why")
    if not isinstance(m.get("convertible"), bool):
        raise ReferenceDataError(f"{where}: 'convertible' must be true or false")
    if m["convertible"]:
        if UNITS[m["unit"]][1] == "none":
            raise ReferenceDataError(f"{where}: unit {m['unit']!r} cannot be converted; set convertible false with a reason")
        if m["unit"] == "count_per_window" and not m.get("window_s"):
            raise ReferenceDataError(f"{where}: count_per_window needs window_s")
        if m["unit"] == "us_total" and not m.get("n_ops"):
            raise ReferenceDataError(f"{where}: us_total needs n_ops")
        if UNITS[m["unit"]][1] not in ("kb_to_mb", "identity_mb") and not m.get("op"):
            raise ReferenceDataError(f"{where}: a metric converted to µs per operation must say what one operation is ('op')")
    elif not m.get("not_convertible_reason"):
        raise ReferenceDataError(f"{where}: convertible false needs a not_convertible_reason")


def _read_values(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    if list(df.columns) != VALUE_CSV_COLUMNS:
        raise ReferenceDataError(f"{path}: columns {list(df.columns)} must be {VALUE_CSV_COLUMNS}")
    return df


def _value_rows(source_id: str, spec: dict, values: pd.DataFrame, systems: dict, path: Path) -> list[dict]:
    rows = []
    seen = set()
    for i, v in values.iterrows():
        where = f"{path} line {i + 2}"
        key = (v["metric_id"], v["system_id"])
        if key in seen:
            raise ReferenceDataError(f"{where}: {key} appears twice")
        seen.add(key)
        metric = spec["metrics"].get(v["metric_id"])
        if metric is None:
            raise ReferenceDataError(f"{where}: metric {v['metric_id']!r} is not defined in {path.with_suffix('.json').name}")
        system = systems.get(v["system_id"])
        if system is None:
            raise ReferenceDataError(f"{where}: system {v['system_id']!r} is not in {source_id}/source.json")
        parsed = parse_cell(v["cell_as_published"])
        correction = v["correction"]
        if correction not in CORRECTIONS:
            raise ReferenceDataError(f"{where}: correction {correction!r} not one of {CORRECTIONS}")
        if correction and not v["note"]:
            raise ReferenceDataError(f"{where}: a correction ({correction}) needs a note saying why")
        if parsed.status == "malformed" and not correction:
            raise ReferenceDataError(f"{where}: cell {v['cell_as_published']!r} cannot be read as a number; "
                                     "keep it and add correction 'corrected' or 'set_na' with a note")
        if parsed.status == "published_na" and not v["note"]:
            raise ReferenceDataError(f"{where}: cell {v['cell_as_published']!r} is a published NA; add a note saying what it means")
        if parsed.unit is not None and parsed.unit not in (metric["unit"], metric.get("unit_as_printed")):
            raise ReferenceDataError(f"{where}: the cell prints unit {parsed.unit!r} but metric {v['metric_id']!r} "
                                     f"is declared {metric['unit']!r}")
        if correction == "corrected":
            try:
                corrected = float(v["value_corrected"])
            except ValueError:
                raise ReferenceDataError(f"{where}: correction 'corrected' needs a numeric value_corrected "
                                         f"(got {v['value_corrected']!r})") from None
            value = corrected
        else:
            if v["value_corrected"]:
                raise ReferenceDataError(f"{where}: value_corrected is set but correction is {correction!r}")
            corrected = math.nan
            value = math.nan if correction == "set_na" else parsed.value
        rows.append({
            "source_id": source_id, "table_id": spec["table_id"], "table_number": spec.get("table_number") or "",
            "caption_as_published": spec.get("caption_as_published") or "",
            "metric_id": v["metric_id"], "metric_as_published": metric["name_as_published"],
            "system_id": v["system_id"], "system_as_published": system["label_as_published"],
            "os": system["os"], "os_version": system["os_version"], "hardware": system["hardware"],
            "arch_class": system["arch_class"],
            "cell_as_published": v["cell_as_published"], "value_published": parsed.value,
            "correction": correction, "value_corrected": corrected, "value": value, "note": v["note"],
            "unit": metric["unit"], "unit_label": UNITS[metric["unit"]][0],
            "unit_as_printed": metric.get("unit_as_printed") or metric["unit"], "semantics": metric["semantics"],
            "op": metric.get("op", ""), "higher_is_better": metric["higher_is_better"],
            "primitive": metric["primitive"], "window_s": metric.get("window_s", math.nan),
            "n_ops": metric.get("n_ops", math.nan), "convertible": metric["convertible"],
            "not_convertible_reason": metric.get("not_convertible_reason", ""),
            # why a factor of this metric is not the kernel design's (a feature one system lacks), as the study says
            "design_caveat": metric.get("design_caveat", ""),
        })
    return rows


def load_reference(root: str | Path | None = None) -> pd.DataFrame:
    """All published values, one row per table x metric x system, with provenance and normalised columns."""
    root = Path(root or default_reference_dir())
    sources = load_sources(root)
    rows = []
    for source_id, spec in load_table_specs(root):
        if source_id not in sources:
            raise ReferenceDataError(f"{root / source_id}: table {spec['table_id']!r} without a source.json")
        if spec["kind"] not in ("values", "in_text"):
            continue
        path = root / source_id / f"{spec['table_id']}.csv"
        if not path.is_file():
            raise ReferenceDataError(f"{path} is missing (kind {spec['kind']!r} tables keep their values in a CSV)")
        systems = {s["system_id"]: s for s in sources[source_id]["systems"]}
        rows += _value_rows(source_id, spec, _read_values(path), systems, path)
    ref = pd.DataFrame(rows)
    ref["citation"] = ref["source_id"].map({k: s["citation"] for k, s in sources.items()})
    ref["seed_file"] = ref["source_id"].map({k: s["seed_file"] for k, s in sources.items()})
    ref["higher_is_better"] = ref["higher_is_better"].astype(object)
    ref = normalise(ref)
    return ref[REFERENCE_COLUMNS].reset_index(drop=True)


def load_probe_mapping(root: str | Path | None = None) -> pd.DataFrame:
    """published metric -> our probe, with match quality and the difference in method."""
    path = Path(root or default_reference_dir()) / "probe_mapping.csv"
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    if list(df.columns) != MAPPING_COLUMNS:
        raise ReferenceDataError(f"{path}: columns {list(df.columns)} must be {MAPPING_COLUMNS}")
    bad = df[~df["match"].isin(MATCHES)]
    if len(bad):
        raise ReferenceDataError(f"{path}: match {bad['match'].iloc[0]!r} on {bad['metric_id'].iloc[0]} not one of {MATCHES}")
    unknown = set(df["probe"]) - set(DEFAULT_PROBES) - {""}
    if unknown:
        raise ReferenceDataError(f"{path}: probes {sorted(unknown)} unknown (ours: {', '.join(DEFAULT_PROBES)})")
    linked = df["match"] != "none"
    if (df.loc[linked, "probe"] == "").any() or (df.loc[~linked, "probe"] != "").any():
        bad = df[(linked & (df["probe"] == "")) | (~linked & (df["probe"] != ""))].iloc[0]
        raise ReferenceDataError(f"{path}: {bad['table_id']}/{bad['metric_id']}: match {bad['match']!r} with probe "
                                 f"{bad['probe']!r} (exact/close need a probe, none must have none)")
    if (df["method_difference"].str.strip() == "").any():
        bad = df[df["method_difference"].str.strip() == ""].iloc[0]
        raise ReferenceDataError(f"{path}: {bad['table_id']}/{bad['metric_id']} has no method_difference")
    df["our_ops_per_published_op"] = pd.to_numeric(df["our_ops_per_published_op"].replace("", np.nan))
    return df


# ---------------------------------------------------------------------------
# summaries

def capture_summary(root: str | Path | None = None, ref: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per table: kind, caption, metrics, values captured, corrected/NA cells, values convertible to a common unit."""
    root = Path(root or default_reference_dir())
    ref = load_reference(root) if ref is None else ref
    rows = []
    for source_id, spec in load_table_specs(root):
        part = ref[(ref["source_id"] == source_id) & (ref["table_id"] == spec["table_id"])]
        rows.append({
            "source_id": source_id, "table_id": spec["table_id"], "kind": spec["kind"],
            "table_number": spec.get("table_number") or "",
            "caption_as_published": spec.get("caption_as_published") or spec.get("caption_note") or "",
            "n_metrics": len(spec.get("metrics", {})), "n_values": len(part),
            "n_corrected_or_na": int((part["correction"] != "").sum()),
            "n_published_na": int(((part["correction"] == "") & part["value_published"].isna()).sum()),
            "n_common_unit": int(part["us_per_op"].notna().sum() + part["MB_per_s"].notna().sum()),
        })
    return pd.DataFrame(rows)


def source_issues(root: str | Path | None = None, ref: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every problem found in the sources: table-level issues, corrected/NA cells, cell reading notes,
    and totals that do not add up."""
    root = Path(root or default_reference_dir())
    ref = load_reference(root) if ref is None else ref
    rows = []
    for source_id, spec in load_table_specs(root):
        for issue in spec.get("issues", []):
            rows.append({"source_id": source_id, "table_id": spec["table_id"], "metric_id": "", "system_id": "",
                         "kind": "table", "what": issue["what"], "action": issue["action"]})
        for check in spec.get("totals_checks", []):
            rows += _totals_issues(source_id, spec["table_id"], check, ref)
    cells = ref[ref["note"] != ""]
    for _, r in cells.iterrows():
        rows.append({"source_id": r["source_id"], "table_id": r["table_id"], "metric_id": r["metric_id"],
                     "system_id": r["system_id"], "kind": f"cell ({r['correction']})" if r["correction"] else "cell note",
                     "what": f"printed {r['cell_as_published']!r}: {r['note']}",
                     "action": {"set_na": "value set to NA", "corrected": f"value corrected to {r['value_corrected']:g}",
                                "reattributed": "value kept, attributed to the system the cited source names"}
                     .get(r["correction"], "value kept as published")})
    return pd.DataFrame(rows, columns=["source_id", "table_id", "metric_id", "system_id", "kind", "what", "action"])


def totals_mismatches(ref: pd.DataFrame, source_id: str, table_id: str, total_metric: str,
                      part_metrics: list[str], rounding_per_part: float) -> pd.DataFrame:
    """Per system: printed total, sum of printed parts, difference, and the largest difference rounding explains."""
    t = ref[(ref["source_id"] == source_id) & (ref["table_id"] == table_id)]
    out = []
    for system_id, g in t.groupby("system_id"):
        by_metric = g.set_index("metric_id")["value"]
        missing = [m for m in [total_metric, *part_metrics] if m not in by_metric.index]
        if missing:
            raise ReferenceDataError(f"{source_id}/{table_id}: totals check names metrics {missing} with no value for {system_id}")
        parts = float(by_metric[part_metrics].sum())
        out.append({"system_id": system_id, "total_printed": float(by_metric[total_metric]), "sum_of_parts": parts,
                    "difference": parts - float(by_metric[total_metric]),
                    "max_rounding_difference": rounding_per_part * len(part_metrics)})
    return pd.DataFrame(out)


def _totals_issues(source_id: str, table_id: str, check: dict, ref: pd.DataFrame) -> list[dict]:
    mism = totals_mismatches(ref, source_id, table_id, check["total_metric"], check["part_metrics"],
                             check.get("rounding_per_part", 0.0))
    rows = []
    for _, m in mism[mism["difference"] != 0].iterrows():
        within = abs(m["difference"]) <= m["max_rounding_difference"]
        rows.append({"source_id": source_id, "table_id": table_id, "metric_id": check["total_metric"],
                     "system_id": m["system_id"], "kind": "totals",
                     "what": (f"printed total {m['total_printed']:g} but the printed parts sum to {m['sum_of_parts']:g} "
                              f"(difference {m['difference']:+g}; rounding of {len(check['part_metrics'])} parts explains "
                              f"at most ±{m['max_rounding_difference']:g})"),
                     "action": "kept as published; " + ("at the edge of rounding" if within else "more than rounding explains")})
    return rows
