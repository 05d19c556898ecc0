"""Host facts that travel with every campaign (pyperf's _collect_metadata): a
plain record gathered by the runner, outside any sandbox, once before
measuring.  What the worker sees from inside its environment is facts.py."""
from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

import psutil

from osbench_analysis.hosts.facts import filesystem_type, read_text as _read  # noqa: F401  (filesystem_type re-exported)
from osbench_analysis.paths import PROBES_DIR, REPO_ROOT

LIBRARIES = ("cffi", "numpy", "scipy", "pandas", "pyarrow", "matplotlib", "seaborn", "papermill", "psutil", "tqdm")


def _cmd(*argv: str) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def cpuinfo_fields() -> dict:
    """The first CPU's vendor, family, model, stepping, microcode and flags from /proc/cpuinfo (the parts
    of hosts.identity that tell one processor generation from another behind a masked model name)."""
    names = {"vendor_id": "cpu_vendor", "cpu family": "cpu_family", "model": "cpu_model_number",
             "stepping": "cpu_stepping", "microcode": "microcode", "flags": "cpu_flags"}
    out = {v: "" for v in names.values()}
    for line in _read("/proc/cpuinfo").splitlines():
        if not line.strip():
            break                      # the first processor's block is enough: a VM's vCPUs are alike
        key, _, value = line.partition(":")
        if key.strip() in names:
            out[names[key.strip()]] = value.strip()
    out["cpu_flags"] = out["cpu_flags"].split()
    return out


