"""Per-op times grouped by worker run (RunData): what every interval is computed from."""
from __future__ import annotations

import zlib
from dataclasses import dataclass
import numpy as np
import pandas as pd
from osbench_analysis.stats.quality import DEFAULT_FLAG_RULE, FlagRule, flag_batches, per_op_ns
from osbench_analysis.store.schema import GROUP_KEYS


@dataclass(frozen=True)
class RunData:
    """The measured batches of one condition, grouped by run (sorted per-op ns)."""

    runs: tuple[np.ndarray, ...]
    run_ids: tuple

    @classmethod
    def from_arrays(cls, per_op: np.ndarray, run: np.ndarray | None = None) -> "RunData":
        y = np.asarray(per_op, dtype=float)
        if run is None:
            run = np.zeros(y.size, dtype=np.int64)
        run = np.asarray(run)
        if run.shape != y.shape:
            raise ValueError(f"per_op and run must have the same length ({y.size} vs {run.size})")
        bad = ~np.isfinite(y) | (y <= 0)
        if bad.any():
            raise ValueError(f"per-op times must be finite and > 0 ({int(bad.sum())} are not)")
        ids = np.unique(run)
        return cls(tuple(np.sort(y[run == r]) for r in ids), tuple(ids.tolist()))

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    @property
    def n_batches(self) -> int:
        return int(sum(r.size for r in self.runs))

    def run_values(self, estimator: str) -> np.ndarray:
        """log run medians (median) or run means (mean), one per run (computed once per
        RunData and estimator, read-only)."""
        memo = self.__dict__.setdefault("_run_values", {})
        if estimator not in memo:
            v = (np.log(np.array([_sorted_median(r) for r in self.runs])) if estimator == "median"
                 else np.array([r.mean() for r in self.runs]))
            v.flags.writeable = False
            memo[estimator] = v
        return memo[estimator]


def _sorted_median(r: np.ndarray) -> float:
    """np.median of a sorted run (RunData keeps its runs sorted): its middle value, or the mean of its two
    middle values as np.median computes it ((a + b) / 2), without sorting it again."""
    n = r.size
    if n % 2:
        return float(r[n // 2])
    return float((r[n // 2 - 1] + r[n // 2]) / 2)


def run_data(samples: pd.DataFrame, *, exclude_flagged: bool = False,
             rule: FlagRule = DEFAULT_FLAG_RULE) -> RunData:
    """Measured batches of ONE condition as RunData (warm-ups always dropped)."""
    df = samples
    if "warmup" in df.columns:
        df = df[~df["warmup"].to_numpy(dtype=bool)]
    if exclude_flagged:
        if "flagged" not in df.columns:
            df = flag_batches(samples, rule)
            df = df[~df["warmup"].to_numpy(dtype=bool)] if "warmup" in df.columns else df
        df = df[~df["flagged"].to_numpy(dtype=bool)]
    run = df["run"].to_numpy() if "run" in df.columns else None
    return RunData.from_arrays(per_op_ns(df), run)


def _as_run_data(x, run=None, *, exclude_flagged=False, rule=DEFAULT_FLAG_RULE) -> RunData:
    if isinstance(x, RunData):
        return x
    if isinstance(x, pd.DataFrame):
        keys = [k for k in GROUP_KEYS if k in x.columns]
        if keys and len(x) and x[keys].drop_duplicates().shape[0] > 1:
            raise ValueError(f"expected the samples of one condition, got "
                             f"{x[keys].drop_duplicates().shape[0]} conditions; use summarize() "
                             f"or select one (probe, variant, placement, environment, campaign)")
        return run_data(x, exclude_flagged=exclude_flagged, rule=rule)
    return RunData.from_arrays(np.asarray(x, dtype=float), run)


def _rng(seed, *key) -> np.random.Generator:
    """Generator for one condition: same seed + same condition = same resamples,
    whatever else was selected for the analysis."""
    h = zlib.crc32("\x1f".join(map(str, key)).encode()) if key else 0
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, h])
