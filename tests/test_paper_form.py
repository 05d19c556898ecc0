"""The paper's form: one digit rule for an estimate and its interval, bandwidths in bytes per second,
printable names, one estimand, and the check that reads the LaTeX log (overfull boxes, body length)."""
import math

import numpy as np
import pandas as pd
import pytest

from osbench_analysis import formatting
from osbench_analysis.catalog import families
from osbench_analysis.report import pdf_check as paper_check
from osbench_analysis.report import estimand as paper_estimand
from osbench_analysis.report import published as paper_published
from osbench_analysis.reference import claims as reference_claims


@pytest.mark.parametrize("value, lo, hi, printed", [
    (24.0, 21.2, 26.8, "24.0 [21.2, 26.8]"),
    (402.0, 40.6, 764.0, "402 [40.6, 764]"),         # every number to three significant digits
    (5.0, 0.2622, 9.0, "5.00 [0.262, 9.00]"),        # a wide interval keeps its small bound's digits
    (1.004, 1.001, 1.008, "1.004 [1.001, 1.008]"),    # one more digit: at three a bound would print as the estimate
    (1150.0, 1100.0, 1210.0, "1150 [1100, 1210]"),
])
def test_an_interval_never_prints_a_bound_equal_to_its_estimate(value, lo, hi, printed):
    assert formatting.with_ci(value, lo, hi) == printed
    v, l, h = formatting.ci_parts(value, lo, hi)
    assert l != v != h


def test_a_degenerate_interval_stops_widening():
    assert formatting.with_ci(1.0, 1.0, 1.0) == "1.00 [1.00, 1.00]"            # an interval of zero width
    assert formatting.with_ci(math.nan, 1.0, 2.0).startswith("n/a")


def test_bandwidth_is_bytes_per_second_with_the_slow_end_low():
    # 64 KiB in 10 µs is 6.55 GB/s; the 11 µs end of the time interval is the low end of the rate's
    assert formatting.rate_with_ci_tex(65536, 10_000, 9_000, 11_000) == "6.55 [5.96, 7.28] GB/s"
    assert formatting.bytes_tex(8 << 20) == "8~MiB" and formatting.bytes_tex(256) == "256~B"
    assert families.bytes_per_op("pipe_bw") == 65536
    assert families.bytes_per_op("file_read", "buffer=256,fs=tmpfs") == 256
    assert families.bytes_per_op("memcpy_bw") == 8 << 20                  # the registry's default
    assert families.bytes_per_op("null_syscall") is None


def test_printable_names_and_variants():
    from osbench_analysis.catalog.registry import PROBES

    # every probe a reader may meet has a printed name: the canaries and GNU Mach's probes too
    shown = [p for p in PROBES if not PROBES[p].hidden and PROBES[p].family != "testonly"]
    assert all(p in families.PRINT_NAMES for p in shown), [p for p in shown if p not in families.PRINT_NAMES]
    assert "_" not in families.print_name("fork_exec").replace("\\_", "")
    assert families.print_variant("buffer=256,fs=tmpfs") == "buffer 256"
    assert families.print_variant("linkage=static") == "static"
    assert families.print_variant("") == "--" and families.file_system("fs=9p") == "9p"


def test_the_paper_quotes_the_geometric_mean_over_runs():
    est = pd.DataFrame({"environment": ["native", "native"], "variant": ["fs=tmpfs", ""],
                        "estimate_ns": [100.0, 50.0], "ci_low_ns": [90.0, 45.0], "ci_high_ns": [110.0, 55.0],
                        "mean_over_runs": [104.0, np.nan], "mean_over_runs_low": [95.0, np.nan],
                        "mean_over_runs_high": [113.0, np.nan]})
    out = paper_estimand.paper_estimates(est)
    assert list(out["estimate_ns"]) == [104.0, 50.0] and list(out["ci_high_ns"]) == [113.0, 55.0]
    assert list(out["paper_estimand"]) == [paper_estimand.ESTIMAND, "quoted"]   # a single run keeps its own
    assert paper_estimand.environment_file_systems(est) == {"native": "tmpfs"}


