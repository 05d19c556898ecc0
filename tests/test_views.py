"""The views a reader looks at (issue 41, item 6): the explorer keeps the baseline it was given, `osbench host`
says which host this machine is, explore.guests() reads one host's campaigns as analyze() picks them, and
numbers on screen have three significant digits."""
from __future__ import annotations

import copy
import dataclasses
import datetime as dt

import numpy as np
import pandas as pd
import pytest

from osbench_analysis import formatting
from osbench_analysis.hosts import identity, machine
from osbench_analysis.paths import CAMPAIGNS_DIR
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import records

INTEL = "20261126T132440Z-vm-native"      # committed: Intel Xeon (derived identity), one round of
INTEL_ROUND = "20261126T132440Z-vm-"      # native, gvisor, uml, mach, linux-tcg, ...
AMD = "20261123T135922Z-vm-native"        # committed: AMD EPYC (derived), another kernel build


def host_of(cid: str) -> dict:
    return records.Manifest.from_json((CAMPAIGNS_DIR / cid / store.MANIFEST_FILE).read_text()).host


def recorded(host: dict) -> dict:
    return dict(copy.deepcopy(host), cpu_vendor="GenuineIntel", cpu_family="6", cpu_model_number="143",
                cpu_stepping="8", microcode="0x2b000603", cpu_flags=["avx2", "avx512f"], signal_frame_bytes=3376)


def copy_campaign(root, base: str, cid: str, *, host=None, minutes=0, round_ids=None, scale=1.0, probes=None):
    """A committed campaign sealed again by the real store under another id, host record, start and round,
    its per-operation values scaled by ``scale`` (a few probes only, with ``probes``)."""
    c = store.load_campaign(CAMPAIGNS_DIR / base)
    s = c.samples if probes is None else c.samples[c.samples["probe"].isin(probes)]
    s = s.copy()
    s["campaign_id"] = cid
    s["elapsed_ns"] = (s["elapsed_ns"] * scale).round().astype("int64")
    s["per_op_ns"] = s["elapsed_ns"] / s["iterations"]
    created = dt.datetime.fromisoformat(c.manifest.created_utc) + dt.timedelta(minutes=minutes)
    keep = (lambda p: True) if probes is None else (lambda p: p in probes)
    m = dataclasses.replace(c.manifest, campaign_id=cid, created_utc=created.isoformat(),
                            conditions=[x for x in c.manifest.conditions if keep(x["probe"])],
                            runs=[r for r in c.manifest.runs if keep(r.probe)],
                            host=copy.deepcopy(host or c.manifest.host),
                            config=dict(c.manifest.config, campaign_set=round_ids or [cid], campaign_id=cid))
    return store.write_campaign(root, cid, s, m)


# ------------------------------------------------------------------ the explorer's baseline

@pytest.fixture(scope="module")
def three_environments(tmp_path_factory):
    root = tmp_path_factory.mktemp("explorer")
    ids = [f"r1-{e}" for e in ("native", "gvisor", "uml")]
    for e, cid in zip(("native", "gvisor", "uml"), ids):
        copy_campaign(root, INTEL_ROUND + e, cid, round_ids=ids, probes=["null_syscall", "getppid"])
    return root


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_explorer_keeps_the_chosen_baseline_while_it_is_in_the_lists(three_environments):
    from osbench_analysis.explore import widgets   # ipywidgets: a declared dependency (missing: the test fails)

    ex = widgets.Explorer(three_environments, probe="null_syscall", placement="same_cpu")
    assert ex.baseline.value == "native" and set(ex.environments.value) == {"native", "gvisor", "uml"}
    # an environment left out: the list of baselines changes, the baseline stays (it was gvisor: first in the list)
    ex.environments.value = ("gvisor", "native")
    assert ex.baseline.value == "native"
    sentences = " ".join(o["data"].get("text/html", "") for o in ex.output.outputs if o["output_type"] == "display_data")
    assert "gvisor is" in sentences and "than native" in sentences and "than gvisor" not in sentences
    # a campaign list changed: still native
    ex.campaigns.value = ("r1-native", "r1-uml")
    assert set(ex.environments.options) == {"native", "uml"} and ex.baseline.value == "native"
    # the user's own choice is kept too, through campaigns and environments added (the list then begins with gvisor)
    ex.environments.value = ("native", "uml")
    ex.baseline.value = "uml"
    ex.campaigns.value = ("r1-native", "r1-gvisor", "r1-uml")
    ex.environments.value = ("gvisor", "native", "uml")
    assert list(ex.baseline.options) == ["gvisor", "native", "uml"] and ex.baseline.value == "uml"


