"""The host kernel itself: the worker runs as an ordinary process."""
from __future__ import annotations

import platform

from osbench_analysis.environments.base import Environment


class Native(Environment):
    name = "native"
    arch_class = "monolithic"
    description = "the host's Linux kernel, probes as ordinary processes"

    def facts(self) -> dict:
        return {"kernel_release": platform.release()}
