"""The campaign store: raw data written once, atomically, sealed, never modified.

Layout of one campaign, ``data/campaigns/<id>/``::

    samples.parquet   one row per timed batch (schema.SAMPLE_COLUMNS)
    manifest.json     schema version, parameters, host, worker outcomes, file hashes
    SHA256SUMS        the seal: sha256 of both files above (``sha256sum -c SHA256SUMS``)

A campaign is assembled in ``.tmp-<id>-<pid>.<start>/`` beside its final
place, every file fsync'd, and renamed into place only when complete, so a
folder named by an id is always a whole campaign; a disk that fills up or
turns read-only on the way leaves no folder (the runner's journal keeps the
measured runs).  A `.tmp-` folder of a runner that died is removed by the
next runner's sweep (owners.py).

Many campaigns are read through one Arrow dataset (`samples_dataset`), seals
verified first, without loading every file into memory.
"""
from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import re
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from osbench_analysis.errors import OsbenchError
from osbench_analysis.store.records import Manifest, ManifestError
from osbench_analysis.store.schema import MODEL_FIELDS, RUN_COLUMNS, SAMPLE_COLUMNS
from osbench_analysis.paths import CAMPAIGNS_DIR

SAMPLES_FILE = "samples.parquet"
MANIFEST_FILE = "manifest.json"
SEAL_FILE = "SHA256SUMS"
#: a campaign id: one name of a folder (no "/", never "." or ".."; \Z, not $: "abc\n" is no id)
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
_ARROW = {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(), "bool": pa.bool_(),
          "float64": pa.float64(), "Int64": pa.int64()}
ARROW_SCHEMA = pa.schema([(name, _ARROW[t]) for name, t in SAMPLE_COLUMNS.items()])
#: the columns of a campaign sealed before the memory-system model's (schema.MODEL_FIELDS)
BEFORE_MODEL = tuple(c for c in SAMPLE_COLUMNS if c not in MODEL_FIELDS)


class StoreError(OsbenchError):
    """Something about the campaign store the user must fix (path, id)."""


class CampaignExists(StoreError):
    pass


class CampaignCorrupted(StoreError):
    """A sealed campaign whose files no longer match their seal or schema."""


class DamagedCampaign(UserWarning):
    """A folder of the campaigns root left out of a listing or an analysis, and why (issue 31)."""


def warn_damaged(path, why: str) -> None:
    import warnings

    warnings.warn(f"campaign folder {Path(path).name!r} left out: {why}", DamagedCampaign, stacklevel=3)


#: Files a campaign folder may hold beside the three it is sealed with; anything else is named as foreign.
#: (A keyed signature of the host that sealed it, issue 31 part A, is to be registered here.)
EXTRA_FILES: set[str] = {"SIGNATURE.json"}   # a fleet host's signature (store/signature.py)


def default_root() -> Path:
    """data/campaigns of this checkout, or $OSBENCH_DATA_DIR."""
    env = os.environ.get("OSBENCH_DATA_DIR")
    return Path(env) if env else CAMPAIGNS_DIR


def new_campaign_id(label: str, now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.timezone.utc)
    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32]
    return f"{now:%Y%m%dT%H%M%SZ}-{host}-{re.sub(r'[^A-Za-z0-9._-]', '-', label)}"


def check_can_create(root: str | Path, campaign_id: str) -> Path:
    """Everything that would make writing the campaign fail, checked before measuring."""
    if not ID_PATTERN.match(campaign_id):
        raise StoreError(f"campaign id must be 1-128 characters of letters, digits, '.', '_' or '-', "
                         f"starting with a letter or digit (got {campaign_id!r})")
    root = Path(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"cannot create output folder {root}: {e.strerror}") from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise StoreError(f"output folder {root} is not writable")
    target = root / campaign_id
    if target.exists():
        raise CampaignExists(f"campaign {campaign_id!r} already exists at {target}; sealed campaigns are "
                             f"never overwritten: choose another id or leave it unset for a fresh one")
    return target


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def samples_table(samples: pd.DataFrame) -> pa.Table:
    missing = [c for c in SAMPLE_COLUMNS if c not in samples.columns]
    if missing:
        raise ValueError(f"samples lack columns {missing}")
    return pa.Table.from_pandas(samples[list(SAMPLE_COLUMNS)], schema=ARROW_SCHEMA, preserve_index=False)


