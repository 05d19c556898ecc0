"""The checks of the built paper that a machine can make for a reader: identifiers in the text and in the
figures, text run past the page into the footer, a fitted value quoted as a measured one.  Each is fed a bad
case (it must fail, naming the page and line) and a good one (it must pass)."""
import shutil
import subprocess

import pandas as pd
import pytest

from osbench_analysis.report import pdf_check


def _lines(*pages: str) -> list:
    return pdf_check.page_lines("\f".join(pages))


# ------------------------------------------------------------------ identifiers

BAD_PAGE = """1 Introduction
The pipe_pingpong probe ran under fuse-nocache and gvisor-gofer
from campaign 20261126T120746Z-vm-native, on host vm.
Design: hosted-kernel and user-space-server; see benchmarks/stats_coverage.py and data/validation.
native: select_fds [fds=100,fs=tmpfs] same_cpu"""

GOOD_PAGE = """1 Introduction
The pipe round trip ran under FUSE (no cache) and gVisor (gofer) natively, on this host.
Design: a hosted kernel and a user-space file server. A read of /dev/zero, a write to /dev/null,
clock_gettime (vDSO), posix_spawn, AF_UNIX bandwidth, seL4 Page_GetAddress, mach_msg and vm_allocate."""


def test_every_identifier_a_reader_would_meet_is_named_with_its_page_and_line():
    found = pdf_check.identifiers(_lines("title page", BAD_PAGE))
    joined = "\n".join(found)
    for word in ("pipe_pingpong", "fuse-nocache", "gvisor-gofer", "20261126T120746Z", "host vm", "hosted-kernel",
                 "user-space-server", "data/validation", "select_fds", "same_cpu"):
        assert repr(word) in joined or f"'{word}" in joined, (word, found)
    assert any("benchmarks/stats_coverage.py" in f for f in found)
    assert all(f.startswith("p. 2 line ") for f in found), found
    assert next(f for f in found if "'pipe_pingpong'" in f).startswith("p. 2 line 2: snake_case identifier")
    assert next(f for f in found if "'20261126T120746Z'" in f).startswith("p. 2 line 3: campaign id")
    assert all("\n" not in f for f in found)                      # one line each


def test_printable_names_and_real_interface_names_pass():
    assert pdf_check.identifiers(_lines(GOOD_PAGE)) == []


def test_the_references_and_the_reproduction_appendix_may_name_files_and_campaigns():
    text = "\f".join([
        "7 Conclusion\nA pipe round trip.",
        "References\n[1] see https://x.org/linux_kernel/data/file.py\nA Comparative study of sched_ext\n"
        "A    Published results revisited\nthe fuse-nocache row",
        "G    Reproducing this paper\n20261126T120746Z-vm-native samples.parquet"])
    kept = pdf_check.reader_lines(pdf_check.page_lines(text))
    found = pdf_check.identifiers(kept)
    assert len(found) == 1 and found[0].startswith("p. 2 line 5:") and "fuse-nocache" in found[0]


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_the_figures_the_paper_includes_are_read_for_identifiers(tmp_path):
    if not shutil.which("pdftotext"):
        pytest.skip("no pdftotext")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    for name, label in (("shown", "parent_mb"), ("unused", "fuse-nocache"), ("clean", "MB touched in the parent")):
        fig = Figure(figsize=(3, 2), layout="constrained")
        ax = fig.subplots()
        ax.plot([0, 1], [0, 1])
        ax.set_xlabel(label)
        fig.savefig(tmp_path / f"{name}.pdf")
    (tmp_path / "section.tex").write_text(r"\includegraphics[width=\linewidth]{generated/shown}"
                                          r"\includegraphics{generated/clean}")
    found = pdf_check.figure_identifiers(tmp_path)
    assert len(found) == 1 and found[0].startswith("figure shown.pdf: snake_case identifier 'parent_mb'")


# ------------------------------------------------------------------ text past the page into the footer

