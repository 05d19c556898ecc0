"""The Python in docs/python_api.md (and any in README.md) runs, and prints what the page shows.

Every ```python block of a page is run in order in one namespace, against a small campaigns folder of
synthetic campaigns (store/synthetic.py: real campaigns' samples, scaled, under new ids) named by
$OSBENCH_DATA_DIR, so that the page's default-root calls read it.  What the page shows after a block is
compared by shape, not by number (the synthetic campaigns are not the page's): a table by its columns, an
error by its class and its message with numbers and quoted values masked, a text likewise.

An output block that follows a ```python block is the value of that block's last expression; an output
block of `>>>` lines is a session, each line run and followed by what it shows; `$` blocks are the shell's
(the CLI has tests of its own)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "docs" / "python_api.md", REPO / "README.md"]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(page: Path) -> list[tuple[str, str]]:
    """(language, text) of every fenced block, in order ('' for a block without a language)."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(page.read_text())]


def masked(text: str) -> str:
    """A text's shape: numbers, quoted values, campaign ids and host labels masked (the page shows the host
    of its writer's data; a clone's `make all` adds its own host), runs of space as one."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", str(text))
    text = re.sub(r"\d{8}T\d{6}Z[\w.-]*", "ID", text)
    text = re.sub(r"[A-Z][\w() -]*? · \d+ vCPU · [\w.+-]*\w", "HOST", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return re.sub(r"\s+", " ", text).strip()


def run(code: str, ns: dict):
    """Run code; the value of its last statement when that is an expression (None otherwise)."""
    tree = ast.parse(code)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<doc>", "exec"), ns)
    return eval(compile(ast.Expression(last.value), "<doc>", "eval"), ns) if last else None


def assert_shows(value, shown: str, where: str) -> None:
    """value (a table, a text, a raised exception) has the shape of what the page shows."""
    shown = shown.strip("\n")
    if isinstance(value, BaseException):
        name, _, message = shown.partition(": ")
        assert type(value).__name__ == name, f"{where}: raises {type(value).__name__}, the page shows {name}"
        assert masked(value) == masked(message), f"{where}: says {value}, the page shows {message}"
    elif isinstance(value, pd.DataFrame):
        header = shown.splitlines()[0].split()
        assert " ".join(map(str, value.columns)).split() == header, \
            f"{where}: columns {list(value.columns)}, the page shows {header}"
    elif isinstance(value, str) and shown[:1] in "'\"" and shown[-1:] == shown[:1]:
        # a text the page shows as its repr: compared inside the quotes, so its words count
        assert masked(value) == masked(shown[1:-1]), f"{where}: shows {value!r}, the page shows {shown}"
    else:
        assert masked(value) == masked(shown), f"{where}: shows {value!r}, the page shows {shown!r}"


def session(text: str, ns: dict, where: str) -> int:
    """Run a block of `>>>` lines, each against what follows it; how many were compared."""
    parts = re.split(r"^>>> (.*)$", text, flags=re.M)[1:]
    for code, shown in zip(parts[::2], parts[1::2]):
        try:
            value = run(code, ns)
        except Exception as e:   # noqa: BLE001 - the page shows the error a call raises
            value = e
        assert_shows(value, shown, f"{where}: >>> {code}")
    return len(parts) // 2


@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory, committed_root):
    """Two native campaigns and one each of gvisor and the three guests: synthetic copies of this checkout's
    newest committed ones (a clone's own rounds from `make all` change which optional columns, such as
    warnings, a table has; the page shows the committed data's)."""
    from osbench_analysis.store import campaigns as store
    from osbench_analysis.store import synthetic

    root = tmp_path_factory.mktemp("doc-campaigns")
    cat = store.catalog(committed_root)
    cat = cat[~cat["campaign_id"].str.contains("sweep")].sort_values("created_utc")
    # two natives of one host (the newest host with two)
    nat = cat[cat["environment"] == "native"]
    hosts = nat.groupby("host")["created_utc"].agg(["size", "max"])
    host = hosts[hosts["size"] >= 2].sort_values("max").index[-1]
    natives = nat[nat["host"] == host]["campaign_id"].tolist()[-2:]
    same = cat[(cat["host"] == host) | cat["environment"].isin(["mach", "linux-tcg", "linux-tcg-nomitig"])]
    others = [cid for env in ("gvisor", "mach", "linux-tcg", "linux-tcg-nomitig")
              for cid in same[same["environment"] == env]["campaign_id"].tolist()[-1:]]
    for i, cid in enumerate(natives + others):
        synthetic.write_synthetic(root, cid, base=store.load_campaign(committed_root / cid), seed=i)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_pages_python_runs_and_shows_what_it_prints(page, synthetic_root, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setenv("OSBENCH_DATA_DIR", str(synthetic_root))
    ns: dict = {}
    compared = ran = 0
    found = blocks(page)
    for i, (lang, text) in enumerate(found):
        where = f"{page.name} block {i + 1}"
        if lang == "python":
            value = run(text, ns)
            ran += 1
            after = found[i + 1] if i + 1 < len(found) else None
            if after and after[0] == "" and not after[1].lstrip().startswith((">>>", "$")):
                assert_shows(value, after[1], where)
                compared += 1
        elif lang == "" and text.lstrip().startswith(">>>"):
            compared += session(text, ns, where)
    if page.name == "python_api.md":
        assert ran >= 6 and compared >= 4, (ran, compared)
