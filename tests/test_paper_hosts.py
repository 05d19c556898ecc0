"""The hosts as the paper and the machine report show them (issue 41, item 6): the reproduction table's rows go
from the reference host to the host compared with it, a host without an environment's crossing probe shows no
value for that crossing (never another probe's), and two hosts of one label are told apart by their keys.
Small tables built here, no campaign read: the fast tier."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from osbench_analysis.analysis import architectures
from osbench_analysis.analysis import hosts as ah


def _cross(labels: dict[str, str], costs: list[tuple], ratios: list[tuple]) -> ah.CrossHost:
    """A CrossHost of the hosts ``labels`` (key -> label): costs (host, environment, probe, ns) and ratios
    (host, environment, probe, ratio), each with a +-10 % interval, same CPU."""
    hosts = pd.DataFrame({"host": list(labels), "host_label": list(labels.values()), "derived": False,
                          "primary": "", "campaigns_pooled": 2, "guest_campaigns": 0})
    c = pd.DataFrame([{"host": h, "baseline": "native", "environment": e, "probe": p, "variant": "",
                       "placement": "same_cpu", "cost_ns": v, "ci_low_ns": 0.9 * v, "ci_high_ns": 1.1 * v,
                       "n_campaigns": 1} for h, e, p, v in costs])
    r = pd.DataFrame([{"host": h, "baseline": "native", "environment": e, "probe": p, "variant": "",
                       "placement": "same_cpu", "ratio": v, "ci_low": 0.9 * v, "ci_high": 1.1 * v,
                       "n_campaigns": 1} for h, e, p, v in ratios])
    return ah.CrossHost(hosts, pd.DataFrame(), r, c)


TWO = {"amd-a": "AMD EPYC · 2 vCPU · v669", "intel-b": "Intel Xeon · 2 vCPU · v657"}


def test_the_reproduction_goes_from_the_reference_host_to_the_one_compared_whichever_is_asked(tmp_path):
    cross = _cross(TWO, [("amd-a", "gvisor", "null_syscall", 8000.0), ("intel-b", "gvisor", "null_syscall", 24000.0)],
                   [("amd-a", "gvisor", "null_syscall", 80.0), ("intel-b", "gvisor", "null_syscall", 240.0)])
    ref_file = tmp_path / "reference_hosts.txt"
    ref_file.write_text("amd-a  # the paper's host\n")
    for asked in ("amd-a", "intel-b"):      # the reference itself asked (the paper about it), or the other host
        t = ah.reproduction(cross, this=asked, reference_file=ref_file)
        assert set(t["reference_host"]) == {TWO["amd-a"]} and set(t["this_host"]) == {TWO["intel-b"]}
        cost = t[t["kind"] == "crossing cost"].iloc[0]
        assert cost["reference_value"] == 8000.0 and cost["here_value"] == 24000.0
        assert cost["here_over_reference"] == pytest.approx(3.0) and not cost["holds"]
        assert cost["reference"].startswith("8.00 µs") and cost["here"].startswith("24.0 µs")
    (sentence,) = ah.reproduction_sentences(t)
    assert sentence.startswith(f"{TWO['intel-b']} against the reference {TWO['amd-a']}: 1 of 2")


def test_a_file_servers_crossing_is_a_stat_never_its_null_system_call():
    served = pd.DataFrame({"environment": "fuse", "arch_class": "user-space-server",
                           "probe": ["null_syscall", "getppid"]})
    assert architectures.crossing_probe(served) is None                 # no stat measured: no crossing
    assert architectures.crossing_probe(pd.concat([served, served.assign(probe="stat")])) == "stat"
    sandbox = pd.DataFrame({"environment": "gvisor", "arch_class": "user-space-kernel",
                            "probe": ["stat", "null_syscall"]})
    assert architectures.crossing_probe(sandbox) == "null_syscall"
    assert architectures.crossing_candidates("fuse-nocache") == ("stat",)      # from the registered environment


def _points(fig, label: str) -> list[tuple[float, float]]:
    """(x, y) of every point a host (by its legend label) has in the figure's panels."""
    out = []
    for ax in fig.get_axes():
        for c in ax.containers:
            if c.get_label() == label:
                line = c.lines[0]
                out += list(zip(line.get_xdata(), line.get_ydata()))
    return out


def test_a_host_without_an_environments_crossing_probe_shows_no_value_for_it():
    # host B's FUSE campaign measured a null system call and no stat: neither its cost nor its ratio is drawn
    cross = _cross(TWO, [("amd-a", "fuse", "stat", 220.0), ("amd-a", "gvisor", "null_syscall", 8000.0),
                         ("intel-b", "gvisor", "null_syscall", 24000.0)],
                   [("amd-a", "fuse", "stat", 1.5), ("intel-b", "fuse", "null_syscall", 1.01),
                    ("amd-a", "gvisor", "null_syscall", 80.0), ("intel-b", "gvisor", "null_syscall", 240.0)])
    assert list(ah.crossing_ratios(cross.ratios)["probe"]) == ["stat", "null_syscall", "null_syscall"]
    fig = cross.figure()
    ticks = [t.get_text() for t in fig.get_axes()[0].get_yticklabels()]
    assert ticks == ["FUSE", "gVisor"]
    fuse_y = fig.get_axes()[0].get_yticks()[0]
    b = _points(fig, TWO["intel-b"])
    assert len(b) == 2 and all(abs(y - fuse_y) > 0.3 for _, y in b)       # gVisor's cost and ratio only
    assert not any(np.isclose(x, 1.01) for x, _ in b)
    a = _points(fig, TWO["amd-a"])
    assert len(a) == 4


def test_hosts_of_one_label_are_told_apart_by_their_keys():
    cross = _cross({"amd-a": "AMD EPYC · 2 vCPU · v669", "amd-c": "AMD EPYC · 2 vCPU · v669",
                    "intel-b": "Intel Xeon · 2 vCPU · v657"}, [], [])
    assert cross.labels == {"amd-a": "AMD EPYC · 2 vCPU · v669 [amd-a]", "amd-c": "AMD EPYC · 2 vCPU · v669 [amd-c]",
                            "intel-b": "Intel Xeon · 2 vCPU · v657"}
    assert len(set(cross.labels.values())) == 3
