"""Numbers belong to a host (issue #28): host identity from what determines the numbers, never pooling
across hosts, the complete-round rule, the cross-host view and "does this host reproduce the reference"."""
from __future__ import annotations

import copy
import dataclasses
import datetime as dt

import pandas as pd
import pytest

from osbench_analysis.analysis import hosts as ah
from osbench_analysis.analysis import pipeline, reproducibility
from osbench_analysis.hosts import identity, machine
from osbench_analysis.paths import CAMPAIGNS_DIR
from osbench_analysis.store import campaigns as store
from osbench_analysis.store import records

# its shared fixture takes over a second: the whole file is in the full suite (make test), not the fast tier
pytestmark = pytest.mark.slow

INTEL = "20261126T132440Z-vm-native"     # committed: Intel Xeon, manifest version 2
AMD = "20261123T135922Z-vm-native"       # committed: AMD EPYC, manifest version 2


def host_of(cid: str) -> dict:
    return records.Manifest.from_json((CAMPAIGNS_DIR / cid / store.MANIFEST_FILE).read_text()).host


def recorded(host: dict, **over) -> dict:
    """A host record as a version-3 manifest holds it (the parts of the identity recorded)."""
    h = dict(host, cpu_vendor="GenuineIntel", cpu_family="6", cpu_model_number="143", cpu_stepping="8",
             microcode="0x2b000603", cpu_flags=["fpu", "avx2", "avx512f", "amx_tile", "pcid", "xsaves"],
             signal_frame_bytes=11248)
    h.update(over)
    return h


# ------------------------------------------------------------------ identity

def test_two_hosts_differing_only_in_cpu_model_are_different_hosts():
    a = recorded(host_of(INTEL))
    b = dict(a, cpu_model="Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz")
    assert identity.host_identity(a).key != identity.host_identity(b).key
    assert identity.differences(identity.host_identity(a), identity.host_identity(b)) == {
        "cpu_model": (a["cpu_model"], b["cpu_model"])}


def test_same_machine_id_and_hostname_but_another_cpu_is_another_host():
    intel, amd = host_of(INTEL), host_of(AMD)
    # what the old host_id saw: the same machine-id and hostname on both VMs
    assert intel["host_id"] == amd["host_id"] and intel["hostname"] == amd["hostname"]
    a, b = identity.host_identity(intel), identity.host_identity(amd)
    assert a.key != b.key
    assert a.label.startswith("Intel Xeon · 2 vCPU · 6.18.44-fc-v657") and b.label.startswith("AMD EPYC · 2 vCPU")


def test_old_manifests_get_a_derived_identity_and_new_ones_a_recorded_one():
    old = identity.host_identity(host_of(INTEL))
    assert old.derived and old.label == "Intel Xeon · 2 vCPU · 6.18.44-fc-v657" and old.parts["cpu_vendor"] == "GenuineIntel"
    assert old.parts["cpu_family"] is None                 # not recorded then: never guessed
    new = identity.host_identity(recorded(host_of(INTEL)))
    assert not new.derived and new.label == "Intel Xeon (AMX) · 2 vCPU · 6.18.44-fc-v657"
    assert new.key != old.key   # what the old manifest lacks cannot be compared: not the same host


def test_identity_ignores_what_does_not_change_the_numbers_and_keeps_what_does():
    h = recorded(host_of(INTEL))
    key = identity.host_identity(h).key
    # a few MiB less memory reported, another hostname, another load: the same host
    same = dict(h, memory_bytes=h["memory_bytes"] - 5 * 2 ** 20, hostname="other", loadavg_at_start=[3, 2, 1])
    assert identity.host_identity(same).key == key
    for change in (dict(microcode="0x2b000604"), dict(signal_frame_bytes=3376), dict(kernel_release="6.18.44-x"),
                   dict(mitigations={**h["mitigations"], "retbleed": "Mitigation: IBRS"}),
                   dict(cpu_flags=["fpu", "avx2"]), dict(cpu_count_logical=4), dict(virtualization="none")):
        assert identity.host_identity(dict(h, **change)).key != key, change


