"""The suite never reads what this checkout's user has measured (issue 37, item 3).

A test's outcome must not depend on the rounds a clone measured itself: library functions take their
roots as arguments and the tests pass temporary ones.  What could still reach the live folders is made
an error here, in every pytest process (conftest installs it):

- ``OSBENCH_DATA_DIR`` names an empty folder of the session's own, so that a campaigns root left to its
  default (``store.default_root()``, in the test's process or in a CLI or notebook it starts) never is
  this checkout's data/campaigns; listing or reading that folder in the test's process is an error
  too ("pass root=").
- An audit hook (sys.addaudithook: ``open``, ``os.listdir``, ``os.scandir``) refuses, in the test's
  process, to list a folder where measurements land (data/campaigns, data/crossing_counts,
  data/syscall_mix, data/derived, data/validation, paper/generated, build/ but build/envs, the built
  environments) and to open a file there that git does not track.  A test of the committed data
  names the committed campaigns or files (``committed()``, from `git ls-files`) and reads them;
  whatever a clone added beside them stays unread.

A violation raises LiveDataRead where it happens and, in case the code under test swallowed it, fails
the test at its teardown.  ``reading_the_checkout()`` lets a test look at those folders on purpose
(one that checks a run leaves nothing in them)."""
from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: where measuring, `make count`, `make paper` and the benchmarks write: never listed, only committed files read
MEASURED = ("data/campaigns", "data/crossing_counts", "data/syscall_mix", "data/derived", "data/validation",
            "paper/generated", "build")
#: below MEASURED but installed software, not measurements: the kernel environments `make setup` builds
TOOLS = ("build/envs",)


class LiveDataRead(AssertionError):
    """A test read what this checkout measured (not an OSError: the code under test must not swallow it)."""


@functools.lru_cache(maxsize=1)
def committed() -> frozenset[str]:
    """Every path git tracks in this checkout, relative to it (empty without git: then nothing under the
    measured folders may be read, and a committed-data test says so)."""
    try:
        r = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(r.stdout.decode().split("\0")) - {""} if r.returncode == 0 else frozenset()


@functools.lru_cache(maxsize=1)
def committed_folders() -> frozenset[str]:
    """Every folder holding a committed file, relative to the checkout."""
    return frozenset(str(p) for f in committed() for p in Path(f).parents if str(p) != ".")


def committed_campaigns() -> list[str]:
    """The campaign ids git tracks (sorted): the only ones a test of the committed data may name."""
    return sorted({p.split("/")[2] for p in committed() if p.startswith("data/campaigns/") and p.count("/") >= 3})


def copy_committed(folder: str, dest: Path) -> Path:
    """dest holding a copy of every committed file under the checkout's folder (e.g. "data/campaigns"),
    at the same place below it: the committed data as a root of the test's own, whatever the clone added."""
    import shutil

    prefix = folder.rstrip("/") + "/"
    for rel in sorted(f for f in committed() if f.startswith(prefix)):
        target = dest / rel[len(prefix):]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, target)
    dest.mkdir(parents=True, exist_ok=True)
    return dest


_state = {"allowed": 0, "sentinel": None, "violations": [], "busy": False}
_ROOT = str(REPO)
_ROOT_SLASH = _ROOT + os.sep


def _relative(path) -> str | None:
    """path relative to the checkout ('' for the checkout itself), None outside it or not a path."""
    if isinstance(path, int) or path is None:
        return None
    try:
        p = os.fsdecode(os.fspath(path))
    except TypeError:
        return None
    p = os.path.abspath(p)
    if p.startswith(_ROOT_SLASH):
        return p[len(_ROOT_SLASH):]
    return "" if p == _ROOT else None


def _under(rel: str, folders) -> bool:
    return any(rel == f or rel.startswith(f + "/") for f in folders)


def _why(event: str, path) -> str | None:
    sentinel = _state["sentinel"]
    if sentinel is not None:
        try:
            p = os.path.abspath(os.fsdecode(os.fspath(path)))
        except TypeError:
            p = None
        if p is not None and (p == sentinel or p.startswith(sentinel + os.sep)):
            return (f"{event} {p}: the default campaigns root (OSBENCH_DATA_DIR, the session's stand-in for "
                    "data/campaigns): pass the test's own root (root=..., --root)")
    rel = _relative(path)
    if rel is None or not _under(rel, MEASURED) or _under(rel, TOOLS):
        return None
    if event == "open":
        if rel in committed():
            return None
        return f"open {rel}: not a committed file of this checkout (what its user measured or built)"
    if rel not in MEASURED and rel in committed_folders():
        return None   # a committed campaign's own folder (its seal is checked for foreign files)
    return f"{event} {rel}: lists a folder this checkout's measurements write into"


def _hook(event: str, args) -> None:
    if event not in ("open", "os.listdir", "os.scandir") or _state["allowed"] or _state["busy"]:
        return
    _state["busy"] = True    # committed() runs git once: no recursion through its own opens
    try:
        why = _why(event, args[0] if args else None)
    finally:
        _state["busy"] = False
    if why:
        _state["violations"].append(why)
        raise LiveDataRead(f"a test read the checkout's live data: {why}")


def install(sentinel: Path) -> None:
    """Once per process: the stand-in default root and the hook (an audit hook cannot be removed; it
    does nothing outside a test session's folders)."""
    sentinel.mkdir(parents=True, exist_ok=True)
    os.environ["OSBENCH_DATA_DIR"] = str(sentinel)
    if _state["sentinel"] is None:
        committed_folders()   # before the hook: git's own start-up is not a test's read
        sys.addaudithook(_hook)
    _state["sentinel"] = os.path.abspath(sentinel)


def take_violations() -> list[str]:
    out, _state["violations"] = _state["violations"], []
    return out


@contextlib.contextmanager
def reading_the_checkout():
    """Look at the live folders on purpose (e.g. to check that a run wrote nothing there)."""
    _state["allowed"] += 1
    try:
        yield
    finally:
        _state["allowed"] -= 1
