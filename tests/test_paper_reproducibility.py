"""The paper's reproducibility parts (paper.reproducibility_tex, plots_reproducibility.spread_overview)
on simulated campaigns whose host drifts between rounds."""
import math
import types

import numpy as np
import pandas as pd
import pytest

from osbench_analysis.analysis import reproducibility as rp
from osbench_analysis.stats import simulate as sim

SHIFTS = (0.0, 0.25, -0.15)


def _pooling():
    parts, rounds = [], {}
    for r, c in enumerate(SHIFTS):
        for env, base in (("native", 200.0), ("gvisor", 16000.0)):
            cid = f"r{r}-{env}"
            rounds[cid] = f"r{r}"
            sc = sim.Scenario(median_ns=base * math.exp(c), run_sigma=0.02, batch_sigma=0.01, n_runs=6, n_batches=10,
                              campaign_id=cid, environment=env, probe="null_syscall", placement="same_cpu")
            parts.append(sim.simulate_samples(sc, 10 * r + len(env)).assign(host="h"))
    v = rp.campaign_values(pd.concat(parts, ignore_index=True))
    ratios = rp.pooled_ratios(rp.paired_values(v, rounds))
    return rp.Pooling({"r2-gvisor": [f"r{i}-gvisor" for i in range(3)]}, rounds, v, rp.pooled_estimates(v), ratios, pd.DataFrame(),
                      pd.DataFrame())


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_overview_puts_each_campaign_against_its_pooled_value():
    import matplotlib

    matplotlib.use("Agg")
    from osbench_analysis.plots import reproducibility as plots_reproducibility

    pooling = _pooling()
    fig = plots_reproducibility.spread_overview(pooling)
    left, right = fig.axes[:2]
    dots = np.concatenate([c.get_offsets()[:, 1] for c in left.collections])
    est = pooling.estimates.set_index("environment")["estimate_ns"]
    expected = [math.exp(r.y) / est[r.environment] for r in pooling.values.itertuples()]
    assert sorted(dots) == pytest.approx(sorted(expected))          # one dot per campaign and condition
    # the host's drift shows in absolute times, and cancels in the ratio paired within its round
    ratio_dots = np.concatenate([c.get_offsets()[:, 1] for c in right.collections if len(c.get_offsets())])
    assert len(ratio_dots) == 3 and np.ptp(np.log(ratio_dots)) < np.ptp(np.log(dots)) / 3
    assert [t.get_text() for t in right.get_xticklabels()] == ["gVisor"]   # printed; no baseline over itself


def test_paper_reproducibility_text_only_when_campaigns_pool():
    from osbench_analysis.report import paper

    tex = paper.reproducibility_tex(types.SimpleNamespace(pooling=_pooling()))
    assert "\\label{tab:spread}" in tex and "\\label{fig:reproducibility}" in tex and "3 campaigns" in tex
    single = rp.Pooling({"a": ["a"]}, {"a": "a"}, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(),
                        pd.DataFrame())
    assert paper.reproducibility_tex(types.SimpleNamespace(pooling=single)) == ""
    assert paper.reproducibility_tex(types.SimpleNamespace(pooling=None)) == ""


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_spread_table_and_figure_are_the_appendixs_and_the_body_keeps_none(tmp_path):
    """Issue 42 item 7: the body toward 10 pages; the campaign-to-campaign floats print in the appendix."""
    import matplotlib

    matplotlib.use("Agg")
    from osbench_analysis.report import paper

    paper.write_reproducibility(types.SimpleNamespace(pooling=_pooling()), tmp_path)
    assert (tmp_path / "reproducibility.tex").read_text().strip() == ""
    appendix = (tmp_path / "reproducibility_appendix.tex").read_text()
    assert appendix.startswith("\\section{Campaign to campaign}") and "\\label{tab:spread}" in appendix
    assert "\\label{fig:reproducibility}" in appendix