def test_a_version_3_manifest_must_record_the_identity_facts():
    m = records.Manifest.from_json((CAMPAIGNS_DIR / INTEL / store.MANIFEST_FILE).read_text())
    d = m.to_dict()
    d["schema_version"] = 3
    with pytest.raises(records.ManifestError, match="lacks .*cpu_vendor"):
        records.Manifest.from_dict(d)
    d["host"] = recorded(d["host"])
    assert records.Manifest.from_dict(d).host_identity.label.startswith("Intel Xeon (AMX)")


def test_this_machine_records_every_part_of_its_identity():
    facts = machine.cpuinfo_fields()
    assert facts["cpu_vendor"] and facts["cpu_family"].isdigit() and facts["cpu_flags"]
    assert machine.signal_frame_bytes() > 512     # at least the legacy FXSAVE area and a frame header
    assert set(identity.RECORDED_FACTS) <= {f.name for f in dataclasses.fields(machine.HostInfo)}


# ------------------------------------------------------------------ synthetic campaigns of two hosts

def write(root, cid, *, base=INTEL, environment="native", slower=1.0, minutes=0, host=None, probes=None,
          round_ids=None, info=None):
    """A sealed campaign made from a committed one by the real store: a few probes, its times scaled,
    another environment, start time, host record or round (the campaigns measured with it)."""
    c = store.load_campaign(CAMPAIGNS_DIR / base)
    keep = probes or ["null_syscall", "stat", "pipe_pingpong"]
    s = c.samples[c.samples["probe"].isin(keep)].copy()
    s["campaign_id"], s["environment"] = cid, environment
    s["elapsed_ns"] = (s["elapsed_ns"] * slower).round().astype("int64")
    s["per_op_ns"] = s["elapsed_ns"] / s["iterations"]
    created = dt.datetime.fromisoformat(c.manifest.created_utc) + dt.timedelta(minutes=minutes)
    m = dataclasses.replace(c.manifest, campaign_id=cid, environment=environment, created_utc=created.isoformat(),
                            conditions=[x for x in c.manifest.conditions if x["probe"] in keep],
                            runs=[r for r in c.manifest.runs if r.probe in keep],
                            host=copy.deepcopy(host or c.manifest.host),
                            environment_info=dict(info) if info is not None else c.manifest.environment_info,
                            config=dict(c.manifest.config, campaign_set=round_ids or [cid], campaign_id=cid))
    return store.load_campaign(store.write_campaign(root, cid, s, m))


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    """Host A (Intel record): two rounds of native + gvisor (gvisor 20x native); host B: the same code and
    samples under an AMD host record, gvisor 5x native; a partial newer campaign on host A."""
    root = tmp_path_factory.mktemp("two-hosts")
    amd = host_of(AMD)
    amd["probes"] = host_of(INTEL)["probes"]     # same probe code: only the host differs
    for r, minutes in (("r1", 0), ("r2", 60)):
        a, b = [f"a-{r}-native", f"a-{r}-gvisor"], [f"b-{r}-native", f"b-{r}-gvisor"]
        write(root, a[0], minutes=minutes, round_ids=a)
        write(root, a[1], environment="gvisor", slower=20.0 * (1.02 if r == "r2" else 1), minutes=minutes,
              round_ids=a)
        write(root, b[0], minutes=minutes + 1, host=amd, round_ids=b)
        write(root, b[1], environment="gvisor", slower=5.0, minutes=minutes + 1, host=amd, round_ids=b)
    # a later small campaign on host A: one probe
    write(root, "a-small-native", minutes=120, probes=["null_syscall"])
    return root


def test_pooling_never_crosses_hosts(two_hosts):
    cat = store.catalog(two_hosts)
    a, b = (cat.loc[cat["campaign_id"] == c, "host"].iloc[0] for c in ("a-r2-native", "b-r2-native"))
    assert a != b
    manifests = reproducibility.catalog_manifests(two_hosts)
    got = reproducibility.comparable_campaigns({"a-r2-native": manifests["a-r2-native"]}, manifests)
    assert got == {"a-r2-native": ["a-r1-native", "a-r2-native", "a-small-native"]}
    p = reproducibility.pool_campaigns({"a-r2-native": manifests["a-r2-native"],
                                        "a-r2-gvisor": manifests["a-r2-gvisor"]}, two_hosts)
    assert set(p.estimates["host"]) == {a}
    assert not any(c.startswith("b-") for ids in p.campaigns.values() for c in ids)


