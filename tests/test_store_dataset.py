"""Many sealed campaigns read as one Arrow dataset, seals verified first."""
import pandas as pd
import pyarrow.dataset as ds
import pytest

from osbench_analysis.store import campaigns as store
from osbench_analysis.store import synthetic


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    root = tmp_path_factory.mktemp("many")
    for i in range(3):
        synthetic.write_synthetic(root, f"syn-{i}", seed=i, hostname=f"h{i}")
    return root


def test_dataset_spans_every_campaign_and_reads_only_what_is_asked(three):
    d = store.samples_dataset(root=three)
    per = {i: len(store.load_campaign(i, three).samples) for i in ("syn-0", "syn-1", "syn-2")}
    assert d.count_rows() == sum(per.values())
    t = d.to_table(columns=["campaign_id", "per_op_ns"], filter=ds.field("probe") == "null_syscall")
    assert t.column_names == ["campaign_id", "per_op_ns"] and set(t["campaign_id"].to_pylist()) == set(per)


def test_load_campaigns_equals_loading_each_and_concatenating(three):
    manifests, samples = store.load_campaigns(["syn-0", "syn-2"], three)
    assert sorted(manifests) == ["syn-0", "syn-2"] and manifests["syn-2"].hostname == "h2"
    each = pd.concat([store.load_campaign(i, three).samples for i in ("syn-0", "syn-2")], ignore_index=True)
    pd.testing.assert_frame_equal(samples, each)


def test_a_damaged_campaign_stops_the_dataset(three, tmp_path):
    import shutil

    root = tmp_path / "r"
    shutil.copytree(three, root)
    f = root / "syn-1" / store.SAMPLES_FILE
    f.chmod(0o644)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 1
    f.write_bytes(bytes(data))
    with pytest.raises(store.CampaignCorrupted, match="syn-1.*does not match its seal"):
        store.samples_dataset(root=root)
