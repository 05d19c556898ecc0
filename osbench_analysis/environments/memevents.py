"""The guests' memory-system model: osbench's own QEMU TCG plugin (probes/plugin/osb_memsim.c, plugin API
version 1, built by `make envs`), loaded into a guest's QEMU when a campaign asks for memory events
(``osbench run --memory-events warm|polluted``).

It counts, per batch, what an instruction count leaves out: loads and stores, the misses of a stated
cache and TLB geometry (`MODEL`), CR3 writes, kernel entries, system-call instructions, hypercalls.  It
is a model, not the machine: no timing, no overlap of misses, no prefetcher, no write-backs, caches
indexed by physical address (instructions by their host address, which keeps the same offsets), TLB
entries of the kernel half global as `MODEL` says.  The counts are the guest's own whatever the host
does (QEMU -icount): two boots give the same events.

The window of a batch is what lies between the harness's boundaries: the Linux harness's marker
instructions around its loop (probes/harness.h, OSB_MARK_*), the Mach and seL4 tasks' two user-mode
RDTSCs.  The plugin appends one line per window to a file of the boot's folder; `attach` sets them on
the boot's batch rows in order (the guest prints one row per window), or on none when their numbers
differ (`facts` says why).

Modes: ``warm``, the model runs from the guest's first user-mode instruction on, so a batch meets the
caches its warm-up left; ``polluted``, every cache and TLB is emptied at each window's start -- what a
partner touching a buffer larger than L2 and the second-level TLB's reach between operations leaves --
and every batch is one operation (the campaign fixes its batches at one iteration): its misses are the
operation's cold misses, its lines and pages touched the operation's footprint."""
from __future__ import annotations

from pathlib import Path

from osbench_analysis.environments import hostops
from osbench_analysis.paths import PROBES_DIR

PLUGIN = hostops.ENVS_BUILD_DIR / "guests" / "plugin" / "osb-memsim.so"
SOURCES = (PROBES_DIR / "plugin" / "osb_memsim.c", PROBES_DIR / "plugin" / "qemu_plugin_v1.h")
CFLAGS = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-shared", "-fPIC"]
MODES = ("warm", "polluted")
OUTPUT = "memevents.txt"
#: the model the plugin implements (its first output line states the same): recorded in every campaign
MODEL = {
    "line_bytes": 64, "page_bytes": 4096, "replacement": "LRU, no prefetcher, no write-back traffic",
    "l1i": "32 KiB, 8-way (indexed by the instruction's host address: the same offsets as its physical one)",
    "l1d": "32 KiB, 8-way, physical addresses", "l2": "1 MiB, 16-way, unified, non-inclusive, physical addresses",
    "itlb": "64 entries, 8-way", "dtlb": "64 entries, 4-way", "stlb": "1536 entries, 12-way, shared",
    "tlb_flush": "a CR3 write drops every non-global entry (qemu64: no PCID), a CR4 write every entry; "
                 "INVLPG is not seen (API v1 reads no registers)",
    "kernel_entries": "an instruction of the kernel half (>= 0x800000000000) right after one of the user half",
    "hypervisor_entries": "an instruction in Xen's range 0xffff800000000000-0xffff87ffffffffff after one outside",
    "timing": "none: events are counted, never priced; misses do not overlap or stall",
}
#: which TLB entries a CR3 write keeps: the kernel half (every kernel's own mappings global), the kernel
#: image only (Linux under PTI without PCID keeps its image global, the rest of the kernel not), none
GLOBAL = {"upper": "the kernel half of the address space (as if every kernel set the G bit there)",
          "image": "the kernel image (>= 0xffffffff80000000) only: Linux under PTI without PCID",
          "none": "no page"}
#: the plugin's window fields -> the sample columns (store/schema.py MODEL_FIELDS)
FIELDS = {"insns": "mem_insns", "loads": "mem_loads", "stores": "mem_stores", "l1i_misses": "l1i_misses",
          "l1d_misses": "l1d_misses", "l2_misses": "l2_misses", "itlb_misses": "itlb_misses",
          "dtlb_misses": "dtlb_misses", "stlb_misses": "stlb_misses", "cr3_writes": "cr3_writes",
          "kernel_entries": "kernel_entries", "syscalls": "syscall_insns", "hypercalls": "hypercalls",
          "hypervisor_entries": "hypervisor_entries", "wrmsrs": "wrmsrs", "lines_touched": "lines_touched",
          "pages_touched": "pages_touched"}


class MemoryEventsError(RuntimeError):
    pass