def test_the_newest_complete_campaign_is_the_baseline_and_a_partial_one_is_named(two_hosts):
    notes = []
    refs = pipeline.select_campaigns(root=two_hosts, host="intel", notes=notes)
    assert [r.campaign_id for r in refs] == ["a-r2-native", "a-r2-gvisor"]
    assert len(notes) == 1 and notes[0].startswith("campaign a-small-native measured 1 of ") and \
        "not used as the native baseline" in notes[0] and "pass it by name to use it" in notes[0]
    # asked about the one probe it measured, the small campaign is complete: the newest, and chosen
    refs = pipeline.select_campaigns(root=two_hosts, host="intel", probes=["null_syscall"])
    assert refs[0].campaign_id == "a-small-native"
    # by name it is used, as named
    assert pipeline.select_campaigns(["a-small-native"], two_hosts)[0].campaign_id == "a-small-native"


def test_the_default_host_is_the_host_of_the_newest_complete_round(two_hosts):
    cat = store.catalog(two_hosts)
    # host B's rounds are a minute newer than host A's; host A's small campaign later still, but partial
    assert ah.choose_host(cat) == cat.loc[cat["campaign_id"] == "b-r2-native", "host"].iloc[0]
    refs = pipeline.select_campaigns(root=two_hosts)
    assert {r.campaign_id for r in refs} == {"b-r2-native", "b-r2-gvisor"}


def test_a_host_is_named_by_key_prefix_or_words_of_its_label(two_hosts):
    cat = store.catalog(two_hosts)
    key = cat.loc[cat["campaign_id"] == "b-r1-native", "host"].iloc[0]
    assert ah.resolve_host(key, cat) == key == ah.resolve_host(key[:9], cat) == ah.resolve_host("AMD epyc", cat)
    with pytest.raises(ah.HostError, match="'sparc' matches no host; .*have: "):
        ah.resolve_host("sparc", cat)
    with pytest.raises(ah.HostError, match="matches 2 hosts"):
        ah.resolve_host("2 vCPU", cat)
    with pytest.raises(pipeline.AnalysisError, match="was measured on AMD EPYC"):
        pipeline.select_campaigns(["b-r1-native"], two_hosts, host="intel")


def test_the_cross_host_table_puts_each_hosts_pooled_value_side_by_side(two_hosts):
    cross = ah.cross_host(two_hosts)
    assert len(cross.hosts) == 2 and set(cross.hosts["campaigns_pooled"]) == {4}
    t = cross.table("ratios")
    row = t[(t["environment"] == "gvisor") & (t["probe"] == "null_syscall") & (t["placement"] == "same_cpu")]
    assert len(row) == 1
    r = row.iloc[0]
    # gvisor / native: about 20x on host A, 5x on host B; slower on both, four times apart
    assert r["spread"] == pytest.approx(4.0 * 1.01, rel=0.02)
    assert r["holds_on_every_host"] and r["verdict"] == "slower on every host"
    labels = list(cross.hosts["host_label"])
    assert all(label in t.columns for label in labels)
    est = cross.table("estimates")
    native = est[(est["environment"] == "native") & (est["probe"] == "null_syscall")].iloc[0]
    assert native["spread"] == pytest.approx(1.0, abs=1e-9) and native["holds_on_every_host"]
    cc = cross.table("crossing_costs")
    assert len(cc) and not cc.iloc[0]["holds_on_every_host"]
    assert any("gvisor crossing cost" in f and "differs between hosts" in f for f in cross.findings())


