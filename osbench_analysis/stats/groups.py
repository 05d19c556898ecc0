"""A samples frame grouped once: the rows of each condition as positions into numpy arrays.

The statistics of a condition are small (tens of batches), so handling each through pandas
indexing costs more than the statistics themselves; every per-condition loop of ``stats``
groups the frame here once and slices arrays.  The groups, their order (sorted keys, NaN as a
key) and the order of rows inside each (as in the frame) are pandas' ``groupby(keys,
sort=True, dropna=False)``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def group_positions(df: pd.DataFrame, keys: list[str]) -> tuple[list[tuple], list[np.ndarray], np.ndarray]:
    """(key tuples, row positions of each group, group number of each row) of ``df`` grouped by
    ``keys``, in ``groupby(keys, sort=True, dropna=False)``'s order; positions ascending."""
    if not keys:
        n = len(df)
        return [()], [np.arange(n)], np.zeros(n, dtype=np.int64)
    gb = df.groupby(list(keys), sort=True, dropna=False)
    gid = gb.ngroup().to_numpy(dtype=np.int64)
    index = gb.size().index
    names = [k if isinstance(k, tuple) else (k,) for k in index.tolist()]
    order = np.argsort(gid, kind="stable")
    bounds = np.searchsorted(gid[order], np.arange(len(names) + 1))
    return names, [order[bounds[i]:bounds[i + 1]] for i in range(len(names))], gid


def group_medians(x: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the labels' distinct values sorted as np.unique gives them, each value's group number, the median of
    each group's values): ``[np.median(x[labels == u]) for u in np.unique(labels)]`` to the last bit (the
    middle value, or the two middle values' (a + b) / 2 as np.median computes their mean) in one sort,
    not one np.median call per group (tens of thousands in an analysis)."""
    ids, inv = np.unique(labels, return_inverse=True)
    inv = inv.reshape(-1)
    if np.isnan(x).any():    # np.median's NaN: the group's median is NaN
        return ids, inv, np.array([np.median(x[inv == i]) for i in range(ids.size)])
    order = np.lexsort((x, inv))
    xs = np.asarray(x, dtype=float)[order]
    counts = np.bincount(inv, minlength=ids.size)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    lo = starts + (counts - 1) // 2
    hi = starts + counts // 2
    return ids, inv, np.where(lo == hi, xs[lo], (xs[lo] + xs[hi]) / 2)
