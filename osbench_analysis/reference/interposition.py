"""Published interposition costs beside ours: gVisor's developers' system-call figure and Vangoor et al.'s
FUSE-over-Ext4 latency range (data/reference/gvisor_perf_guide/, data/reference/vangoor_fuse/; each folder's
SOURCE.md says where every value comes from and what is inferred).  Young et al.'s gVisor study is not
compared: no figure of theirs was in the stored text (data/reference/young_gvisor/SOURCE.md).

    guide_syscall(root)          # runtime, platform, value_ns, factor over the native runtime
    fuse_latency_range(root)     # (low, high): FUSE latency over Ext4's, as the abstract states it
    comparison(measured, root)   # one row per our environment x probe that a published figure matches

A published figure carries no interval: ``relation`` says where our interval lies against their point or
range, nothing more."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from osbench_analysis.errors import OsbenchError
from osbench_analysis.paths import REFERENCE_DIR

GUIDE = "gvisor_perf_guide"
FUSE = "vangoor_fuse"
YOUNG = "young_gvisor"
#: the guide's platform -> our environment, for the null system call (the guide publishes no systrap value)
GUIDE_PLATFORMS = {"ptrace": "gvisor-ptrace"}
#: our FUSE environments, compared on one stat with Vangoor et al.'s latency range
FUSE_ENVIRONMENTS = ("fuse", "fuse-nocache")
NULL_PROBE, FILE_PROBE = "null_syscall", "stat"
COLUMNS = ["environment", "probe", "ratio", "ratio_low", "ratio_high", "source", "their_label", "their_low",
           "their_high", "relation"]


class ReferenceDataError(OsbenchError):
    """A transcribed interposition table is missing or not as SOURCE.md describes it."""


def _folder(root, name: str) -> Path:
    return Path(root or REFERENCE_DIR) / name


def setup(name: str, root: str | Path | None = None) -> dict:
    """A study folder's setup.csv (field, value): bibkey, what was called, hardware, software, native side,
    uncertainty (a CSV, not a .json: data/reference/*/*.json are the verified studies' table specifications)."""
    path = _folder(root, name) / "setup.csv"
    if not path.exists():
        raise ReferenceDataError(f"{path}: missing (see {path.parent / 'SOURCE.md'})")
    tab = pd.read_csv(path, dtype=str, keep_default_na=False)
    return dict(zip(tab["field"], tab["value"]))


def guide_syscall(root: str | Path | None = None) -> pd.DataFrame:
    """The guide's system-call figure: one row per runtime, its time in ns and its factor over the native
    runtime (runc) of the same figure."""
    path = _folder(root, GUIDE) / "syscall.csv"
    if not path.exists():
        raise ReferenceDataError(f"{path}: missing")
    tab = pd.read_csv(path)
    if set(tab["unit"]) != {"ns"}:
        raise ReferenceDataError(f"{path}: unit {sorted(set(tab['unit']))}, expected ns only")
    native = tab[tab["platform"] == "native"]
    if len(native) != 1:
        raise ReferenceDataError(f"{path}: {len(native)} native rows, expected 1")
    tab = tab.assign(value_ns=tab["value_as_published"].astype(float))
    return tab.assign(factor=tab["value_ns"] / float(tab.loc[native.index[0], "value_as_published"]))


def fuse_latency_range(root: str | Path | None = None) -> tuple[float, float]:
    """Vangoor et al.'s 'from none to 4x when compared to Ext4', as (low, high) factors."""
    path = _folder(root, FUSE) / "abstract_figures.csv"
    if not path.exists():
        raise ReferenceDataError(f"{path}: missing")
    tab = pd.read_csv(path)
    row = tab[tab["quantity"] == "latency_factor_vs_ext4"]
    if len(row) != 1 or row["unit"].iloc[0] != "ratio":
        raise ReferenceDataError(f"{path}: expected one latency_factor_vs_ext4 row in unit ratio")
    lo, hi = float(row["low"].iloc[0]), float(row["high"].iloc[0])
    if not 0 < lo <= hi:
        raise ReferenceDataError(f"{path}: latency range {lo}..{hi} is not a range of positive factors")
    return lo, hi


def relation(low: float, high: float, their_low: float, their_high: float) -> str:
    """Where our interval [low, high] lies against their point or range: above, below, or overlaps."""
    if low > their_high:
        return "above"
    if high < their_low:
        return "below"
    return "overlaps"


def comparison(measured: pd.DataFrame, root: str | Path | None = None) -> pd.DataFrame:
    """Our factors (measured: environment, probe, ratio, ratio_low, ratio_high over native Linux) beside the
    published figure for the same environment and primitive; empty when no environment of ours matches."""
    rows = []
    if measured is None or measured.empty:
        return pd.DataFrame(columns=COLUMNS)
    m = measured.set_index(["environment", "probe"])
    guide = guide_syscall(root)
    for platform, env in GUIDE_PLATFORMS.items():
        theirs = guide[guide["platform"] == platform]
        if (env, NULL_PROBE) not in m.index or theirs.empty:
            continue
        r, f = m.loc[[(env, NULL_PROBE)]].iloc[0], float(theirs["factor"].iloc[0])
        rows.append({"environment": env, "probe": NULL_PROBE, "ratio": r["ratio"], "ratio_low": r["ratio_low"],
                     "ratio_high": r["ratio_high"], "source": GUIDE, "their_label": platform,
                     "their_low": f, "their_high": f,
                     "relation": relation(r["ratio_low"], r["ratio_high"], f, f)})
    lo, hi = fuse_latency_range(root)
    for env in FUSE_ENVIRONMENTS:
        if (env, FILE_PROBE) not in m.index:
            continue
        r = m.loc[[(env, FILE_PROBE)]].iloc[0]
        rows.append({"environment": env, "probe": FILE_PROBE, "ratio": r["ratio"], "ratio_low": r["ratio_low"],
                     "ratio_high": r["ratio_high"], "source": FUSE, "their_label": "FUSE over Ext4",
                     "their_low": lo, "their_high": hi,
                     "relation": relation(r["ratio_low"], r["ratio_high"], lo, hi)})
    return pd.DataFrame(rows, columns=COLUMNS)