def _bbox(words_per_page) -> str:
    pages = []
    for words in words_per_page:
        ws = "".join(f'<word xMin="{x:.1f}" yMin="{y0:.1f}" xMax="{x + 20:.1f}" yMax="{y1:.1f}">{t}</word>'
                     for x, y0, y1, t in words)
        pages.append(f'<page width="595.276" height="841.89">{ws}</page>')
    return "<doc>" + "".join(pages) + "</doc>"


def test_a_table_row_printed_over_the_page_number_is_found():
    # A4 with 2.5 cm margins: the text block ends at 771 pt, the page number's baseline 30 pt lower
    good = [(72, 760, 770.5, "last"), (72, 762, 773.0, "descender"), (295, 794, 801.0, "1")]
    bad = [(72, 760, 770.5, "row"), (72, 790, 799.0, "20261126T160129Z-vm-linux-tcg-nomitig"), (295, 794, 801.0, "2")]
    found = pdf_check.past_text_block(_bbox([good, bad]))
    assert len(found) == 1 and found[0].startswith("p. 2: \"20261126T160129Z-vm-linux-tcg-nomitig\" reaches 28.0pt")
    assert pdf_check.past_text_block(_bbox([good])) == []
    # a page without its number at the foot (e.g. a landscape float page) is not judged
    assert pdf_check.past_text_block(_bbox([[(72, 790, 799.0, "x")]])) == []


def test_latex_saying_a_float_is_too_tall_is_reported_with_its_file():
    log = ("(./generated/reproduce.tex\nLaTeX Warning: Float too large for page by 412.5pt on input line 17.\n)\n"
           "LaTeX Warning: Reference `x' on page 3 undefined on input line 9.\n")
    assert pdf_check.floats_too_large(log) == ["float 412.5pt too tall at line 17 of generated/reproduce.tex"]
    assert pdf_check.floats_too_large("LaTeX Warning: Label(s) may have changed.\n") == []


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
def test_a_real_float_taller_than_the_page_fails_the_check_and_a_longtable_passes(tmp_path):
    if not (shutil.which("pdflatex") and shutil.which("pdftotext")):
        pytest.skip("no pdflatex or pdftotext")
    rows = "".join(f"row {i} & value {i} \\\\\n" for i in range(90))
    body = {"bad": "\\begin{table}[!ht]\\centering\\begin{tabular}{ll}\n" + rows + "\\end{tabular}\\caption{Seals}"
                   "\\end{table}",
            "good": "\\begin{longtable}{ll}\\caption{Seals}\\\\\n" + rows + "\\end{longtable}"}
    for name, tex in body.items():
        (tmp_path / f"{name}.tex").write_text("\\documentclass[10pt]{article}\\usepackage[margin=2.5cm]{geometry}"
                                              "\\usepackage{longtable}\\begin{document}Text.\n" + tex +
                                              "\n\\end{document}\n")
        subprocess.run(["pdflatex", "-interaction=nonstopmode", f"{name}.tex"], cwd=tmp_path, capture_output=True)
    bad = pdf_check.check_paper(tmp_path / "bad.pdf", render_dir=tmp_path / "bad-pages")
    assert any(p.startswith("text past the page, p. ") and "below the text block" in p for p in bad.problems), \
        bad.problems
    assert any(p.startswith("a float runs into the footer (LaTeX log): float ") for p in bad.problems)
    good = pdf_check.check_paper(tmp_path / "good.pdf", render_dir=tmp_path / "good-pages")
    assert good.ok, good.problems


# ------------------------------------------------------------------ a fit quoted as measured

POINTS = pd.DataFrame({"probe": ["fork_alive"] * 2 + ["files_in_folder"] * 2, "per_unit": [False, False, True, True],
                       "x": [0, 1000, 1000, 65534], "estimate_ns": [84_700.0, 101_000.0, 5_750.0, 7_090.0]})


def _sweeps_page(sentence: str) -> list:
    return _lines("5 Conclusion\nDone.",
                  "E    Scalability sweeps\nThese sweeps answer no question of the body.\n" + sentence
                  + "\nF    Campaign to campaign, per family\nA pipe round trip took 5.34 µs.")