def signal_frame_bytes() -> int:
    """The kernel's minimum signal stack (AT_MINSIGSTKSZ): the signal frame with the XSAVE area of the
    enabled features, what every signal delivery writes (0 if the C library cannot tell)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.getauxval.restype = ctypes.c_ulong
        return int(libc.getauxval(51))    # AT_MINSIGSTKSZ
    except (OSError, AttributeError):
        return 0


def virtualization() -> str:
    """Hypervisor and container, e.g. 'kvm' or 'kvm+docker'; 'none' on bare metal.

    Both matter: a VM changes the cost of cross-CPU wake-ups, a container
    changes little but the filesystem under /tmp."""
    vm = _cmd("systemd-detect-virt", "--vm")
    if vm in ("", "none") and "hypervisor" in _read("/proc/cpuinfo"):
        vm = "vm"
    container = _cmd("systemd-detect-virt", "--container")
    parts = [p for p in (vm, container) if p and p != "none"]
    return "+".join(parts) or "none"


def mitigations() -> dict[str, str]:
    d = Path("/sys/devices/system/cpu/vulnerabilities")
    return {p.name: _read(p) for p in sorted(d.glob("*"))} if d.is_dir() else {}


def git_state(repo: Path = REPO_ROOT) -> dict:
    commit = _cmd("git", "-C", str(repo), "rev-parse", "HEAD")
    dirty = bool(_cmd("git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"))
    return {"commit": commit or "unknown", "dirty": dirty if commit else None}


def probe_sources_sha256(probes_dir: Path = PROBES_DIR) -> str:
    """The hash probes/build_probes.py bakes into the extension, computed now by
    that same function, so a mismatch can only mean the sources changed."""
    script = probes_dir / "build_probes.py"
    if not script.is_file():
        return "unavailable"
    spec = importlib.util.spec_from_file_location("osbench_build_probes", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.source_sha256()


def probe_build_info() -> dict:
    from osbench_analysis._probes import ffi, lib

    info = dict(kv.split("=", 1) for kv in ffi.string(lib.osb_build_info()).decode().split(";"))
    info["extension"] = Path(sys.modules["osbench_analysis._probes"].__file__).name
    info["source_sha256_now"] = probe_sources_sha256()
    # A mismatch means probes/ changed since the extension was built: rebuild (pip install -e .).
    info["stale"] = info["source_sha256_now"] not in ("unavailable", info.get("source_sha256"))
    return info


def library_versions() -> dict[str, str]:
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


@dataclass
class HostInfo:
    hostname: str
    os: str
    kernel_release: str
    kernel_version: str
    machine: str
    cpu_model: str
    cpu_count_logical: int
    cpus_allowed: list[int]
    memory_bytes: int
    clocksource: str
    virtualization: str
    cpuidle_governor: str
    guest_halt_poll_ns: str
    mitigations: dict[str, str]
    python: str
    libraries: dict[str, str]
    probes: dict
    git: dict
    loadavg_at_start: list[float] = field(default_factory=list)
    host_id: str = ""            # stable across boots; tells apart hosts that share a name
    cpu_busy_at_start: float | None = None   # % of the allowed CPUs busy over BUSY_SAMPLE_S before measuring
    # what tells one processor from another behind a masked model name (hosts/identity.py; manifest v3)
    cpu_vendor: str = ""             # /proc/cpuinfo vendor_id, e.g. GenuineIntel
    cpu_family: str = ""             # cpu family, model and stepping, as /proc/cpuinfo gives them
    cpu_model_number: str = ""
    cpu_stepping: str = ""
    microcode: str = ""
    cpu_flags: list[str] = field(default_factory=list)   # every CPU flag; identity.CROSSING_FEATURES count
    signal_frame_bytes: int = 0      # AT_MINSIGSTKSZ: the signal frame with the XSAVE area

    def as_dict(self) -> dict:
        return asdict(self)


def os_release() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.system()


def host_id() -> str:
    """16 hex digits from the installation's machine-id and the hostname: stable
    across boots, distinct for cloned machines renamed after cloning."""
    import hashlib

    machine = _read("/etc/machine-id") or _read("/var/lib/dbus/machine-id")
    return hashlib.sha256(f"{machine}\0{platform.node()}".encode()).hexdigest()[:16]


def collect_host_info() -> HostInfo:
    u = platform.uname()
    return HostInfo(
        hostname=u.node,
        os=os_release(),
        kernel_release=u.release,
        kernel_version=u.version,
        machine=u.machine,
        cpu_model=cpu_model(),
        cpu_count_logical=psutil.cpu_count(logical=True) or 0,
        cpus_allowed=sorted(os.sched_getaffinity(0)),
        memory_bytes=psutil.virtual_memory().total,
        clocksource=_read("/sys/devices/system/clocksource/clocksource0/current_clocksource", "unknown"),
        virtualization=virtualization(),
        cpuidle_governor=_read("/sys/devices/system/cpu/cpuidle/current_governor", "unknown"),
        guest_halt_poll_ns=_read("/sys/module/haltpoll/parameters/guest_halt_poll_ns", "unavailable"),
        mitigations=mitigations(),
        python=sys.version.split()[0],
        libraries=library_versions(),
        probes=probe_build_info(),
        git=git_state(),
        loadavg_at_start=list(os.getloadavg()),
        host_id=host_id(),
        cpu_busy_at_start=cpu_busy_percent(),
        signal_frame_bytes=signal_frame_bytes(),
        **cpuinfo_fields(),
    )


def identity_facts() -> dict:
    """The facts of this machine its identity is made of (hosts.identity: what collect_host_info records
    of them, the same values), without the slow rest a manifest also holds (the load sampled, the probes'
    build, git): what `osbench host` reads."""
    return dict(cpu_model=cpu_model(), cpu_count_logical=psutil.cpu_count(logical=True) or 0,
                memory_bytes=psutil.virtual_memory().total, kernel_release=platform.uname().release,
                mitigations=mitigations(), virtualization=virtualization(), signal_frame_bytes=signal_frame_bytes(),
                **cpuinfo_fields())


#: Start-of-campaign idleness check (issue #20): campaigns are replicates only if the host was in a
#: comparable state; a busy host makes every primitive slower, unevenly.
BUSY_SAMPLE_S = 0.5
BUSY_LOAD_PER_CPU = 0.5     # 1-minute load average per allowed CPU above which the host is not idle
BUSY_CPU_PERCENT = 20.0     # CPU use of the allowed CPUs (everyone's) above which the host is not idle


def cpu_busy_percent(sample_s: float = BUSY_SAMPLE_S) -> float | None:
    """Mean busy % of the CPUs this process may use, over ``sample_s`` seconds (None if unreadable)."""
    try:
        per_cpu = psutil.cpu_percent(interval=sample_s, percpu=True)
    except (OSError, RuntimeError):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    used = [per_cpu[c] for c in allowed if c < len(per_cpu)] or per_cpu
    return float(sum(used) / len(used)) if used else None


def busy_warning(info: HostInfo) -> str:
    """One line saying the host is not idle at the start of a campaign, or ''."""
    ncpu = max(1, len(info.cpus_allowed))
    load = info.loadavg_at_start[0] if info.loadavg_at_start else 0.0
    busy = info.cpu_busy_at_start
    if load / ncpu <= BUSY_LOAD_PER_CPU and (busy is None or busy <= BUSY_CPU_PERCENT):
        return ""
    return (f"warning: the host is not idle (1-minute load {load:.2f} on {ncpu} CPU(s), "
            f"{'?' if busy is None else f'{busy:.0f}'}% busy over {BUSY_SAMPLE_S:g} s; idle is <= "
            f"{BUSY_LOAD_PER_CPU:g} per CPU and <= {BUSY_CPU_PERCENT:g}%): its times may differ from an idle "
            "host's by more than their intervals say (docs/statistics.md, campaigns as a level); measure "
            "when the machine is otherwise idle")
