"""The suite's guard (tests/hermetic.py): a test that reads what this checkout measured fails loudly, a test
of the committed data reads the committed campaigns it names."""
import subprocess
import sys

import pytest

import hermetic
from osbench_analysis.paths import CAMPAIGNS_DIR, GENERATED_DIR
from osbench_analysis.store import campaigns as store


def test_the_default_campaigns_root_is_an_error_not_the_checkouts_data():
    assert store.default_root() != CAMPAIGNS_DIR
    with pytest.raises(hermetic.LiveDataRead, match="default campaigns root"):
        store.catalog()
    assert hermetic.take_violations()   # seen, and cleared: this test meant it


def test_listing_the_live_folders_is_an_error_even_when_the_code_swallows_it():
    for folder in (CAMPAIGNS_DIR, GENERATED_DIR, CAMPAIGNS_DIR.parent / "crossing_counts"):
        try:
            sorted(folder.iterdir())
        except Exception:   # noqa: BLE001 - as code under test might
            pass
    seen = hermetic.take_violations()
    assert len(seen) == 3 and all("lists a folder" in w for w in seen)


def test_a_file_git_does_not_track_is_neither_read_nor_written_there(tmp_path):
    target = CAMPAIGNS_DIR / "not-a-committed-campaign" / store.MANIFEST_FILE
    with pytest.raises(hermetic.LiveDataRead, match="not a committed file"):
        open(target, "w")
    assert not target.parent.exists()
    hermetic.take_violations()


def test_a_committed_campaign_named_is_read(committed_root):
    cid = hermetic.committed_campaigns()[0]
    c = store.load_campaign(CAMPAIGNS_DIR / cid)       # seal verified: every file opened, the folder listed
    assert c.id == cid and len(c.samples)
    assert sorted(p.name for p in committed_root.iterdir()) == hermetic.committed_campaigns()


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_process_the_suite_starts_reads_the_empty_stand_in(tmp_path):
    """A CLI or a notebook's kernel the suite starts inherits the stand-in default root (the guard's hook is
    the test process's own): there the package's default campaigns root is an empty folder, not data/."""
    code = "from osbench_analysis.store import campaigns as c; r = c.default_root(); print(r, sorted(r.iterdir()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    root, listed = out.stdout.split(" ", 1)
    assert out.returncode == 0 and listed.strip() == "[]", out.stderr[-2000:]
    assert root == str(store.default_root()) and root != str(CAMPAIGNS_DIR)
