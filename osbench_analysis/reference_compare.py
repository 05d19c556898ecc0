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

from osbench_analysis import reference
from osbench_analysis.paths import GENERATED_DIR
from osbench_analysis.registry import PROBES

# The primitive (reference metric vocabulary) each probe measures, so our
# ratios land on the same rows as the published ones in the figures.
PROBE_PRIMITIVE = {
    "null_syscall": "syscall", "syscall_mix": "syscall_mix", "open_close": "open_close", "stat": "stat",
    "fork_exit": "fork_exit", "fork_exec": "fork_exec", "pipe_pingpong": "context_switch",
    "thread_create_join": "thread_create", "mmap_touch": "page_fault", "file_create_delete": "file_create",
    "malloc_free_small": "malloc",
}

ESTIMATE_COLUMNS = ["campaign_id", "environment", "probe", "variant", "placement", "estimate_ns", "ci_low_ns", "ci_high_ns"]
HARDWARE_CAVEAT = "published values come from other hardware and other eras: context, not a like-for-like comparison"


def default_output_dir() -> Path:
    return GENERATED_DIR


def _cost(value: float, higher_is_better: bool) -> float:
    return 1.0 / value if higher_is_better else value


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
                    "slowdown_factor": _cost(s["value"], bool(s["higher_is_better"])) / _cost(b["value"], bool(b["higher_is_better"])),
                    "why_fair": pair["why"],
                })
    return pd.DataFrame(rows, columns=["source_id", "table_id", "metric_id", "metric_as_published", "primitive", "pair",
                                       "subject_system", "subject_arch", "baseline_system", "baseline_arch",
                                       "subject_cell", "baseline_cell", "slowdown_factor", "why_fair"])


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
    from osbench_analysis.plots import save_figure

    for name, fig in figures.items():
        if fig is not None:
            written += save_figure(fig, out, f"reference_{name}")
    return written


def claims_table_for_paper(claims: pd.DataFrame) -> pd.DataFrame:
    """The checked claims in a compact form for the paper (not-checkable ones left out)."""
    t = claims[claims["verdict"] != "not checkable"]
    return t[["source_id", "statement", "stated", "computed_factor", "verdict"]].rename(
        columns={"computed_factor": "factor_from_data"}).reset_index(drop=True)


def headline_summary(claims: pd.DataFrame) -> pd.DataFrame:
    """Counts of supported / not supported / not checkable claims per source."""
    t = claims.groupby(["source_id", "verdict"]).size().unstack(fill_value=0)
    for v in ("supported", "not supported", "not checkable"):
        if v not in t.columns:
            t[v] = 0
    return t[["supported", "not supported", "not checkable"]].reset_index()


def reference_outputs(result=None, reference_root: str | Path | None = None) -> tuple[dict, dict]:
    """(tables, figures) of the published results beside ours: capture summary,
    source issues, recomputed claims, published architecture factors, our
    environment ratios and estimates beside the published values.  `result`
    is an analysis.Analysis, or None to show the published data alone."""
    from osbench_analysis import plots_reference, reference_claims

    ref = reference.load_reference(reference_root)
    sources = reference.load_sources(reference_root)
    mapping = reference.load_probe_mapping(reference_root)
    summary = reference.capture_summary(reference_root, ref)
    claims = reference_claims.evaluate_claims(ref, reference_claims.load_claims(reference_root))
    arch = architecture_ratios(ref, sources)
    env = environment_ratios(result) if result is not None else environment_ratios(None)
    estimates = our_estimates(result) if result is not None else pd.DataFrame(columns=ESTIMATE_COLUMNS)
    side = ours_beside_published(estimates, ref, mapping)
    tables = {"capture_summary": summary, "source_issues": reference.source_issues(reference_root, ref),
              "headline_claims": claims_table_for_paper(claims), "architecture_ratios": arch,
              "ours_vs_published": side, "environment_ratios": env}
    figures = {"architecture_ratios": plots_reference.plot_architecture_ratios(arch, env),
               "ours_vs_published": plots_reference.plot_ours_vs_published(side)}
    return tables, figures


def write_reference(result=None, reference_root: str | Path | None = None,
                    out_dir: str | Path | None = None) -> list[Path]:
    """The one function behind `osbench reference`, reference_comparisons.ipynb
    and `osbench paper`: tables, figures and the paper's published-results section."""
    from osbench_analysis import paper

    tables, figures = reference_outputs(result, reference_root)
    written = write_outputs(tables, figures, out_dir)
    written.append(paper.write_reference_section(tables["headline_claims"], tables["capture_summary"], out_dir))
    return written
