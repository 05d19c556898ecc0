"""Issue 41 item 5, the gap left: a campaign sealed as partial (its FUSE server died, or most of its runs
failed: manifest.environment_info["partial"], measure/runner.py) still has every planned primitive among its
conditions, so the primitive count alone made it the newest *complete* campaign of its environment, the
guests' round, and a campaign pooled with the primary one.  Synthetic campaigns sealed by the real store."""
import subprocess
from pathlib import Path

import pytest

from osbench_analysis import cli, explore
from osbench_analysis.analysis import hosts, kernels, microkernel, pipeline, reproducibility
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import inventory, synthetic

WHY = "fuse: its server osbench-fuse exited; 11 of 12 worker runs failed, the rest skipped"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def base():
    return synthetic.template()


def _newest_committed(environment: str) -> store.Campaign:
    out = subprocess.run(["git", "ls-files", f"data/campaigns/*-{environment}/{store.MANIFEST_FILE}"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split()
    # the newest of the instruction-count rounds: a memory-events campaign (--memory-events) is never a guest
    # selection's unless named, so it would leave the selection empty whatever the partial rule did
    loaded = (store.load_campaign(REPO / Path(m).parent) for m in sorted(out, reverse=True))
    newest = next((c for c in loaded if not (c.manifest.config or {}).get("memory_events")), None)
    assert newest is not None, f"no committed {environment} campaign without the memory model"
    return newest


def test_a_newer_campaign_sealed_as_partial_is_never_the_complete_one(tmp_path, base):
    root = tmp_path / "R"
    synthetic.write_synthetic(root, "a-whole", base, seed=1)
    synthetic.write_synthetic(root, "b-partial", base, seed=2, partial=WHY)   # newer (same time, later id)
    cat = store.catalog(root)
    assert dict(zip(cat["campaign_id"], cat["partial"])) == {"a-whole": "", "b-partial": WHY}
    assert cat["primitives"].nunique() == 1             # every planned primitive is there: counts cannot tell
    chosen, notes = hosts.newest_complete(cat)
    assert list(chosen["campaign_id"]) == ["a-whole"]
    assert len(notes) == 1 and "b-partial was sealed as partial" in notes[0] and "osbench-fuse exited" in notes[0]
    assert explore.newest("native", n=1, root=root) == ["a-whole"]      # the two-campaign comparison's too
    said: list[str] = []
    refs = pipeline.select_campaigns(root=root, notes=said)
    assert [r.campaign_id for r in refs] == ["a-whole"] and said == notes


def test_only_partial_campaigns_none_is_chosen_by_default_but_named(tmp_path, base, capsys):
    root = tmp_path / "R"
    synthetic.write_synthetic(root, "only", base, seed=1, partial=WHY)
    cat = store.catalog(root)
    assert hosts.choose_host(cat) == cat["host"].iloc[0]
    chosen, notes = hosts.newest_complete(cat)
    assert chosen.empty and len(notes) == 1 and "only was sealed as partial" in notes[0]
    assert [r.campaign_id for r in pipeline.select_campaigns(["only"], root)] == ["only"]   # named: used
    with pytest.raises(store.StoreError, match="no complete campaign to analyse.*only was sealed as partial"):
        pipeline.select_campaigns(root=root)
    assert cli.main(["analyze", "--root", str(root), "--out-dir", str(tmp_path / "out")]) == 2   # one line
    assert "Traceback" not in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_partial_campaign_is_never_pooled_with_a_complete_one(tmp_path, base):
    root = tmp_path / "R"
    synthetic.write_synthetic(root, "a-partial", base, seed=1, partial=WHY)     # comparable, not later
    synthetic.write_synthetic(root, "b-whole", base, seed=2)
    synthetic.write_synthetic(root, "c-whole", base, seed=3)
    manifests = {c: store.load_campaign(root / c).manifest for c in ("c-whole", "a-partial")}
    p = reproducibility.pool_campaigns({"c-whole": manifests["c-whole"]}, root)
    assert p.campaigns == {"c-whole": ["b-whole", "c-whole"]}
    assert set(p.values["campaign_id"]) == {"b-whole", "c-whole"}
    named = reproducibility.pool_campaigns({"a-partial": manifests["a-partial"]}, root)   # named: it is the primary
    assert "a-partial" in named.campaigns["a-partial"]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_guest_selections_pass_over_a_partial_campaign(tmp_path):
    mach = _newest_committed("mach")
    root = tmp_path / "R"
    synthetic.write_synthetic(root, "m-a-whole", mach, seed=1)
    synthetic.write_synthetic(root, "m-b-partial", mach, seed=2, partial=WHY)
    assert pipeline.select_guest_campaigns(root) == ["m-a-whole"]
    assert kernels.newest_round(store.catalog(root)) == ["m-a-whole"]
    table, _ = microkernel.from_campaigns(root=root)
    assert len(table)
    asked, _ = microkernel.from_campaigns(["m-a-whole"], root)
    assert table.equals(asked)                          # the default read the complete campaign alone


def test_list_shows_it_partial_and_verify_checks_its_seal(tmp_path, base, capsys):
    root = tmp_path / "R"
    synthetic.write_synthetic(root, "a-whole", base, seed=1)
    synthetic.write_synthetic(root, "b-partial", base, seed=2, partial=WHY)
    table = inventory.inventory(root).set_index("folder")
    assert table.loc["a-whole", "state"] == "sealed" and table.loc["b-partial", "state"] == "partial"
    assert WHY in table.loc["b-partial", "why"]
    assert cli.main(["list", "--root", str(root)]) == 0         # not damage: a sealed, named state
    out = capsys.readouterr().out
    assert "partial" in out and "osbench-fuse exited" in out
    assert cli.main(["verify", "--root", str(root)]) == 0
    assert "b-partial: seal intact" in capsys.readouterr().out
    (root / "b-partial" / store.SAMPLES_FILE).write_bytes(b"x")
    assert cli.main(["verify", "--root", str(root)]) == 1      # a partial campaign's seal is checked too
