"""What notebooks/run_campaign.ipynb shows after measuring: one table of what
was measured across environments (readable_summary: units per row, three
significant digits), and the failed workers (or one sentence saying none failed)."""
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
