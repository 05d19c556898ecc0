"""The appendix's one campaign-to-campaign figure (plots/reproducibility.spread_summary): one row per
primitive with its printable name, one marker per environment at largest/smallest campaign value."""
import math
import types

import numpy as np
import pandas as pd

from osbench_analysis.catalog.families import print_name
from osbench_analysis.plots.reproducibility import spread_summary


def test_spread_summary_rows_are_printable_names_and_points_are_the_campaign_spread():
    rows = []
    for env, probe, values in (("native", "null_syscall", [100.0, 110.0]), ("gvisor", "null_syscall", [8000.0, 8000.0, 8800.0]),
                               ("native", "pipe_pingpong", [2000.0, 3000.0]), ("native", "stat", [500.0]),
                               ("native", "clock_gettime", [20.0, 21.0])):
        for k, v in enumerate(values):
            rows.append({"campaign_id": f"c{k}", "host": "h", "environment": env, "probe": probe, "variant": "",
                         "placement": "same_cpu", "y": math.log(v)})
    values = pd.DataFrame(rows)
    est = values.drop_duplicates(["environment", "probe"])[["environment", "probe"]]
    fig = spread_summary(types.SimpleNamespace(values=values, estimates=est))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert sorted(labels) == sorted([print_name("null_syscall"), print_name("pipe_pingpong"),
                                     "clock_gettime (vDSO)"])   # stat: one campaign, no row
    assert not any("\\" in l or "τ" in l for l in labels)     # plain text, no TeX escapes
    xs = sorted(float(x) for c in ax.collections for x, _ in c.get_offsets())
    assert np.allclose(xs, sorted([1.1, 1.1, 1.5, 1.05]))
    assert len(ax.get_legend().get_texts()) == 2