def test_reproduction_says_which_conclusions_hold_on_this_host(two_hosts):
    cross = ah.cross_host(two_hosts)
    cat = store.catalog(two_hosts)
    a = cat.loc[cat["campaign_id"] == "a-r1-native", "host"].iloc[0]
    t = ah.reproduction(cross, this=a)
    ratio = t[(t["kind"] == "ratio") & (t["environment"] == "gvisor")].iloc[0]
    assert ratio["holds"] and ratio["here_over_reference"] == pytest.approx(4.04, rel=0.02)
    assert not ratio["same_size"]       # slower on both hosts, but four times as much here
    cost = t[t["kind"] == "crossing cost"].iloc[0]
    assert not cost["holds"]
    (sentence,) = ah.reproduction_sentences(t)
    assert sentence.startswith(f"{cross.labels[a]} against the reference {t['reference_host'].iloc[0]}: ")
    assert set(t["this_host"]) == {cross.labels[a]} and cross.labels[a] not in set(t["reference_host"])
    assert "conclusions hold there, 0 of them in size too" in sentence and "changed: gvisor crossing cost" in sentence


def test_explore_never_compares_two_hosts_unasked(two_hosts):
    from osbench_analysis import explore

    # the two newest native campaigns of the newest one's host: never one of each host
    assert explore.newest("native", 2, two_hosts) == ["a-r2-native", "a-small-native"]
    assert explore.newest("native", 2, two_hosts, host="amd") == ["b-r1-native", "b-r2-native"]
    s = explore.samples("null_syscall", placement="same_cpu", campaigns=["a-r2-native", "b-r2-native"],
                        root=two_hosts)
    with pytest.raises(explore.ExploreError, match="different hosts.*across_hosts=True"):
        explore.compare(s, "campaign_id", "b-r2-native", "a-r2-native")
    got = explore.compare(s, "campaign_id", "b-r2-native", "a-r2-native", across_hosts=True)
    assert got["sentence"].str.contains("(across hosts)", regex=False).all()


def test_the_cross_host_figure_draws_every_host(two_hosts):
    cross = ah.cross_host(two_hosts)
    fig = cross.figure()
    axes = fig.get_axes()
    assert len(axes) == 2      # crossing costs, crossing-probe ratios
    names = [t.get_text() for t in fig.legends[0].get_texts()]
    assert names == list(cross.hosts["host_label"])


def test_mechanism_share_says_how_much_of_a_hosts_difference_the_pieces_explain():
    import pandas as pd

    here = pd.concat([store.load_campaign(CAMPAIGNS_DIR / f"20261126T132440Z-vm-{e}").samples
                      for e in ("native", "gvisor")], ignore_index=True)
    here = here[here["probe"].isin(["null_syscall", "pipe_pingpong", "signal_trap_self"])]

    def add(s, environment, probe, ns):
        s = s.copy()
        m = (s["environment"] == environment) & (s["probe"] == probe)
        s.loc[m, "per_op_ns"] += ns
        s.loc[m, "elapsed_ns"] = (s.loc[m, "per_op_ns"] * s.loc[m, "iterations"]).round().astype("int64")
        return s

    # counted: one signal per gVisor getpid; there: every gvisor crossing 10 us dearer, a signal 10 us dearer too
    from osbench_analysis.analysis import crossing_counts

    def c(env, counter, v):
        return {"host": "h", "host_label": "h", "environment": env, "probe": "null_syscall", "counter": counter,
                "median": v, "min": v, "max": v, "n_pairs": 1, "n_low": 1, "n_high": 2, "source": "",
                "started_utc": ""}

    counts = pd.DataFrame([c("gvisor", "syscalls", 4.0), c("gvisor", "signals_delivered", 1.0),
                           c("native", "syscalls", 1.0)], columns=crossing_counts.COLUMNS)
    there = add(add(here, "gvisor", "null_syscall", 10_000.0), "native", "signal_trap_self", 10_000.0)
    t = ah.mechanism_share(here, there, counts=counts)
    row = t[t["environment"] == "gvisor"].iloc[0]
    assert row["crossing_difference_ns"] == pytest.approx(-10_000, rel=0.02)
    assert row["pieces_difference_ns"] == pytest.approx(-10_000, rel=0.02)
    assert row["share"] == pytest.approx(1.0, abs=0.03) and "account for 100% of the difference" in row["sentence"]
    # only the crossing differs: the pieces explain none of it
    t = ah.mechanism_share(here, add(here, "gvisor", "null_syscall", 10_000.0), counts=counts)
    assert t[t["environment"] == "gvisor"].iloc[0]["share"] == pytest.approx(0.0, abs=0.02)


