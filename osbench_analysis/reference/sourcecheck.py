"""Check data/reference against the published studies' source texts themselves.

Each table record says where its table sits in the seed text (the line it
follows, the line it precedes, its header lines).  From the CSV cells and the
record we rebuild every line of the table as it must read in the source and
compare it with the source, whitespace-insensitively: a changed digit, a
swapped column, a missing or extra row all show up as a mismatch.  Statements
quoted from running text (in-text values, headline claims) must appear in the
seed verbatim, and their values in the quote in order.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pandas as pd

from osbench_analysis.reference import studies as reference

SEEDS_ENV = "OSBENCH_SEEDS_DIR"


def default_seeds_dir() -> Path:
    """$OSBENCH_SEEDS_DIR, or shared/seeds beside this checkout (where CI and
    every developer machine keep it)."""
    if os.environ.get(SEEDS_ENV):
        return Path(os.environ[SEEDS_ENV])
    return Path(__file__).resolve().parents[3] / "shared" / "seeds"


def seeds_missing_reason(seeds_dir: str | Path) -> str:
    """One line for a test that needs the source texts and skips without them."""
    return (f"the published studies' source texts are not at {seeds_dir} (optional: set {SEEDS_ENV}=<folder> "
            "to check data/reference against them)")


def normalise_text(text: str) -> str:
    """Runs of whitespace (tabs, newlines, flattened table gaps) become one space."""
    return re.sub(r"\s+", " ", text).strip()


def read_seed(seeds_dir: str | Path, seed_file: str) -> str:
    path = Path(seeds_dir) / seed_file
    if not path.is_file():
        raise FileNotFoundError(f"seed document {path} not found; set {SEEDS_ENV} to the folder holding the seed texts")
    return path.read_text(encoding="utf-8")


def table_block(seed_text: str, after: str, before: str) -> list[str]:
    """Non-blank lines strictly between the unique line containing `after` and the next line containing `before`."""
    lines = seed_text.splitlines()
    starts = [i for i, line in enumerate(lines) if after in line]
    if len(starts) != 1:
        raise ValueError(f"start marker {after!r} found on {len(starts)} lines; it must identify exactly one")
    start = starts[0]
    end = next((i for i in range(start + 1, len(lines)) if before in lines[i]), None)
    if end is None:
        raise ValueError(f"end marker {before!r} not found after {after!r}")
    return [normalise_text(line) for line in lines[start + 1:end] if line.strip()]


def expected_table_lines(spec: dict, values: pd.DataFrame) -> list[str]:
    """The table as it must read in the source: header lines, then one line per row rebuilt from the cells."""
    lines = [normalise_text(h) for h in spec["source_block"]["header_lines"]]
    if spec["kind"] == "systems":
        return lines + [normalise_text(" ".join(r["cells"])) for r in spec["rows"]]
    cell = {(r.metric_id, r.system_id): r.cell_as_published for r in values.itertuples()}
    for row in spec["rows"]:
        parts = [row["label_as_published"]]
        for column in spec["columns"]:
            pieces = [cell.get((m, column["system_id"]), f"<no cell for {m}/{column['system_id']}>") for m in row["metric_ids"]]
            parts.append(row.get("cell_part_separator", " ").join(pieces))
        lines.append(normalise_text(" ".join(parts)))
    return lines


def _number_positions(quote: str, number: str) -> list[int]:
    # whole numbers only: '95' must not match inside '1950' or '9.5', nor the percentage '95%'
    return [m.start() for m in re.finditer(rf"(?<![\d.,]){re.escape(number)}(?!\d|[.,]\d|\s?%)", quote)]


def check_table(seed_text: str, spec: dict, values: pd.DataFrame | None = None) -> list[str]:
    """Problems found for one table; an empty list means the data reads exactly as the source."""
    problems = []
    doc = normalise_text(seed_text)
    if spec.get("caption_as_published") and normalise_text(spec["caption_as_published"]) not in doc:
        problems.append(f"caption {spec['caption_as_published']!r} not found in the source text")
    kind = spec["kind"]
    if kind in ("values", "systems"):
        block = spec["source_block"]
        try:
            actual = table_block(seed_text, block["after_line_containing"], block["before_line_containing"])
        except ValueError as e:
            return problems + [str(e)]
        expected = expected_table_lines(spec, values if values is not None else pd.DataFrame(columns=reference.VALUE_CSV_COLUMNS))
        for i in range(max(len(actual), len(expected))):
            a = actual[i] if i < len(actual) else "<no line>"
            e = expected[i] if i < len(expected) else "<no line>"
            if a != e:
                problems.append(f"line {i + 1} of the table: source reads {a!r}, data rebuilds {e!r}")
        if kind == "values":
            header_text = " ".join([normalise_text(block["after_line_containing"])] + actual[:len(block["header_lines"])])
            pos = 0
            for column in spec["columns"]:
                found = header_text.find(column["label_as_published"], pos)
                if found < 0:
                    problems.append(f"column label {column['label_as_published']!r} not found (in order) in the header")
                else:
                    pos = found + len(column["label_as_published"])
    elif kind in ("in_text", "figures_only"):
        cell = {} if values is None else {(r.metric_id, r.system_id): r.cell_as_published for r in values.itertuples()}
        for row in spec["rows"]:
            quote = normalise_text(row["quote"])
            if quote not in doc:
                problems.append(f"quote not found in the source text: {row['quote']!r}")
                continue
            pos = 0
            for metric_id, system_id in row.get("cells", []):
                printed = cell.get((metric_id, system_id))
                if printed is None:
                    problems.append(f"no cell for {metric_id}/{system_id}")
                    continue
                later = [p for p in _number_positions(quote, printed) if p >= pos]
                if not later:
                    problems.append(f"{metric_id}/{system_id} = {printed!r} not found (in order) in the quote {row['quote']!r}")
                else:
                    pos = later[0] + len(printed)
    if values is not None and kind in ("values", "in_text"):
        covered = {(m, c["system_id"]) for row in spec.get("rows", []) for m in row.get("metric_ids", [])
                   for c in spec.get("columns", [])} | {tuple(c) for row in spec.get("rows", []) for c in row.get("cells", [])}
        extra = set(zip(values["metric_id"], values["system_id"])) - covered
        if extra:
            problems.append(f"CSV rows not placed anywhere in the table layout: {sorted(extra)}")
    return problems


def seed_sha256(seeds_dir: str | Path, seed_file: str) -> str:
    return hashlib.sha256((Path(seeds_dir) / seed_file).read_bytes()).hexdigest()


def check_all(root: str | Path | None = None, seeds_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per problem (source_id, table_id, problem) over every table; empty when all data matches its source."""
    root = Path(root or reference.default_reference_dir())
    seeds_dir = Path(seeds_dir or default_seeds_dir())
    sources = reference.load_sources(root)
    rows = []
    for source_id, src in sources.items():
        actual = seed_sha256(seeds_dir, src["seed_file"])
        if actual != src["seed_sha256"]:
            rows.append((source_id, "", f"seed {src['seed_file']} has sha256 {actual[:12]}…, the data was checked against "
                                        f"{src['seed_sha256'][:12]}…: the seed changed, re-check the transcription"))
    for source_id, spec in reference.load_table_specs(root):
        seed = read_seed(seeds_dir, sources[source_id]["seed_file"])
        csv = root / source_id / f"{spec['table_id']}.csv"
        values = pd.read_csv(csv, dtype=str, keep_default_na=False) if csv.is_file() else None
        rows += [(source_id, spec["table_id"], p) for p in check_table(seed, spec, values)]
    return pd.DataFrame(rows, columns=["source_id", "table_id", "problem"])


def quote_in_seed(seed_text: str, quote: str) -> bool:
    return normalise_text(quote) in normalise_text(seed_text)


def transcription_report(root: str | Path | None = None, seeds_dir: str | Path | None = None) -> tuple[pd.DataFrame, str]:
    """(problems, one-line verdict) for the notebook; a missing seed folder is reported, not raised."""
    seeds_dir = Path(seeds_dir or default_seeds_dir())
    if not seeds_dir.is_dir():
        return (pd.DataFrame(columns=["source_id", "table_id", "problem"]),
                f"Folder of source texts {seeds_dir} not found: the transcription was not re-checked (set {SEEDS_ENV}).")
    problems = check_all(root, seeds_dir)
    n_tables = len(reference.load_table_specs(root))
    if problems.empty:
        return problems, f"All {n_tables} tables read exactly as in the source texts under {seeds_dir}."
    return problems, f"{len(problems)} problem(s) in {problems['table_id'].nunique()} of {n_tables} tables: see the rows below."
