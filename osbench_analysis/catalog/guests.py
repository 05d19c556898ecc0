"""The environments that count guest instructions instead of time: kernels booted under QEMU TCG with
``-icount shift=0`` (environments/qemu.py), reported in their own unit and never on an ns axis."""
from __future__ import annotations

MACH, LINUX, LINUX_NOMITIG = "mach", "linux-tcg", "linux-tcg-nomitig"
SEL4, SEL4_SLOWPATH, XEN_LINUX = "sel4", "sel4-slowpath", "xen-linux"
#: campaigns counted in guest instructions: never in the host analysis (analysis.select_campaigns)
#: Linux on a CPU reporting an Intel vendor: page-table isolation (KPTI) on (environments/linux_tcg.py)
LINUX_PTI = "linux-tcg-pti"
GUEST_ENVIRONMENTS = (MACH, LINUX, LINUX_NOMITIG, SEL4, SEL4_SLOWPATH, XEN_LINUX, LINUX_PTI)
UNIT = "guest instructions per operation"
