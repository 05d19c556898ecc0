"""What the runner asks of one worker (WorkerRequest), on the runner's side.

The worker process never imports this module (nor `dataclasses`, `pathlib` or the probe registry:
every module a worker imports costs milliseconds natively and much more inside gVisor and UML,
docs/environments.md, 'Where a worker's start-up goes').  So the request's JSON carries, beside
the fields below, what the worker would otherwise read from the registry (`probe_info`), and the
worker reads the JSON into a plain object (main.py)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields


@dataclass
class WorkerRequest:
    probe: str
    params: dict
    min_batch_ns: int
    warmup: int
    batches: int
    max_iterations: int
    worker_cpu: int | None = None   # pin this process (and by inheritance its children)
    child_cpu: int = -1             # pin the second party elsewhere (cross_cpu), -1: inherit
    workdir: str | None = None      # private directory for file probes
    iterations: int | None = None   # fixed batch size: skips calibration
    settle_s: float = 0.0           # wait before calibrating (an environment's clock or caches settling)
    # workdir is on a file system only the guest sees (registry.FS_GUEST_TMPFS): this worker makes it, checks
    # the probe left it empty and removes it (the runner does that for a host folder)
    make_workdir: bool = False
    # report which probe binaries and C library it runs with, hashed (facts.binaries_facts): a campaign keeps
    # its first worker's facts, and hashing them costs a sandboxed worker tens of milliseconds
    binaries_facts: bool = True
    # a guest's memory-system model for this worker's boot (environments/memevents.py): "" none, warm, polluted;
    # a worker on the host never reads it
    memory_events: str = ""

    def to_json(self) -> str:
        """The request as the worker's --request reads it, with the probe's registry facts (probe_info)."""
        return json.dumps({**asdict(self), "probe_info": probe_info(self.probe, self.params)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "WorkerRequest":
        """A request from its JSON (to_json); what the runner added for the worker (probe_info) is dropped."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in json.loads(text).items() if k in known})


def probe_info(probe: str, params: dict) -> dict:
    """What a worker needs of the registry to run `probe` at `params`: the helper program it execs, the
    parameter that sizes it, the batch multiple (a grouped probe's batch is whole groups), which process
    runs it (registry.parent_of: 'native' is osbench-parent) and which extension holds it.  An unknown
    probe gets the defaults: the extension then says it does not know it."""
    from osbench_analysis.catalog import registry

    spec = registry.PROBES.get(probe)
    return {"helper": spec.helper if spec else "exit0",
            "size_param": spec.size_param if spec else "size",
            "multiple": spec.batch_multiple(params) if spec else 1,
            "parent": registry.parent_of(probe, {"parent": registry.PARENT_NATIVE, **(params or {})}),
            "library": "test" if spec is not None and spec.family == "testonly" else "probes"}


__all__ = ["WorkerRequest", "probe_info"]
