"""Which campaigns the paper reads, whatever machine builds it (issue 37, item 1).

The paper is the reference host's (data/reference_hosts.txt), pooled over the rounds named in
data/paper_campaigns.txt: ``make paper`` copies exactly those sealed campaigns (seals verified) into
build/paper/campaigns and analyses that folder, so a round measured later (on this machine, or on the
reference host's machine kind) never changes a generated file.  A paper about another host is one option
away: with a host named (``make paper HOST=...``, ``osbench paper --host ...``) every campaign of
data/campaigns is read and that host is the paper's.  What this machine's own rounds say against the
paper is the machine report's (report/machine.py)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from osbench_analysis.errors import OsbenchError
from osbench_analysis.paths import REPO_ROOT

#: the campaigns the paper reads: one campaign id a line, '#' starts a comment
PAPER_CAMPAIGNS_FILE = REPO_ROOT / "data" / "paper_campaigns.txt"
#: the host named "this": the machine the code runs on (make paper HOST=this)
THIS = "this"
#: where ``make paper`` assembles them (a copy: data/campaigns is never touched)
PAPER_ROOT = REPO_ROOT / "build" / "paper" / "campaigns"


class ScopeError(OsbenchError, ValueError):
    """The paper's campaigns file names a campaign that is not there, or cannot be read."""


def pinned(path: str | Path | None = None) -> list[str]:
    """The campaign ids ``path`` (default PAPER_CAMPAIGNS_FILE) names, in its order; [] without the file."""
    p = Path(path) if path is not None else PAPER_CAMPAIGNS_FILE
    if not p.is_file():
        return []
    ids = [ln.split("#", 1)[0].strip() for ln in p.read_text().splitlines()]
    bad = [i for i in ids if i and ("/" in i or i.startswith("."))]
    if bad:
        raise ScopeError(f"{p}: {bad[0]!r} is not a campaign id (one id a line, no paths)")
    return list(dict.fromkeys(i for i in ids if i))


def _same_seal(a: Path, b: Path) -> bool:
    from osbench_analysis.store import campaigns as store

    return all((a / f).is_file() and (b / f).is_file() and (a / f).read_bytes() == (b / f).read_bytes()
               for f in (store.SEAL_FILE, store.MANIFEST_FILE))


def _remove(path: Path) -> None:
    """A copied campaign folder removed (sealed folders are read-only: made writable first)."""
    for d in [path, *(p for p in path.rglob("*") if p.is_dir() and not p.is_symlink())]:
        try:
            d.chmod(0o755)
        except OSError:
            pass
    shutil.rmtree(path, ignore_errors=True)


def assemble(ids: list[str], source: str | Path | None = None, dest: str | Path | None = None) -> Path:
    """``dest`` (default PAPER_ROOT) holding exactly the campaigns ``ids`` of ``source`` (default
    data/campaigns): each copied (times kept) when missing or different, its seal verified, every other
    folder of ``dest`` removed.  Safe to run twice at once (each copy lands by one rename)."""
    from osbench_analysis.store import campaigns as store

    src = Path(source) if source is not None else store.default_root()
    out = Path(dest) if dest is not None else PAPER_ROOT
    missing = [c for c in ids if not (src / c).is_dir()]
    if missing:
        raise ScopeError(f"the paper's campaign {missing[0]!r} ({len(missing)} of {len(ids)} named in "
                         f"{PAPER_CAMPAIGNS_FILE.name}) is not under {src}: restore it from git, or name "
                         "the paper's campaigns anew")
    out.mkdir(parents=True, exist_ok=True)
    for c in ids:
        store.verify_seal(src / c)
        if (out / c).is_dir() and _same_seal(src / c, out / c):
            continue
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out.parent))
        try:
            shutil.copytree(src / c, staging / c)
            if (out / c).exists():
                _remove(out / c)
            try:
                os.rename(staging / c, out / c)
            except OSError:          # another build put it there first
                if not _same_seal(src / c, out / c):
                    raise
        finally:
            _remove(staging)
    keep = set(ids)
    for d in out.iterdir():
        if d.name not in keep and d.is_dir() and not d.is_symlink():
            _remove(d)
    return out


def reference_host(root: str | Path | None = None, reference_file: str | Path | None = None) -> str | None:
    """The first host data/reference_hosts.txt (or ``reference_file``) names that measured a campaign
    under ``root``; None when it names none of them."""
    from osbench_analysis.analysis.hosts import reference_hosts
    from osbench_analysis.store import campaigns as store

    cat = store.catalog(root)
    keys = list(dict.fromkeys(cat["host"])) if len(cat) else []
    named = reference_hosts(keys, reference_file)
    if not named:
        return None
    order = [ln.split("#", 1)[0].strip() for ln in Path(reference_file or _reference_file()).read_text().splitlines()]
    return sorted(named, key=lambda h: order.index(h) if h in order else len(order))[0]


def _reference_file() -> Path:
    from osbench_analysis.analysis.hosts import REFERENCE_HOSTS_FILE

    return REFERENCE_HOSTS_FILE


def paper_inputs(root: str | Path | None = None, host: str | None = None, *,
                 pin_file: str | Path | None = None, reference_file: str | Path | None = None,
                 dest: str | Path | None = None) -> tuple[Path | None, str | None]:
    """(campaigns root, host) the paper analyses.

    - ``host`` named: (``root``, ``host``) as given: a paper about that host, from every campaign of ``root``
      (``"this"``: the machine this code runs on);
    - else, ``root`` None and the paper's campaigns file present (``pin_file``, default
      data/paper_campaigns.txt): those campaigns of data/campaigns assembled under ``dest`` (default
      build/paper/campaigns), and the reference host among them;
    - else: ``root`` and the reference host among its campaigns (None when it has none: the analysis' default)."""
    if host == THIS:
        host = this_machine()[0]
    if host is not None:
        return (Path(root) if root is not None else None), host
    if root is None:
        ids = pinned(pin_file)
        if ids:
            root = assemble(ids, None, dest)
    return (Path(root) if root is not None else None), reference_host(root, reference_file)


def this_machine() -> tuple[str, str, dict]:
    """(key, label, identity parts) of the machine this code runs on (hosts.identity of the facts a campaign
    measured here would record: what `osbench host` and explore.this_host() say)."""
    from osbench_analysis.hosts import identity, machine

    ident = identity.host_identity(machine.identity_facts())
    return ident.key, ident.label, ident.parts


def main(argv: list[str] | None = None) -> int:
    """``python -m osbench_analysis.report.scope``: assemble build/paper/campaigns (make paper does) and
    say which host the paper is about."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m osbench_analysis.report.scope", description=main.__doc__)
    ap.add_argument("--host", help="a paper about this host instead (every campaign of data/campaigns)")
    args = ap.parse_args(argv)
    try:
        root, host = paper_inputs(host=args.host)
    except OsbenchError as e:
        print(f"osbench paper: error: {e}")
        return 2
    print(f"the paper: host {host or 'of the newest complete round'}, campaigns under {root or 'data/campaigns'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
