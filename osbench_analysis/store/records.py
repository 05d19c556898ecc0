"""Typed records of a campaign: the manifest and its worker-run entries.

The manifest is a versioned, validated dataclass (pyperf's Run/Benchmark
records), written by the runner and read by every other layer through
attributes, never by string keys spread over modules.  Version 1 manifests
(the committed campaigns of before environments existed) load unchanged: the
facts the worker sees from inside were not recorded then, and say so.  Version 3 manifests also hold
the host facts its identity is made of (hosts.identity.RECORDED_FACTS: the CPU's vendor, family, model,
stepping, microcode, flags and signal frame size); older ones get an identity derived from what they hold.

Field documentation lives here and in docs/campaign_format.md; a test checks
that every field is documented there.
"""
from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields

from osbench_analysis.errors import OsbenchError
from osbench_analysis.hosts.identity import RECORDED_FACTS

MANIFEST_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
RUN_STATUSES = ("ok", "crashed", "timeout", "error")
#: the environment_info key saying why a campaign was sealed as partial (measure/runner.py: its environment
#: stopped, or most of its runs failed); such a campaign is never chosen as complete nor pooled unless named
PARTIAL_KEY = "partial"


class ManifestError(OsbenchError, ValueError):
    """A manifest that does not follow its declared schema."""


@dataclass(frozen=True)
class RunRecord:
    """One worker process: which condition, run index, and how it ended."""
    probe: str
    variant: str                 # label of non-default parameters (and fs= for file probes)
    params_json: str             # canonical JSON of all probe parameters
    placement: str               # same_cpu | cross_cpu | unpinned
    run: int                     # worker index within the condition, 0-based
    status: str                  # ok | crashed | timeout | error
    returncode: int | None       # worker exit code; negative: killed by that signal; None: timed out
    message: str                 # what went wrong, '' if ok
    n_batches: int               # batches received (calibration and warm-ups included)
    wall_s: float                # wall time of the worker process (environment start-up included)

    def __post_init__(self):
        if self.status not in RUN_STATUSES:
            raise ManifestError(f"run status must be one of {RUN_STATUSES} (got {self.status!r})")

    @classmethod
    def from_dict(cls, d: dict) -> "RunRecord":
        known = {f.name for f in fields(cls)}
        missing = known - set(d)
        if missing:
            raise ManifestError(f"run entry lacks {sorted(missing)}: {d}")
        return cls(**{k: d[k] for k in known})


@dataclass
class Manifest:
    """Everything about a campaign except its samples."""
    campaign_id: str
    created_utc: str             # ISO 8601, when measuring started
    finished_utc: str            # ISO 8601, when measuring ended
    environment: str             # registry name of the kernel environment (native, gvisor, uml, fuse, ...)
    arch_class: str              # monolithic | user-space-kernel | hosted-kernel | user-space-server | ...
    config: dict                 # every CampaignConfig field as used (cpus and workdir resolved)
    conditions: list[dict]       # {probe, params, placement} in measuring order
    measuring_seconds: float     # wall time of the measuring loop
    precision: dict              # adaptive-precision outcome: target, stop_reason, achieved half-widths
    host: dict                   # host.HostInfo as seen by the runner, outside any sandbox
    runs: list[RunRecord]        # one entry per worker process, failures included
    environment_facts: dict = field(default_factory=dict)   # seen by the worker inside the environment
    environment_info: dict = field(default_factory=dict)    # the environment as seen from the host: version, flags
    interruptions: list[dict] = field(default_factory=list)  # resumed campaigns: when and after how many runs
    files: dict = field(default_factory=dict)               # name -> {sha256, rows}; filled by the store
    schema_version: int = MANIFEST_VERSION

    def __post_init__(self):
        self.runs = [r if isinstance(r, RunRecord) else RunRecord.from_dict(r) for r in self.runs]
        if self.schema_version not in READABLE_VERSIONS:
            raise ManifestError(f"manifest schema version {self.schema_version!r}; this osbench reads "
                                f"{READABLE_VERSIONS}")
        for name in ("campaign_id", "environment", "arch_class"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ManifestError(f"manifest field {name!r} must be a non-empty string")
        lacking = [k for k in RECORDED_FACTS if k not in (self.host or {})] if self.schema_version >= 3 else []
        if lacking:
            raise ManifestError(f"manifest version {self.schema_version} host record lacks {lacking}: "
                                "its host identity (hosts/identity.py) needs them")

    @property
    def hostname(self) -> str:
        return self.host.get("hostname", "unknown")

    @property
    def host_identity(self):
        """hosts.identity.HostIdentity of the host that measured this campaign (derived before version 3)."""
        from osbench_analysis.hosts.identity import host_identity

        return host_identity(self.host)

    @property
    def profile(self) -> str:
        return self.config.get("profile", "custom")

    @property
    def partial(self) -> str:
        """Why this campaign was sealed as partial (PARTIAL_KEY), '' when it was sealed complete."""
        return str((self.environment_info or {}).get(PARTIAL_KEY) or "")

    @property
    def failed_runs(self) -> list[RunRecord]:
        return [r for r in self.runs if r.status != "ok"]

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, default=str) + "\n"

    @classmethod
    def from_dict(cls, d: dict) -> "Manifest":
        d = dict(d)
        version = d.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise ManifestError(f"manifest schema version {version!r}; this osbench reads {READABLE_VERSIONS}")
        if version == 1:  # before environments: facts were collected only outside
            d.setdefault("environment_facts", {"note": "not recorded: schema 1 collected facts on the host only"})
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ManifestError(f"manifest has undeclared fields {sorted(unknown)}")
        required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
        missing = required - set(d)
        if missing:
            raise ManifestError(f"manifest lacks fields {sorted(missing)}")
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as e:
            raise ManifestError(f"manifest is not valid JSON: {e}") from None
