"""One machine, one host (issue 37, item 4): a derived identity (a manifest older than the recorded identity
facts) whose every fact agrees with one recorded identity is that machine, wherever hosts are listed the
merge is stated with the facts it rests on, and cross-host comparisons count machines, not keys."""
from __future__ import annotations

import copy
import subprocess

import pytest

from osbench_analysis.analysis import hosts as ah
from osbench_analysis.analysis import reproducibility
from osbench_analysis.hosts import identity
from osbench_analysis.paths import CAMPAIGNS_DIR, REPO_ROOT
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import records

# its shared fixture takes over a second: the whole file is in the full suite (make test), not the fast tier
pytestmark = pytest.mark.slow

INTEL = "20261126T132440Z-vm-native"     # committed: Intel Xeon, manifest version 2 (a derived identity)
AMD = "20261123T135922Z-vm-native"       # committed: AMD EPYC, kernel 6.18.44-fc-v782, version 2 (derived)


def host_of(cid: str) -> dict:
    return records.Manifest.from_json((CAMPAIGNS_DIR / cid / store.MANIFEST_FILE).read_text()).host


def recorded(host: dict, **over) -> dict:
    """The same host as a version-3 manifest records it: the identity facts the older one lacked added."""
    h = dict(copy.deepcopy(host), cpu_vendor="GenuineIntel", cpu_family="6", cpu_model_number="143",
             cpu_stepping="8", microcode="0x2b000603", cpu_flags=["fpu", "avx2", "avx512f", "pcid", "xsaves"],
             signal_frame_bytes=3376)
    h.update(over)
    return h


# ------------------------------------------------------------------ the rule, on identities

def test_a_derived_identity_agreeing_on_every_fact_it_has_is_the_recorded_machine():
    old, new = identity.host_identity(host_of(INTEL)), identity.host_identity(recorded(host_of(INTEL)))
    assert old.derived and not new.derived and old.key != new.key
    merged, several = identity.merges([old, new])
    assert several == {} and set(merged) == {old.key}
    m = merged[old.key]
    assert m.into == new.key
    # the facts it rests on: every fact the older manifest holds, with the value both hold
    assert set(m.facts) == {"cpu_vendor", "cpu_model", "logical_cpus", "memory_gib", "kernel_release",
                            "mitigations", "virtualization"}
    assert m.facts["kernel_release"] == "6.18.44-fc-v657" and m.facts["logical_cpus"] == 2
    s = m.sentence()
    assert s.startswith(f"{old.key} (derived") and f"treated as {new.key}" in s
    assert "host kernel build 6.18.44-fc-v657" in s and "CPU model Intel(R) Xeon(R) Processor" in s
    assert "memory 24 GiB" in s and "mitigations (" in s and "not compared: family/model/stepping, microcode" in s


@pytest.mark.parametrize("change", [dict(kernel_release="6.18.44-fc-v782"), dict(cpu_count_logical=4),
                                    dict(memory_bytes=48 * 2 ** 30), dict(cpu_model="Intel(R) Xeon(R) Gold"),
                                    dict(virtualization="none"), "mitigation"])
def test_one_fact_differing_is_another_machine(change):
    old = identity.host_identity(host_of(INTEL))
    h = recorded(host_of(INTEL))
    if change == "mitigation":
        h["mitigations"] = {**h["mitigations"], "retbleed": "Mitigation: IBRS"}
    else:
        h.update(change)
    merged, several = identity.merges([old, identity.host_identity(h)])
    assert merged == {} and several == {}


def test_agreeing_with_two_recorded_hosts_merges_with_neither_and_says_why():
    old = identity.host_identity(host_of(INTEL))
    a = identity.host_identity(recorded(host_of(INTEL)))
    b = identity.host_identity(recorded(host_of(INTEL), microcode="0x2b000604"))   # what the old one lacks
    merged, several = identity.merges([old, a, b])
    assert merged == {} and set(several) == {old.key}
    assert "agrees with 2 recorded hosts" in several[old.key] and "kept a host of its own" in several[old.key]


def test_a_manifest_that_records_nothing_about_the_machine_is_never_merged():
    bare = identity.host_identity({"hostname": "vm", "host_id": "abc"})
    rec = identity.host_identity(recorded(host_of(INTEL)))
    assert "host_id" in bare.parts and identity.merges([bare, rec]) == ({}, {})
    # two derived identities, or two recorded ones, never merge with each other
    assert identity.merges([identity.host_identity(host_of(INTEL)), identity.host_identity(host_of(AMD))]) == ({}, {})