# ------------------------------------------------------------------ which host am I on?

@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_this_host_names_this_machine_its_campaigns_and_whether_it_is_the_reference(tmp_path):
    from osbench_analysis import cli, explore

    root = tmp_path / "campaigns"
    me = recorded(host_of(INTEL))
    copy_campaign(root, INTEL, "old-native", probes=["null_syscall"])                  # derived: merged into me
    copy_campaign(root, INTEL, "new-native", host=me, minutes=10, probes=["null_syscall"])
    copy_campaign(root, AMD, "amd-native", probes=["null_syscall"])                    # another machine
    key = identity.host_identity(me).key
    ref = tmp_path / "reference_hosts.txt"
    ref.write_text(f"# the reference\n{key}   # this one\n")
    t = explore.this_host(root, reference_file=ref, facts=me)
    assert (t.key, t.campaigns, t.reference, t.reference_hosts) == (key, 2, True, (key,))
    assert t.label == identity.host_identity(me).label
    lines = t.lines()
    assert lines[0] == f"this machine is host {key}: {t.label}" and lines[1].endswith(": 2")
    assert lines[2] == f"reference host of the paper: yes ({ref}: {key})"
    ref.write_text("amd-epyc-a1580e\n")
    other = explore.this_host(root, reference_file=ref, facts=me)
    assert not other.reference and other.reference_hosts == ("amd-epyc-a1580e",)
    # a machine with no campaign here: 0, and how to measure one
    none = explore.this_host(root, reference_file=ref, facts=dict(me, kernel_release="6.1.0"))
    assert none.campaigns == 0 and "`osbench run` measures one" in none.lines()[1]
    # a derived host of the root that agrees with this machine too, but is counted with another: said
    twin = explore.this_host(root, reference_file=ref, facts=dict(me, microcode="0x2b000700"))
    assert twin.campaigns == 0 and len(twin.also) == 1
    assert twin.also[0].startswith(f"{identity.host_identity(host_of(INTEL)).key} (derived, 1 campaigns) agrees")
    assert f"it agrees with {key} too" in twin.also[0]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_osbench_host_reads_this_machine(tmp_path, capsys):
    from osbench_analysis import cli

    key = identity.host_identity(machine.identity_facts()).key
    # the facts read for `osbench host` are those a campaign's manifest records
    assert key == identity.host_identity(dataclasses.asdict(machine.collect_host_info())).key
    assert cli.main(["host", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"this machine is host {key}: ") and out[1] == f"campaigns measured on it under {tmp_path}: 0 " \
        "(`osbench run` measures one; `make all` measures every environment)"
    assert out[2].startswith("reference host of the paper: ")


# ------------------------------------------------------------------ the guests, as analyze() picks

@pytest.fixture(scope="module")
def guests_on_two_hosts(tmp_path_factory):
    """Host A (recorded Intel) and host B (AMD, newer): a round each of native, mach and linux-tcg; host B's
    guests count twice as many instructions; host A also an older round."""
    root = tmp_path_factory.mktemp("guests")
    a, b = recorded(host_of(INTEL)), host_of(AMD)
    for name, host, minutes, scale in (("a0", a, -60, 1.0), ("a1", a, 0, 1.0), ("b1", b, 30, 2.0)):
        ids = [f"{name}-{e}" for e in ("native", "mach", "linux-tcg")]
        copy_campaign(root, INTEL, ids[0], host=host, minutes=minutes, round_ids=ids, probes=["null_syscall"])
        for e, cid in zip(("mach", "linux-tcg"), ids[1:]):
            copy_campaign(root, INTEL_ROUND + e, cid, host=host, minutes=minutes, round_ids=ids, scale=scale)
    return root, identity.host_identity(a), identity.host_identity(b)


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_guests_read_one_hosts_newest_round_as_analyze_picks(guests_on_two_hosts):
    from osbench_analysis import explore
    from osbench_analysis.analysis import microkernel, pipeline

    root, a, b = guests_on_two_hosts
    one, _ = microkernel.from_campaigns(["b1-mach", "b1-linux-tcg"], root)
    # the default host: of the newest complete native campaign (B), its newest round alone (it pooled all three)
    table, figure = explore.guests(root)
    assert figure is not None and list(table["boots"]) == [f"{int(m)} / {int(n)}" for m, n in
                                                           zip(one["mach_boots"], one["linux_boots"])]
    assert table["GNU Mach"].iloc[0] == microkernel._count(one["mach_median"].iloc[0])
    assert pipeline.select_guest_campaigns(root) == ["b1-linux-tcg", "b1-mach"]
    assert table.attrs["caption"].startswith(f"On {b.label}: 2 guest campaigns")
    # another host by words of its label: its own newest round, never B's, never its older one
    assert pipeline.select_guest_campaigns(root, host="intel") == ["a1-linux-tcg", "a1-mach"]
    t_a, _ = explore.guests(root, host="intel")
    assert list(t_a["boots"]) == list(table["boots"]) and list(t_a["GNU Mach"]) != list(table["GNU Mach"])
    assert t_a.attrs["caption"].startswith(f"On {a.label}: 2 guest campaigns")
    # campaigns named: those
    named, _ = explore.guests(root, ["a0-mach", "a0-linux-tcg", "a1-mach", "a1-linux-tcg"])
    assert named["boots"].iloc[0] == "{0} / {0}".format(2 * int(one["mach_boots"].iloc[0]))
    empty, none = explore.guests(root / "no-such-folder")
    assert empty.empty and none is None


# ------------------------------------------------------------------ three significant digits on screen

def test_the_mach_table_and_the_explore_sentences_have_three_significant_digits():
    from osbench_analysis.analysis import microkernel
    from osbench_analysis.explore import questions as explore

    tab = pd.DataFrame({"mach_probe": ["mach_null_trap", "mach_task_self"], "linux_probe": ["null_syscall"] * 2,
                        "mach_median": [76.0, 399.0], "linux_median": [326.2, 326.2],
                        "linux_nomitig_median": [np.nan, np.nan], "ratio": [4.29210, 0.81754],
                        "ratio_lo": [4.29113, 0.81736], "ratio_hi": [4.29212, 0.81755],
                        "mach_boots": [15, 15], "linux_boots": [15, 15], "differs": ["", ""]})
    shown = microkernel.screen_table(tab)
    assert list(shown["Linux / Mach [boots' range]"]) == ["4.29 [4.29, 4.29]", "0.818 [0.817, 0.818]"]
    assert formatting.with_ci_plain(1.0042, 1.0011, 1.0083) == "1.00 [1.00, 1.01]"
    assert formatting.times_plain(0.7) == "0.700x" and formatting.times_plain(6.9312) == "6.93x"
    rng = np.random.default_rng(3)
    rows = [dict(campaign_id=f"c-{e}", environment=e, host="h", probe="p", variant="", placement="same_cpu",
                 run=r, batch=b, per_op_ns=m * np.exp(rng.normal(0, 0.001)), flagged=False)
            for e, m in (("base", 100.0), ("other", 100.7)) for r in range(6) for b in range(10)]
    got = explore.compare(pd.DataFrame(rows), "environment", "other", "base", n_resamples=200)
    sentence = got["sentence"].iloc[0]
    ratio = sentence.split("ratio ")[1].split(" (")[0]
    assert all(len(x.strip("[],").replace(".", "").lstrip("0")) == 3 for x in ratio.split()), sentence
    assert " 1.01x slower " in sentence or "no difference" in sentence


def test_the_reproduction_sentences_print_each_factor_to_three_significant_digits():
    import pandas as pd

    from osbench_analysis.analysis import hosts

    table = pd.DataFrame({"reference_host": ["A", "A"], "this_host": ["B", "B"], "holds": [False, False],
                          "same_size": [False, False], "conclusion": ["gvisor/native null call", "uml/native null call"],
                          "reference": ["81.8x", "40.0x"], "here": ["57.3x", "18.4x"],
                          "here_over_reference": [0.7, 0.46123]})
    (sentence,) = hosts.reproduction_sentences(table)
    assert "(0.700x)" in sentence and "(0.461x)" in sentence and "0.7x" not in sentence
