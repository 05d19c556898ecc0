"""Published architecture comparisons beside this machine's measurements.

* architecture_ratios: for every fair pair a source names (same machine,
  microkernel/hybrid vs monolithic), the slowdown of the subject per metric.
* published_by_probe / ours_beside_published: published values converted to
  µs per operation, placed next to our per-probe estimates (the columns of
  stats.summarize), scaled by how many of our operations make one published
  operation.  Different hardware and eras: absolute values are context, not
  a comparison of kernels.
* environment_ratios: our own environment-vs-baseline ratios per probe, the
  measured counterpart of the published architecture ratios.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.reference import studies as reference
from osbench_analysis.reference.factors import cost
from osbench_analysis.paths import GENERATED_DIR
from osbench_analysis.catalog.families import PROBE_PRIMITIVE
from osbench_analysis.catalog.registry import PROBES

# PROBE_PRIMITIVE (the primitive each probe measures) is the catalog's: catalog/families.py

ESTIMATE_COLUMNS = ["campaign_id", "environment", "probe", "variant", "placement", "estimate_ns", "ci_low_ns", "ci_high_ns"]
HARDWARE_CAVEAT = "published values come from other hardware and other eras: context, not a like-for-like comparison"


def default_output_dir() -> Path:
    return GENERATED_DIR


def pair_label(source: dict, pair: dict) -> str:
    if pair.get("label"):
        return pair["label"]
    systems = {s["system_id"]: s for s in source["systems"]}
    sub, base = systems[pair["subject"]], systems[pair["baseline"]]
    return f"{sub['label_as_published']} vs {base['label_as_published']}"


def architecture_ratios(ref: pd.DataFrame, sources: dict[str, dict] | None = None) -> pd.DataFrame:
    """Slowdown of each comparison pair's subject (microkernel/hybrid) over its baseline, per metric.

    Only pairs the source itself names as fair (same machine, or the cited
    comparison) are used; metrics without a better direction are skipped.
    """
    sources = reference.load_sources() if sources is None else sources
    rows = []
    usable = ref[ref["value"].notna() & ref["higher_is_better"].map(lambda h: h is not None and h == h)]
    for source_id, src in sources.items():
        part = usable[usable["source_id"] == source_id]
        for pair in src.get("comparison_pairs", []):
            sub = part[part["system_id"] == pair["subject"]].set_index(["table_id", "metric_id"])
            base = part[part["system_id"] == pair["baseline"]].set_index(["table_id", "metric_id"])
            for key in sub.index.intersection(base.index):
                s, b = sub.loc[key], base.loc[key]
                rows.append({
                    "source_id": source_id, "table_id": key[0], "metric_id": key[1],
                    "metric_as_published": s["metric_as_published"], "primitive": s["primitive"],
                    "pair": pair_label(src, pair), "subject_system": pair["subject"], "subject_arch": s["arch_class"],
                    "baseline_system": pair["baseline"], "baseline_arch": b["arch_class"],
                    "subject_cell": s["cell_as_published"], "baseline_cell": b["cell_as_published"],
                    "slowdown_factor": cost(s["value"], bool(s["higher_is_better"])) / cost(b["value"], bool(b["higher_is_better"])),
                    "why_fair": pair["why"], "design_caveat": s.get("design_caveat", "") or "",
                })
    return pd.DataFrame(rows, columns=["source_id", "table_id", "metric_id", "metric_as_published", "primitive", "pair",
                                       "subject_system", "subject_arch", "baseline_system", "baseline_arch",
                                       "subject_cell", "baseline_cell", "slowdown_factor", "why_fair", "design_caveat"])


PUBLISHED_FACTOR_COLUMNS = [
    "primitive", "source_id", "bibkey", "study", "pair", "comparison", "subject_system", "subject_label", "subject_os",
    "subject_arch", "baseline_system", "baseline_label", "baseline_os", "baseline_arch", "table_id", "metric_id",
    "metric_as_published", "subject_cell", "baseline_cell", "slowdown_factor", "same_hardware", "cited", "hardware",
    "probes", "best_match", "why_fair", "design_caveat"]


def published_factors(ref: pd.DataFrame | None = None, sources: dict[str, dict] | None = None,
                      mapping: pd.DataFrame | None = None, root: str | Path | None = None) -> pd.DataFrame:
    """Every published subject-over-baseline factor, per primitive, for the figure "measured here vs published".

    One row per fair pair a study names (microkernel or hybrid over monolithic on the same machine, or a
    cited comparison such as L4Linux over native Linux) x metric.  `slowdown_factor` > 1: the subject
    (microkernel, hybrid, or the Linux-on-a-microkernel environment) is slower.  With the study's BibTeX key
    (`bibkey`, for \\cite{}), a short study label, system ids and printed labels and OSes, `comparison`
    ("microkernel over monolithic", ...), `same_hardware` (the study says both ran on one machine),
    `cited` (the study quotes someone else's number), and the probes of ours mapped to the metric
    (`probes`, `;`-joined, with the best match quality)."""
    ref = reference.load_reference(root) if ref is None else ref
    sources = reference.load_sources(root) if sources is None else sources
    mapping = reference.load_probe_mapping(root) if mapping is None else mapping
    arch = architecture_ratios(ref, sources)
    linked = mapping[mapping["match"] != "none"]
    probes = linked.groupby(["source_id", "table_id", "metric_id"])["probe"].apply(lambda p: ";".join(sorted(set(p))))
    best = linked.assign(rank=linked["match"].map({"exact": 0, "close": 1})).sort_values("rank") \
        .groupby(["source_id", "table_id", "metric_id"])["match"].first()
    rows = []
    for r in arch.itertuples(index=False):
        src = sources[r.source_id]
        systems = {s["system_id"]: s for s in src["systems"]}
        pair = next(p for p in src.get("comparison_pairs", []) if p["subject"] == r.subject_system
                    and p["baseline"] == r.baseline_system)
        sub, base = systems[r.subject_system], systems[r.baseline_system]
        key = (r.source_id, r.table_id, r.metric_id)
        rows.append({
            "primitive": r.primitive, "source_id": r.source_id, "bibkey": src["bibkey"],
            "study": src.get("short_title") or r.source_id, "pair": r.pair,
            "comparison": f"{r.subject_arch} over {r.baseline_arch}",
            "subject_system": r.subject_system, "subject_label": sub["label_as_published"], "subject_os": sub["os"],
            "subject_arch": r.subject_arch, "baseline_system": r.baseline_system,
            "baseline_label": base["label_as_published"], "baseline_os": base["os"], "baseline_arch": r.baseline_arch,
            "table_id": r.table_id, "metric_id": r.metric_id, "metric_as_published": r.metric_as_published,
            "subject_cell": r.subject_cell, "baseline_cell": r.baseline_cell, "slowdown_factor": r.slowdown_factor,
            "same_hardware": bool(pair.get("same_hardware", False)), "cited": bool(pair.get("cited", False)),
            "hardware": sub["hardware"] if sub["hardware"] == base["hardware"] else f"{sub['hardware']} / {base['hardware']}",
            "probes": probes.get(key, ""), "best_match": best.get(key, "none"), "why_fair": r.why_fair,
            "design_caveat": r.design_caveat})
    return pd.DataFrame(rows, columns=PUBLISHED_FACTOR_COLUMNS)


def published_factors_by_primitive(factors: pd.DataFrame | None = None, root: str | Path | None = None) -> pd.DataFrame:
    """One row per primitive x published pair: the geometric mean of that pair's factors over the metrics
    of the primitive, their range and count, the metrics, and the study's bibkey: one point with a
    published range per pair in the central figure.  `factors` is published_factors() output."""
    factors = published_factors(root=root) if factors is None else factors
    keys = ["primitive", "source_id", "bibkey", "study", "pair", "comparison", "subject_label", "baseline_label",
            "subject_arch", "baseline_arch", "same_hardware", "cited"]
    cols = keys + ["factor_geomean", "factor_min", "factor_max", "n_metrics", "metrics", "probes"]
    if factors.empty:
        return pd.DataFrame(columns=cols)
    out = factors.groupby(keys, sort=False).agg(
        factor_geomean=("slowdown_factor", lambda f: float(np.exp(np.mean(np.log(f))))),
        factor_min=("slowdown_factor", "min"), factor_max=("slowdown_factor", "max"),
        n_metrics=("slowdown_factor", "size"),
        metrics=("metric_as_published", lambda m: "; ".join(m)),
        probes=("probes", lambda p: ";".join(sorted({x for v in p for x in v.split(";") if x})))).reset_index()
    return out[cols]


CITED_RESULT_COLUMNS = ["source_id", "bibkey", "cited_bibkey", "cited_note", "attribution", "table_id", "metric_id", "metric_as_published", "system_id",
                        "system_as_published", "arch_class", "cell_as_published", "value", "unit", "unit_label", "note", "quote",
                        "correction"]


def cited_results(ref: pd.DataFrame | None = None, root: str | Path | None = None) -> pd.DataFrame:
    """The results the studies quote from earlier work in their running text (Mach 114 µs per message against
    L3's under 10 µs, Mach/L4/Unix RPC costs, the 66 % Mach degradation and the 75 % of it due to IPC, L4Linux
    and MkLinux AIM throughputs and slowdowns), one row per printed number, with the sentence it stands in,
    the citing study's bibkey and the cited work's (`cited_bibkey`, an entry of paper/references.bib): the
    Background section's numbers, as data."""
    ref = reference.load_reference(root) if ref is None else ref
    sources = reference.load_sources(root)
    rows = []
    for source_id, spec in reference.load_table_specs(root):
        if spec["kind"] != "in_text":
            continue
        part = ref[(ref["source_id"] == source_id) & (ref["table_id"] == spec["table_id"])].set_index(["metric_id", "system_id"])
        for block in spec.get("rows", []):
            for metric_id, system_id in block.get("cells", []):
                r = part.loc[(metric_id, system_id)]
                rows.append({"source_id": source_id, "bibkey": sources[source_id]["bibkey"],
                             "cited_bibkey": block.get("cited_bibkey", ""), "cited_note": block.get("cited_note", ""),
                             # 'ours': the study cites other work here; the figures' source is our attribution
                             "attribution": block.get("attribution", "study"),
                             "table_id": spec["table_id"],
                             "metric_id": metric_id, "metric_as_published": r["metric_as_published"], "system_id": system_id,
                             "system_as_published": r["system_as_published"], "arch_class": r["arch_class"],
                             "cell_as_published": r["cell_as_published"], "value": r["value"], "unit": r["unit"],
                             "unit_label": r["unit_label"], "note": r["note"], "quote": block["quote"],
                             "correction": r["correction"]})
    return pd.DataFrame(rows, columns=CITED_RESULT_COLUMNS)


def _variant_params(probe: str, variant: str) -> frozenset:
    """Non-default, non-filesystem parameters of a variant label like 'linkage=static,fs=tmpfs'."""
    defaults = PROBES[probe].defaults() if probe in PROBES else {}
    pairs = set()
    for part in filter(None, str(variant).split(",")):
        key, _, value = part.partition("=")
        if key == "fs" or defaults.get(key) == value:
            continue
        pairs.add((key, value))
    return frozenset(pairs)


def published_by_probe(ref: pd.DataFrame, mapping: pd.DataFrame) -> pd.DataFrame:
    """Published values that have a per-operation form and an exact/close probe of ours."""
    linked = mapping[(mapping["match"] != "none") & mapping["our_ops_per_published_op"].notna()]
    pub = ref[ref["us_per_op"].notna()]
    out = linked.merge(pub, on=["source_id", "table_id", "metric_id"], how="inner")
    return out[["probe", "probe_variant", "match", "our_ops_per_published_op", "method_difference", "source_id",
                "table_id", "metric_id", "metric_as_published", "system_id", "system_as_published", "arch_class",
                "hardware", "cell_as_published", "unit", "us_per_op"]].rename(columns={"us_per_op": "published_us_per_op"})


def ours_beside_published(estimates: pd.DataFrame, ref: pd.DataFrame, mapping: pd.DataFrame) -> pd.DataFrame:
    """Every mapped published value with our matching estimates beside it (NaN where we have none).

    estimates: one row per condition with at least ESTIMATE_COLUMNS (what
    stats.summarize returns).  Our per-op time is scaled to one published
    operation (e.g. ×0.5 when the paper reports one context switch and our
    operation is a round trip of two).
    """
    pub = published_by_probe(ref, mapping)
    missing = [c for c in ESTIMATE_COLUMNS if c not in estimates.columns]
    if missing:
        raise ValueError(f"estimates lack columns {missing}; expected at least {ESTIMATE_COLUMNS} (stats.summarize output)")
    est = estimates[ESTIMATE_COLUMNS].copy()
    est["variant_params"] = [_variant_params(p, v) for p, v in zip(est["probe"], est["variant"])]
    pub = pub.copy()
    pub["variant_params"] = [_variant_params(p, v) for p, v in zip(pub["probe"], pub["probe_variant"])]
    out = pub.merge(est, on=["probe", "variant_params"], how="left").drop(columns="variant_params")
    scale = out["our_ops_per_published_op"] / 1e3
    out["our_us_per_published_op"] = out["estimate_ns"] * scale
    out["our_ci_low_us"] = out["ci_low_ns"] * scale
    out["our_ci_high_us"] = out["ci_high_ns"] * scale
    out["published_over_ours"] = out["published_us_per_op"] / out["our_us_per_published_op"]
    out["caveat"] = HARDWARE_CAVEAT
    return out.drop(columns=["estimate_ns", "ci_low_ns", "ci_high_ns"]).reset_index(drop=True)


def environment_ratios(result) -> pd.DataFrame:
    """Each environment's per-op time over the baseline environment's, from an
    analysis.Analysis (its ratio intervals; nothing re-estimated here), with
    the primitive each probe measures."""
    cols = ["probe", "variant", "placement", "host", "environment", "arch_class", "baseline_environment", "primitive",
            "ratio", "ratio_low", "ratio_high", "different", "ci_method"]
    t = result.environment_ratios if result is not None else None
    if t is None or t.empty:
        return pd.DataFrame(columns=cols)
    arch = {m.environment: m.arch_class for m in result.manifests.values()}
    return pd.DataFrame({
        "probe": t["probe"], "variant": t["variant"], "placement": t["placement"], "host": t["host"],
        "environment": t["environment"], "arch_class": t["environment"].map(arch),
        "baseline_environment": result.settings.baseline,
        "primitive": t["probe"].map(lambda p: PROBE_PRIMITIVE.get(p, p)),
        "ratio": t["ratio"], "ratio_low": t["ci_low"], "ratio_high": t["ci_high"],
        "different": t["different"], "ci_method": t["ci_method"]}, columns=cols).reset_index(drop=True)


def our_estimates(result) -> pd.DataFrame:
    """The primary campaigns' estimates of an analysis.Analysis, with each campaign's architecture class."""
    est = result.primary_estimates
    arch = {cid: m.arch_class for cid, m in result.manifests.items()}
    return est.assign(arch_class=est["campaign_id"].map(arch))


def write_outputs(tables: dict[str, pd.DataFrame], figures: dict[str, object],
                  out_dir: str | Path | None = None) -> list[Path]:
    """Write reference_<name>.csv (+ .tex) for tables and reference_<name>.pdf/.png for figures."""
    out = Path(out_dir or default_output_dir())
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, df in tables.items():
        stem = out / f"reference_{name}"
        df.to_csv(stem.with_suffix(".csv"), index=False)
        written.append(stem.with_suffix(".csv"))
        stem.with_suffix(".tex").write_text(df.to_latex(index=False, escape=True, na_rep="--", float_format="%.4g"),
                                            encoding="utf-8")
        written.append(stem.with_suffix(".tex"))
    from osbench_analysis.plots.forest import save_figure

    for name, fig in figures.items():
        if fig is not None:
            written += save_figure(fig, out, f"reference_{name}")
    return written


def claims_table_for_paper(claims: pd.DataFrame) -> pd.DataFrame:
    """The checked claims in a compact form for the paper (not-checkable ones left out): one row per claim
    with the primary reading's factor and verdict, the verdict class over all readings, the factor range
    over the readings and their count.  `claims` is reference_claims.evaluate_claims output."""
    t = claims[claims["verdict_class"] != "not checkable"]
    return t[["source_id", "claim_id", "statement", "stated", "computed_factor", "verdict", "verdict_class",
              "factor_min", "factor_max", "n_readings", "n_hold", "readings_summary"]].rename(
        columns={"computed_factor": "factor_from_data"}).reset_index(drop=True)


def headline_summary(claims: pd.DataFrame) -> pd.DataFrame:
    """Per source: the number of claims in each verdict class (VERDICT_CLASSES: holds, arithmetic checked, fails,
    depends, knife-edge, circular, not checkable; zeros kept), the claims and the readings in total."""
    from osbench_analysis.reference.claims import VERDICT_CLASSES

    t = claims.groupby(["source_id", "verdict_class"]).size().unstack(fill_value=0)
    for v in VERDICT_CLASSES:
        if v not in t.columns:
            t[v] = 0
    t = t[list(VERDICT_CLASSES)]
    t["claims"] = t.sum(axis=1)
    t["readings"] = claims.groupby("source_id")["n_readings"].sum().reindex(t.index).astype(int)
    return t.reset_index()


def reference_outputs(result=None, reference_root: str | Path | None = None, *,
                      screen: bool = False) -> tuple[dict, dict]:
    """(tables, figures) of the published results beside ours: capture summary,
    source issues, recomputed claims, published architecture factors, our
    environment ratios and estimates beside the published values.  `result`
    is an analysis.Analysis, or None to show the published data alone."""
    from osbench_analysis.plots import reference as plots_reference
    from osbench_analysis.reference import claims as reference_claims

    ref = reference.load_reference(reference_root)
    sources = reference.load_sources(reference_root)
    mapping = reference.load_probe_mapping(reference_root)
    summary = reference.capture_summary(reference_root, ref)
    evaluated = reference_claims.Evaluated(ref, reference_claims.load_claims(reference_root))   # once: every table below
    claims = evaluated.verdicts()
    arch = architecture_ratios(ref, sources)
    env = environment_ratios(result) if result is not None else environment_ratios(None)
    estimates = our_estimates(result) if result is not None else pd.DataFrame(columns=ESTIMATE_COLUMNS)
    side = ours_beside_published(estimates, ref, mapping)
    tables = {"capture_summary": summary, "source_issues": reference.source_issues(reference_root, ref),
              "headline_claims": claims_table_for_paper(claims), "architecture_ratios": arch,
              "ours_vs_published": side, "environment_ratios": env,
              "claim_readings": reference_claims.claims_table(ref, root=reference_root, evaluated=evaluated),
              "verdict_counts": reference_claims.verdict_counts(claims),
              "published_factors": published_factors_by_primitive(published_factors(ref, sources, mapping)),
              "cited_results": cited_results(ref, reference_root),
              "knife_edge_sensitivity": reference_claims.band_sensitivity(ref, evaluated=evaluated)}
    # on screen each of our environments has its own colour and marker; in print, black diamonds
    figures = {"architecture_ratios": plots_reference.plot_architecture_ratios(arch, env, distinct_environments=screen),
               "ours_vs_published": plots_reference.plot_ours_vs_published(side, distinct_environments=screen)}
    return tables, figures


def _issues_as_printed(issues: pd.DataFrame, reference_root=None) -> pd.DataFrame:
    """The source issues with each cell's table, metric and system named as the study prints them."""
    ref = reference.load_reference(reference_root)
    metric = ref.drop_duplicates(["source_id", "table_id", "metric_id"]).set_index(
        ["source_id", "table_id", "metric_id"])["metric_as_published"]
    system = ref.drop_duplicates(["source_id", "system_id"]).set_index(["source_id", "system_id"])["system_as_published"]
    table = ref.drop_duplicates(["source_id", "table_id"]).set_index(["source_id", "table_id"])["table_number"]
    out = issues.copy()
    out["metric_as_published"] = [metric.get((s, t, m), m) for s, t, m in zip(out["source_id"], out["table_id"], out["metric_id"])]
    out["system_as_published"] = [system.get((s, x), x) for s, x in zip(out["source_id"], out["system_id"])]
    out["table_as_published"] = [str(table.get((s, t))) if table.get((s, t)) else "text"
                                 for s, t in zip(out["source_id"], out["table_id"])]
    return out


def write_reference(result=None, reference_root: str | Path | None = None,
                    out_dir: str | Path | None = None) -> list[Path]:
    """The one function behind `osbench reference`, reference_comparisons.ipynb
    and `osbench paper`: tables, figures and the paper's published-results section."""
    from osbench_analysis.report import published as paper_published
    from osbench_analysis.reference import claims as reference_claims

    tables, figures = reference_outputs(result, reference_root)
    written = write_outputs(tables, figures, out_dir)
    written.append(paper_published.write_reference_section(
        tables["claim_readings"], tables["verdict_counts"], tables["capture_summary"], tables.get("cited_results"),
        out_dir, issues=_issues_as_printed(tables["source_issues"], reference_root),
        rules=reference_claims.load_rules(reference_root),
        keys=reference.bibkeys(reference_root), sensitivity=tables.get("knife_edge_sensitivity")))
    return written