def test_a_fleet_run_over_two_hosts_ends_in_the_hosts_side_by_side(two_hosts, capsys):
    from types import SimpleNamespace

    from osbench_analysis import cli

    cli._fleet_hosts(SimpleNamespace(campaigns=["a-r2-native", "b-r2-native"]), str(two_hosts))
    out = capsys.readouterr().out
    assert "hosts side by side" in out and "gvisor crossing cost" in out and "AMD EPYC" in out
    cli._fleet_hosts(SimpleNamespace(campaigns=["a-r2-native"]), str(two_hosts))   # one host: nothing to compare
    assert capsys.readouterr().out == ""


def test_one_host_alone_reproduces_nothing_and_says_so(two_hosts):
    cross = ah.cross_host(two_hosts, hosts=["intel"])
    assert len(cross.hosts) == 1 and cross.table("ratios").empty
    t = ah.reproduction(cross)
    assert t.empty and ah.reproduction_sentences(t) == []


def test_synthetic_campaigns_are_another_host_only_when_a_host_fact_differs(tmp_path):
    from osbench_analysis.store import synthetic

    base = store.load_campaign(CAMPAIGNS_DIR / INTEL)
    synthetic.write_synthetic(tmp_path, "s0", base, hostname="h0")
    synthetic.write_synthetic(tmp_path, "s1", base, hostname="h1")
    synthetic.write_synthetic(tmp_path, "s2", base, hostname="h2", host={"cpu_model": "Other CPU"})
    cat = store.catalog(tmp_path).set_index("campaign_id")["host"]
    assert cat["s0"] == cat["s1"] != cat["s2"]


def test_the_papers_across_machines_section_names_every_host_and_pools_none_across(two_hosts, tmp_path):
    from osbench_analysis.analysis import pipeline as analysis
    from osbench_analysis.report.sections import machines

    result = analysis.analyze(root=two_hosts, host="amd", n_resamples=100)
    written = machines.write_section(result, tmp_path, root=two_hosts)
    assert {p.name for p in written} >= {"machines.tex", "hosts_crossing_table.tex", "machines_figure.tex"}
    text = (tmp_path / "machines.tex").read_text()
    table = (tmp_path / "hosts_crossing_table.tex").read_text()
    # this paper's host (AMD) first, the other beside it; both rounds of each host pooled on their own
    assert "AMD EPYC, 2 vCPU" in table.split("this paper's host")[0].split("host A:")[1]
    assert "Intel Xeon, 2 vCPU" in text and "(4 campaigns)" in text
    # gVisor's crossing differs (20x against 5x native): the table says the intervals do not overlap
    assert " & no \\\\" in table and "differs between machines in 1 of 1" in text
    # the conclusions of the other host that hold here, counted from analysis.hosts.reproduction
    cross = ah.cross_host(two_hosts)
    repro = ah.reproduction(cross, this=result.hosts[0])
    assert f"these hold on this paper's host: {int(repro['holds'].sum())} of" in (
        tmp_path / "machines_reproduce.tex").read_text()
    assert "gvisor" not in text and "null_syscall" not in text          # printed names, never identifiers
    # with one host there is nothing to compare, and the section says so
    alone = analysis.analyze(root=two_hosts, host="intel", campaigns=["a-r2-native", "a-r2-gvisor"],
                             n_resamples=100)
    one = machines.section_tex(ah.cross_host(two_hosts, hosts=["intel"]), alone.hosts[0], pd.DataFrame())
    assert "Only this paper's host" in one