def write_campaign(root: str | Path, campaign_id: str, samples: pd.DataFrame, manifest: Manifest) -> Path:
    """Write, seal and atomically publish a campaign; returns its folder."""
    if manifest.campaign_id != campaign_id:
        raise ValueError(f"manifest is for {manifest.campaign_id!r}, not {campaign_id!r}")
    from osbench_analysis.store.owners import owner_tag

    target = check_can_create(root, campaign_id)
    tmp = Path(root) / f".tmp-{campaign_id}-{owner_tag()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        pq.write_table(samples_table(samples), tmp / SAMPLES_FILE, compression="zstd")
        manifest.files = {SAMPLES_FILE: {"sha256": _sha256(tmp / SAMPLES_FILE), "rows": len(samples)}}
        (tmp / MANIFEST_FILE).write_text(manifest.to_json())
        sums = "".join(f"{_sha256(tmp / n)}  {n}\n" for n in (MANIFEST_FILE, SAMPLES_FILE))
        (tmp / SEAL_FILE).write_text(sums)
        for f in tmp.iterdir():
            _fsync(f)  # the seal must not be renamed into place before its files are on disk
            f.chmod(0o444)
        _fsync(tmp)
        if target.exists():  # re-check: rename(2) would replace an empty directory
            raise CampaignExists(f"campaign {campaign_id!r} appeared at {target} while measuring")
        os.rename(tmp, target)
        target.chmod(0o555)
        _fsync(Path(root))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def campaign_bytes(path: str | Path) -> bytes:
    """A sealed campaign folder as an uncompressed tar (how a fleet host sends it)."""
    import io
    import tarfile

    path = Path(path)
    verify_seal(path)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in (SAMPLES_FILE, MANIFEST_FILE, SEAL_FILE):
            tar.add(path / name, arcname=f"{path.name}/{name}")
    return buf.getvalue()


