"""The paper's appendix on the published studies, written from data/reference:
what was captured, every comparison the studies state recomputed under each
defensible reading with its verdict class (the precedence and the rejection
rules stated from reference_claims, not typed), the corrections made to the
sources, and the results the studies cite from others.

It depends only on the formatting and the claims modules, so reference_compare
can write it without importing the paper writer (paper -> sections ->
reference_compare -> paper was a circle)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from osbench_analysis.formatting import sig3, tex_escape
from osbench_analysis.paths import GENERATED_DIR

#: What each class means, in the words of the precedence paragraph.
VERDICT_MEANING = {
    "not checkable": "the study prints no numbers the sentence can be checked against",
    "circular": "the reading of the data was itself chosen with the sentence",
    "arithmetic checked": ("the sentence's number is the study's own division of two of its printed cells (tolerance "
                           "rule 'arithmetic') and every reading reproduces it: the division re-done, not an independent "
                           "confirmation (a division that does not reproduce falls through to the classes below)"),
    "knife-edge": "a reading's factor lies within the knife-edge band of a threshold",
    "depends": "the readings disagree (the claim depends on the reading)",
    "holds": "every reading meets the sentence",
    "fails": "no reading meets it",
}


def _readings_cell(g: pd.DataFrame) -> str:
    """The factor under each kept reading, marked by whether the claim holds under it; rejected ones counted."""
    parts = []
    kept = g[g["rejected"].fillna("") == ""]
    for r in kept.itertuples():
        if r.factor != r.factor:    # NaN: no reading
            continue
        mark = r"\,$\checkmark$" if r.holds else r"\,$\times$"
        parts.append(sig3(r.factor) + mark)
    n_rej = len(g) - len(kept)
    return "; ".join(parts) + (f"; {n_rej} rejected" if n_rej else "") if parts else "--"


def _rules_tex(rules: dict[str, str], names: tuple[str, ...]) -> str:
    """The named tolerance rules of the claims file, quoted without their 'rule ...:' prefix."""
    return "; ".join(tex_escape(rules[n].split(": ", 1)[-1]) for n in names if n in rules) or "see the claims file"


def precedence_tex() -> str:
    """The stated order in which a claim's class is decided, from reference_claims."""
    from osbench_analysis.reference.claims import KNIFE_EDGE_BAND, PRINT_DIGITS, VERDICT_PRECEDENCE

    steps = []
    for v in VERDICT_PRECEDENCE:
        if v == "fails":
            continue
        name = "holds or fails" if v == "holds" else v
        meaning = "every reading meets the sentence, or none does" if v == "holds" else VERDICT_MEANING[v]
        steps.append(f"\\emph{{{name}}} when {meaning}")
    band = f"{100 * KNIFE_EDGE_BAND:g}"
    return (f"A claim's class is the first of these that applies: {'; '.join(steps)}. The knife-edge band is "
            f"{band}\\% of the threshold either way, or the same number at {PRINT_DIGITS} significant digits: the "
            "published numbers are single runs without intervals and the thresholds are our conventions, so a factor "
            f"within {band}\\% of one neither confirms nor refutes the sentence.")


def sensitivity_tex(sens: pd.DataFrame | None) -> str:
    """How many claims fall in each class under narrower and wider knife-edge bands (Table tab:knife-band)."""
    from osbench_analysis.reference.claims import KNIFE_EDGE_BAND, VERDICT_CLASSES

    if sens is None or sens.empty:
        return ""
    classes = [v for v in VERDICT_CLASSES if v in sens.columns and sens[v].any()]
    rows = []
    for _, r in sens.iterrows():
        band = "print precision only" if r["band"] == 0 else f"{100 * r['band']:g}\\%"
        mark = " (used)" if abs(r["band"] - KNIFE_EDGE_BAND) < 1e-12 else ""
        rows.append(f"{band}{mark} & " + " & ".join(str(int(r[v])) for v in classes) + f" & {int(r['changed'])} \\\\")
    return "\n".join([
        "How much the verdicts depend on the band is in Table~\\ref{tab:knife-band}.",
        r"\begin{table}[!htbp]", r"\centering", r"\scriptsize",
        r"\begin{tabular}{l" + "r" * (len(classes) + 1) + "}", r"\toprule",
        "Knife-edge band & " + " & ".join(classes) + r" & changed \\", r"\midrule",
        *rows, r"\bottomrule", r"\end{tabular}",
        r"\caption{Claims per verdict class under knife-edge bands of other widths (changed: claims whose class "
        r"differs from the band used" + ("; arithmetic checked: the studies' own divisions of two cells re-done, not "
                                         "confirmations" if "arithmetic checked" in classes else "") + ").}",
        r"\label{tab:knife-band}", r"\end{table}", ""])


