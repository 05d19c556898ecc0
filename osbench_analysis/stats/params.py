"""Defaults and the level check shared by the statistics.  The check of a
whole argument set against the registered CI methods is ci_methods.check_common
(it needs the registry; kept there so that this module imports nothing of the
package and the registry can import it)."""
from __future__ import annotations

DEFAULT_SEED = 20261122
DEFAULT_CI_METHOD = "runs-t"
DEFAULT_LEVEL = 0.95
DEFAULT_RESAMPLES = 10_000
ESTIMATORS = ("median", "mean")


def _check_level(level: float) -> float:
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise ValueError(f"level must be in (0, 1) (got {level})")
    return float(level)