@pytest.fixture(scope="module")
def three_machines(tmp_path_factory):
    """Machines A (Intel) and B (AMD) with one probe code, C (A's CPU, another kernel build) with another;
    gvisor 20x native on A, 5x on B, 10x on C; UML on A as it should run (8x) and on B under the faulty
    XSAVE shim (50x)."""
    root = tmp_path_factory.mktemp("three-machines")
    a = host_of(INTEL)
    b = dict(host_of(AMD), probes=a["probes"])
    c = dict(a, kernel_release="6.18.44-fc-v999", probes=dict(a["probes"], source_sha256="0" * 64))
    fine, faulty = {"uml_kernel": "6.1"}, {"uml_kernel": "6.1", "xsave_shim": "on"}
    for name, host, g, uml in (("a", a, 20.0, (8.0, fine)), ("b", b, 5.0, (50.0, faulty)), ("c", c, 10.0, None)):
        for r, minutes in (("r1", 0), ("r2", 60)):
            ids = [f"{name}-{r}-{e}" for e in ("native", "gvisor", *(["uml"] if uml else []))]
            write(root, ids[0], host=host, minutes=minutes, round_ids=ids)
            write(root, ids[1], environment="gvisor", host=host, slower=g * (1.02 if r == "r2" else 1),
                  minutes=minutes, round_ids=ids)
            if uml:
                write(root, ids[2], environment="uml", host=host, slower=uml[0], minutes=minutes, round_ids=ids,
                      info=uml[1])
    return root


def test_machines_are_compared_like_with_like_and_the_prose_quotes_the_tables(three_machines):
    """Issue 42 item 4: the same probe code and configuration only; no faulty configuration; machine kinds
    counted; the prose's spread is the table's; what the records say differs, without identifiers."""
    from osbench_analysis.report.sections import machines

    cross = ah.cross_host(three_machines)
    keys = list(cross.hosts["host"])
    a, b, c = (next(k for k in keys if cross.hosts.set_index("host").loc[k, "primary"].startswith(p + "-"))
               for p in "abc")
    cc = cross.crossing_costs
    assert set(cc.loc[cc["host"] == b, "configuration"]) == {"", "xsave shim reading CPUID on every ptrace call"}
    assert cc.loc[cc["host"] == c, "probe_source"].iloc[0] != cc.loc[cc["host"] == a, "probe_source"].iloc[0]
    t = cross.table("crossing_costs")
    t = t[t["placement"] == "same_cpu"]
    # gVisor compared on A and B only (C ran other probe code); UML nowhere (B's is faulty, A's alone)
    assert list(t["environment"]) == ["gvisor"]
    labels = cross.labels
    assert labels[c] not in t.columns or t[labels[c]].isna().all()
    repro = ah.reproduction(cross, this=a, reference=[a], same_software=True)
    assert set(repro["this_key"]) == {b} and "uml" not in set(repro["environment"])
    assert c in set(ah.reproduction(cross, this=a, reference=[a])["this_key"])   # without: any code
    idents = {h: identity.host_identity(host_of(INTEL)) for h in keys}
    idents[c] = identity.host_identity(dict(host_of(INTEL), kernel_release="6.18.44-fc-v999"))
    text = machines.section_tex(cross, a, pd.DataFrame(), idents)
    assert "come from 3 machine kinds" in text
    assert "2 versions of the probe code (A, B; C)" in text.replace("host ", "")
    assert "User-mode Linux on host B (xsave shim reading CPUID on every ptrace call)" in text
    # C's kernel build beside A's, in the one argument over the machines (not a sentence per machine)
    # B records nothing different from A, so C alone is named, its value beside A's
    assert "host C differs from host A in host kernel build (v999, against v657)" in text
    assert "not measured" in text and "dispatch" not in text
    # the prose's spread is the table's pooled one, to the printed digit
    assert f"by up to {t['spread'].iloc[0]:.2f} times" in text
    assert 4.5 < t["spread"].iloc[0] < 5 and len(t["values"].iloc[0].split("; ")) == 2   # (20-1)/(5-1), no C
    assert not any(k in text for k in keys)          # no host hash in prose
    # two machines that share no probe code: nothing timed is compared, and the section says so
    ac = ah.cross_host(three_machines, hosts=[a, c])
    assert ac.table("crossing_costs").empty and ah.compared(ac.crossing_costs).empty
    assert "compares no timed value across machines" in machines.section_tex(ac, a, pd.DataFrame(), idents)


