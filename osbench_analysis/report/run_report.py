"""What notebooks/run_campaign.ipynb shows after measuring: how many runs each
condition got and why adding runs stopped, in words (precision_summary: `runs`
is only the first round), one table of what was measured across environments
(readable_summary: units per row, three significant digits), and the failed
workers (or one sentence saying none failed)."""
from __future__ import annotations

import pandas as pd

COUNTS = ("runs", "batches", "failed_workers")


class Sentence(str):
    """A line of text a notebook shows as text (not as a quoted string, not as an empty table)."""

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        return str(self)


def summary(campaigns) -> pd.DataFrame:
    """analysis.overview of every campaign, environment first, one row per
    (environment, condition) with a fresh index and counts as integers."""
    from osbench_analysis.analysis import pipeline as analysis

    frames = [analysis.overview(c).assign(environment=c.environment) for c in campaigns]
    if not frames:
        return pd.DataFrame(columns=["environment", *COUNTS])
    table = pd.concat(frames, ignore_index=True)
    for col in COUNTS:
        if col in table:
            table[col] = table[col].fillna(0).astype(int)
    return table[["environment", *[c for c in table.columns if c != "environment"]]]


def readable_summary(campaigns) -> pd.DataFrame:
    """summary() as a person reads it (what the notebook shows): the raw median in a
    unit that suits each row, three significant digits (a time for the host
    environments, guest instructions for the emulated guests, which count
    instructions, not ns), operations per batch as whole numbers, the file system
    column only when a row has one."""
    from osbench_analysis import formatting
    from osbench_analysis.analysis.microkernel import GUEST_ENVIRONMENTS

    t = summary(campaigns)
    if t.empty:
        return t
    out = t[["environment", "probe", "variant", "placement", "runs", "batches"]].copy()
    out["operations per batch"] = t["iterations_per_batch"].round().astype("Int64")
    out["raw median per op"] = [
        f"{formatting.sig3_rounded(v)} instructions" if env in GUEST_ENVIRONMENTS else formatting.time_plain(v)
        for env, v in zip(t["environment"], t["raw_median_per_op_ns"])]
    if "fs_type" in t and (t["fs_type"].fillna("").astype(str) != "").any():
        out["file system"] = t["fs_type"].fillna("").astype(str)
    out["failed workers"] = t["failed_workers"]
    return out


def failures(campaigns):
    """Every failed worker (environment, condition, run, status, message), or
    the sentence "no worker failed"."""
    frames = [c.errors.assign(environment=c.environment) for c in campaigns]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if table.empty:
        return Sentence("no worker failed")
    return table[["environment", *[c for c in table.columns if c != "environment"]]]


#: why a campaign stopped adding runs (its manifest's precision.stop_reason), in words
_STOP_WORDS = {
    "target_met": "target met: every condition's {level} interval is at most ±{target} of its estimate",
    "budget_exhausted": "time budget of {budget} spent: {met} of {total} conditions had reached ±{target}",
    "max_runs": "max_runs ({max_runs}) reached: {met} of {total} conditions had reached ±{target}",
    "continue": "stopped while {open} condition(s) still needed runs: {met} of {total} at ±{target}",
    "no_successful_run": "no worker run succeeded: nothing to judge",
    "fixed_runs": "fixed runs: {runs} per condition, no precision target",
    "guest_boots": "{runs} boot(s) of the guest, whose counts repeat: no precision target{left_out}",
}


def stop_words(precision: dict) -> str:
    """A manifest's precision record as a sentence: why adding runs stopped, and what ``target_met`` means."""
    p = precision or {}
    t = p.get("target") or {}
    total, met = p.get("conditions_total", 0), p.get("conditions_met", 0)
    fill = dict(level=f"{100 * t.get('level', 0.95):g}%", target=f"{100 * t.get('target_rel', 0):g}%",
                budget=f"{t.get('budget_s', 0):.0f} s", max_runs=t.get("max_runs"), met=met, total=total,
                open=total - met, runs=p.get("runs"),
                left_out=(f"; {p['left_out']} repeat boot(s) left out by the guests' budget (config guest_budget)"
                          if p.get("left_out") else ""))
    reason = p.get("stop_reason", "")
    return _STOP_WORDS.get(reason, reason).format(**fill)


def precision_summary(campaigns) -> pd.DataFrame:
    """One row per campaign: the first round (`runs`), the runs each condition got in the end
    (precision may add runs up to `max_runs`), how many conditions met the target, and why it
    stopped, in words (stop_words)."""
    rows = []
    for c in campaigns:
        cfg, p = c.manifest.config, c.manifest.precision or {}
        target = p.get("target") or {}
        counts = pd.Series([(r.probe, r.variant, r.placement) for r in c.manifest.runs]).value_counts()
        got = f"{counts.min()}–{counts.max()}" if len(counts) and counts.min() != counts.max() else \
            (str(counts.max()) if len(counts) else "0")
        rows.append({"environment": c.environment, "first round": cfg.get("runs"),
                     "max_runs": target.get("max_runs", ""), "runs per condition": got,
                     "target met": f"{p['conditions_met']} of {p['conditions_total']}" if target else "",
                     "why it stopped": stop_words(p)})
    return pd.DataFrame(rows)
