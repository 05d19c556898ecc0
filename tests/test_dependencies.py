"""Declared dependencies (issue 41 item 7): each one is installed, whatever a test module would skip (a
missing declared dependency fails the suite here, never turns tests into skips), at a version its
declaration accepts; and each floor is the release series requirements.lock pins -- the only versions the
tests have passed with (`cryptography>=41` was declared while store/signature.py used 42's API)."""
import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DECLARED = [Requirement(r) for r in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"]]
PINS = {m.group(1).lower().replace("_", "-"): Version(m.group(2))
        for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==(\S+)", (ROOT / "requirements.lock").read_text(), re.M)}


@pytest.mark.parametrize("req", DECLARED, ids=lambda r: r.name)
def test_a_declared_dependency_is_installed_at_a_version_it_accepts(req):
    try:
        installed = importlib.metadata.version(req.name)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{req.name} is declared in pyproject.toml but not installed: `make install`")
    assert req.specifier.contains(installed, prereleases=True), f"{req.name} {installed} is not {req.specifier}"


@pytest.mark.parametrize("req", DECLARED, ids=lambda r: r.name)
def test_a_floor_is_the_release_series_the_lock_pins(req):
    pin = PINS.get(req.name.lower().replace("_", "-"))
    assert pin is not None, f"{req.name} is declared but not pinned in requirements.lock: `make lock`"
    assert req.specifier.contains(pin), f"requirements.lock pins {req.name}=={pin}, which {req.specifier} refuses"
    floors = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert len(floors) == 1, f"{req.name}: one floor (>=) expected, got {req.specifier}"
    assert floors[0].release[:2] == pin.release[:2], (
        f"{req.name}>={floors[0]} while the tests run with {pin}: raise the floor to {pin.major}.{pin.minor}")
