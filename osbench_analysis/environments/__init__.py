"""Kernel environments: where the worker runs (native Linux, gVisor, UML, FUSE).

Add one by writing a class in its own module and registering it below."""
from __future__ import annotations

from osbench_analysis.environments.base import (ARCH_CLASSES, PLACEMENTS, Availability, Environment,
                                                EnvironmentRegistry, Launch, Session)
from osbench_analysis.environments.fuse import Fuse
from osbench_analysis.environments.gvisor import GVisor
from osbench_analysis.environments.native import Native
from osbench_analysis.environments.uml import UML

REGISTRY = EnvironmentRegistry()
REGISTRY.register(Native())
REGISTRY.register(GVisor("gvisor", platform="systrap", directfs=True))
REGISTRY.register(GVisor("gvisor-ptrace", platform="ptrace", directfs=True))
REGISTRY.register(GVisor("gvisor-gofer", platform="systrap", directfs=False))
REGISTRY.register(UML("uml"))
REGISTRY.register(Fuse("fuse", cache="default", threads="multi"))
REGISTRY.register(Fuse("fuse-nocache", cache="never", threads="multi"))

get = REGISTRY.get
register = REGISTRY.register
names = REGISTRY.names

__all__ = ["ARCH_CLASSES", "PLACEMENTS", "Availability", "Environment", "EnvironmentRegistry", "Launch",
           "Session", "REGISTRY", "get", "register", "names"]
