"""Reading the built paper as a reader would: every page rendered, the text
searched for unresolved references and words the paper must not use, every
figure checked to show something.  Used by `osbench paper` and the tests."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Words a reader must never meet: the five studies are cited by authors and titles.
FORBIDDEN_WORDS = ("seed", "seeds")
#: An overfull box wider than this runs visibly past the margin (TeX's own \\hfuzz is 0.1 pt).
OVERFULL_PT = 1.0
#: The paper's body (everything before the references and appendices) must fit in this many pages (issue 42, item 7).
MAX_BODY_PAGES = 10
#: The abstract (generated/abstract.tex) must say it in at most this many words (issue 42, item 7).
MAX_ABSTRACT_WORDS = 200
#: The label paper.tex places where the body ends (before the bibliography).
BODY_END_LABEL = "page:body-end"

_OVERFULL = re.compile(r"^Overfull \\([hv])box \((\d+(?:\.\d+)?)pt too (?:wide|high)\)(.*)$", re.M)


def overfull_boxes(log_text: str, min_pt: float = OVERFULL_PT) -> list[str]:
    """Every overfull box of a LaTeX log wider (or higher) than `min_pt`, as 'hbox 324.5pt at lines 12--14'."""
    log_text = re.sub(r"(?m)^(.{79})\n", r"\1", log_text)    # TeX wraps its log at 79 characters
    out = []
    for m in _OVERFULL.finditer(log_text):
        kind, amount, where = m.groups()
        if float(amount) > min_pt:
            # the file TeX was reading: the last one it opened before the message (a heuristic of the log's format)
            opened = re.findall(r"\((\./[^\s()]+\.tex)", log_text[:m.start()])
            source = f" of {opened[-1][2:]}" if opened else ""
            out.append(f"{kind}box {amount}pt{where.rstrip()}{source}")
    return out


def body_pages(aux_text: str, label: str = BODY_END_LABEL) -> int | None:
    """The page on which the body ends, from the \\label paper.tex places there (None without it)."""
    m = re.search(r"\\newlabel\{" + re.escape(label) + r"\}\{\{[^}]*\}\{(\d+)\}", aux_text)
    return int(m.group(1)) if m else None


_FLOAT_TOO_LARGE = re.compile(r"LaTeX Warning: Float too large for page by (\d+(?:\.\d+)?)pt on input line (\d+)")


def floats_too_large(log_text: str) -> list[str]:
    """LaTeX's own word that a float is taller than the text block (it then runs into the footer):
    'float 512.3pt too tall at line 12 of generated/reproduce.tex'."""
    log_text = re.sub(r"(?m)^(.{79})\n", r"\1", log_text)
    out = []
    for m in _FLOAT_TOO_LARGE.finditer(log_text):
        opened = re.findall(r"\((\./[^\s()]+\.tex)", log_text[:m.start()])
        out.append(f"float {m.group(1)}pt too tall at line {m.group(2)}" + (f" of {opened[-1][2:]}" if opened else ""))
    return out


# ------------------------------------------------------------------ what a reader sees, line by line

@dataclass(frozen=True)
class Line:
    page: int           # 1-based
    number: int         # 1-based within its page (pdftotext -layout)
    text: str

    def where(self) -> str:
        return f"p. {self.page} line {self.number}"


#: Where reader-facing text stops being checked for identifiers: the references (their titles and URLs are
#: others' words) and the reproduction appendix (it must name the campaigns and files, to reproduce them).
_EXEMPT_FROM = (re.compile(r"^\s*References\s*$"), re.compile(r"^\s*[A-Z]\s+Reproducing this paper\s*$"))
#: An appendix heading ('B    Published microkernel figures'): checking resumes after the references.
_APPENDIX_HEADING = re.compile(r"^\s*[A-Z]\s{2,}[A-Z][a-z]")


def page_lines(text: str) -> list[Line]:
    """pdftotext -layout output as lines with their page (form feeds) and line number."""
    return [Line(i + 1, j + 1, ln) for i, page in enumerate(text.split("\f")) for j, ln in enumerate(page.splitlines())]


def reader_lines(lines: list[Line]) -> list[Line]:
    """The lines of prose, captions, tables and figure text a reader meets (without the exempt parts)."""
    out, exempt = [], False
    for ln in lines:
        if _EXEMPT_FROM[1].match(ln.text):
            break                                          # the reproduction appendix runs to the end
        if _EXEMPT_FROM[0].match(ln.text):
            exempt = True
        elif exempt and _APPENDIX_HEADING.match(ln.text):
            exempt = False
        if not exempt:
            out.append(ln)
    return out


#: Identifiers with underscores that are the names of real interfaces (system calls, library functions,
#: constants) a reader may meet in prose; a probe's name is never one of them.
API_NAMES = frozenset({"posix_spawn", "clock_gettime", "mach_task_self", "vm_allocate", "vm_deallocate", "mach_msg",
                       "sched_yield", "pthread_create", "pthread_join", "pthread_mutex_lock", "pthread_cond_wait",
                       "mach_port_allocate", "thread_create", "task_create", "exit_group", "rt_sigaction",
                       "rt_sigreturn", "process_vm_readv", "copy_file_range", "io_uring", "seccomp_unotify", "x86_64",
                       # host system calls a sandbox makes, named in the accounting (analysis/host_calls.py)
                       "epoll_pwait", "epoll_wait", "timer_settime", "clock_nanosleep", "rt_sigprocmask",
                       "rt_sigtimedwait", "process_vm_writev", "set_robust_list", "set_tid_address",
                       "arch_prctl", "close_range", "sched_getaffinity"})
#: the generated file naming the measured Linux kernels' functions the paper prints (report/sections/versions.py):
#: real interfaces like API_NAMES, allowed beside them in the paper that generated them
KERNEL_SYMBOLS_FILE = "kernel_symbols.txt"


def allowed_names(generated_dir: str | Path | None = None) -> frozenset:
    """API_NAMES and the kernel functions `generated_dir`/KERNEL_SYMBOLS_FILE lists (one a line)."""
    f = Path(generated_dir) / KERNEL_SYMBOLS_FILE if generated_dir is not None else None
    return API_NAMES | frozenset(f.read_text().split() if f is not None and f.is_file() else ())


_CAMPAIGN_ID = re.compile(r"\b\d{8}T\d{6}Z\b")
_SNAKE = re.compile(r"(?<![\w/.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_PATH = re.compile(r"(?<![\w/])(?:benchmarks|data|osbench_analysis|probes|tests|notebooks|paper|build)/[\w./-]*"
                   r"|\b[\w-]+\.(?:py|ipynb|parquet|json|csv)\b")
#: The host's identity key where prose names the host by it ('on host vm'), not the word in 'vm_allocate'.
_HOST_KEY = re.compile(r"\b(?:host|on|of) vm\b")


def _api_name_at(text: str, start: int) -> bool:
    following = re.sub(r"\s+", "_", text[start:start + 40])
    return any(following.startswith(a) and not following[len(a):len(a) + 1].isalnum() for a in API_NAMES)


def _identifier_patterns() -> list[tuple[str, re.Pattern]]:
    """What may not reach a reader: environment and design keys as the code spells them, campaign ids,
    snake_case names, file paths, the host's key."""
    from osbench_analysis import environments
    from osbench_analysis.store.schema import ARCH_CLASSES

    # an environment's key where it is not an ordinary word ('native' is one); 'fuse.osbench' is a file
    # system's type as the kernel names it, beside 9p and tmpfs
    keys = sorted((n for n in environments.names() if n != "native"), key=len, reverse=True)
    designs = [d for d in ARCH_CLASSES if "-" in d]
    alt = "|".join(re.escape(k) for k in [*keys, *designs])
    return [("campaign id", _CAMPAIGN_ID),
            ("environment or design key", re.compile(rf"(?<![\w-])(?:{alt})(?![\w-]|\.\w)")),
            ("file path", _PATH), ("host key", _HOST_KEY), ("snake_case identifier", _SNAKE)]