def test_a_fitted_time_quoted_as_measured_is_found():
    bad = _sweeps_page("Creating and reaping a process costs 86.7 µs with 0 processes alive and grows.")
    found = pdf_check.fitted_as_measured(bad, POINTS)
    assert found == ["p. 2 line 3: 86.7 µs is no measured sweep value (nearest measured: 84.7 µs, 101 µs) and its "
                     "sentence names no fit"]


def test_measured_times_and_fits_named_as_fits_pass():
    good = _sweeps_page("Creating and reaping a process took 84.7 [80.1, 89.6] µs with 0 processes alive and "
                        "101 [97.0, 105] µs with 1000; per file, 5.75 µs with 1000 files and 7.09 µs with 65534. "
                        "The least-squares line fitted over every run gives 86.7 µs at 0.")
    assert pdf_check.fitted_as_measured(good, POINTS) == []
    # only the sweeps' section is read: the pipe's 5.34 µs after it is no sweep value and is not judged
    assert pdf_check.fitted_as_measured(_lines("E    Scalability sweeps\nNothing quoted."), POINTS) == []


def test_an_escaped_identifier_is_found_in_the_generated_tex_the_paper_inputs(tmp_path):
    """In the PDF an escaped underscore is a drawn rule that pdftotext reads as a space: 'pipe pingpong'. The
    generated TeX the paper \\inputs is read for it, by file and line; files it does not \\input are not."""
    gen = tmp_path / "generated"
    gen.mkdir()
    (tmp_path / "paper.tex").write_text("\\input{generated/macros}\n% \\input{generated/commented}\n"
                                        "\\input{generated/section}\n\\input{generated/reproduce}\n")
    (gen / "macros.tex").write_text("\\newcommand{\\osbX}{1}\n")
    (gen / "section.tex").write_text("A pipe round trip.\n\\input{generated/table}\n\\label{tab:per_op}\n")
    (gen / "table.tex").write_text("Probe & x \\\\\n\\texttt{pipe\\_pingpong} & 1 \\\\\n"
                                   "clock\\_gettime (vDSO), x86\\_64 & 2 \\\\ % a comment: fork\\_exit\n")
    (gen / "commented.tex").write_text("\\texttt{null\\_syscall}\n")
    (gen / "reproduce.tex").write_text("\\texttt{20261126T120746Z-vm-native} samples\\_file\n")
    found = pdf_check.tex_identifiers(gen, tmp_path / "paper.tex")
    assert found == ["generated/table.tex line 2: snake_case identifier 'pipe_pingpong'"]
    assert [f.name for f in pdf_check.included_tex(tmp_path / "paper.tex", gen)] == [
        "macros.tex", "section.tex", "reproduce.tex", "table.tex"]


def test_an_interface_name_whose_underscores_read_as_spaces_is_not_an_environment_key():
    # \texttt{mach\_task\_self} reads 'mach task self' in pdftotext: the interface, not the environment 'mach'
    assert pdf_check.identifiers(_lines("Mach's path is longer for mach task self and (mach msg).")) == []
    found = pdf_check.identifiers(_lines("null kernel entry: mach null trap"))
    assert len(found) == 1 and "environment or design key 'mach'" in found[0]


def test_the_abstract_is_counted_in_the_words_a_reader_reads(tmp_path):
    """Issue 42 item 7: at most MAX_ABSTRACT_WORDS words; math and commands are not words, 1\\,570 is one."""
    from osbench_analysis.report.pdf_check import MAX_ABSTRACT_WORDS, abstract_words

    assert abstract_words(r"One \texttt{getppid} takes 1\,570 guest instructions, 6.20$\times$ Linux's.") == 8
    assert abstract_words(r"costs 8.37 [8.12, 8.62] \textmu s more") == 6
    assert abstract_words("word " * (MAX_ABSTRACT_WORDS + 1)) > MAX_ABSTRACT_WORDS