def rejection_tex(readings: pd.DataFrame, rules: dict[str, str]) -> str:
    """The rules that reject a reading before any verdict, quoted from the claims file, and the count."""
    from osbench_analysis.reference.claims import REJECTION_RULES

    stated = "; ".join(tex_escape(rules[r].split(": ", 1)[-1]) for r in REJECTION_RULES if r in rules)
    rej = readings[readings["rejected"].fillna("") != ""]
    return (f"Before any verdict a reading is rejected as implausible by one of two stated rules: {stated}. "
            f"{len(rej)} readings of {rej['claim_id'].nunique()} claims are rejected "
            "(Table~\\ref{tab:rejected}); their factors are not printed.")


def rejected_table_tex(readings: pd.DataFrame) -> str:
    rej = readings[readings["rejected"].fillna("") != ""].drop_duplicates(["claim_id", "reading_id"])
    if rej.empty:
        return ""
    rows = [f"{tex_escape(r.statement)}~\\citep{{{r.bibkey}}} & {tex_escape(r.reading)} & {tex_escape(r.rejected)} \\\\"
            for r in rej.itertuples()]
    return "\n".join([r"{\scriptsize", r"\begin{longtable}{p{0.28\linewidth}p{0.25\linewidth}p{0.33\linewidth}}",
                      r"\caption{Readings rejected before any verdict, with the rule and what the reading implies.}"
                      r"\label{tab:rejected}\\",
                      r"\toprule Claim & Reading & Why rejected \\ \midrule \endfirsthead",
                      r"\toprule Claim & Reading & Why rejected \\ \midrule \endhead",
                      *rows, r"\bottomrule", r"\end{longtable}}", ""])


def corrections_table_tex(issues: pd.DataFrame, keys: dict[str, str]) -> str:
    """Every change made to what a study printed (a value set to NA or corrected, a value reattributed) and
    every unit or reading note, as one table."""
    cells = issues[issues["kind"].astype(str).str.startswith("cell")]
    if cells.empty:
        return ""
    rows = []
    for r in cells.itertuples():
        where = f"{tex_escape(getattr(r, 'table_as_published', r.table_id))}: " \
                f"{tex_escape(getattr(r, 'metric_as_published', r.metric_id))}, " \
                f"{tex_escape(getattr(r, 'system_as_published', r.system_id))}"
        rows.append(f"\\citet{{{keys.get(r.source_id, r.source_id)}}} & {where} & {tex_escape(r.what)} & "
                    f"{tex_escape(r.action)} \\\\")
    return "\n".join([
        "Table~\\ref{tab:corrections} lists every cell whose printed form needed a decision: units printed "
        "differently, malformed or duplicated cells, a value the cited work gives to another system, and the "
        "split of a flattened cell.",
        r"{\scriptsize", r"\begin{longtable}{p{0.12\linewidth}p{0.18\linewidth}p{0.4\linewidth}p{0.14\linewidth}}",
        r"\caption{Corrections to the published sources and how each cell was read (the printed cell is kept "
        r"beside the value used).}\label{tab:corrections}\\",
        r"\toprule Study & Cell & As printed, and why & Action \\ \midrule \endfirsthead",
        r"\toprule Study & Cell & As printed, and why & Action \\ \midrule \endhead",
        *rows, r"\bottomrule", r"\end{longtable}}", ""])