def _cross_tables(cross) -> dict:
    return {"hosts": cross.hosts, **{k: cross.table(k) for k in ("crossing_costs", "ratios", "estimates")},
            "guests": cross.guests, "notes": cross.notes, "findings": cross.findings()}


def test_the_cross_host_tables_are_the_same_with_the_analysis_pooling_reused_and_without(two_hosts, monkeypatch):
    import pandas as pd

    from osbench_analysis.analysis import pooling_cache

    pooling_cache.clear()
    result = pipeline.analyze(root=two_hosts, host="intel", n_resamples=200)   # the pooling is what is reused
    assert len(pooling_cache._POOLINGS) == 1          # the analysis' own pooling, remembered
    reused = _cross_tables(ah.cross_host(two_hosts))  # host A's pooling reused, host B's pooled and remembered
    assert len(pooling_cache._POOLINGS) == 2
    again = _cross_tables(ah.cross_host(two_hosts))   # both remembered
    monkeypatch.setattr(pooling_cache, "pool_campaigns",
                        lambda primary, root=None, loaded=None, **kw: reproducibility.pool_campaigns(primary, root, **kw))
    fresh = _cross_tables(ah.cross_host(two_hosts))   # every host pooled anew, nothing remembered
    for name, want in fresh.items():
        for got in (reused, again):
            if isinstance(want, pd.DataFrame):
                pd.testing.assert_frame_equal(got[name], want, check_exact=True)
            else:
                assert got[name] == want, name
    # each caller its own copy: changing one changes no other
    p1 = pooling_cache.pool_campaigns({c: result.manifests[c] for c in result.primary_ids}, two_hosts)
    p1.campaigns.clear()
    p2 = pooling_cache.pool_campaigns({c: result.manifests[c] for c in result.primary_ids}, two_hosts)
    assert p2.campaigns == result.pooling.campaigns and len(p2.campaigns) == 2


def test_a_remembered_pooling_is_keyed_by_every_campaigns_seal(two_hosts, tmp_path):
    import shutil

    from osbench_analysis.analysis import pooling_cache

    root = tmp_path / "campaigns"
    shutil.copytree(two_hosts, root)
    primary = {"a-r2-native": store.load_campaign("a-r2-native", root).manifest}
    before = pooling_cache.key(primary, root)
    assert pooling_cache.key(primary, root) == before
    write(root, "a-r3-native", minutes=180)            # a newer comparable campaign: another key
    assert pooling_cache.key(primary, root) != before
    assert pooling_cache.key(primary, root, level=0.9) != pooling_cache.key(primary, root)


def test_the_reference_host_file_decides_which_way_the_reproduction_paragraph_reads(two_hosts, tmp_path,
                                                                                   monkeypatch):
    from osbench_analysis.analysis import pipeline as analysis
    from osbench_analysis.report.sections import machines

    cross = ah.cross_host(two_hosts)
    keys = list(cross.hosts["host"])
    amd = next(k for k in keys if k.startswith("amd"))
    intel = next(k for k in keys if k.startswith("intel"))
    ref_file = tmp_path / "reference_hosts.txt"
    ref_file.write_text(f"# the reference\n{intel}  # host A\n")
    assert ah.reference_hosts(keys, ref_file) == [intel]
    assert ah.reference_hosts(keys, tmp_path / "missing.txt") == []
    monkeypatch.setattr(ah, "REFERENCE_HOSTS_FILE", ref_file)
    def reproduce_text(host: str) -> str:
        out = tmp_path / host
        out.mkdir()
        machines.write_section(analysis.analyze(root=two_hosts, host=host, n_resamples=100), out, root=two_hosts)
        return (out / "machines_reproduce.tex").read_text()

    # the paper about AMD, with Intel the reference: 'Does this machine reproduce the paper?', gVisor changes
    text = reproduce_text("amd")
    assert "Does this machine reproduce the paper?" in text and "How the other hosts compare" not in text
    repro = ah.reproduction(cross, this=amd, reference=[intel])
    assert f"these hold on this paper's host: {int(repro['holds'].sum())} of" in text
    assert "(changed: gVisor" in text and "times" in text
    # the paper about Intel, the reference itself: how the other host compares with it
    text = reproduce_text("intel")
    assert "How the other hosts compare" in text and "Does this machine reproduce" not in text
    assert "AMD EPYC, 2 vCPU" in text.split("How the other hosts compare")[1]


