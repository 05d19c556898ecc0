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
    """The journal folder of a set id, always directly inside root: an id that is not one folder name
    (a "/", "..", an absolute path, a newline: store.ID_PATTERN) is refused before any path is made."""
    from osbench_analysis.store.campaigns import ID_PATTERN

    if not isinstance(set_id, str) or not ID_PATTERN.match(set_id):
        raise JournalError(f"{set_id!r} is not a campaign id (letters, digits, '.', '_' and '-', one folder "
                           "name, at most 128 characters)")
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
                               f"`osbench run --resume {set_id}` (notebooks: resume = {set_id!r}), or drop its "
                               f"measured runs with `osbench discard {set_id}`{_output(root)}") from None
        except OSError as e:
            raise JournalError(f"cannot start the journal of {set_id!r} in {root}: {_why(e)}") from None
        try:
            write_atomic(path / STATE_FILE, json.dumps(state, indent=1, sort_keys=True).encode())
            (path / JOURNAL_FILE).touch()
            _fsync_dir(path)
        except OSError as e:   # a full disk before the run (B39): nothing measured, nothing left behind
            shutil.rmtree(path, ignore_errors=True)
            raise JournalError(f"cannot start the journal of {set_id!r} in {root}: {_why(e)}; nothing was "
                               "measured or kept") from None
        return cls(path, state)

    @classmethod
    def open(cls, root: str | Path, set_id: str) -> "Journal":
        """An existing journal with its valid entries read; a torn last line is noted, not kept."""
        path = folder(root, set_id)
        if path.is_dir() and not (path / STATE_FILE).is_file():
            raise JournalError(f"{path} has no {STATE_FILE}: its start was cut short, it cannot be resumed"
                               f"{_drop_hint(root, set_id)}")
        if not (path / STATE_FILE).is_file():
            waiting = sorted(p.name[len(PREFIX):] for p in Path(root).glob(f"{PREFIX}*")) if Path(root).is_dir() else []
            raise JournalError(f"no interrupted campaign {set_id!r} to resume under {root} "
                               f"(interrupted campaigns there: {', '.join(waiting) or 'none'})")
        try:
            state = json.loads((path / STATE_FILE).read_text())
        except ValueError as e:
            raise JournalError(f"{path / STATE_FILE} is damaged: {e}{_drop_hint(root, set_id)}") from None
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
        """Append one finished run; durable when this returns.  A full disk is one line (JournalError): the
        runs already journaled stay, and a torn last line is dropped on resume."""
        try:
            fd = os.open(self.path / JOURNAL_FILE, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            try:
                data = _line(entry)
                while data:
                    data = data[os.write(fd, data):]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            raise JournalError(f"cannot write the journal {self.path / JOURNAL_FILE}: {_why(e)}") from None
        self.entries.append(entry)

    def save_state(self) -> None:
        try:
            write_atomic(self.path / STATE_FILE, json.dumps(self.state, indent=1, sort_keys=True).encode())
        except OSError as e:
            raise JournalError(f"cannot write {self.path / STATE_FILE}: {_why(e)}") from None

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _why(e: OSError) -> str:
    import errno

    return f"{e.strerror} ({errno.errorcode.get(e.errno, e.errno)})" if e.strerror else str(e)


def _output(root) -> str:
    from osbench_analysis.store.campaigns import default_root

    return "" if Path(root) == Path(default_root()) else f" --output {root}"


def _drop_hint(root, set_id: str) -> str:
    return f"; drop it with `osbench discard {set_id}{_output(root)}`"


#: what state.json must hold, and of which type (Runner._open_journal and resume_config read each)
STATE_KEYS = {"config": dict, "campaign_ids": list, "code": dict, "created_utc": str, "owner": str,
              "interruptions": list}


#: what state.json's "code" holds (runner._code_identity): the probes' source and built hashes
CODE_KEYS = ("probes_source_sha256", "probes_built_sha256")


def state_problem(state) -> str:
    """'' for a state.json the runner can resume from, else what is wrong with it (B75, B76, B79)."""
    if not isinstance(state, dict):
        return f"not a JSON object (got {type(state).__name__})"
    for key, kind in STATE_KEYS.items():
        if not isinstance(state.get(key), kind):
            return f"{key!r} is missing or not a {kind.__name__} (got {state.get(key)!r:.60})"
    from osbench_analysis.store.campaigns import ID_PATTERN

    if not state["campaign_ids"] or not all(isinstance(c, str) and ID_PATTERN.match(c) for c in state["campaign_ids"]):
        return f"'campaign_ids' must be a non-empty list of ids (got {state['campaign_ids']!r:.60})"
    pid, dot, ticks = state["owner"].partition(".")
    if not (pid.isdigit() and dot and (ticks.isdigit() or ticks == "None")):
        return f"'owner' must be '<pid>.<start ticks>' (got {state['owner']!r:.60})"
    from osbench_analysis.measure.config import CampaignConfig

    unknown = sorted(set(state["config"]) - set(CampaignConfig.__dataclass_fields__))
    if unknown:
        return f"'config' holds unknown parameter(s) {unknown}"
    try:
        import datetime as dt

        dt.datetime.fromisoformat(state["created_utc"])
    except ValueError:
        return f"'created_utc' is not a time (got {state['created_utc']!r:.60})"
    missing = [k for k in CODE_KEYS if k not in state["code"]]
    if missing:   # N23: {} gave a KeyError traceback
        return f"'code' lacks {', '.join(map(repr, missing))} (got {state['code']!r:.60})"
    return ""


def open_to_resume(root: str | Path, campaign_id: str) -> Journal:
    """The journal holding `campaign_id`, its state.json checked (state_problem) before anything reads it."""
    set_id = find(root, campaign_id) or campaign_id
    jr = Journal.open(root, set_id)
    problem = state_problem(jr.state)
    if problem:
        raise JournalError(f"{jr.path / STATE_FILE} is damaged: {problem}{_drop_hint(root, set_id)}")
    return jr


def discard(root: str | Path, campaign_id: str) -> Path:
    """Delete an interrupted campaign's journal (`osbench discard ID`): its measured runs are dropped and the id
    may be used again.  Refused while a runner is measuring it."""
    from osbench_analysis.store import owners

    root = Path(root)
    set_id = find(root, campaign_id) or campaign_id
    path = folder(root, set_id)
    if not path.is_dir() or path.is_symlink():
        waiting = sorted(p.name[len(PREFIX):] for p in root.glob(f"{PREFIX}*")) if root.is_dir() else []
        raise JournalError(f"no interrupted campaign {campaign_id!r} to discard under {root} "
                           f"(interrupted campaigns there: {', '.join(waiting) or 'none'})")
    try:
        owner = str(json.loads((path / STATE_FILE).read_text()).get("owner", ""))
    except (OSError, ValueError, AttributeError):
        owner = ""
    pid, _, ticks = owner.partition(".")
    if pid.isdigit() and ticks.isdigit() and int(pid) != os.getpid() and owners.is_alive(int(pid), int(ticks)):
        raise JournalError(f"campaign {campaign_id!r} is being measured right now by pid {pid}; stop that "
                           "runner first")
    if path.resolve().parent != root.resolve():   # never outside root, whatever the id (N12)
        raise JournalError(f"{path} is not inside {root}: refused")
    shutil.rmtree(path)
    return path


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
