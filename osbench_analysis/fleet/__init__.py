"""Campaigns on many hosts over a mutually authenticated Dask fleet.

``from osbench_analysis import fleet`` then ``fleet.fleet_run(...)``: the package forwards every
name it does not hold to ``run.py`` (submitting one campaign per host and storing what comes back)."""
from __future__ import annotations

import importlib


def __getattr__(name: str):
    module = importlib.import_module("osbench_analysis.fleet.run")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'osbench_analysis.fleet' has no attribute {name!r}") from None
