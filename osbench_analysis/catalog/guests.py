"""The environments that count guest instructions instead of time: kernels booted under QEMU TCG with
``-icount shift=0`` (environments/qemu.py), reported in their own unit and never on an ns axis."""
from __future__ import annotations

from osbench_analysis.catalog import kernel_versions

MACH, LINUX, LINUX_NOMITIG = "mach", "linux-tcg", "linux-tcg-nomitig"
SEL4, SEL4_SLOWPATH, XEN_LINUX = "sel4", "sel4-slowpath", "xen-linux"
#: Linux on a CPU reporting an Intel vendor: page-table isolation (KPTI) on (environments/linux_tcg.py)
LINUX_PTI = "linux-tcg-pti"
#: the four kernel designs' guests (analysis/kernels.py, microkernel.py), and Linux under KPTI
DESIGN_GUESTS = (MACH, LINUX, LINUX_NOMITIG, SEL4, SEL4_SLOWPATH, XEN_LINUX, LINUX_PTI)
#: the kernel-version sweep's linux-tcg-<version>[-nomitig] (catalog/kernel_versions.py, analysis/versions.py)
VERSION_GUESTS = tuple(kernel_versions.sweep_environments())
#: campaigns counted in guest instructions: never in the host analysis (analysis.select_campaigns)
GUEST_ENVIRONMENTS = DESIGN_GUESTS + VERSION_GUESTS
UNIT = "guest instructions per operation"