def reference_section_tex(readings: pd.DataFrame, counts: pd.DataFrame, capture: pd.DataFrame,
                          cited: pd.DataFrame | None = None, issues: pd.DataFrame | None = None,
                          rules: dict[str, str] | None = None, keys: dict[str, str] | None = None,
                          sensitivity: pd.DataFrame | None = None) -> str:
    """The appendix 'Published results revisited'.

    readings: reference_claims.claims_table (one row per claim x reading, with `rejected`);
    counts: reference_claims.verdict_counts; capture: reference.capture_summary;
    cited: reference_compare.cited_results; issues: reference.source_issues;
    rules: reference_claims.load_rules; keys: reference.bibkeys."""
    if "rejected" not in readings.columns:
        readings = readings.assign(rejected="")
    n_sources, n_tables = capture["source_id"].nunique(), len(capture[capture["kind"] == "values"])
    n_values = int(capture["n_values"].sum())
    c = counts.set_index("verdict_class")
    n_claims = int(c["n_claims"].sum())
    n_read = int(c["n_readings"].sum())
    from osbench_analysis.reference.claims import VERDICT_CLASSES, VERDICT_PRECEDENCE

    cls = ", ".join(f"{int(c.loc[v, 'n_claims'])} {v}" for v in VERDICT_CLASSES
                    if v in c.index and int(c.loc[v, "n_claims"]))
    n_arith = int(c.loc["arithmetic checked", "n_claims"]) if "arithmetic checked" in c.index else 0
    checked = readings[readings["verdict_class"] != "not checkable"]
    order = {v: i for i, v in enumerate(VERDICT_PRECEDENCE)}
    groups = sorted(checked.groupby(["source_id", "claim_id"], sort=False),
                    key=lambda kv: (order.get(kv[1]["verdict_class"].iloc[0], 9), kv[0]))
    # claims are numbered in the table; a threshold taken from another claim names it by its number
    number = {cid: i + 1 for i, ((_, cid), _) in enumerate(groups)}
    rows = []
    for (_, cid), g in groups:
        r0 = g.iloc[0]
        stated = "; ".join(dict.fromkeys(g["stated"].astype(str)))
        for other in sorted(number, key=len, reverse=True):
            stated = stated.replace(other, f"\x00{number[other]}")
        stated = tex_escape(stated).replace("\x00", "\\#")
        rows.append(f"{number[cid]} & {tex_escape(r0['statement'])}~\\citep{{{r0['bibkey']}}} & {stated} & "
                    f"{_readings_cell(g)} & {tex_escape(r0['verdict_class'])} \\\\")
    out = [r"\section{Published results revisited}\label{sec:published}",
           f"The {n_sources} published studies hold {n_tables} tables with {n_values} published values, captured as "
           "data with their units and provenance and checked line by line against the source text. We recomputed "
           f"{n_claims} comparisons their texts state from their own tables. Where a sentence can be read in more than "
           "one defensible way (which columns, which machine, which aggregate, how an ambiguous cell splits), we "
           f"computed every reading ({n_read} kept in all). Each sentence's words are turned into a tolerance by a "
           "stated rule: " + _rules_tex(rules or {}, ("slight", "about", "significant", "far")) + ".",
           "", precedence_tex(), sensitivity_tex(sensitivity), "", rejection_tex(readings, rules or {}),
           f"The result: {cls}. " + _arithmetic_tex(n_arith)
           + "Table~\\ref{tab:claims} lists every checkable claim with its factor under each kept reading "
           "($\\checkmark$: the sentence holds under that reading).", ""]
    out += [r"{\scriptsize", r"\begin{longtable}{rp{0.34\linewidth}p{0.16\linewidth}p{0.2\linewidth}p{0.11\linewidth}}",
            r"\caption{Comparisons the published studies state, recomputed from their own tables: the factor under "
            r"each kept reading ($\checkmark$ the sentence holds, $\times$ it does not) and the verdict class.}"
            r"\label{tab:claims}\\",
            r"\toprule \# & Statement & Stated & Factor per reading & Verdict \\ \midrule \endfirsthead",
            r"\toprule \# & Statement & Stated & Factor per reading & Verdict \\ \midrule \endhead",
            *rows, r"\bottomrule", r"\end{longtable}}", ""]
    out.append(rejected_table_tex(readings))
    if issues is not None and len(issues):
        out.append(corrections_table_tex(issues, keys or {}))
    if cited is not None and len(cited):
        crow = [f"{tex_escape(r.metric_as_published)} & {tex_escape(r.system_as_published)}"
                + (" (reattributed, Table~\\ref{tab:corrections})" if getattr(r, "correction", "") == "reattributed" else "")
                + f" & {_cell_with_unit(r.cell_as_published, r.unit_label)} & {_cited_source(r)} \\\\"
                for r in cited.itertuples()]
        out += ["The studies also quote results of others that frame the microkernel question "
                "(Table~\\ref{tab:cited}).",
                r"{\scriptsize", r"\begin{longtable}{p{0.3\linewidth}p{0.18\linewidth}p{0.12\linewidth}p{0.24\linewidth}}",
                r"\caption{Results the studies cite from earlier work (as printed).}\label{tab:cited}\\",
                r"\toprule Result & System & As printed (unit) & Source \\ \midrule \endfirsthead",
                r"\toprule Result & System & As printed (unit) & Source \\ \midrule \endhead",
                *crow, r"\bottomrule", r"\end{longtable}}", ""]
    return "\n".join(out)


