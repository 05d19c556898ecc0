"""The Python environment the paper is built with, for its Reproducing section:
the interpreter, each direct dependency's installed version, and whether these
are the versions requirements.lock pins (what `make install` installs; `make lock`
refreshes it).  A campaign's manifest records the measuring side's versions
(host.library_versions); this file is the analysing side's."""
from __future__ import annotations

import platform
import re
import tomllib
from importlib import metadata
from pathlib import Path

from osbench_analysis.formatting import tex_escape
from osbench_analysis.paths import LOCK_FILE, PYPROJECT_FILE

# A pinned line of a pip-compile lock: "name==version \" (hashes follow on their own lines).
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.MULTILINE)
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    """PEP 503's normalised name: the lock, pyproject and metadata spell names differently."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(lock: str | Path = LOCK_FILE) -> dict[str, str]:
    """Canonical name -> exact version the lock pins; {} when there is no lock."""
    path = Path(lock)
    if not path.is_file():
        return {}
    return {canonical(name): version for name, version in _PIN.findall(path.read_text())}


def declared_requirements(pyproject: str | Path = PYPROJECT_FILE, extras: tuple[str, ...] = ("test",),
                          build: bool = False) -> list[str]:
    """pyproject's requirement strings: the dependencies, the named extras and, if
    asked, the build system's (what the lock must hold for `pip install --no-deps`)."""
    data = tomllib.loads(Path(pyproject).read_text())
    project = data.get("project", {})
    out = list(project.get("dependencies", []))
    for extra in extras:
        out += project.get("optional-dependencies", {}).get(extra, [])
    if build:
        out += data.get("build-system", {}).get("requires", [])
    return out


def requirement_name(requirement: str) -> str:
    return canonical(_REQUIREMENT_NAME.match(requirement).group(1))


def installed_versions(names: list[str]) -> dict[str, str | None]:
    """Each name's installed version, None where it is not installed."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def python_env_tex(python: str, installed: dict[str, str | None], locked: dict[str, str],
                   lock_name: str = LOCK_FILE.name) -> str:
    """One paragraph: the interpreter and direct dependencies' versions, how they are
    pinned, and every package whose installed version is not the locked one."""
    listed = ", ".join(f"{tex_escape(n)}~{tex_escape(v or 'not installed')}" for n, v in installed.items())
    text = (f"The analysis and this paper were built with Python~{tex_escape(python)} and {listed} "
            "(the direct dependencies in \\texttt{pyproject.toml}).")
    if not locked:
        return ("\\begin{sloppypar}\n" + text + f" No \\texttt{{{tex_escape(lock_name)}}} was found: these "
                "versions are not pinned.\n\\end{sloppypar}\n")
    others = len(set(locked) - {canonical(n) for n in installed})
    text += (f" These and {others} further packages are pinned to exact versions with their hashes in "
             f"\\texttt{{{tex_escape(lock_name)}}}, which \\texttt{{make install}} installs "
             "(\\texttt{make lock} refreshes it after a dependency changes).")
    differ = [f"{tex_escape(n)}~{tex_escape(v or 'not installed')} (locked "
              f"{tex_escape(locked.get(canonical(n), 'nothing'))})"
              for n, v in installed.items() if locked.get(canonical(n)) != v]
    if differ:
        text += " Installed here other than locked: " + "; ".join(differ) + "."
    # a long list of unbreakable name~version pairs: let the lines stretch rather than run past the margin
    return "\\begin{sloppypar}\n" + text + "\n\\end{sloppypar}\n"


def write_tex(out_dir: str | Path, lock: str | Path = LOCK_FILE, pyproject: str | Path = PYPROJECT_FILE) -> Path:
    """paper/generated/python_env.tex for this interpreter and its installed packages."""
    names = [requirement_name(r) for r in declared_requirements(pyproject, extras=())]
    path = Path(out_dir) / "python_env.tex"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(python_env_tex(platform.python_version(), installed_versions(names), locked_versions(lock),
                                   Path(lock).name))
    return path
