"""CI methods are registered objects: each carries its interval, its ratio interval,
its estimand and the sentence the Method section prints."""
import numpy as np
import pytest

from osbench_analysis import stats
from osbench_analysis.analysis import methods
from osbench_analysis.stats import ci_methods


def _runs(rng, n_runs=6, n_batches=10):
    per_op = np.concatenate([rng.lognormal(np.log(1000) + rng.normal(0, 0.05), 0.02, n_batches)
                             for _ in range(n_runs)])
    return per_op, np.repeat(np.arange(n_runs), n_batches)


def test_every_default_method_is_registered_with_estimand_ratio_and_sentence():
    assert set(stats.CI_METHODS) == {"runs-t", "hier-percentile", "hier-bca", "runs-os", "iid-percentile"}
    for name in stats.CI_METHODS:
        m = stats.ci_method(name)
        assert m.name == name and m.estimands
        p = stats.AnalysisParameters(0.9, "median", name, 1000, 3)
        assert "90\\%" in m.sentence(p)
        assert m.sentence(p) in methods.methods_paragraph(p)
    assert stats.ci_method("runs-t").ratio == "welch" and stats.ci_method("runs-os").ratio is None
    assert stats.ESTIMAND[("median", "runs-os")] == "median_of_run_medians"


def test_a_registered_method_is_used_by_estimate_ci_and_refused_for_ratios_when_it_has_none():
    class Midrange(ci_methods.CIMethod):
        name = "test-midrange"
        estimands = {"median": "midrange_of_run_medians"}
        ratio = None

        def interval(self, rd, estimator, level, n_resamples, rng):
            v = np.exp(rd.run_values("median"))
            return float((v.min() + v.max()) / 2), float(v.min()), float(v.max()), "range of the run medians"

        def sentence(self, p):
            return "Intervals are the range of the run medians. "

    stats.register_ci_method(Midrange())
    try:
        per_op, run = _runs(np.random.default_rng(1))
        e = stats.estimate_ci(per_op, run, ci_method="test-midrange")
        assert e.ci_method == "test-midrange" and e.ci_low_ns < e.estimate_ns < e.ci_high_ns
        assert e.estimand == "midrange_of_run_medians"
        with pytest.raises(ValueError, match="does not support 'test-midrange'"):
            stats.ratio_ci(_rd(per_op, run), _rd(per_op, run), ci_method="test-midrange")
        with pytest.raises(ValueError, match="new, non-empty name"):
            stats.register_ci_method(Midrange())
    finally:
        ci_methods.REGISTRY.pop("test-midrange", None)
        ci_methods.CI_METHODS = tuple(ci_methods.REGISTRY)
        ci_methods.ESTIMAND.pop(("median", "test-midrange"), None)
    with pytest.raises(ValueError, match="ci_method must be one of"):
        stats.estimate_ci(per_op, run, ci_method="test-midrange")


def _rd(per_op, run):
    return stats._as_run_data(per_op, run)
