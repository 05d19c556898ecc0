"""Kernel environments: where the worker runs (native Linux, gVisor, UML, FUSE; GNU Mach, seL4,
Linux and Linux on Xen under QEMU TCG, counted in guest instructions).

Add one by writing a class in its own module and registering it below.
`make envs` (python -m osbench_analysis.environments.install) installs what
they need; `status_table()` says which are available here and why not."""
from __future__ import annotations

from osbench_analysis.environments.base import (ARCH_CLASSES, PLACEMENTS, Availability, Environment,
                                                EnvironmentRegistry, Launch, RoundJob,
                                                Session)
from osbench_analysis.environments.fuse import Fuse
from osbench_analysis.environments.gvisor import GVisor
from osbench_analysis.environments.kernels import KERNELS, env_name as kernel_env_name
from osbench_analysis.catalog.kernel_versions import SWEEP_ARGS
from osbench_analysis.environments.linux_tcg import LinuxTCG
from osbench_analysis.environments.mach import Mach
from osbench_analysis.environments.native import Native
from osbench_analysis.environments.sel4 import SeL4
from osbench_analysis.environments.uml import UML
from osbench_analysis.environments.xen_linux import XenLinux

REGISTRY = EnvironmentRegistry()
REGISTRY.register(Native())
REGISTRY.register(GVisor("gvisor", platform="systrap", directfs=True))
REGISTRY.register(GVisor("gvisor-ptrace", platform="ptrace", directfs=True))
REGISTRY.register(GVisor("gvisor-gofer", platform="systrap", directfs=False))
REGISTRY.register(UML("uml"))
REGISTRY.register(Fuse("fuse", cache="default", threads="multi"))
REGISTRY.register(Fuse("fuse-nocache", cache="never", threads="multi"))
# GNU Mach and Linux on one emulated CPU (QEMU TCG -icount): counts in guest instructions
REGISTRY.register(Mach("mach"))
REGISTRY.register(LinuxTCG("linux-tcg"))
REGISTRY.register(LinuxTCG("linux-tcg-nomitig", extra_args=("mitigations=off",),
                           description="linux-tcg with mitigations=off (no retpolines or spectre_v1 barriers)"))
# the same kernel on a CPU that reports an Intel vendor: Linux enables page-table isolation (KPTI), checked in the
# guest (/sys/devices/system/cpu/vulnerabilities/meltdown) every boot
REGISTRY.register(LinuxTCG("linux-tcg-pti", cpu="qemu64,vendor=GenuineIntel", meltdown="Mitigation:_PTI",
                           description="linux-tcg on qemu64 with vendor GenuineIntel: the kernel deems the CPU "
                                       "Meltdown-affected and isolates its page tables (KPTI, no PCID)"))
# the kernel-version sweep (issue 39): each version of kernels.KERNELS with its default mitigations and without,
# measured only when named (make kernels), never by --environment all
for _k in KERNELS:
    REGISTRY.register(LinuxTCG(kernel_env_name(_k), extra_args=SWEEP_ARGS, pinned=_k, description=(
        f"linux-tcg with Debian's Linux {_k.release} ({_k.package} {_k.version}), default mitigations")))
    REGISTRY.register(LinuxTCG(kernel_env_name(_k, "-nomitig"), extra_args=("mitigations=off", *SWEEP_ARGS), pinned=_k,
                               description=f"linux-tcg with Debian's Linux {_k.release}, mitigations=off"))
# seL4 (a modern microkernel, with and without its IPC fastpath) and Linux as Xen's PV dom0, on the same CPU
REGISTRY.register(SeL4("sel4", fastpath=True))
REGISTRY.register(SeL4("sel4-slowpath", fastpath=False))
REGISTRY.register(XenLinux("xen-linux"))

get = REGISTRY.get
register = REGISTRY.register
names = REGISTRY.names


def status_table():
    """One row per registered environment: name, arch_class, available, reason,
    install_hint, description (pandas DataFrame; `osbench envs` prints it)."""
    import pandas as pd

    rows = []
    for env in REGISTRY:
        ok = env.availability()
        rows.append({"name": env.name, "arch_class": env.arch_class, "available": bool(ok), "reason": ok.reason,
                     "install_hint": "" if ok else ok.install_hint, "description": env.description})
    return pd.DataFrame(rows, columns=["name", "arch_class", "available", "reason", "install_hint", "description"])


__all__ = ["ARCH_CLASSES", "PLACEMENTS", "Availability", "Environment", "EnvironmentRegistry", "Launch",
           "RoundJob", "Session", "REGISTRY", "get", "register", "names", "status_table", "GVisor", "UML", "Fuse", "Native", "Mach", "LinuxTCG", "SeL4",
           "XenLinux"]