def identifiers(lines: list[Line], where: str = "", allowed: frozenset = API_NAMES) -> list[str]:
    """Every identifier a reader would meet, one line each: 'p. 7 line 12: environment or design key
    'fuse-nocache' in "... fuse-nocache ..."' (``where`` names a figure file instead of the page)."""
    out = []
    patterns = _identifier_patterns()
    for ln in lines:
        seen = set()
        for kind, pat in patterns:
            for m in pat.finditer(ln.text):
                word = m.group(0)
                if kind == "snake_case identifier" and word in allowed:
                    continue
                # an interface's name whose escaped underscores pdftotext reads as spaces ('mach task self')
                if kind.startswith("environment") and _api_name_at(ln.text, m.start()):
                    continue
                if any(a <= m.start() < b for a, b in seen):
                    continue                                # already named as a more specific kind
                seen.add((m.start(), m.end()))
                ctx = ln.text[max(0, m.start() - 30):m.end() + 30].strip()
                out.append(f"{where or ln.where()}: {kind} {word!r} in \"{ctx}\"")
    return out


#: Generated TeX a reader does not meet as prose: the reproduction appendix names campaigns, files and packages.
TEX_EXEMPT = ("reproduce.tex", "python_env.tex")
#: An escaped snake_case name in TeX ('pipe\\_pingpong'): in the PDF its underscore is a drawn rule, which
#: pdftotext reads as a space, so the identifier is looked for in the generated TeX too.
_TEX_SNAKE = re.compile(r"(?<![\w\\])[a-z][a-z0-9]*(?:\\_[a-z0-9]+)+\b")


