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