def build(out: Path = PLUGIN) -> Path:
    """Compile the plugin (`make envs`); kept while its sources are older than it."""
    import subprocess

    if out.exists() and all(out.stat().st_mtime >= s.stat().st_mtime for s in SOURCES):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # built beside it and renamed over it: a QEMU running the old one keeps its mapping intact
    tmp = out.with_name(out.name + ".tmp")
    r = subprocess.run(["gcc", *CFLAGS, f"-I{SOURCES[0].parent}", "-o", str(tmp), str(SOURCES[0])],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise MemoryEventsError(f"building the memory-system model failed: {r.stderr.strip()[-400:]}")
    tmp.replace(out)
    return out


def available() -> str:
    """'' when the plugin is built, else why not."""
    return "" if PLUGIN.exists() else f"the memory-system model is not built ({PLUGIN}): make envs"


def text_range(elf: bytes) -> tuple[int, int]:
    """The virtual addresses of an ELF64's executable code (its PT_LOAD segments with PF_X): the task's
    own RDTSCs lie there and GRUB's do not."""
    import struct

    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise MemoryEventsError("not an ELF64 file: the task's code range is unknown")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    spans = []
    for i in range(phnum):
        p_type, p_flags, _off, vaddr, _paddr, _filesz, memsz = struct.unpack_from("<IIQQQQQ", elf, phoff + i * phentsize)
        if p_type == 1 and p_flags & 1:
            spans.append((vaddr, vaddr + memsz))
    if not spans:
        raise MemoryEventsError("the task's ELF has no executable segment")
    return min(a for a, _ in spans), max(b for _, b in spans)


def plugin_argv(folder: Path, mode: str, boundary: str, global_pages: str, plugin: Path = PLUGIN,
                text: tuple[int, int] | None = None) -> list[str]:
    """QEMU's arguments that load the model for one boot, writing its windows into `folder`; `text`: the
    task's code, whose RDTSCs alone are boundaries (rdtsc)."""
    if mode not in MODES:
        raise MemoryEventsError(f"memory events must be one of {MODES} (got {mode!r})")
    if not Path(plugin).exists():
        raise MemoryEventsError(f"the memory-system model is not built ({plugin}): make envs")
    out = Path(folder) / OUTPUT
    for p in (plugin, out):
        if "," in str(p):
            raise MemoryEventsError(f"QEMU's -plugin option cannot take a path with a comma: {p}")
    span = f",text={text[0]:x}-{text[1]:x}" if text else ""
    return ["-plugin", f"{plugin},out={out},boundary={boundary},global={global_pages},"
                       f"pollute={int(mode == 'polluted')}{span}"]


def parse(text: str) -> tuple[dict, list[dict]]:
    """The model's stated parameters (its M line) and one dict per window (W lines: the sample columns'
    names, and `modelled`)."""
    model, windows = {}, []
    for line in text.splitlines():
        pairs = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        if line.startswith("M "):
            model = pairs
        elif line.startswith("W ") and line.endswith(tuple("0123456789")):
            try:
                w = {FIELDS[k]: int(v) for k, v in pairs.items() if k in FIELDS}
                w["modelled"] = int(pairs.get("modelled", 0))
                w["overflow"] = int(pairs.get("touch_overflow", 0))
            except ValueError:
                continue
            if len(w) == len(FIELDS) + 2:
                windows.append(w)
    return model, windows


def attach(outcomes: list, text: str) -> tuple[list, dict]:
    """The boot's outcomes with the model's columns on their batch rows (window k on the boot's k-th
    printed batch), and the facts saying what the model saw; no column is set when the windows do not
    pair with the batches one to one, nor on a batch whose window the model did not see whole (the first
    of a boot, during which it started)."""
    model, windows = parse(text)
    batches = [b for o in outcomes for b in o.batches]
    facts = {"memory_model_line": " ".join(f"{k}={v}" for k, v in model.items()), "memory_windows": len(windows),
             "memory_batches": len(batches)}
    problem = ""
    if not model:
        problem = "the model wrote nothing (was it loaded?)"
    elif len(windows) != len(batches):
        problem = f"{len(windows)} windows for {len(batches)} batches: the model's columns are left empty"
    if problem:
        facts["memory_problem"] = problem
        return outcomes, facts
    facts["memory_windows_unmodelled"] = sum(not w["modelled"] for w in windows)
    for row, w in zip(batches, windows):
        if not w["modelled"]:   # the model started during it (the first window of a boot): no column
            continue
        row.update({k: v for k, v in w.items() if k in FIELDS.values()})
        if w["overflow"]:   # more distinct lines than the window's set holds: the footprint is unknown
            row["lines_touched"] = row["pages_touched"] = None
    return outcomes, facts


def model_facts(boundary: str, global_pages: str) -> dict:
    """The model's parameters for an environment's facts (environment_info of every guest campaign)."""
    return {**MODEL, "global_pages": GLOBAL[global_pages], "window": {
        "marker": "the harness's two marker instructions around its loop (probes/harness.h OSB_MARK_*)",
        "rdtsc": "the task's two user-mode RDTSCs around its loop (its batch())"}[boundary],
        "plugin_sha256": _sha256(PLUGIN), "source_sha256": _sha256(SOURCES[0])}


def _sha256(path: Path) -> str:
    import hashlib

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""