_WRAPPED = "(./generated/reference_sectio".rjust(79, "x")       # TeX wraps its log at 79 columns
LOG = (r"""(./generated/architectures.tex
Overfull \hbox (127.03441pt too wide) in paragraph at lines 27--45
 [][]
)
""" + _WRAPPED + r"""
n.tex
Overfull \hbox (0.5pt too wide) in paragraph at lines 1--2
Overfull \vbox (3.0pt too high) has occurred while \output is active
""")


def test_overfull_boxes_are_read_from_the_log_with_their_file():
    boxes = paper_check.overfull_boxes(LOG)
    assert len(boxes) == 2                                   # 0.5 pt is within the hairline allowance
    assert boxes[0].startswith("hbox 127.03441pt") and boxes[0].endswith("of generated/architectures.tex")
    assert "vbox 3.0pt" in boxes[1] and "reference_section.tex" in boxes[1]   # a name wrapped at 79 columns


def test_the_body_length_is_read_from_the_aux_label():
    aux = r"\newlabel{page:body-end}{{7}{13}{Conclusion}{section.7}{}}"
    assert paper_check.body_pages(aux) == 13 and paper_check.body_pages("") is None


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_check_paper_fails_on_an_overfull_box_and_a_long_body(tmp_path):
    import shutil

    if not shutil.which("pdflatex"):
        pytest.skip("no pdflatex")
    import subprocess

    tex = tmp_path / "p.tex"
    tex.write_text("\\documentclass{article}\\begin{document}\\noindent\\rule{\\dimexpr\\linewidth+50pt}{1pt}"
                   "\\newpage x\\label{page:body-end}\\end{document}\n")
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "p.tex"], cwd=tmp_path, capture_output=True, check=True)
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "p.tex"], cwd=tmp_path, capture_output=True, check=True)
    check = paper_check.check_paper(tmp_path / "p.pdf", render_dir=tmp_path / "pages", max_body_pages=1)
    assert any("overfull" in p for p in check.problems)
    assert check.body_pages == 2 and any("the body runs to page 2" in p for p in check.problems)


def test_the_published_appendix_states_the_precedence_and_the_rejection_rules():
    text = paper_published.precedence_tex()
    order = [text.index(w) for w in ("not checkable", "circular", "arithmetic checked", "knife-edge", "depends",
                                     "holds or fails")]
    assert order == sorted(order) and f"{reference_claims.PRINT_DIGITS} significant digits" in text
    assert "not an independent confirmation" in text          # the paper says what 'arithmetic checked' is
    readings = pd.DataFrame({"claim_id": ["a", "a"], "reading_id": ["r1", "r2"], "rejected": ["", "too fast"],
                             "statement": ["S", "S"], "bibkey": ["k", "k"], "reading": ["one", "two"]})
    rules = {"plausible": "rule 'plausible': implied times within 10 times", "same_machine": "rule 'same_machine': one machine"}
    assert "implied times within 10 times" in paper_published.rejection_tex(readings, rules)
    table = paper_published.rejected_table_tex(readings)
    assert "too fast" in table and table.count("\\\\\n") >= 1 and "one &" not in table


def test_paper_tex_types_no_number():
    """Every number in the paper's body comes from a macro or a generated file: paper.tex's own text holds
    none (names such as L4, seL4 or MINIX~3 are names, not numbers)."""
    import re
    from pathlib import Path

    tex = (Path(__file__).resolve().parent.parent / "paper" / "paper.tex").read_text()
    body = re.sub(r"%.*", "", tex[tex.index(r"\begin{document}"):])
    body = re.sub(r"\\(cite[tp]?|ref|label|input|IfFileExists|includegraphics|bibliography\w*|url)\{[^}]*\}", "", body)
    typed = [body[max(0, m.start() - 20):m.end() + 5] for m in re.finditer(r"(?<![A-Za-z~\\])\d+(?:\.\d+)?", body)]
    assert not typed, typed


def test_a_negative_time_in_the_paper_has_a_minus_sign_not_a_hyphen():
    from osbench_analysis.formatting import time_with_ci_tex

    assert time_with_ci_tex(-1200.0, -3000.0, 500.0) == r"$-$1.20 [$-$3.00, 0.500] \textmu s"
    assert time_with_ci_tex(6300.0, 5800.0, 6900.0) == r"6.30 [5.80, 6.90] \textmu s"
