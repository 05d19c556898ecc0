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


@dataclass
class PaperCheck:
    pdf: Path
    pages: int = 0
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
                dpi: int = 60) -> PaperCheck:
    """Render every page to PNG (pdftoppm), search the text (pdftotext) for '??'
    and forbidden words, and check every generated figure shows something."""
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