# ------------------------------------------------------------------ synthetic campaigns sealed by the real store

# write(root, cid, ...): a small sealed campaign made from the committed Intel one (tests/test_hosts.py)
from test_hosts import write  # noqa: E402


@pytest.fixture(scope="module")
def machines(tmp_path_factory):
    """Machine X measured two rounds (native + gvisor) before its manifests recorded the identity facts
    (derived) and one after (recorded, the same facts otherwise); machine Y (AMD, another kernel build), one
    derived round.  Three identity keys, two machines."""
    root = tmp_path_factory.mktemp("machines")
    x_old, x_new = host_of(INTEL), recorded(host_of(INTEL))
    y = dict(host_of(AMD), probes=host_of(INTEL)["probes"])     # same probe code: only the host differs
    for name, host, minutes in (("x1", x_old, 0), ("x2", x_old, 30), ("x3", x_new, 60), ("y1", y, 10)):
        ids = [f"{name}-native", f"{name}-gvisor"]
        write(root, ids[0], minutes=minutes, host=host, round_ids=ids)
        write(root, ids[1], environment="gvisor", slower=20.0 if name.startswith("x") else 5.0, minutes=minutes,
              host=host, round_ids=ids)
    keys = {n: identity.host_identity(h).key for n, h in (("x_old", x_old), ("x_new", x_new), ("y", y))}
    return root, keys


def test_the_catalog_gives_a_merged_campaign_its_machines_key_and_says_why(machines):
    root, keys = machines
    cat = store.catalog(root).set_index("campaign_id")
    assert set(cat["host"]) == {keys["x_new"], keys["y"]}                 # two machines
    assert set(cat["identity"]) == {keys["x_old"], keys["x_new"], keys["y"]}   # three identities
    assert cat.loc["x1-native", "host"] == keys["x_new"] and cat.loc["x1-native", "identity"] == keys["x_old"]
    assert cat.loc["x1-native", "host_label"] == cat.loc["x3-native", "host_label"]
    assert "host kernel build 6.18.44-fc-v657" in cat.loc["x1-native", "host_merge"]
    assert cat.loc["x3-native", "host_merge"] == "" and cat.loc["y1-native", "host_merge"] == ""
    assert cat.loc["x1-native", "derived"] and not cat.loc["x3-native", "derived"]


