"""The data model of a campaign's samples: one row per timed batch.

Each column is declared once, here, with the layer that fills it: the C
harness (fields of `osb_result`, same names), the worker, the runner (the
condition), the campaign, or derived.  The worker copies the harness fields
by these names, the runner adds its own, and `samples_frame` orders, derives
and types them, so no other module writes the column list out again.
Column names carry their unit.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

SCHEMA_VERSION = 2   # of the manifest (records.MANIFEST_VERSION); the sample columns are unchanged since 1

#: How a design relates to the published architectures (data/reference uses the first four).
ARCH_CLASSES = ("monolithic", "microkernel", "hybrid", "user-space-kernel", "hosted-kernel", "user-space-server")
#: Where a worker and its second party run (every sample's placement column).
PLACEMENTS = ("same_cpu", "cross_cpu", "unpinned")


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str      # pandas dtype
    source: str     # harness | worker | runner | campaign | derived | model
    doc: str


COLUMNS: tuple[Column, ...] = (
    Column("campaign_id", "string", "campaign", "folder name under data/campaigns/"),
    Column("environment", "string", "campaign", "where it ran: native, gvisor, uml, fuse, ... (environments registry)"),
    Column("arch_class", "string", "campaign", "monolithic | user-space-kernel | hosted-kernel | user-space-server | ..."),
    Column("probe", "string", "runner", "registry name, e.g. fork_exit"),
    Column("variant", "string", "runner", "short label of non-default probe parameters ('' if none), e.g. 'fs=tmpfs'"),
    Column("params_json", "string", "runner", "canonical JSON of all probe parameters used"),
    Column("placement", "string", "runner", "same_cpu (worker pinned, second party too) | cross_cpu (second party on another CPU) | unpinned"),
    Column("fs_type", "string", "runner", "filesystem of the probe's work dir (file probes) else ''"),
    Column("run", "int32", "runner", "worker process index within (probe, variant, placement)"),
    Column("batch", "int32", "worker", "batch index within the run, warm-ups included (0-based)"),
    Column("warmup", "bool", "worker", "True: calibration or warm-up batch, kept but excluded from estimates"),
    Column("iterations", "int64", "harness", "operations in the batch (one op = the probe's unit)"),
    Column("elapsed_ns", "int64", "harness", "wall time of the whole batch, clock read outside the loop"),
    Column("work_done", "int64", "harness", "work the probe proved it did (children reaped, files removed, ...)"),
    Column("per_op_ns", "float64", "derived", "elapsed_ns / iterations"),
    Column("cpu_start", "int32", "harness", "sched_getcpu() before the batch"),
    Column("cpu_end", "int32", "harness", "sched_getcpu() after the batch"),
    Column("nvcsw", "int64", "harness", "voluntary context switches of the worker during the batch"),
    Column("nivcsw", "int64", "harness", "involuntary context switches of the worker during the batch"),
    Column("minflt", "int64", "harness", "minor page faults during the batch"),
    Column("loadavg_1m", "float64", "worker", "/proc/loadavg 1-minute value read just before the batch"),
    Column("worker_pid", "int64", "worker", "process id of the worker (as seen inside its environment)"),
    Column("started_unix_ns", "int64", "harness", "wall-clock start of the batch (CLOCK_REALTIME), for drift plots"),
    # the guests' memory-system model (environments/memevents.py, probes/plugin/osb_memsim.c), per batch: null
    # where it was not loaded (every host environment, a guest campaign without --memory-events, and the
    # campaign's reference boot, which runs without it to check the counts)
    *(Column(name, "Int64", "model", doc) for name, doc in (
        ("mem_insns", "guest instructions the model saw in the batch's window (the loop and its two markers)"),
        ("mem_loads", "data loads in the window"),
        ("mem_stores", "data stores in the window"),
        ("l1i_misses", "misses of the modelled L1 instruction cache (32 KiB, 8-way, 64 B lines, LRU)"),
        ("l1d_misses", "misses of the modelled L1 data cache (32 KiB, 8-way, 64 B lines, LRU)"),
        ("l2_misses", "misses of the modelled unified L2 (1 MiB, 16-way, LRU) behind both L1s"),
        ("itlb_misses", "misses of the modelled instruction TLB (64 entries, 8-way, 4 KiB pages)"),
        ("dtlb_misses", "misses of the modelled data TLB (64 entries, 4-way, 4 KiB pages)"),
        ("stlb_misses", "misses of the modelled shared second-level TLB (1536 entries, 12-way): page walks"),
        ("cr3_writes", "writes to CR3 (address-space switches; each drops the non-global TLB entries)"),
        ("kernel_entries", "entries into the kernel half: an instruction there right after one of the user half"),
        ("syscall_insns", "system-call instructions executed in the user half (syscall, sysenter, int n)"),
        ("hypercalls", "vmcall/vmmcall, and syscall from the kernel half (a Xen PV kernel's hypercall)"),
        ("hypervisor_entries", "entries into Xen's own address range"),
        ("wrmsrs", "WRMSR instructions"),
        ("lines_touched", "distinct 64 B lines (code and data, physical) touched in the window"),
        ("pages_touched", "distinct 4 KiB physical pages touched in the window"),
    )),
)

# name -> pandas/pyarrow dtype.  Order is the on-disk column order.
SAMPLE_COLUMNS: dict[str, str] = {c.name: c.dtype for c in COLUMNS}
HARNESS_FIELDS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.source == "harness")
WORKER_FIELDS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.source == "worker")
RUNNER_FIELDS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.source == "runner")
CAMPAIGN_FIELDS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.source == "campaign")
#: the memory-system model's columns: optional (null when the model was not loaded), and absent from the
#: samples of campaigns sealed before they existed (they load with nulls)
MODEL_FIELDS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.source == "model")

# A "condition" is what a single estimate is about: the same probe with the
# same parameters and placement in the same campaign/environment.
GROUP_KEYS: tuple[str, ...] = ("campaign_id", "environment", "probe", "variant", "placement")


def samples_frame(data, **campaign: str) -> pd.DataFrame:
    """Rows (list of dicts) or columns (dict of arrays) as a typed samples
    DataFrame: per_op_ns derived, campaign-wide columns filled from `campaign`
    (campaign_id, environment, arch_class), columns in schema order."""
    import pandas as pd  # not at module level: the worker imports this module inside sandboxes

    df = pd.DataFrame(data)
    for name in CAMPAIGN_FIELDS:
        if name in campaign:
            df[name] = campaign[name]
    if len(df) or "iterations" in df:
        df["per_op_ns"] = df["elapsed_ns"].astype("float64") / df["iterations"].astype("float64")
    for name in MODEL_FIELDS:
        if name not in df.columns:
            df[name] = pd.NA
    missing = [c for c in SAMPLE_COLUMNS if c not in df.columns]
    if missing and len(df):
        raise ValueError(f"samples lack columns {missing}")
    return df.reindex(columns=list(SAMPLE_COLUMNS)).astype(SAMPLE_COLUMNS)


def _run_columns() -> dict[str, str]:
    from osbench_analysis.store.records import RunRecord

    dtypes = {"run": "int32", "returncode": "Int64", "n_batches": "int32", "wall_s": "float64"}
    return {f.name: dtypes.get(f.name, "string") for f in fields(RunRecord)}


def __getattr__(name: str):
    """RUN_COLUMNS (per (probe, variant, placement, run) worker outcome: records.RunRecord as a
    DataFrame), made on first use: the worker imports this module inside every sandbox and must
    not pay for importing the records."""
    if name == "RUN_COLUMNS":
        globals()["RUN_COLUMNS"] = _run_columns()
        return globals()["RUN_COLUMNS"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
