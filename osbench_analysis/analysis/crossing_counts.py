"""The counted crossings as data (issue #32, item 3): the JSON records `measure/counting.py` writes
under data/crossing_counts/ (per guest operation: host system calls, context switches, signals,
wake-ups, inter-processor interrupts, FUSE requests by opcode, of an environment's own processes),
read into one long table the decomposition (mechanism.py) and the paper read.

One row per (host, environment, probe, counter): the median, min and max over the record's pairs of
counted runs, how many pairs, and the file it came from.  ``host`` is the host's identity key
(hosts.identity, the analysis' ``host`` column), ``host_label`` what a person reads."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from osbench_analysis.errors import OsbenchError
from osbench_analysis.hosts import identity
from osbench_analysis.paths import REPO_ROOT

COUNTS_DIR = REPO_ROOT / "data" / "crossing_counts"
COLUMNS = ["host", "host_label", "environment", "probe", "counter", "median", "min", "max", "n_pairs",
           "n_low", "n_high", "source", "started_utc", "probe_source", "tool", "software"]


#: the environment fact that names the sandbox's software in a record's provenance, first found
SOFTWARE_FACTS = {"runsc_version": "runsc", "uml_kernel_version": "UML kernel", "libfuse_version": "libfuse"}


class CountsError(OsbenchError, ValueError):
    """A counts file that is not a crossing-counts record."""


def read_record(path: str | Path) -> dict:
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise CountsError(f"{path}: not a readable JSON file ({e}); expected a record of "
                          "`python -m osbench_analysis.measure.counting`") from None
    if not isinstance(record, dict) or record.get("kind") != "crossing_counts":
        raise CountsError(f"{path}: kind {record.get('kind') if isinstance(record, dict) else None!r}, "
                          "expected 'crossing_counts'")
    return record


def record_table(record: dict, source: str = "") -> pd.DataFrame:
    """One record as rows of COLUMNS (records that say why they could not count are left out: see
    `not_counted`)."""
    prov = record.get("provenance", {})
    ident = identity.host_identity(prov.get("host", {}))
    probe_source = str(((prov.get("host") or {}).get("probes") or {}).get("source_sha256", ""))[:8]
    facts = prov.get("environment_facts") or {}
    rows = []
    for r in record.get("records", []):
        f = facts.get(r["environment"]) or {}
        software = next((f"{SOFTWARE_FACTS[k]} {f[k]}" for k in SOFTWARE_FACTS if f.get(k)), "")
        for counter, s in (r.get("per_operation") or {}).items():
            rows.append({"host": ident.key, "host_label": ident.label, "environment": r["environment"],
                         "probe": r["probe"], "counter": counter, "median": float(s["median"]),
                         "min": float(s["min"]), "max": float(s["max"]), "n_pairs": int(s["n"]),
                         "n_low": r.get("n_low"), "n_high": r.get("n_high"), "source": source,
                         "started_utc": prov.get("started_utc", ""), "probe_source": probe_source,
                         "tool": prov.get("perf_version", ""), "software": software})
    return pd.DataFrame(rows, columns=COLUMNS)


def not_counted(record: dict) -> list[tuple[str, str, str]]:
    """(environment, probe, why) of the record's pairs that could not be counted."""
    return [(r["environment"], r["probe"], r["error"]) for r in record.get("records", []) if r.get("error")]


def load_counts(directory: str | Path | None = None) -> pd.DataFrame:
    """Every record under `directory` (default data/crossing_counts/), newest last; an (host,
    environment, probe) counted twice keeps the newest record's counts."""
    d = Path(directory) if directory is not None else COUNTS_DIR
    parts = [record_table(read_record(p), p.name) for p in sorted(d.glob("*.json"))] if d.is_dir() else []
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    t = pd.concat(parts, ignore_index=True).sort_values("started_utc", kind="stable")
    return t.drop_duplicates(["host", "environment", "probe", "counter"], keep="last").reset_index(drop=True)


def per_operation(counts: pd.DataFrame, host: str, environment: str, probe: str) -> dict[str, float]:
    """{counter: median per operation} of one (host, environment, probe); {} when not counted."""
    m = counts[(counts["host"] == host) & (counts["environment"] == environment) & (counts["probe"] == probe)]
    return dict(zip(m["counter"], m["median"]))


def counts_host_for(counts: pd.DataFrame, host: str, environment: str, probe: str, baseline: str) -> str:
    """The host whose counts stand for `host`'s: first one that counted the host system calls by name
    (host_calls: calls priced by what they are), its own before the newest other's; else one that
    counted their total, its own first ('' when none counted both the environment and the baseline for
    `probe`).  Counts are events of the software (sandbox, kernel), not times: another host's are used,
    and said to be, when this one has none by name."""
    from osbench_analysis.analysis import host_calls

    def has(h):
        return bool(per_operation(counts, h, environment, probe)) and bool(per_operation(counts, h, baseline, probe))

    def named(h):
        return has(h) and host_calls.has_names(counts, h, environment, probe) and \
            host_calls.has_names(counts, h, baseline, probe)

    newest = list(counts.sort_values("started_utc", ascending=False)["host"].drop_duplicates())
    for ok in (named, has):
        if ok(host):
            return host
        for h in newest:
            if ok(h):
                return h
    return ""


def host_label(counts: pd.DataFrame, host: str) -> str:
    m = counts.loc[counts["host"] == host, "host_label"]
    return str(m.iloc[0]) if len(m) else host


def record_facts(counts: pd.DataFrame, host: str) -> dict:
    """{"probe_source", "tool", "software": {environment: version}} of ``host``'s counts ({} without any)."""
    m = counts[counts["host"] == host]
    if m.empty:
        return {}
    sw = m[m["software"].fillna("") != ""].drop_duplicates("environment")
    return {"probe_source": str(m["probe_source"].iloc[-1]), "tool": str(m["tool"].iloc[-1]),
            "software": dict(zip(sw["environment"], sw["software"]))}