def test_the_papers_method_macros_name_its_host_its_cpu_and_microcode_and_pool_only_its_campaigns(tmp_path):
    from osbench_analysis.analysis import pipeline as analysis
    from osbench_analysis.report import paper

    intel = recorded(host_of(INTEL))
    amd = recorded(host_of(AMD), cpu_vendor="AuthenticAMD", cpu_family="26", cpu_model_number="2",
                   cpu_stepping="1", microcode="0x1000065")
    for r, minutes in (("r1", 0), ("r2", 60)):
        write(tmp_path, f"a-{r}-native", minutes=minutes, host=intel)
        write(tmp_path, f"b-{r}-native", minutes=minutes + 1, host=amd)
    result = analysis.analyze(root=tmp_path, host="amd", n_resamples=100)
    m = paper.text_macros(result)
    ident = m["osbHostIdentity"]
    assert amd["cpu_model"].split()[0] in ident and intel["cpu_model"] not in ident
    assert "microcode 0x1000065" in ident and "0x2b000603" not in ident
    assert "AMD EPYC" in m["osbHostLabel"] and "Intel" not in m["osbHostLabel"]
    # only this host's campaigns (b-...), never host A's (the title page's line: test_paper_mechanism)
    ids = m["osbCampaignIds"].replace("\\_", "_").split(", ")
    assert ids and all(c.startswith("b-") for c in ids)


def test_the_machines_recorded_differences_read_as_one_argument_not_a_template_per_machine():
    """Review W9: what every other machine differs in is said once, with each machine's value beside this one's;
    what only one differs in follows; what only one of a pair records is said once, not per pair."""
    import types

    from osbench_analysis.hosts.identity import HostIdentity
    from osbench_analysis.report.sections import machines

    def ident(key, model, kernel, mitig, family=None):
        return HostIdentity(key, key, {"cpu_model": model, "kernel_release": kernel, "mitigations": mitig,
                                       "cpu_family": family})

    a = ident("a", "AMD EPYC 7B13", "6.18.44-fc-v669", {"spectre_v2": "on", "srso": "on"}, 25)
    b = ident("b", "Intel Xeon Platinum 8480+", "6.18.44-fc-v657", {"spectre_v2": "off", "srso": "on"})
    c = ident("c", "AMD EPYC 7B13", "6.18.44-fc-v782", {"spectre_v2": "on", "srso": "off"})
    cross = types.SimpleNamespace(hosts=pd.DataFrame({"host": ["a", "b", "c"]}))
    s = machines.differences_sentence(cross, "a", {"a": a, "b": b, "c": c})
    assert ("every other machine differs from host A in host kernel build (B v657, C v782, against v669) and the "
            "state of some mitigations (B 1 of 2, C 1 of 2)") in s
    assert "host B also in CPU model (Intel Xeon" in s and "against AMD EPYC" in s
    assert s.count("differs from") == 1                      # one sentence, not one per machine
    assert "CPU family is recorded for only one machine of a pair, so it is not compared." in s
    assert s.endswith("which of them moves a number is not measured.")
    # one machine beside this one: named, its values without a letter
    one = machines.differences_sentence(types.SimpleNamespace(hosts=pd.DataFrame({"host": ["a", "c"]})), "a",
                                        {"a": a, "c": c})
    assert "host B differs from host A in host kernel build (v782, against v669)" in one
    assert machines.differences_sentence(cross, "a", {"a": a}) == ""
