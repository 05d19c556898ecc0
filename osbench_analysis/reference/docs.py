"""The generated parts of docs/reference_data.md: what was captured, the claims with their readings and
verdict classes, and the probe mapping, written from data/reference so the document cannot drift from it.

    python -m osbench_analysis.reference.docs            # rewrite the generated sections in place
    python -m osbench_analysis.reference.docs --check    # exit 1 if the document is out of date

Each generated section sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``; the
text around them is written by hand.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

from osbench_analysis.reference import studies as reference
from osbench_analysis.reference import claims as reference_claims

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference_data.md"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _num(x: float) -> str:
    return "—" if pd.isna(x) else f"{x:.3g}"


def capture_section(root=None) -> str:
    ref = reference.load_reference(root)
    summary = reference.capture_summary(root, ref)
    lines = ["| source | table | kind | metrics | values | corrected or NA | in a common unit |", "|---|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        lines.append(f"| `{r.source_id}` | {r.table_id} | {r.kind} | {r.n_metrics} | {r.n_values} | {r.n_corrected_or_na} | {r.n_common_unit} |")
    n_metrics = ref.drop_duplicates(["source_id", "table_id", "metric_id"]).shape[0]
    lines += ["", f"{len(summary)} tables, **{len(ref)} values** ({n_metrics} metrics with values); "
                  f"{int(summary['n_common_unit'].sum())} of them converted to µs per operation or MB/s."]
    return "\n".join(lines)


def claims_section(root=None) -> str:
    ref = reference.load_reference(root)
    claims = reference_claims.load_claims(root)
    evaluated = reference_claims.evaluate_claims(ref, claims)
    readings = reference_claims.evaluate_readings(ref, claims)
    counts = reference_claims.verdict_counts(evaluated)
    lines = ["| verdict class | claims | readings |", "|---|---|---|"]
    lines += [f"| {r.verdict_class} | {r.n_claims} | {r.n_readings} |" for r in counts.itertuples()]
    lines += [f"| **total** | **{len(evaluated)}** | **{int((readings['rejected'] == '').sum())}** "
              f"(and {int((readings['rejected'] != '').sum())} rejected) |", "",
              "| source | claim | stated | readings: factor from the printed cells, verdict | class |", "|---|---|---|---|---|"]
    for c in evaluated.itertuples():
        if c.verdict_class == "not checkable":
            detail = f"not checkable: {c.not_checkable_reason}"
        else:
            g = readings[readings["claim_id"] == c.claim_id]
            detail = "; ".join(f"{'**' if r.primary else ''}{r.reading}{'**' if r.primary else ''}: {_num(r.factor)} "
                               f"{'holds' if r.holds else 'fails'}{' (knife-edge)' if r.knife_edge else ''}"
                               f"{f' (rejected: {r.rejected})' if r.rejected else ''}"
                               for r in g.itertuples())
            if c.circular_reason:
                detail += f". Circular: {c.circular_reason}"
        lines.append(f"| {c.source_id.split('_')[0]} | {_cell(c.statement)} (`{c.claim_id}`) | {_cell(c.stated)} | "
                     f"{_cell(detail)} | {c.verdict_class} |")
    lines += ["", "The primary reading (the one the sentence most plausibly means) is in bold."]
    return "\n".join(lines)


def mapping_section(root=None) -> str:
    mapping = reference.load_probe_mapping(root)
    specs = {(s, spec["table_id"], m): meta["name_as_published"]
             for s, spec in reference.load_table_specs(root) for m, meta in spec.get("metrics", {}).items()}
    linked = mapping[mapping["match"] != "none"].sort_values(["probe", "source_id", "table_id", "metric_id"])
    lines = ["| our probe | published metric | match | our ops per published op | difference in method |", "|---|---|---|---|---|"]
    for r in linked.itertuples():
        probe = f"`{r.probe}`" + (f" ({r.probe_variant})" if r.probe_variant else "")
        ops = "" if pd.isna(r.our_ops_per_published_op) else f"{r.our_ops_per_published_op:g}"
        name = specs.get((r.source_id, r.table_id, r.metric_id), r.metric_id)
        lines.append(f"| {probe} | {r.source_id} {r.table_id}: \"{_cell(name)}\" | {r.match} | {ops} | {_cell(r.method_difference)} |")
    counts = mapping["match"].value_counts()
    lines += ["", f"{len(mapping)} published metrics: {counts.get('exact', 0)} exact, {counts.get('close', 0)} close, "
                  f"{counts.get('none', 0)} without a probe of ours (reason in the CSV)."]
    return "\n".join(lines)


SECTIONS = {"capture": capture_section, "claims": claims_section, "mapping": mapping_section}


def render(text: str, root=None) -> str:
    """The document with every generated section rewritten from the data."""
    for name, make in SECTIONS.items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n)(?:.*?\n)?(<!-- /generated:{name} -->)", re.S)
        if not pattern.search(text):
            raise reference.ReferenceDataError(f"{DOC.name}: no '<!-- generated:{name} -->' ... '<!-- /generated:{name} -->' block")
        body = make(root)
        text = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the generated sections are out of date")
    ap.add_argument("--doc", type=Path, default=DOC)
    args = ap.parse_args(argv)
    text = args.doc.read_text(encoding="utf-8")
    new = render(text)
    if args.check:
        if new != text:
            print(f"{args.doc} is out of date: run python -m osbench_analysis.reference.docs", file=sys.stderr)
            return 1
        return 0
    args.doc.write_text(new, encoding="utf-8")
    print(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
