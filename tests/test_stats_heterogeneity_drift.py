"""The median relative deviation of campaigns from their pooled value (the body's reproducibility caption)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from osbench_analysis.stats.heterogeneity import median_abs_log_deviation


def test_the_median_deviation_of_campaigns_from_the_pooled_value_is_read_on_the_log_scale():
    values = pd.DataFrame({"probe": ["a", "a", "b", "b", "c"], "campaign_id": ["x", "y", "x", "y", "x"],
                           "y": np.log([110.0, 90.0, 200.0, 200.0, 5.0])})
    pooled = pd.DataFrame({"probe": ["a", "b", "c"], "estimate_ns": [100.0, 200.0, 5.0], "n_campaigns": [2, 2, 1]})
    got = median_abs_log_deviation(values, pooled, ["probe"], "estimate_ns")
    # |log 1.1|, |log 0.9|, 0, 0 (c pooled from one campaign is left out): the median of the four
    assert math.isclose(got, np.median([abs(np.log(1.1)), abs(np.log(0.9)), 0.0, 0.0]))
    assert math.isnan(median_abs_log_deviation(values.iloc[0:0], pooled, ["probe"], "estimate_ns"))