def test_the_hosts_table_and_osbench_list_state_the_merge_with_its_facts(machines, capsys):
    from osbench_analysis import cli

    root, keys = machines
    t = ah.hosts_table(store.catalog(root)).set_index("host")
    assert list(t.index) == [keys["x_new"], keys["y"]] and t.loc[keys["x_new"], "campaigns"] == 6
    assert t.loc[keys["x_new"], "identity"] == f"recorded + {keys['x_old']} (derived, 4 campaigns) merged"
    assert t.loc[keys["y"], "identity"] == "derived"
    assert cli.main(["list", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    hosts = out.split("hosts (")[1]
    assert keys["x_new"] in hosts and keys["y"] in hosts and hosts.count(keys["x_old"]) == 2   # table and sentence
    assert "one machine, one host:" in hosts and "every fact it records agreeing" in hosts


def test_the_cross_host_view_counts_machines_and_pools_a_machines_derived_campaigns(machines):
    root, keys = machines
    cross = ah.cross_host(root)
    assert list(cross.hosts["host"]) == [keys["x_new"], keys["y"]]      # two machines, not three keys
    x = cross.hosts.set_index("host").loc[keys["x_new"]]
    assert x["campaigns_pooled"] == 6 and "merged" in x["identity"]    # its three rounds, derived ones too
    assert any(n.startswith(f"{keys['x_old']} (derived") for n in cross.notes)
    assert set(cross.ratios["host"]) == {keys["x_new"], keys["y"]}
    manifests = reproducibility.catalog_manifests(root)
    got = reproducibility.comparable_campaigns({"x3-native": manifests["x3-native"]}, manifests)
    assert got == {"x3-native": ["x1-native", "x2-native", "x3-native"]}


def test_the_analysis_of_a_machine_reads_its_derived_campaigns_as_its_own(machines):
    from osbench_analysis.analysis import pipeline

    root, keys = machines
    result = pipeline.analyze(root=root, host=keys["x_new"], n_resamples=100)
    assert result.hosts == [keys["x_new"]] and result.primary_ids == ["x3-native", "x3-gvisor"]
    p = result.pooling
    assert p.campaigns["x3-native"] == ["x1-native", "x2-native", "x3-native"]
    assert set(p.estimates["host"]) == {keys["x_new"]} and p.estimates["n_campaigns"].max() == 3
    # a derived key asked for (an older `osbench list` printed it) names the machine it is merged into
    assert ah.resolve_host(keys["x_old"], store.catalog(root)) == keys["x_new"]


def test_an_older_merged_campaign_never_becomes_the_primary_one_of_an_environment_the_machine_measured_since(
        tmp_path):
    """The machine's own newer native campaign measured fewer primitives (another probe set) than an older one
    of its derived identity: the newer one stays the baseline, as it was before the merge, and the older one
    neither replaces it nor sets the bar of a complete campaign."""
    from osbench_analysis.analysis import pipeline

    x_old, x_new = host_of(INTEL), recorded(host_of(INTEL))
    write(tmp_path, "old-native", host=x_old, probes=["null_syscall", "stat", "pipe_pingpong", "getppid"])
    write(tmp_path, "old-gvisor", environment="gvisor", host=x_old, slower=20.0)   # an environment measured only then
    write(tmp_path, "new-native", host=x_new, minutes=60, probes=["null_syscall", "stat", "pipe_pingpong"])
    notes = []
    refs = pipeline.select_campaigns(root=tmp_path, notes=notes)
    assert [r.campaign_id for r in refs] == ["new-native", "old-gvisor"] and notes == []
    assert {r.host for r in refs} == {identity.host_identity(x_new).key}


def test_the_papers_across_machines_section_states_the_merge_and_counts_two_machines(machines):
    import pandas as pd

    from osbench_analysis.report.sections import machines as section

    root, keys = machines
    cross = ah.cross_host(root)
    assert [(m.derived, m.into, n) for m, n in cross.merges] == [(keys["x_old"], keys["x_new"], 4)]
    text = section.section_tex(cross, keys["x_new"], pd.DataFrame())
    assert "come from 2 machine kinds" in text
    assert ("4 of the campaigns of host A come from older manifests without family/model/stepping, microcode, "
            "CPU features, signal frame size; every fact they record (CPU vendor, CPU model, logical CPUs, memory, "
            "host kernel build, mitigations, hypervisor) agrees with that machine's, so they count as it.") in text


# ------------------------------------------------------------------ the committed data

def committed(cid: str) -> bool:
    out = subprocess.run(["git", "ls-files", f"data/campaigns/{cid}/{store.MANIFEST_FILE}"], cwd=REPO_ROOT,
                         capture_output=True, text=True)
    return bool(out.stdout.strip())


def test_the_committed_amd_rounds_before_the_recorded_facts_are_the_reference_machine():
    """amd-epyc-3c69ac (derived) is amd-epyc-a1580e (recorded): the same CPU model, memory, host kernel build,
    mitigations and hypervisor; amd-epyc-45c960 (derived) runs another kernel build with other mitigations,
    and the Intel host has no recorded identity: both stay hosts of their own."""
    ids = {"3c69ac": "20261126T182357Z-vm-mach", "a1580e": "20261126T191848Z-vm-native", "45c960": AMD,
           "bc62d5": INTEL}
    if not all(committed(c) for c in ids.values()):
        pytest.skip("the committed campaigns named here are not in this checkout")
    idents = {k: identity.host_identity(host_of(c)) for k, c in ids.items()}
    assert {k: i.key.endswith(k) for k, i in idents.items()} == dict.fromkeys(ids, True)
    merged, several = identity.merges(idents.values())
    assert several == {} and {k: m.into for k, m in merged.items()} == {idents["3c69ac"].key: idents["a1580e"].key}
    assert merged[idents["3c69ac"].key].facts["kernel_release"] == "6.18.44-fc-v669"
    d = identity.differences(idents["45c960"], idents["a1580e"])
    assert "kernel_release" in d and "mitigations" in d