def _arithmetic_tex(n: int) -> str:
    """What the 'arithmetic checked' count means, said where the classes are counted ('' when there are none)."""
    if not n:
        return ""
    which = "claim is a study's own division of two of its" if n == 1 else "claims are the studies' own divisions of two of their"
    return (f"The {n} arithmetic checked {which} printed cells, re-done: that confirms the authors' arithmetic, not the "
            "comparison, so they are not counted as holding. ")


def _cell_with_unit(cell: str, unit_label: str) -> str:
    """A cited cell as printed, with its unit when the print gives a bare number ('10' -> '10 µs')."""
    import re

    cell = str(cell)
    if re.fullmatch(r"[0-9][0-9.,]*", cell.strip()) and isinstance(unit_label, str) and unit_label:
        return tex_escape(f"{cell} {unit_label.replace(' per operation', '')}")
    return tex_escape(cell)


def _cited_source(r) -> str:
    """Who prints a cited result and whose figures they are: '\\citet{study}, citing \\citet{work}', or, where
    the study cites other work there and the attribution is ours, says so."""
    cited = r.cited_bibkey if isinstance(r.cited_bibkey, str) else ""
    note = r.cited_note if isinstance(r.cited_note, str) else ""
    if cited and getattr(r, "attribution", "study") == "ours":
        return (f"\\citet{{{r.bibkey}}}; figures of \\citet{{{cited}}}, attributed by us"
                + (f" ({tex_escape(note.split(';')[0])})" if note else ""))
    if cited:
        return f"\\citet{{{r.bibkey}}}, citing \\citet{{{cited}}}"
    return f"\\citet{{{r.bibkey}}}" + (f" ({tex_escape(note)})" if note else "")


def write_reference_section(readings: pd.DataFrame, counts: pd.DataFrame, capture: pd.DataFrame,
                            cited: pd.DataFrame | None = None, out_dir: str | Path | None = None,
                            issues: pd.DataFrame | None = None, rules: dict[str, str] | None = None,
                            keys: dict[str, str] | None = None, sensitivity: pd.DataFrame | None = None) -> Path:
    path = (Path(out_dir) if out_dir else GENERATED_DIR) / "reference_section.tex"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(reference_section_tex(readings, counts, capture, cited, issues, rules, keys, sensitivity))
    return path
