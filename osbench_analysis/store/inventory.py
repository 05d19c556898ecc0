"""Every folder of a campaigns root with its state (`osbench list`, issue 31): damage is named, not hidden.

`store.catalog` lists the campaigns an analysis may read and leaves the rest out with a warning;
this lists *everything* in the root, each entry with one state and why:

    sealed        a whole campaign whose seal, manifest and samples agree (every file hashed)
    partial       such a campaign sealed as partial (its environment stopped, or most runs failed: its
                  manifest's environment_info["partial"] says why): never analysed nor pooled unless named
    damaged       a campaign folder that is not whole or not what it says: a file missing or not matching
                  its seal, a manifest that does not parse, samples that are not the file the manifest
                  records, a file the seal does not cover, a folder renamed or a symlink
    interrupted   `.partial-<id>`: the journal of a campaign that stopped; `osbench run --resume ID`
                  continues it, `osbench discard ID` drops it
    measuring     `.partial-<id>` of a runner alive now; `sealing`: its `.tmp-` folder being written
    left behind   a `.tmp-` folder of a runner that died (the next runner removes it)
    foreign       a file or folder that is no campaign at all

The `signature` column says how a sealed campaign's origin can be checked: "signed by host X" (a fleet
host's Ed25519 signature over its seal, store/signature.py; `osbench verify --ca` also checks the
certificate against the fleet's CA) or "unsigned" (an unkeyed sha256 seal detects accidents, not a forger
who recomputes it).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from osbench_analysis.store import campaigns as store
from osbench_analysis.store import owners

COLUMNS = ["folder", "state", "signature", "campaign_id", "created_utc", "environment", "hostname", "profile",
           "n_samples", "n_errors", "why"]
JOURNAL_PREFIX, STATE_FILE = ".partial-", "state.json"   # measure/journal.py's layout (a layer above the store)


def _row(d: Path, state: str, why: str = "", man=None) -> dict:
    row = {"folder": d.name, "state": state, "signature": "", "why": why}
    if man is not None:
        row.update(campaign_id=man.campaign_id, created_utc=man.created_utc, environment=man.environment,
                   hostname=man.hostname, profile=man.profile, n_samples=man.files.get(store.SAMPLES_FILE, {}).get("rows"),
                   n_errors=len(man.failed_runs))
    return row


def _journal(d: Path) -> dict:
    set_id = d.name[len(JOURNAL_PREFIX):]
    try:
        state = json.loads((d / STATE_FILE).read_text())
        pid, _, ticks = str(state.get("owner", "")).partition(".")
        runs = (d / "journal.jsonl").read_bytes().count(b"\n") if (d / "journal.jsonl").exists() else 0
    except (OSError, ValueError, AttributeError) as e:
        return _row(d, "damaged", f"interrupted campaign whose {STATE_FILE} is unreadable ({e}); drop it with "
                                  f"`osbench discard {set_id}`")
    if pid.isdigit() and ticks.isdigit() and owners.is_alive(int(pid), int(ticks)):
        return _row(d, "measuring", f"runner pid {pid}, {runs} worker run(s) journaled")
    return _row(d, "interrupted", f"{runs} worker run(s) kept: `osbench run --resume {set_id}` continues it, "
                                  f"`osbench discard {set_id}` drops it")


def _campaign(d: Path) -> dict:
    man, why = store._catalog_manifest(d)
    if why:
        return _row(d, "damaged" if d.is_dir() or d.is_symlink() else "foreign", why)
    try:
        store.verify_seal(d)
    except (store.CampaignCorrupted, OSError) as e:
        return _row(d, "damaged", str(e).replace(str(d) + "/", "").replace(str(d), "the folder"), man)
    row = _row(d, "partial", f"sealed as partial ({man.partial}): analysed only when named", man) if man.partial \
        else _row(d, "sealed", "", man)
    # verify_seal checked a signature there is; without the fleet's CA this names the certificate that signed
    row["signature"] = store.signed_by(d).replace(" (local)", "")
    return row


def inventory(root: str | Path | None = None) -> pd.DataFrame:
    """One row per entry of the campaigns root: its state and why (see the module's docstring)."""
    root = Path(root or store.default_root())
    if root.is_dir():
        store.readable_root(root)
    rows = []
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if d.name.startswith(JOURNAL_PREFIX) and d.is_dir():
            rows.append(_journal(d))
        elif d.name.startswith(".tmp-") and d.is_dir():
            owner = owners.owner_of(d.name)
            alive = owner is not None and owners.is_alive(*owner)
            rows.append(_row(d, "sealing" if alive else "left behind",
                             "" if alive else "a runner died while sealing; the next runner removes it"))
        elif d.name.startswith(".") and not d.is_dir():
            rows.append(_row(d, "foreign", "a hidden file"))
        else:
            rows.append(_campaign(d))
    return pd.DataFrame(rows, columns=COLUMNS)


def format_inventory(table: pd.DataFrame) -> str:
    """`osbench list`: the table, then one line counting what is not sealed."""
    if table.empty:
        return "no campaigns"
    shown = table.drop(columns=["why"]).astype({"n_samples": "Int64", "n_errors": "Int64"}).astype(object).fillna("")
    text = shown.to_string(index=False)
    notes = [f"  {r.folder}: {r.state}: {r.why}" for r in table.itertuples() if r.why]
    if notes:
        text += "\n\n" + "\n".join(notes)
    return text
