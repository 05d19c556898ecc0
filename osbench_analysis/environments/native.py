"""The host kernel itself: the worker runs as an ordinary process."""
from __future__ import annotations

import platform

from osbench_analysis.environments.base import Environment


class Native(Environment):
    name = "native"
    arch_class = "monolithic"
    description = "the host's Linux kernel, probes as ordinary processes"
    fix_hint = "rebuild the probes with `make install` (or `pip install -e .`)"

    def facts(self) -> dict:
        return {"kernel_release": platform.release()}
