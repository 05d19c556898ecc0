"""A package that forwards the names users call to its main module (`analysis.analyze()` is
`analysis/pipeline.py`'s), imported only when first asked for."""
from __future__ import annotations

import importlib


def forwarder(package: str, module: str):
    """A module-level ``__getattr__`` for ``package``: any name it does not hold, from ``package.module``."""
    def __getattr__(name: str):
        target = importlib.import_module(f"{package}.{module}")
        try:
            return getattr(target, name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    return __getattr__