def included_tex(paper_tex: str | Path, generated_dir: str | Path) -> list[Path]:
    """The generated TeX files the paper \\inputs, directly or through another generated file, in order."""
    d, seen, todo = Path(generated_dir), [], [Path(paper_tex)]
    while todo:
        text = todo.pop(0).read_text(errors="replace")
        for name in re.findall(r"\\input\{generated/([^}]+)\}", re.sub(r"(?<!\\)%.*", "", text)):
            f = d / (name if name.endswith(".tex") else name + ".tex")
            if f.is_file() and f not in seen:
                seen.append(f)
                todo.append(f)
    return seen


def tex_identifiers(generated_dir: str | Path, paper_tex: str | Path | None = None) -> list[str]:
    """snake_case names in the generated TeX the paper \\inputs (all of generated/ without ``paper_tex``),
    outside comments and the reproduction appendix, by file and line:
    'generated/microkernel_table.tex line 5: snake_case identifier 'mach_null_trap''."""
    out, allowed = [], allowed_names(generated_dir)
    files = (included_tex(paper_tex, generated_dir) if paper_tex and Path(paper_tex).is_file()
             else sorted(Path(generated_dir).glob("*.tex")))
    for f in files:
        if f.name in TEX_EXEMPT:
            continue
        for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            line = re.sub(r"(?<!\\)%.*", "", line)
            line = re.sub(r"\\(?:label|ref|input|includegraphics|cite[tp]?|IfFileExists)(?:\[[^\]]*\])?\{[^}]*\}", "", line)
            for m in _TEX_SNAKE.finditer(line):
                word = m.group(0).replace("\\_", "_")
                if word not in allowed:
                    out.append(f"{f.parent.name}/{f.name} line {i}: snake_case identifier {word!r}")
    return out


# ------------------------------------------------------------------ floats into the footer

#: LaTeX's article class sets the page number's baseline this far below the text block (\footskip).
FOOTSKIP_PT = 30.0
#: How far a descender may reach below the text block's last baseline.
DESCENDER_PT = 4.0
_BBOX_PAGE = re.compile(r"<page width=\"([\d.]+)\" height=\"([\d.]+)\">(.*?)</page>", re.S)
_BBOX_WORD = re.compile(r"<word xMin=\"([\d.]+)\" yMin=\"([\d.]+)\" xMax=\"([\d.]+)\" yMax=\"([\d.]+)\">(.*?)</word>")


