"""Exploration: one question at a time over sealed campaigns, and the JupyterLab explorer (widgets.py).

``from osbench_analysis import explore`` then ``explore.samples(...)``: the package forwards every
name it does not hold to ``questions.py`` (the questions, each answered by one call)."""
from __future__ import annotations

import importlib


def __getattr__(name: str):
    module = importlib.import_module("osbench_analysis.explore.questions")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'osbench_analysis.explore' has no attribute {name!r}") from None
