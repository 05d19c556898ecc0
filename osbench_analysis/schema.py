"""The data model of a campaign: one row per timed batch, typed columns.

This module is the contract between the runner (which writes samples), the
store (which seals them), and the statistics/plots/paper code (which reads
them).  Column names carry their unit.
"""
from __future__ import annotations

SCHEMA_VERSION = 1

# name -> pandas/pyarrow dtype.  Order is the on-disk column order.
SAMPLE_COLUMNS: dict[str, str] = {
    "campaign_id": "string",   # folder name under data/campaigns/
    "environment": "string",   # where it ran: native, gvisor, uml, fuse, ...
    "arch_class": "string",    # monolithic | microkernel | hybrid | user-space-kernel
    "probe": "string",         # registry name, e.g. fork_exit
    "variant": "string",       # short label of non-default probe parameters ('' if none), e.g. 'fs=tmpfs'
    "params_json": "string",   # canonical JSON of all probe parameters used
    "placement": "string",     # same_cpu (worker pinned, second party too) | cross_cpu (second party on another CPU) | unpinned
    "fs_type": "string",       # filesystem of the probe's work dir (file probes) else ''
    "run": "int32",            # worker process index within (probe, variant, placement)
    "batch": "int32",          # batch index within the run, warm-ups included (0-based)
    "warmup": "bool",          # True: warm-up batch, kept but excluded from estimates
    "iterations": "int64",     # operations in the batch (one op = the probe's unit)
    "elapsed_ns": "int64",     # wall time of the whole batch, clock read outside the loop
    "work_done": "int64",      # work the probe proved it did (children reaped, files removed, ...)
    "per_op_ns": "float64",    # elapsed_ns / iterations
    "cpu_start": "int32",      # sched_getcpu() before the batch
    "cpu_end": "int32",        # sched_getcpu() after the batch
    "nvcsw": "int64",          # voluntary context switches of the worker during the batch
    "nivcsw": "int64",         # involuntary context switches of the worker during the batch
    "minflt": "int64",         # minor page faults during the batch
    "loadavg_1m": "float64",   # /proc/loadavg 1-minute value read just before the batch
    "worker_pid": "int64",
    "started_unix_ns": "int64",  # wall-clock start of the batch (CLOCK_REALTIME), for drift plots
}

# A "condition" is what a single estimate is about: the same probe with the
# same parameters and placement in the same campaign/environment.
GROUP_KEYS: tuple[str, ...] = ("campaign_id", "environment", "probe", "variant", "placement")

# Per (probe, variant, placement, run) worker outcome, stored in the manifest
# under "runs" and exposed by the store as a DataFrame with these columns.
RUN_COLUMNS: dict[str, str] = {
    "probe": "string",
    "variant": "string",
    "placement": "string",
    "run": "int32",
    "status": "string",        # ok | crashed | timeout | error
    "returncode": "Int64",     # worker exit code, negative = killed by signal
    "message": "string",       # what went wrong, '' if ok
    "n_batches": "int32",      # batches received (warm-ups included)
    "wall_s": "float64",       # wall time of the worker process
}

ARCH_CLASSES = ("monolithic", "microkernel", "hybrid", "user-space-kernel")
PLACEMENTS = ("same_cpu", "cross_cpu", "unpinned")
