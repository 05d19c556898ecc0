"""The crossing section's sentences as arguments over Table tab:crossing's rows (review W9): the span of each
kind of crossing, and a stat on the guest's own tmpfs set against the same sandbox's intercepted getpid -- on
synthetic rows, never the live data."""
from __future__ import annotations

import pandas as pd

from osbench_analysis.plots.architectures import env_short
from osbench_analysis.report.sections import crossing


def _row(env: str, probe: str, cost: float, lo: float, hi: float) -> dict:
    return {"environment": env, "probe": probe, "cost_ns": cost, "ci_low_ns": lo, "ci_high_ns": hi}


CC = pd.DataFrame([_row("gvisor", "null_syscall", 8160.0, 8040.0, 8270.0),
                   _row("gvisor-ptrace", "null_syscall", 12000.0, 11300.0, 12600.0),
                   _row("uml", "null_syscall", 11700.0, 11500.0, 11900.0),
                   _row("fuse", "stat", 212.0, 177.0, 246.0),
                   _row("fuse-nocache", "stat", 38900.0, 37800.0, 39900.0),
                   _row("gvisor-gofer", "stat", 22600.0, 20900.0, 24300.0)])


def test_each_kind_of_crossing_is_one_span_from_the_cheapest_to_the_dearest_not_a_row_of_cells():
    text = crossing._added_cost_sentences(CC, env_short, "95\\%", 4)
    assert text.startswith("Intercepting a \\texttt{getpid} adds from 8.16 [8.04, 8.27] \\textmu s under gVisor to "
                           "12.0 [11.3, 12.6] \\textmu s under gVisor (ptrace) (User-mode Linux 11.7 \\textmu s between), "
                           "the dearest 1.47 times the cheapest.")
    assert "one \\texttt{stat} on it adds from 212 [177, 246] ns under FUSE to 38.9 [37.8, 39.9] \\textmu s under " \
           "FUSE (no cache)" in text and "the dearest 183 times the cheapest" in text
    assert text.count("longer under") == 0 and "pooled over the host's 4 campaigns" in text
    # an interval through zero is no measurable cost, said apart from the span
    free = CC.assign(ci_low_ns=[8040.0, 11300.0, 11500.0, -56.0, 37800.0, 20900.0])
    text = crossing._added_cost_sentences(free, env_short, "95\\%", 1)
    assert ("adds from 22.6 [20.9, 24.3] \\textmu s under gVisor (gofer) to 38.9 [37.8, 39.9] \\textmu s under FUSE "
            "(no cache), the dearest 1.72 times the cheapest; under FUSE (212 [$-$56.0, 246] ns) no added cost is "
            "measurable.") in text
    assert "within one campaign" in text and "pooled" not in text


def test_the_guest_tmpfs_stat_is_set_against_the_same_sandboxs_intercepted_getpid():
    guest = pd.DataFrame([_row("gvisor", "stat", 4870.0, 4620.0, 5130.0),
                          _row("gvisor-gofer", "stat", 4770.0, 4730.0, 4820.0),
                          _row("gvisor-ptrace", "stat", 11800.0, 11500.0, 12000.0),
                          _row("uml", "stat", 18000.0, 17000.0, 19000.0)])
    s = crossing.guest_tmpfs_sentence(guest, CC, env_short)
    # 4.87 / 8.16 < 0.8: less; 11.8 / 12.0 within 1.25: about as much; 18.0 / 11.7 > 1.25: more
    assert ("costs less than the same sandbox's intercepted \\texttt{getpid} under gVisor (4.87 \\textmu s against "
            "8.16 \\textmu s), about as much under gVisor (ptrace) (11.8 \\textmu s against 12.0 \\textmu s) and more "
            "under User-mode Linux (18.0 \\textmu s against 11.7 \\textmu s)") in s
    # gVisor (gofer) has no getpid crossing of its own: its stat is against native only
    assert s.endswith("; under gVisor (gofer) 4.77 [4.73, 4.82] \\textmu s more than natively.")
    # one class only: no empty clause for the others
    s = crossing.guest_tmpfs_sentence(guest[guest["environment"] == "uml"], CC, env_short)
    assert "more than the same sandbox's" in s and "less" not in s and "about" not in s
