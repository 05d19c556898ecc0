"""The journal of a campaign being measured: every finished worker run,
appended and fsync'd as it ends, so an interrupted campaign loses at most the
run in progress and can be resumed (`osbench run --resume ID`).

It lives in ``<campaigns root>/.partial-<id>/`` (hidden: the catalog never
sees it)::

    state.json      the campaign's configuration, ids, probe-source hash,
                    owner and interruptions (rewritten atomically)
    journal.jsonl   one line per finished worker run: "<sha256 of the JSON> <JSON>"

A line whose checksum does not match, or that lacks its newline, can only be
the last one (a write cut short by a kill or a full disk): it is dropped and
cut off before anything is appended.  A bad line anywhere else means the
journal was damaged, and resuming is refused.  The journal is removed only
after every campaign it feeds is sealed."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from osbench_analysis.errors import OsbenchError

STATE_FILE = "state.json"
JOURNAL_FILE = "journal.jsonl"
PREFIX = ".partial-"


class JournalError(OsbenchError):
    """A journal that cannot be resumed: missing, damaged, or for other code or parameters."""


def folder(root: str | Path, set_id: str) -> Path:
    return Path(root) / f"{PREFIX}{set_id}"


def _line(entry: dict) -> bytes:
    payload = json.dumps(entry, sort_keys=True, separators=(",", ":"))
    return f"{hashlib.sha256(payload.encode()).hexdigest()} {payload}\n".encode()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".new")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


@dataclass
class Journal:
    path: Path                                   # the .partial-<id> folder
    state: dict
    entries: list[dict] = field(default_factory=list)
    torn_bytes: int = 0                          # size of a dropped torn last line (0: none)

    @property
    def set_id(self) -> str:
        return self.path.name[len(PREFIX):]

    @classmethod
    def create(cls, root: str | Path, set_id: str, state: dict) -> "Journal":
        path = folder(root, set_id)
        try:
            path.mkdir()
        except FileExistsError:
            raise JournalError(f"an interrupted campaign {set_id!r} is waiting in {path}: resume it with "
                               f"`osbench run --resume {set_id}` (notebooks: resume = {set_id!r}), or delete "
                               f"that folder to drop its measured runs") from None
        write_atomic(path / STATE_FILE, json.dumps(state, indent=1, sort_keys=True).encode())
        (path / JOURNAL_FILE).touch()
        _fsync_dir(path)
        return cls(path, state)

    @classmethod
    def open(cls, root: str | Path, set_id: str) -> "Journal":
        """An existing journal with its valid entries read; a torn last line is noted, not kept."""
        path = folder(root, set_id)
        if not (path / STATE_FILE).is_file():
            waiting = sorted(p.name[len(PREFIX):] for p in Path(root).glob(f"{PREFIX}*")) if Path(root).is_dir() else []
            raise JournalError(f"no interrupted campaign {set_id!r} to resume under {root} "
                               f"(interrupted campaigns there: {', '.join(waiting) or 'none'})")
        try:
            state = json.loads((path / STATE_FILE).read_text())
        except ValueError as e:
            raise JournalError(f"{path / STATE_FILE} is damaged: {e}") from None
        raw = (path / JOURNAL_FILE).read_bytes() if (path / JOURNAL_FILE).exists() else b""
        entries, offset, torn = [], 0, 0
        lines = raw.split(b"\n")
        for i, line in enumerate(lines):
            last = i == len(lines) - 1
            if last and not line:
                break
            digest, _, payload = line.partition(b" ")
            good = not last and hashlib.sha256(payload).hexdigest().encode() == digest
            if good:
                try:
                    entries.append(json.loads(payload))
                except ValueError:
                    good = False
            if not good:
                if i < len(lines) - 2 or (i == len(lines) - 2 and lines[-1]):
                    raise JournalError(f"{path / JOURNAL_FILE} line {i + 1} fails its checksum but is not the "
                                       "last line: the journal was damaged; it cannot be resumed")
                torn = len(raw) - offset
                break
            offset += len(line) + 1
        return cls(path, state, entries, torn)

    def drop_torn(self) -> None:
        """Cut a torn last line off the file, so appends start on a line boundary."""
        if self.torn_bytes:
            f = self.path / JOURNAL_FILE
            os.truncate(f, f.stat().st_size - self.torn_bytes)

    def append(self, entry: dict) -> None:
        """Append one finished run; durable when this returns."""
        fd = os.open(self.path / JOURNAL_FILE, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            data = _line(entry)
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
        self.entries.append(entry)

    def save_state(self) -> None:
        write_atomic(self.path / STATE_FILE, json.dumps(self.state, indent=1, sort_keys=True).encode())

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def find(root: str | Path, campaign_id: str) -> str | None:
    """The journal set id holding `campaign_id` (itself, or a set of several environments)."""
    root = Path(root)
    if folder(root, campaign_id).is_dir():
        return campaign_id
    for p in sorted(root.glob(f"{PREFIX}*")) if root.is_dir() else []:
        try:
            ids = json.loads((p / STATE_FILE).read_text()).get("campaign_ids", [])
        except (OSError, ValueError):
            continue
        if campaign_id in ids:
            return p.name[len(PREFIX):]
    return None
