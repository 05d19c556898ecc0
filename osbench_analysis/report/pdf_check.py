"""Reading the built paper as a reader would: every page rendered, the text
searched for unresolved references and words the paper must not use, every
figure checked to show something.  Used by `osbench paper` and the tests."""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Words a reader must never meet: the five studies are cited by authors and titles.
FORBIDDEN_WORDS = ("seed", "seeds")
#: An overfull box wider than this runs visibly past the margin (TeX's own \\hfuzz is 0.1 pt).
OVERFULL_PT = 1.0
#: The paper's body (everything before the references and appendices) must fit in this many pages.
MAX_BODY_PAGES = 12
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


def _run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def figure_is_blank(png: Path) -> bool:
    """A figure whose pixels are (nearly) all one colour shows nothing."""
    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    pixels = img[..., :3].reshape(-1, 3) if img.ndim == 3 else img.reshape(-1, 1)
    background = np.median(pixels, axis=0)
    drawn = np.abs(pixels - background).max(axis=1) > 0.05
    return drawn.mean() < 0.002


def check_paper(pdf: str | Path, figures_dir: str | Path | None = None, render_dir: str | Path | None = None,
                dpi: int = 60, max_body_pages: int = MAX_BODY_PAGES) -> PaperCheck:
    """Render every page to PNG (pdftoppm), search the text (pdftotext) for '??'
    and forbidden words, check every generated figure shows something, and read
    the LaTeX log beside the PDF for overfull boxes and its .aux for the body's length."""
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
    log, aux = pdf.with_suffix(".log"), pdf.with_suffix(".aux")
    if log.is_file():
        boxes = overfull_boxes(log.read_text(errors="replace"))
        if boxes:
            result.problems.append(f"{len(boxes)} overfull boxes past the margin (LaTeX log): {boxes[:5]}")
    if aux.is_file():
        body = body_pages(aux.read_text(errors="replace"))
        result.body_pages = body
        if body is not None and body > max_body_pages:
            result.problems.append(f"the body runs to page {body}; at most {max_body_pages} pages before the references")
    out = Path(render_dir) if render_dir else Path(tempfile.mkdtemp(prefix="osbench-paper-pages-"))
    out.mkdir(parents=True, exist_ok=True)
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
    return result


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
