"""The methods paragraph states the parameters that produced the numbers."""
import pandas as pd
import pytest

from osbench_analysis.stats import simulate as sim
from osbench_analysis import stats
from osbench_analysis.analysis.methods import methods_paragraph
from osbench_analysis.stats.quality import FlagRule


@pytest.fixture(scope="module")
def samples():
    return sim.simulate_samples(sim.Scenario(n_runs=5, n_batches=10), 1)


def test_default_paragraph_matches_default_computation(samples):
    text = methods_paragraph(stats.summarize(samples, level=0.9, n_resamples=500))
    assert r"90\% confidence intervals are Student-$t$ intervals" in text
    assert "log run medians" in text
    assert "geometric mean of its run medians" in text
    assert "keep flagged batches" in text
    assert "excludes 1" in text and "Welch" in text
    assert "bootstrap" not in text                     # not used, so not claimed


def test_bootstrap_paragraph_names_resamples_seed_and_variant(samples):
    s = stats.summarize(samples, ci_method="hier-bca", n_resamples=2000, seed=42, exclude_flagged=True,
                        rule=FlagRule(tukey_exclude=None, minflt_slack=None))
    text = methods_paragraph(s)
    assert "2{,}000 resamples, seed 42" in text
    assert "bias-corrected and accelerated" in text
    assert "exclude flagged batches" in text
    assert "severe outlier" not in text and "page faults" not in text   # rule as configured
    assert "migrated to another CPU" in text


def test_coverage_is_quoted_only_for_the_method_used(samples):
    res = [sim.coverage_study(sim.Scenario(n_runs=r, family=f), n_experiments=300, seed=r)
           for r, f in ((5, "lognormal"), (20, "contaminated"))]
    default = methods_paragraph(stats.summarize(samples, n_resamples=500), coverage=res)
    lo, hi = min(r.coverage for r in res), max(r.coverage for r in res)
    assert f"{100 * lo:.1f}".rstrip("0").rstrip(".") + r"\%--" in default
    assert f"{100 * hi:.1f}".rstrip("0").rstrip(".") + r"\%" in default
    assert "5--20 runs" in default and "contaminated, lognormal" in default
    other = methods_paragraph(stats.summarize(samples, ci_method="hier-percentile", n_resamples=500),
                              coverage=res)
    assert "validated" not in other


def test_sweep_sentence_uses_the_fit_tolerance():
    parts = []
    for i, n in enumerate((1, 4, 16)):
        d = sim.simulate_samples(sim.Scenario(n_runs=4, n_batches=8), i)
        d["params_json"] = f'{{"n": {n}}}'
        parts.append(d)
    fit = stats.sweep_fit(pd.concat(parts), "n", tolerance_rel=0.1, n_resamples=500)
    text = methods_paragraph(stats.AnalysisParameters(), sweep=fit)
    assert r"$\pm$10\%" in text and "$t = a + bN$" in text


def test_paragraph_needs_parameters():
    with pytest.raises(ValueError, match="carries no analysis parameters"):
        methods_paragraph(pd.DataFrame({"x": [1]}))
    with pytest.raises(TypeError, match="expected AnalysisParameters"):
        methods_paragraph("runs-t")


def test_the_flag_and_single_run_sentences_say_what_the_data_hold(samples):
    """Issue 42 (W8): no 'given alongside' that the paper never gives, no single-run sentence without one."""
    s = stats.summarize(samples, n_resamples=500)
    s = s.assign(n_runs=5, depends_on_flags=False)
    text = methods_paragraph(s)
    assert "alongside" not in text and "single run" not in text
    assert f"the conclusion of 0 of {len(s)} conditions depends on it" in text
    s.loc[s.index[0], ["n_runs", "depends_on_flags"]] = (1, True)
    text = methods_paragraph(s)
    assert "single run gets" in text and f"the conclusion of 1 of {len(s)} conditions depends on it" in text