def past_text_block(bbox_html: str, footskip_pt: float = FOOTSKIP_PT) -> list[str]:
    """Words below the text block, from `pdftotext -bbox` positions against the page number's: the block ends
    ``footskip_pt`` above the number's baseline; a word lower than that (beyond a descender) ran past the page
    into the footer.  'p. 33: "20261126T160129Z-vm-linux-tcg" reaches 14.2pt below the text block (the page
    number's line)'. A page without a number at its foot is not judged."""
    import html

    out = []
    for i, m in enumerate(_BBOX_PAGE.finditer(bbox_html)):
        height = float(m.group(2))
        words = [(float(a), float(b), float(c), float(d), html.unescape(t)) for a, b, c, d, t
                 in _BBOX_WORD.findall(m.group(3))]
        number = [w for w in words if w[4] == str(i + 1) and w[1] > 0.85 * height]
        if not number:
            continue
        pn = max(number, key=lambda w: w[3])
        bottom = pn[3] - footskip_pt
        low = [w for w in words if w is not pn and w[3] > bottom + DESCENDER_PT]
        if low:
            worst = max(low, key=lambda w: w[3])
            out.append(f"p. {i + 1}: \"{' '.join(w[4] for w in low[:6])}\" reach{'es' if len(low) == 1 else ''} "
                       f"{worst[3] - bottom:.1f}pt below the text block, into the footer")
    return out


# ------------------------------------------------------------------ fitted values quoted as measured

_QUANTITY = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:\[[^\]]*\]\s*)?(ns|[µμ]s|ms)\b")
#: Words that name a value as the product of a fit, not a measurement.
_FIT_WORDS = re.compile(r"\bfit(?:ted|s)?\b|least-squares|\bslope\b|\bintercept\b|\bregression\b", re.I)


def _section(lines: list[Line], title: str) -> list[Line]:
    """The lines of the (sub)section whose heading's title matches the regular expression ``title``, up to the
    next heading."""
    heading = re.compile(r"^\s*(?:[A-Z]|\d+(?:\.\d+)*)\s+[A-Z]")
    titled = re.compile(r"^\s*(?:[A-Z]|\d+(?:\.\d+)*)\s+(?:" + title + r")\s*$")
    out, inside = [], False
    for ln in lines:
        if titled.match(ln.text):
            inside = True
            continue
        if inside and heading.match(ln.text) and len(ln.text.strip()) < 60 and not _QUANTITY.search(ln.text):
            break
        if inside:
            out.append(ln)
    return out


#: The sweeps' heading: the appendix 'Scalability sweeps' (or the body's former subsection 'Scalability').
SWEEPS_TITLE = r"Scalability(?: sweeps)?"


def fitted_as_measured(lines: list[Line], points: "pd.DataFrame", title: str = SWEEPS_TITLE) -> list[str]:
    """Every time quoted in the sweeps' section must be a measured one (a point's value as printed, per
    operation or per unit: ``points``, the generated sweep_points.csv) unless its sentence names it a fit:
    'p. 27 line 4: 86.7 µs is no measured sweep value (measured: 84.7 µs, ...) and its sentence names no fit'."""
    from osbench_analysis.formatting import format_time_ns

    measured = {" ".join(format_time_ns(v)).replace("\\textmu s", "µs") for v in points["estimate_ns"]}
    section = _section(lines, title)
    text, owner = "", []
    for ln in section:
        owner.append((len(text), ln))
        text += ln.text.strip() + " "
    out = []
    for m in _QUANTITY.finditer(text):
        quoted = f"{m.group(1)} {m.group(2).replace('μ', 'µ')}"
        if quoted in measured:
            continue
        start = max(text.rfind(". ", 0, m.start()), text.rfind("; ", 0, m.start()), 0)
        ends = [i for i in (text.find(". ", m.end()), text.find("; ", m.end())) if i >= 0]
        if _FIT_WORDS.search(text[start:min(ends) if ends else len(text)]):
            continue
        ln = [o for o in owner if o[0] <= m.start()][-1][1]
        near = sorted(measured, key=lambda v: abs(float(v.split()[0]) - float(m.group(1)))
                      if v.split()[1] == quoted.split()[1] else float("inf"))[:2]
        out.append(f"{ln.where()}: {quoted} is no measured sweep value (nearest measured: {', '.join(near)}) "
                   "and its sentence names no fit")
    return out


