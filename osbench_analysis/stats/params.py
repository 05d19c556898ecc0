"""Defaults and argument checks shared by the statistics."""
from __future__ import annotations

import numpy as np


DEFAULT_SEED = 20261122
DEFAULT_CI_METHOD = "runs-t"
DEFAULT_LEVEL = 0.95
DEFAULT_RESAMPLES = 10_000
ESTIMATORS = ("median", "mean")


def _check_level(level: float) -> float:
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise ValueError(f"level must be in (0, 1) (got {level})")
    return float(level)


def _check_common(level, estimator, n_resamples, ci_method) -> None:
    from .ci_methods import CI_METHODS, ESTIMAND   # the registry (it imports from this module's neighbours)

    _check_level(level)
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS} (got {estimator!r})")
    if ci_method not in CI_METHODS:
        raise ValueError(f"ci_method must be one of {CI_METHODS} (got {ci_method!r})")
    if (estimator, ci_method) not in ESTIMAND:
        raise ValueError(f"ci_method {ci_method!r} is for the median only; "
                         f"use one of {[m for (e, m) in ESTIMAND if e == estimator]} with the {estimator}")
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 100:
        raise ValueError(f"n_resamples must be an integer >= 100 (got {n_resamples})")
