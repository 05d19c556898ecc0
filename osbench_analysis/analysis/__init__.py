"""The analysis layer: campaigns selected, every estimate, ratio, pooling and comparison computed once.

``from osbench_analysis import analysis`` then ``analysis.analyze()``: the package forwards every
name it does not hold to ``pipeline.py`` (the straight line from sealed campaigns to one Analysis record)."""
from __future__ import annotations

import importlib


def __getattr__(name: str):
    module = importlib.import_module("osbench_analysis.analysis.pipeline")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'osbench_analysis.analysis' has no attribute {name!r}") from None