@dataclass
class PaperCheck:
    pdf: Path
    pages: int = 0
    body_pages: int | None = None
    problems: list[str] = field(default_factory=list)
    page_images: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def abstract_words(tex: str) -> int:
    """The words a reader counts in an abstract's TeX: math and commands dropped (a command's braced argument
    kept), a number with its interval '8.37 [8.12, 8.62]' three words as printed."""
    t = re.sub(r"\$[^$]*\$", " ", tex.replace("\\,", ""))     # 1\,570 is one number
    t = re.sub(r"\\[a-zA-Z]+\*?", " ", t)
    t = re.sub(r"[{}~]", " ", t)
    return sum(1 for w in t.split() if re.search(r"[A-Za-z0-9]", w))


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def figure_is_blank(png: Path) -> bool:
    """A figure whose pixels are (nearly) all one colour shows nothing."""
    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    if img.ndim == 2:
        img = img[..., None]
    drawn = None   # a pixel is drawn where any of its colour channels is off that channel's median
    for c in range(min(img.shape[2], 3)):   # channel by channel: a third of the time of one (pixels, 3) array
        channel = np.ascontiguousarray(img[..., c])
        off = np.abs(channel - np.median(channel)) > 0.05
        drawn = off if drawn is None else drawn | off
    return drawn.mean() < 0.002


def check_paper(pdf: str | Path, figures_dir: str | Path | None = None, render_dir: str | Path | None = None,
                dpi: int = 60, max_body_pages: int = MAX_BODY_PAGES) -> PaperCheck:
    """Render every page to PNG (pdftoppm), search the text (pdftotext) for '??'
    and forbidden words, check every generated figure shows something, and read
    the LaTeX log beside the PDF for overfull boxes and its .aux for the body's length. The pages go to
    ``render_dir``, by default a folder ``<stem>-pages`` beside the PDF."""
    pdf = Path(pdf)
    result = PaperCheck(pdf)
    missing = [t for t in ("pdftoppm", "pdftotext", "pdfinfo") if not shutil.which(t)]
    if missing:
        result.problems.append(f"cannot read the PDF: {', '.join(missing)} missing (Debian package poppler-utils)")
        return result
    if not pdf.is_file():
        result.problems.append(f"{pdf} does not exist: build it with `osbench paper`")
        return result
    info = _run(["pdfinfo", str(pdf)])
    result.pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    text = _run(["pdftotext", "-layout", str(pdf), "-"])
    if "??" in text:
        lines = [ln.strip() for ln in text.splitlines() if "??" in ln]
        result.problems.append(f"unresolved reference or citation ('??') in: {lines[:3]}")
    for word in FORBIDDEN_WORDS:
        hits = re.findall(rf"\b{word}\b", text, re.I)
        if hits:
            result.problems.append(f"the word {word!r} appears {len(hits)} times; cite the studies by authors and titles")
    lines = page_lines(text)
    allowed = allowed_names(figures_dir if figures_dir is not None else pdf.parent / "generated")
    result.problems += [f"identifier a reader meets, {p}" for p in identifiers(reader_lines(lines), allowed=allowed)]
    result.problems += [f"text past the page, {p}" for p in past_text_block(_run(["pdftotext", "-bbox", str(pdf), "-"]))]
    log, aux = pdf.with_suffix(".log"), pdf.with_suffix(".aux")
    if log.is_file():
        log_text = log.read_text(errors="replace")
        boxes = overfull_boxes(log_text)
        if boxes:
            result.problems.append(f"{len(boxes)} overfull boxes past the margin (LaTeX log): {boxes[:5]}")
        result.problems += [f"a float runs into the footer (LaTeX log): {f}" for f in floats_too_large(log_text)]
    if aux.is_file():
        body = body_pages(aux.read_text(errors="replace"))
        result.body_pages = body
        if body is not None and body > max_body_pages:
            result.problems.append(f"the body runs to page {body}; at most {max_body_pages} pages before the references")
    out = Path(render_dir) if render_dir else pdf.with_name(f"{pdf.stem}-pages")   # beside the PDF, not in /tmp
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("page*.png"):        # a shorter PDF than last time leaves no stale page behind
        old.unlink()
    subprocess.run(["pdftoppm", "-r", str(dpi), "-png", str(pdf), str(out / "page")], check=True)
    result.page_images = sorted(out.glob("page*.png"))
    if len(result.page_images) != result.pages:
        result.problems.append(f"rendered {len(result.page_images)} of {result.pages} pages")
    for page in result.page_images:
        if figure_is_blank(page):
            result.problems.append(f"{page.name} renders blank")
    if figures_dir is not None:
        for png in sorted(Path(figures_dir).glob("*.png")):
            if figure_is_blank(png):
                result.problems.append(f"figure {png.name} shows nothing")
        result.problems += [f"identifier a reader meets, {p}" for p in figure_identifiers(figures_dir, pdf.with_suffix(".tex"))]
        result.problems += [f"identifier a reader meets, {p}" for p in tex_identifiers(figures_dir, pdf.with_suffix(".tex"))]
        abstract = Path(figures_dir) / "abstract.tex"
        if abstract.is_file() and (n := abstract_words(abstract.read_text())) > MAX_ABSTRACT_WORDS:
            result.problems.append(f"the abstract has {n} words; at most {MAX_ABSTRACT_WORDS}")
        points = Path(figures_dir) / SWEEP_POINTS_FILE
        if points.is_file():
            import pandas as pd

            result.problems += [f"a fit quoted as measured, {p}"
                                for p in fitted_as_measured(lines, pd.read_csv(points))]
    return result


