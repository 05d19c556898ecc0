"""requirements.lock pins what pyproject.toml asks for, and the paper says which versions it was built with."""
import re

import pytest
from packaging.requirements import Requirement

from osbench_analysis.report import environment_versions as pe
from osbench_analysis.paths import LOCK_FILE, PAPER_DIR, PYPROJECT_FILE


def test_every_declared_requirement_is_pinned_by_the_lock_within_its_range():
    """`make install` installs the lock with --no-deps: a dependency added to pyproject.toml
    (or its test or fleet extra, or the build system's) without `make lock` would be missing."""
    locked = pe.locked_versions(LOCK_FILE)
    missing, outside = [], []
    for text in pe.declared_requirements(PYPROJECT_FILE, extras=("test", "fleet"), build=True):
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue
        version = locked.get(pe.canonical(req.name))
        if version is None:
            missing.append(text)
        elif not req.specifier.contains(version, prereleases=True):
            outside.append(f"{text} (locked {version})")
    assert not missing and not outside, (f"{LOCK_FILE.name} is behind pyproject.toml: missing {missing}, "
                                         f"outside the range {outside}; run `make lock`")


@pytest.mark.parametrize("lock", [LOCK_FILE, LOCK_FILE.with_name("requirements-uv.lock")], ids=lambda p: p.name)
def test_every_pin_is_exact_and_hashed(lock):
    """pip install --require-hashes (and uv's) refuses a lock with a loose or unhashed line; requirements-uv.lock
    pins uv alone, the installer `make install` uses (pip where it cannot be had)."""
    blocks = re.split(r"\n(?=[A-Za-z0-9])", lock.read_text())
    pins = [b for b in blocks if re.match(r"[A-Za-z0-9]", b)]
    assert len(pins) == len(pe.locked_versions(lock)) > 0
    loose = [b.split()[0] for b in pins if "==" not in b.split()[0] or "--hash=sha256:" not in b]
    assert loose == []
    if lock.name == "requirements-uv.lock":
        assert list(pe.locked_versions(lock)) == ["uv"]


def test_locked_versions_normalise_names_and_are_empty_without_a_lock(tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text("# header\nJupyter_Core==5.9.1 \\\n    --hash=sha256:ab\n    # via x\n"
                    "typing-extensions==4.16.0 ; python_version < '3.12' \\\n    --hash=sha256:cd\n")
    assert pe.locked_versions(lock) == {"jupyter-core": "5.9.1", "typing-extensions": "4.16.0"}
    assert pe.locked_versions(tmp_path / "absent.lock") == {}


def test_paragraph_names_versions_counts_the_rest_and_flags_what_differs_from_the_lock():
    locked = {"numpy": "2.4.6", "pandas": "3.1.1", "six": "1.17.0", "tzdata": "2026.6"}
    text = pe.python_env_tex("3.11.7", {"numpy": "2.4.6", "pandas": "3.0.0"}, locked)
    assert "Python~3.11.7" in text and "numpy~2.4.6" in text and "pandas~3.0.0" in text
    assert "These and 2 further packages" in text and r"\texttt{requirements.lock}" in text
    assert "other than locked: pandas~3.0.0 (locked 3.1.1)." in text
    assert "other than locked" not in pe.python_env_tex("3.11.7", {"numpy": "2.4.6"}, locked)
    bare = pe.python_env_tex("3.11.7", {"my_pkg": None}, {})
    assert r"my\_pkg~not installed" in bare and "not pinned" in bare


def test_generated_file_holds_the_locked_versions_whatever_machine_builds_it(tmp_path):
    text = pe.write_tex(tmp_path).read_text()
    assert (tmp_path / "python_env.tex").is_file()
    locked = pe.locked_versions(LOCK_FILE)
    assert f"Python~{pe.lock_python(LOCK_FILE)}" in text and f"numpy~{locked['numpy']}" in text
    assert "other than locked" not in text     # the builder's own differences are its machine report's
    assert "pytest~" not in text  # the test extra is not what the paper is built with
    assert r"\input{generated/python_env}" in (PAPER_DIR / "paper.tex").read_text()
