"""What the analysis derives from one sealed campaign alone, kept on disk between processes: its
condition tables (estimates, intervals, flags, quality: analysis/pipeline.py), its values for pooling
(reproducibility.campaign_values) and a guest's boots (microkernel.boot_counts).  Issue 33: a new
kernel's analyze.ipynb re-read and re-summarised every campaign, about 3 s, for tables that cannot change.

A sealed campaign never changes, so what is derived from it alone can be kept.  An entry is found by
its key: the campaign's folder, the bytes of its seal (SHA256SUMS), the size and modification time of
every file in the folder, the settings, the deriving function's name and code_key(): every file of the
package and the versions of Python and of the libraries that compute (issue 41: a constant, a helper or
a called module outside the deriving function's own source left stale tables).  Any edit of the package
changes every key; a campaign re-sealed or a file rewritten changes its own.  The key only finds an
entry: an entry is used only when the campaign's seal verifies at that moment (every file hashed again,
a few ms for a campaign, far less than reading and summarising it), so a byte flipped with the file's
size and time kept (bit rot) is caught, the campaign named and left out, never pooled.  A campaign
already in memory (loaded, its seal verified) is not hashed twice.

Where: ``paths.CACHE_DIR`` / campaign-values (under build/, never committed), or the folder
``OSBENCH_CACHE_DIR`` names; ``OSBENCH_CACHE_DIR=off`` turns it off.  Entries are Parquet files
(data, never code), written atomically, in a directory per campaign folder, function and settings (a
newer version replaces the older), at most MAX_ENTRIES directories; deleting the folder loses nothing.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import pandas as pd

from osbench_analysis.paths import CACHE_ENV

SUBDIR = "campaign-values"
ENV_VAR = CACHE_ENV
#: campaign folders kept at most (about 10-50 kB each); past it the oldest half goes (checked every
#: WRITES_BETWEEN_PRUNES writes of a process, and at its first)
MAX_ENTRIES = 4000
WRITES_BETWEEN_PRUNES = 200
_writes = 0


def folder() -> Path | None:
    """Where entries live, or None when the cache is off."""
    from osbench_analysis.paths import CACHE_DIR

    where = os.environ.get(ENV_VAR)
    if where is not None and where.strip().lower() in ("", "off", "0", "no"):
        return None
    return Path(where or CACHE_DIR) / SUBDIR


#: the libraries whose versions a derived table depends on (the arithmetic, the tables, their files)
LIBRARIES = ("numpy", "pandas", "scipy", "pyarrow")
#: the package's files in code_key: its code and any data it ships, not what is built (_bin/, the extension)
SOURCE_SUFFIXES = (".py", ".json", ".csv", ".txt", ".toml", ".yaml", ".yml", ".tsv")


#: the package whose files code_key hashes
PACKAGE = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=4)
def code_key(package: Path = PACKAGE) -> str:
    """A hash of everything a derived table can depend on besides its campaign and settings: every file of
    the package (each .py, and any data file it ships; not the bytecode or the built probes), the Python
    version and the versions of LIBRARIES.  Computed once per process (the package's ~1.5 MB read); any
    edit anywhere in the package (a helper, a constant, a module the deriving function calls, the host
    key) changes every entry's key.
    The derived tables read no data file outside their campaign (its seal covers the manifest)."""
    import importlib.metadata
    import sys

    h = hashlib.sha256(sys.version.encode())
    for lib in LIBRARIES:
        try:
            version = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"\0{lib}\0{version}".encode())
    for f in sorted(package.rglob("*")):
        if f.suffix in SOURCE_SUFFIXES and "__pycache__" not in f.parts and f.is_file():
            h.update(f"\0{f.relative_to(package).as_posix()}\0".encode() + f.read_bytes())
    return h.hexdigest()


def _folder_tag(path: Path, derive: Callable, params: str) -> str:
    where = f"{path.resolve()}\0{derive.__module__}.{derive.__qualname__}\0{params}"
    return f"{path.name}-{hashlib.sha256(where.encode()).hexdigest()[:8]}"


def key(path: str | Path, derive: Callable, params: str = "") -> str:
    """The entry's file name for what ``derive`` (with ``params``, its settings as text) makes of a campaign
    folder: the folder's name and a hash of its place, derive's name and params (every version of one
    folder shares these), then a hash of everything in the key (see the module's docstring), which
    includes code_key(): the whole package and the libraries' versions."""
    from osbench_analysis.store import campaigns as store

    path = Path(path)
    h = hashlib.sha256()
    h.update(str(path.resolve()).encode() + b"\0" + code_key().encode() + b"\0")
    h.update(params.encode() + b"\0")
    h.update((path / store.SEAL_FILE).read_bytes())
    for name in sorted(os.listdir(path)):
        st = os.stat(path / name)
        h.update(f"\0{name}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return f"{_folder_tag(path, derive, params)}/{h.hexdigest()[:32]}.parquet"


def _files(entry: Path, parts: int) -> list[Path]:
    """The Parquet file of each table of an entry (one, or ``parts`` for a tuple of tables)."""
    if parts == 1:
        return [entry]
    return [entry.with_name(entry.name[:-len(".parquet")] + f".{i}.parquet") for i in range(parts)]


def _write(entry: Path, tables: list[pd.DataFrame]) -> None:
    """Write an entry atomically (each of its files; the first written last, and an entry is read only
    when all its files are there) in its folder's own directory, dropping the older versions there; every
    WRITES_BETWEEN_PRUNES writes, the oldest half of the directories goes when there are more than
    MAX_ENTRIES (campaigns under passing roots: tests, a notebook's tmp folder)."""
    global _writes
    entry.parent.mkdir(parents=True, exist_ok=True)
    files = _files(entry, len(tables))
    for f, t in reversed(list(zip(files, tables))):
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".parquet")
        os.close(fd)
        try:
            t = t.copy(deep=False)
            t.attrs = {}      # what a caller attaches (analysis parameters) is not the table's data
            t.to_parquet(tmp, index=False)
            os.replace(tmp, f)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    for old in entry.parent.iterdir():
        if old not in files and not old.name.startswith(".tmp-"):
            old.unlink(missing_ok=True)
    _writes += 1
    if (_writes - 1) % WRITES_BETWEEN_PRUNES == 0:
        _prune(entry.parent.parent, keep=entry.parent)


def _prune(where: Path, keep: Path) -> None:
    def age(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0
    every = [d for d in where.iterdir() if d.is_dir()]
    if len(every) > MAX_ENTRIES:
        for old in sorted(every, key=age)[:len(every) // 2]:
            if old != keep:
                shutil.rmtree(old, ignore_errors=True)


def entry(derive: Callable, path: str | Path, params: dict | None = None) -> Path | None:
    """Where what ``derive`` (at ``params``) makes of the campaign folder ``path`` is kept; None when the
    cache is off or the folder cannot be read."""
    where = folder()
    if where is None:
        return None
    try:
        return where / key(path, derive, repr(sorted(dict(params or {}).items())))
    except OSError:
        return None


def read(at: Path | None, parts: int = 1):
    """The kept table (``parts`` > 1: the tuple of tables) at an entry, or None when it is not there."""
    if at is None:
        return None
    files = _files(at, parts)
    try:
        if all(f.is_file() for f in files):
            got = [pd.read_parquet(f) for f in files]
            return got[0] if parts == 1 else tuple(got)
    except OSError:
        pass                  # an entry going away while read: derived again
    return None


def keep(at: Path | None, tables) -> None:
    """Keep a table (or a tuple of tables) at an entry; nothing when the cache is off, the checkout is
    read-only or Parquet cannot hold a table: nothing kept, nothing lost."""
    if at is None:
        return
    try:
        _write(at, [tables] if isinstance(tables, pd.DataFrame) else list(tables))
    except (OSError, ValueError, TypeError):
        pass


def derived(derive: Callable[..., pd.DataFrame | tuple], campaign_id: str, root=None, loaded=None, *,
            strict: bool = False, params: dict | None = None, parts: int = 1):
    """``derive(samples, **params)`` of one campaign's samples (with its ``host`` column: hosts.identity's
    key), from the cache when its key matches and the campaign's seal verifies (every file hashed again:
    a byte flipped with its size and time kept is caught), else derived (from ``loaded``, a store.Campaign
    already in memory, its seal verified when it was loaded, or from the campaign loaded here, seal
    verified) and kept.  ``params``: derive's settings (their repr is part of the key); ``parts``: derive
    returns a tuple of that many tables.  A damaged campaign: None, named in a DamagedCampaign warning (as
    ``store.intact`` does), or with ``strict`` its CampaignCorrupted raised (a campaign asked for by name)."""
    from osbench_analysis.hosts.identity import host_identity
    from osbench_analysis.store import campaigns as store

    params = dict(params or {})
    at, path = None, None
    if folder() is not None:
        try:
            path = loaded.path if loaded is not None else store.resolve(campaign_id, root)
            at = entry(derive, path, params)
        except store.StoreError:
            at = None         # no such campaign: load_campaign below says so
    got = read(at, parts)
    try:
        if got is not None and loaded is None:
            if path.is_symlink():     # as load_campaign: a campaign is a folder of its own
                raise store.CampaignCorrupted(f"{path} is a symlink: a campaign is a folder of its own")
            store.verify_seal(path)   # the entry is used only for a campaign whose seal verifies now
            return got
        if got is not None:
            return got
        if loaded is None:
            loaded = store.load_campaign(campaign_id, root)
    except store.CampaignCorrupted as e:
        if strict:
            raise
        store.warn_damaged(campaign_id, str(e))
        return None
    out = derive(loaded.samples.assign(host=host_identity(loaded.manifest.host).key), **params)
    keep(at, out)
    return out


def clear() -> int:
    """Delete every entry; how many campaign folders had one."""
    where = folder()
    if where is None or not where.is_dir():
        return 0
    n = 0
    for d in where.iterdir():
        if d.is_dir():
            n += 1
        shutil.rmtree(d, ignore_errors=True) if d.is_dir() else d.unlink(missing_ok=True)
    return n


__all__ = ["ENV_VAR", "clear", "derived", "entry", "folder", "keep", "key", "read"]