#: The measured sweep values the scalability appendix may quote (report.sections.scalability.POINTS_FILE).
SWEEP_POINTS_FILE = "sweep_points.csv"


def included_figures(tex_files) -> set[str]:
    """The names of the figures the paper includes (\\includegraphics{generated/NAME}) in these TeX files."""
    names = set()
    for f in tex_files:
        names |= set(re.findall(r"\\includegraphics(?:\[[^\]]*\])?\{generated/([^}.]+)",
                                Path(f).read_text(errors="replace")))
    return names


def figure_identifiers(figures_dir: str | Path, paper_tex: str | Path | None = None) -> list[str]:
    """Identifiers in the text of every vector figure the paper includes (axis labels, titles, legends),
    named by file: the figures \\included by the generated TeX (and by ``paper_tex``)."""
    out = []
    d = Path(figures_dir)
    shown = included_figures([*d.glob("*.tex"), *([paper_tex] if paper_tex and Path(paper_tex).is_file() else [])])
    for fig in sorted(f for f in d.glob("*.pdf") if f.stem in shown):
        try:
            text = _run(["pdftotext", "-layout", str(fig), "-"])
        except subprocess.CalledProcessError:
            continue
        out += identifiers(page_lines(text), where=f"figure {fig.name}")
    return out


#: The paper's text block (A4, 2.5 cm margins): figures are included at this width.
TEXT_WIDTH_IN, TEXT_HEIGHT_IN = 6.3, 9.7


def smallest_print_font_pt(fig, width_in: float = TEXT_WIDTH_IN, max_height_in: float | None = None) -> float:
    """The smallest text of a figure as printed when included at `width_in`
    (and at most `max_height_in` tall, aspect kept): tick labels, axis labels,
    titles and legends.  The paper asks for at least 8 pt."""
    w, h = fig.get_size_inches()
    scale = width_in / w
    if max_height_in is not None:
        scale = min(scale, max_height_in / h)
    fig.canvas.draw() if hasattr(fig.canvas, "draw") else None
    sizes = [t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
             if t.get_visible() and str(t.get_text()).strip()]
    return min(sizes) * scale if sizes else float("inf")
