"""Where things live in a checkout: the one place repo-relative defaults are spelled, and where
file probes make their folders by default."""
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CAMPAIGNS_DIR = REPO_ROOT / "data" / "campaigns"
REFERENCE_DIR = REPO_ROOT / "data" / "reference"
DERIVED_DIR = REPO_ROOT / "data" / "derived"
#: simulation studies of the statistics (benchmarks/stats_coverage.py --save), read by the paper
VALIDATION_DIR = REPO_ROOT / "data" / "validation"
PAPER_DIR = REPO_ROOT / "paper"
GENERATED_DIR = PAPER_DIR / "generated"
PROBES_DIR = REPO_ROOT / "probes"
ENVS_BUILD_DIR = REPO_ROOT / "build" / "envs"
#: what the analysis derives from one sealed campaign, kept between processes (store/values_cache.py);
#: OSBENCH_CACHE_DIR moves it, OSBENCH_CACHE_DIR=off turns it off; deleting it loses nothing
CACHE_DIR = REPO_ROOT / "build" / "cache"
CACHE_ENV = "OSBENCH_CACHE_DIR"
PYPROJECT_FILE = REPO_ROOT / "pyproject.toml"
#: every Python package pinned with hashes: `make install` installs it, `make lock` refreshes it
LOCK_FILE = REPO_ROOT / "requirements.lock"


def default_workdir() -> str:
    """Where file probes make their private folder unless a campaign says otherwise: tmpfs (ext4
    create/delete here swings 7-45x between runs an hour apart)."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    import tempfile

    return tempfile.gettempdir()
