"""mechanism.py: a crossing beside the sum of its native pieces, with intervals
that come from the runs, a rest that is the crossing minus the pieces (native
getpid counted once), and a verdict that says plainly when they do not add up."""
import math

import numpy as np
import pandas as pd
import pytest

from osbench_analysis import stats
from osbench_analysis.analysis import architectures
from osbench_analysis.analysis import mechanism

RUNS, BATCHES = 6, 5


def condition(env, probe, ns, *, campaign, placement="same_cpu", variant="", sigma=0.02, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(RUNS):
        run_factor = math.exp(rng.normal(0, sigma))
        for batch in range(BATCHES):
            per_op = ns * run_factor * math.exp(rng.normal(0, sigma / 4))
            rows.append({"campaign_id": campaign, "environment": env, "probe": probe, "variant": variant,
                         "placement": placement, "run": run, "batch": batch, "warmup": False,
                         "iterations": 1000, "elapsed_ns": per_op * 1000})
    return rows


def systrap_samples(gvisor_ns, *, native_null=100.0, seed=0, pieces=True):
    native, gv = "20261124T000000Z-h-native", "20261124T000000Z-h-gvisor"
    rows = condition("gvisor", "null_syscall", gvisor_ns, campaign=gv, seed=seed)
    rows += condition("native", "null_syscall", native_null, campaign=native, seed=seed + 1)
    if pieces:
        rows += condition("native", "seccomp_trap", 500.0, campaign=native, seed=seed + 2)
        rows += condition("native", "service_direct", 100.0, campaign=native, seed=seed + 3)
        for placement in ("same_cpu", "cross_cpu"):
            rows += condition("native", "service_shm", 300.0, campaign=native, placement=placement, seed=seed + 4)
    return pd.DataFrame(rows)


def row_of(summary, env="gvisor"):
    return summary[summary["environment"] == env].iloc[0]


def test_pieces_that_leave_a_rest_say_so_with_its_interval():
    # crossing 1000 - 100 = 900; pieces 500 - 100 + 300 - 100 = 600; rest 300
    summary, terms = mechanism.decompose(systrap_samples(1000.0))
    r = row_of(summary)
    assert r["mechanism"] == "systrap"
    assert r["crossing_ns"] == pytest.approx(900, rel=0.05)
    assert r["pieces_ns"] == pytest.approx(600, rel=0.05)
    assert r["unexplained_ns"] == pytest.approx(r["crossing_ns"] - r["pieces_ns"])
    assert r["unexplained_low_ns"] < r["unexplained_ns"] < r["unexplained_high_ns"]
    assert r["adds_up"] is False or r["adds_up"] == False  # noqa: E712 (numpy bool)
    assert "do not add up" in r["verdict"] and "Sentry" in r["verdict"]
    assert set(terms["probe"]) == {"seccomp_trap", "null_syscall", "service_shm", "service_direct"}


def test_pieces_that_make_the_crossing_add_up_within_their_intervals():
    summary, _ = mechanism.decompose(systrap_samples(700.0))   # crossing 600 = pieces 600
    r = row_of(summary)
    assert r["unexplained_low_ns"] <= 0 <= r["unexplained_high_ns"]
    assert bool(r["adds_up"]) and "add up to the crossing within their intervals" in r["verdict"]


def test_native_getpid_is_counted_once_in_the_rest():
    """It is in the crossing (-1) and among systrap's pieces (-1): the rest does not depend on it."""
    a = row_of(mechanism.decompose(systrap_samples(1000.0, native_null=100.0))[0])
    b = row_of(mechanism.decompose(systrap_samples(1000.0, native_null=180.0))[0])
    assert a["crossing_ns"] - b["crossing_ns"] == pytest.approx(80, rel=0.1)
    assert a["unexplained_ns"] == pytest.approx(b["unexplained_ns"], rel=1e-9)


def test_a_difference_of_two_is_architectures_interval():
    s = systrap_samples(1000.0)
    gv = stats.run_data(s[(s["environment"] == "gvisor")])
    nat = stats.run_data(s[(s["environment"] == "native") & (s["probe"] == "null_syscall")])
    d = architectures.geomean_difference_ci(gv, nat)
    c = mechanism.linear_combination_ci([(1.0, gv), (-1.0, nat)])
    assert (c.value, c.ci_low, c.ci_high) == pytest.approx((d.diff, d.ci_low, d.ci_high))


def test_intervals_widen_with_run_to_run_noise():
    quiet = row_of(mechanism.decompose(systrap_samples(1000.0))[0])
    noisy_rows = systrap_samples(1000.0)
    noisy_rows = pd.concat([noisy_rows[noisy_rows["probe"] != "seccomp_trap"],
                            pd.DataFrame(condition("native", "seccomp_trap", 500.0, sigma=0.3, seed=9,
                                                   campaign="20261124T000000Z-h-native"))])
    noisy = row_of(mechanism.decompose(noisy_rows)[0])
    width = lambda r: r["pieces_high_ns"] - r["pieces_low_ns"]  # noqa: E731
    assert width(noisy) > 3 * width(quiet)


def test_missing_native_pieces_are_named_not_guessed():
    r = row_of(mechanism.decompose(systrap_samples(1000.0, pieces=False))[0])
    assert math.isnan(r["pieces_ns"]) and r["adds_up"] is None
    assert "not decomposed" in r["verdict"] and "seccomp_trap" in r["verdict"]


def test_an_unknown_environment_is_refused_in_one_line():
    with pytest.raises(mechanism.MechanismError, match="no mechanism known for environment 'vmware'"):
        mechanism.decompose(systrap_samples(1000.0), environments=["vmware"])


def test_every_recipe_names_registered_probes_and_every_environment_a_recipe():
    from osbench_analysis.catalog import registry
    from osbench_analysis.environments import REGISTRY

    for recipe in mechanism.RECIPES.values():
        for piece in recipe.pieces:
            registry.resolve_params(registry.get_probe(piece.probe), piece.params)
    for env, mech in mechanism.ENVIRONMENT_MECHANISM.items():
        assert mech in mechanism.RECIPES
        assert env in REGISTRY.names()


def test_the_tex_table_carries_every_figure_with_its_interval(tmp_path):
    path = mechanism.write_mechanism_table(systrap_samples(1000.0), tmp_path)
    tex = path.read_text()
    assert path.name == "mechanism_table.tex"
    assert "seccomp trap to a handler" in tex and "does not add up" in tex and r"\label{tab:mechanism}" in tex
    assert tex.count("[") >= 6      # crossing, 4 pieces, sum, rest: each with its interval
    assert r"95\%" in tex
    negative = mechanism.mechanism_tex(*mechanism.decompose(systrap_samples(300.0)))  # pieces exceed it
    assert "$-$" in negative and " -" not in negative.replace("$-$", "")


def test_applications_sit_beside_their_environments_micro_factor():
    def ratio(env, probe, r, placement="same_cpu"):
        return {"host": "h", "environment": env, "probe": probe, "variant": "", "placement": placement,
                "ratio": r, "ci_low": r * 0.9, "ci_high": r * 1.1, "estimate_ns": r * 10.0,
                "baseline_estimate_ns": 10.0}
    ratios = pd.DataFrame([ratio("gvisor", "null_syscall", 90.0), ratio("gvisor", "app_tar", 7.0),
                           ratio("uml", "null_syscall", 150.0), ratio("uml", "app_compile", 17.0),
                           ratio("uml", "stat", 20.0), ratio("fuse", "stat", 3.0), ratio("fuse", "app_tar", 2.0)])
    t = mechanism.applications_table(ratios)
    assert sorted(t["probe"]) == ["app_compile", "app_tar", "app_tar"]
    by = t.set_index("environment")
    # a file server's crossing is its stat; everywhere else the null system call, even beside a stat
    assert by.loc["fuse", "crossing_probe"] == "stat" and by.loc["fuse", "crossing_ratio"] == 3.0
    assert by.loc["uml", "crossing_probe"] == "null_syscall"
    assert by.loc["gvisor", "crossing_ratio"] == 90.0 and by.loc["uml", "crossing_ratio"] == 150.0
    assert by.loc["uml", "ratio"] == 17.0
    assert mechanism.applications_table(pd.DataFrame()).empty


def test_an_analysis_is_decomposed_host_by_host():
    from types import SimpleNamespace

    s = pd.concat([systrap_samples(1000.0).assign(host="a"), systrap_samples(700.0, seed=5).assign(host="b")])
    result = SimpleNamespace(samples=s, settings=SimpleNamespace(baseline="native", level=0.95))
    summary, terms = mechanism.from_analysis(result)
    assert list(summary["host"]) == ["a", "b"] and set(terms["host"]) == {"a", "b"}
    assert list(summary["adds_up"].astype(bool)) == [False, True]


def test_a_sandbox_without_its_crossing_probe_is_named_not_dropped():
    s = pd.concat([systrap_samples(1000.0),
                   pd.DataFrame(condition("uml", "stat", 5000.0, campaign="20261124T000000Z-h-uml"))])
    summary, _ = mechanism.decompose(s)
    r = row_of(summary, "uml")
    assert r["verdict"] == "not decomposed: no crossing: null_syscall was not measured in uml"
    assert math.isnan(r["crossing_ns"]) and r["adds_up"] is None
    assert bool(row_of(summary)["adds_up"]) is False   # gvisor's row is still there, decomposed