def import_campaign(root: str | Path, data: bytes, signature: dict | None = None, ca_pem: bytes | None = None,
                    host: str | None = None) -> Path:
    """Store a campaign received as campaign_bytes under root: its seal is
    verified before it appears, and nothing is ever overwritten (an identical
    copy already there is accepted as is).  With `signature` (a fleet host's,
    store/signature.py), it is stored only if the signature holds for this seal,
    by a certificate of CA ca_pem and of `host`, and is kept beside the seal.
    Returns its folder."""
    import io
    import tarfile

    from osbench_analysis.store.owners import owner_tag

    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
        members = tar.getmembers()
    except tarfile.TarError as e:
        raise CampaignCorrupted(f"received campaign is not a readable tar: {e}") from None
    names = {m.name for m in members}
    ids = {n.split("/", 1)[0] for n in names}
    if len(ids) != 1 or not all(m.isfile() for m in members):
        raise CampaignCorrupted(f"received campaign has unexpected entries {sorted(names)}")
    campaign_id = ids.pop()
    expected = {f"{campaign_id}/{n}" for n in (SAMPLES_FILE, MANIFEST_FILE, SEAL_FILE)}
    if names != expected or not ID_PATTERN.match(campaign_id):
        raise CampaignCorrupted(f"received campaign {campaign_id!r} has entries {sorted(names)}; "
                                f"expected {sorted(expected)}")
    root = Path(root)
    target = root / campaign_id
    seal = tar.extractfile(f"{campaign_id}/{SEAL_FILE}").read()
    if signature is not None:
        from osbench_analysis.store import signature as signatures

        try:
            signatures.signer_of(signature, campaign_id, seal, ca_pem, host)
        except signatures.SignatureError as e:
            raise CampaignCorrupted(f"received campaign {campaign_id!r}: {e}") from None
    if (target / SEAL_FILE).is_file():
        if (target / SEAL_FILE).read_bytes() == seal:
            verify_seal(target)
            return target
        raise CampaignExists(f"a different campaign {campaign_id!r} already exists at {target}; sealed "
                             "campaigns are never overwritten")
    check_can_create(root, campaign_id)
    tmp = root / f".tmp-{campaign_id}-{owner_tag()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        for m in members:
            dest = tmp / m.name.split("/", 1)[1]
            dest.write_bytes(tar.extractfile(m).read())
            _fsync(dest)
            dest.chmod(0o444)
        if signature is not None:
            (tmp / signatures.SIGNATURE_FILE).write_text(signatures.to_text(signature))
            (tmp / signatures.SIGNATURE_FILE).chmod(0o444)
        verify_seal(tmp)
        man = Manifest.from_json((tmp / MANIFEST_FILE).read_text())
        if man.campaign_id != campaign_id:
            raise CampaignCorrupted(f"received folder {campaign_id!r} holds campaign {man.campaign_id!r}")
        _fsync(tmp)
        if target.exists():
            raise CampaignExists(f"campaign {campaign_id!r} appeared at {target} while it was being stored")
        os.rename(tmp, target)
        target.chmod(0o555)
        _fsync(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


@dataclass
class Campaign:
    id: str
    path: Path
    manifest: Manifest
    samples: pd.DataFrame

    @property
    def environment(self) -> str:
        return self.manifest.environment

    @property
    def runs(self) -> pd.DataFrame:
        """Worker outcomes: one row per (probe, variant, placement, run)."""
        rows = [vars(r) for r in self.manifest.runs]
        return pd.DataFrame(rows, columns=list(RUN_COLUMNS)).astype(RUN_COLUMNS)

    @property
    def errors(self) -> pd.DataFrame:
        r = self.runs
        return r[r["status"] != "ok"].reset_index(drop=True)


def verify_seal(path: Path) -> None:
    seal = path / SEAL_FILE
    if not seal.is_file():
        raise CampaignCorrupted(f"{path} is not a sealed campaign (no {SEAL_FILE})")
    expected = {}
    for line in seal.read_text().splitlines():
        digest, _, name = line.partition("  ")
        expected[name] = digest
    actual = {}
    for name in (MANIFEST_FILE, SAMPLES_FILE):
        if name not in expected:
            raise CampaignCorrupted(f"{seal} does not cover {name}")
        if (path / name).is_symlink() or not (path / name).is_file():
            raise CampaignCorrupted(f"{path / name} is {'a symlink' if (path / name).is_symlink() else 'missing'}")
        actual[name] = _sha256(path / name)
        if actual[name] != expected[name]:
            raise CampaignCorrupted(f"{path / name} does not match its seal (sha256 {actual[name][:12]}… "
                                    f"expected {expected[name][:12]}…): the raw data was modified or damaged")
    signed_by(path)   # a signed campaign: is this seal the one its host signed?
    foreign = sorted(set(os.listdir(path)) - {MANIFEST_FILE, SAMPLES_FILE, SEAL_FILE, *EXTRA_FILES})
    if foreign:
        raise CampaignCorrupted(f"{path} holds file(s) its seal does not cover: {', '.join(foreign)}")
    try:   # T9: samples rewritten and the seal recomputed, while the manifest still records the old sha256
        man = json.loads((path / MANIFEST_FILE).read_text())
        recorded = man.get("files", {}).get(SAMPLES_FILE, {})
    except (ValueError, AttributeError) as e:
        raise CampaignCorrupted(f"{path / MANIFEST_FILE} is not a valid manifest: {e}") from None
    if man.get("campaign_id") != path.name and not path.name.startswith(".tmp-"):   # T11, T14
        raise CampaignCorrupted(f"folder {path.name!r} holds campaign {man.get('campaign_id')!r} (its manifest's "
                                "id): a campaign folder was renamed or another campaign's manifest copied into it")
    if not isinstance(recorded, dict) or recorded.get("sha256") != actual[SAMPLES_FILE]:
        raise CampaignCorrupted(f"{path / SAMPLES_FILE} (sha256 {actual[SAMPLES_FILE][:12]}…) is not the file "
                                f"its manifest records (files.{SAMPLES_FILE}.sha256 "
                                f"{str((recorded or {}).get('sha256'))[:12]}…): samples were replaced after sealing")


def signed_by(path: Path, ca_pem: bytes | None = None) -> str:
    """"signed by host X" or "unsigned (local)" (store/signature.py); CampaignCorrupted when a
    signed campaign's seal is not what its signer signed ("signature does not match")."""
    from osbench_analysis.store import signature

    seal = (path / SEAL_FILE).read_bytes()
    try:
        record = signature.read(path)
        if record is None:
            return "unsigned (local)"
        cid = record.get("campaign_id") if isinstance(record, dict) else None
        return f"signed by host {signature.signer_of(record, cid, seal, ca_pem)}"
    except signature.SignatureError as e:
        raise CampaignCorrupted(f"{path}: {e}") from None


def intact(id_or_path: str | Path, root: str | Path | None = None) -> bool:
    """Whether a campaign's seal verifies; a damaged one is named in a warning (DamagedCampaign) and False:
    what an analysis reads beside the campaigns asked for (pooled earlier ones) is left out, not blocking."""
    try:
        verify_seal(resolve(id_or_path, root))
        return True
    except CampaignCorrupted as e:
        warn_damaged(id_or_path, str(e))
        return False


def resolve(id_or_path: str | Path, root: str | Path | None = None) -> Path:
    p = Path(id_or_path)
    if p.is_dir():
        return p
    candidate = Path(root or default_root()) / str(id_or_path)
    if candidate.is_dir():
        return candidate
    known = ", ".join(catalog(root)["campaign_id"]) or "none"
    raise StoreError(f"no campaign {str(id_or_path)!r} under {Path(root or default_root())} (known: {known})")


def load_campaign(id_or_path: str | Path, root: str | Path | None = None) -> Campaign:
    """Load a sealed campaign, verifying its seal and schema first."""
    path = resolve(id_or_path, root)
    if path.is_symlink():
        raise CampaignCorrupted(f"{path} is a symlink to {os.readlink(path)}: a campaign is a folder of its own")
    verify_seal(path)
    try:
        manifest = Manifest.from_json((path / MANIFEST_FILE).read_text())
    except ManifestError as e:
        raise CampaignCorrupted(f"{path / MANIFEST_FILE}: {e}") from None
    if manifest.campaign_id != path.name and not path.name.startswith(".tmp-"):
        raise CampaignCorrupted(f"folder {path.name!r} holds campaign {manifest.campaign_id!r} (its manifest's id): "
                                "a campaign folder was renamed or another campaign copied into it")
    table = pq.read_table(path / SAMPLES_FILE)
    if table.schema.names not in (list(SAMPLE_COLUMNS), list(BEFORE_MODEL)):
        raise CampaignCorrupted(f"{path / SAMPLES_FILE} columns {table.schema.names} differ from the schema")
    samples = table.to_pandas()
    for name in MODEL_FIELDS:   # a campaign sealed before the memory-system model's columns existed
        if name not in samples.columns:
            samples[name] = pd.NA
    samples = samples.astype(SAMPLE_COLUMNS)
    return Campaign(id=manifest.campaign_id, path=path, manifest=manifest, samples=samples)


def _paths(campaigns, root) -> list[Path]:
    if campaigns is None:
        return [Path(p) for p in catalog(root)["path"]]
    return [resolve(c, root) for c in campaigns]


def samples_dataset(campaigns: list[str] | None = None, root: str | Path | None = None, *,
                    verify: bool = True):
    """One pyarrow.dataset over the samples of many sealed campaigns (default:
    every campaign under root).  Every seal is verified first (streamed: one
    file in memory at a time); nothing is loaded until the dataset is scanned,
    and a scan reads only the columns and rows it asks for."""
    import pyarrow.dataset as ds

    paths = _paths(campaigns, root)
    if verify:
        for p in paths:
            verify_seal(p)
    return ds.dataset([str(p / SAMPLES_FILE) for p in paths], schema=ARROW_SCHEMA, format="parquet")


def load_campaigns(campaigns: list[str] | None = None, root: str | Path | None = None, *,
                   columns: list[str] | None = None) -> tuple[dict[str, Manifest], pd.DataFrame]:
    """Manifests by id and the samples of many campaigns as one frame, seals
    verified; the samples are read in one Arrow scan and converted once (no
    per-campaign frames concatenated: half the peak memory)."""
    paths = _paths(campaigns, root)
    manifests = {}
    for p in paths:
        verify_seal(p)
        try:
            m = Manifest.from_json((p / MANIFEST_FILE).read_text())
        except ManifestError as e:
            raise CampaignCorrupted(f"{p / MANIFEST_FILE}: {e}") from None
        manifests[m.campaign_id] = m
    table = samples_dataset([str(p) for p in paths], verify=False).to_table(columns=columns)
    frame = table.to_pandas()
    return manifests, frame.astype({c: t for c, t in SAMPLE_COLUMNS.items() if c in frame.columns})


CATALOG_COLUMNS = ["campaign_id", "created_utc", "environment", "arch_class", "host", "host_label", "identity",
                   "derived", "host_merge", "hostname",
                   "profile", "probes", "primitives",
                   "n_samples", "n_errors", "kernel_release", "kernel_inside", "virtualization", "git_commit", "sweep_only",
                   "partial", "memory_events", "path"]


@functools.lru_cache(maxsize=256)
def parsed_manifest(text: str) -> Manifest:
    """Manifest.from_json remembered by the manifest's text (the catalog reads every manifest under the
    root on every call; parsing, not reading, is its cost); the last 256 (a manifest is up to ~0.2 MB of text),
    memory bounded.  Shared between callers: read it, never change it."""
    return Manifest.from_json(text)


def _catalog_manifest(d: Path) -> tuple[Manifest | None, str]:
    """A folder's manifest if it looks like a whole campaign (no hashing), else why it is not one."""
    if d.is_symlink():
        return None, f"a symlink to {os.readlink(d)}"
    if not d.is_dir():
        return None, "a file, not a campaign folder"
    try:   # N10: a folder this user may not read is named, never a traceback blocking the others
        names = set(os.listdir(d))
        missing = [n for n in (MANIFEST_FILE, SEAL_FILE, SAMPLES_FILE) if not (d / n).is_file()]
    except OSError as e:
        return None, f"unreadable ({e.strerror or e})"
    if missing:
        return None, f"{', '.join(missing)} missing"
    try:
        man = parsed_manifest((d / MANIFEST_FILE).read_text())
    except (ManifestError, OSError, UnicodeDecodeError) as e:
        return None, f"{MANIFEST_FILE}: {e}"
    if man.campaign_id != d.name:
        return None, f"it holds campaign {man.campaign_id!r} (renamed, or another campaign's manifest)"
    foreign = sorted(names - {MANIFEST_FILE, SAMPLES_FILE, SEAL_FILE, *EXTRA_FILES})
    if foreign:
        return None, f"file(s) its seal does not cover: {', '.join(foreign)}"
    return man, ""


#: root -> (what its folders looked like, the catalog's rows, the folders passed over and why): the last catalog
#: of each root, returned again while no folder under it changed (issue 33: a notebook asks a dozen times)
_CATALOGS: dict[str, tuple[tuple, list[dict], list[tuple[Path, str]]]] = {}


def _folders_key(root: Path) -> tuple:
    """What catalog() reads of root, by stat alone: each entry's name, type, inode and time, and the size,
    time and inode of its manifest, seal and samples.  A campaign added, removed, renamed, re-sealed or a
    file of it written again (a folder's time changes when a file is added or removed in it) changes it."""
    out = []
    for name in sorted(os.listdir(root)):
        if name.startswith("."):
            continue
        try:
            st = os.lstat(root / name)
        except OSError:
            out.append((name, None))
            continue
        files = []
        for f in (MANIFEST_FILE, SEAL_FILE, SAMPLES_FILE):
            try:
                fs = os.stat(root / name / f)
                files.append((fs.st_size, fs.st_mtime_ns, fs.st_ino))
            except OSError:
                files.append(None)
        out.append((name, st.st_mode, st.st_ino, st.st_mtime_ns, tuple(files)))
    return tuple(out)


def readable_root(root: Path) -> None:
    """StoreError (one line) when the campaigns folder cannot be listed (N10: a PermissionError traceback)."""
    try:
        os.listdir(root)
    except OSError as e:
        raise StoreError(f"cannot read the campaigns folder {root}: {e.strerror or e}") from None


def catalog(root: str | Path | None = None) -> pd.DataFrame:
    """One row per campaign under root (seals are verified by load_campaign, not
    here).  Only whole, sealed folders count: a journal or a `.tmp-` folder of a
    campaign still being measured is not a campaign.  The rows are remembered per
    root while no folder under it changes (``_folders_key``); a folder passed over
    is named in a warning on every call."""
    root = Path(root or default_root())
    if not root.is_dir():
        return pd.DataFrame([], columns=CATALOG_COLUMNS)
    readable_root(root)
    key = _folders_key(root)
    seen = _CATALOGS.get(str(root))
    if seen is None or seen[0] != key:
        seen = (key, *_catalog_rows(root))
        _CATALOGS[str(root)] = seen
    for d, why in seen[2]:   # named, never silently gone, and never blocking the rest (issue 31: T4, T5, T8, T11, T13, T14)
        warn_damaged(d, why)
    return pd.DataFrame(seen[1], columns=CATALOG_COLUMNS)


def sealed_partial(cat: pd.DataFrame) -> pd.Series:
    """Per catalog row: whether its campaign was sealed as partial (store.catalog's ``partial``: its
    environment stopped, or most runs failed; its planned primitives may all be there)."""
    if "partial" not in cat:
        return pd.Series(False, index=cat.index)
    return cat["partial"].fillna("").astype(str) != ""


def memory_model(cat: pd.DataFrame) -> pd.Series:
    """Per catalog row: whether its campaign loaded the guests' memory-system model (``--memory-events``):
    one boot without the model and boots with it, fewer batches, a polluted mode's one-operation batches;
    analysis/memevents.py reads them, the instruction-count comparisons only when they are named."""
    if "memory_events" not in cat:
        return pd.Series(False, index=cat.index)
    return cat["memory_events"].fillna("").astype(str) != ""


def _catalog_rows(root: Path) -> tuple[list[dict], list[tuple[Path, str]]]:
    from osbench_analysis.catalog.registry import sweep_only

    rows, passed_over, idents = [], [], []
    for d in sorted(root.iterdir()):
        if d.name.startswith("."):
            continue
        man, why = _catalog_manifest(d)
        if why:
            passed_over.append((d, why))
            continue
        ident = man.host_identity
        rows.append({
            "campaign_id": man.campaign_id,
            "created_utc": man.created_utc,
            "environment": man.environment,
            "arch_class": man.arch_class,
            "host": ident.key,              # hosts.identity: what measured it (the analysis' `host`)
            "host_label": ident.label,
            "identity": ident.key,          # its manifest's own identity; `host` differs when it is merged
            "derived": ident.derived,       # that identity derived from an older manifest (hosts.identity)
            "host_merge": "",
            "hostname": man.hostname,
            "profile": man.profile,
            "probes": len(man.config.get("probes", [])),
            # the primitives (probe, parameters) it measured: a round is complete or partial by these
            "primitives": len({(c.get("probe"), json.dumps(c.get("params", {}), sort_keys=True, default=str))
                               for c in man.conditions}),
            "n_samples": man.files.get(SAMPLES_FILE, {}).get("rows"),
            "n_errors": len(man.failed_runs),
            "kernel_release": man.host.get("kernel_release"),
            "kernel_inside": man.environment_facts.get("kernel_release", ""),
            "virtualization": man.host.get("virtualization"),
            "git_commit": man.host.get("git", {}).get("commit"),
            # measured for the scalability sweeps alone (registry.sweep_only): read beside a round, never its primary
            "sweep_only": sweep_only(man.config),
            # why it was sealed as partial ('' when complete): never a primary nor a pooled campaign unless named
            "partial": man.partial,
            # the guests' memory-system model loaded ('warm', 'polluted'; '' without): its counts are read by
            # analysis/memevents.py, never as a round of the instruction-count comparison
            "memory_events": (man.config or {}).get("memory_events") or "",
            "path": str(d),
        })
        idents.append(ident)
    _one_machine_one_host(rows, idents)
    return rows, passed_over


def _one_machine_one_host(rows: list[dict], idents: list) -> None:
    """A derived identity whose every fact agrees with one recorded identity of the root is that machine
    (hosts.identity.merges, issue 37): its rows take the recorded host's key and label, and ``host_merge``
    says so with the facts it rests on (or, agreeing with several, why it stays a host of its own)."""
    from osbench_analysis.hosts.identity import merges

    merged, several = merges(idents)
    labels = {i.key: i.label for i in idents}
    for row in rows:
        m = merged.get(row["identity"])
        if m is not None:
            row.update(host=m.into, host_label=labels[m.into], host_merge=m.sentence())
        else:
            row["host_merge"] = several.get(row["identity"], "")
