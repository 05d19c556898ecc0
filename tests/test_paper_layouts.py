"""Layouts scale with the data (issue 37, item 2): the paper and the machine report are built from synthetic
stores (store/synthetic.py: a committed round's campaigns, times scaled, sealed by the real store under other
hosts) of 1, 2, 5 and 9 hosts, one campaign and several per host, an environment missing, every guest missing,
and each PDF passes the package's own check (report/pdf_check.py: overfull boxes, floats past the page, '??',
identifiers a reader meets).  The committed round is read from git (`git archive`), never from the live
data/campaigns; the probes are cut to the few the paper's prose quotes, so that each paper stays small.

One slow test per shape; the template round is extracted once per module."""
from __future__ import annotations

import dataclasses
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from osbench_analysis.paths import PAPER_DIR, REPO_ROOT

pytestmark = pytest.mark.slow

#: the probes the paper's prose quotes (paper.tex's macros) and the crossings' (null system call, stat)
PROBES = {"null_syscall", "stat", "fork_exit", "fork_exec", "pipe_pingpong"}
TIMED = ("native", "gvisor", "uml", "fuse")
GUESTS = ("mach", "linux-tcg")


def _committed_round() -> tuple[str, list[str]]:
    """The committed round (campaign id stamp) with every environment of TIMED and GUESTS, and its ids."""
    r = subprocess.run(["git", "ls-files", "-z", "data/campaigns"], cwd=REPO_ROOT, capture_output=True)
    if r.returncode:
        pytest.skip("no git: the template round is read from the committed campaigns")
    ids = sorted({Path(p).parts[2] for p in r.stdout.decode().split("\0") if len(Path(p).parts) > 3})
    rounds: dict[str, list[str]] = {}
    for cid in ids:
        rounds.setdefault(cid.split("-vm-")[0], []).append(cid)
    want = {f"-vm-{e}" for e in TIMED + GUESTS}
    full = [s for s, c in rounds.items() if want <= {cid[cid.index("-vm-"):] for cid in c}]
    if not full:
        pytest.skip("no committed round holds native, gVisor, UML, FUSE, GNU Mach and Linux")
    stamp = sorted(full)[-1]
    return stamp, [f"{stamp}-vm-{e}" for e in TIMED + GUESTS]


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    """environment -> store.Campaign: the committed round's campaigns, from git, the timed ones cut to PROBES."""
    from osbench_analysis.store import campaigns as store

    stamp, ids = _committed_round()
    out = tmp_path_factory.mktemp("template")
    tar = subprocess.run(["git", "archive", "HEAD", *(f"data/campaigns/{c}" for c in ids)], cwd=REPO_ROOT,
                         capture_output=True, check=True).stdout
    tarfile.open(fileobj=io.BytesIO(tar)).extractall(out, filter="data")
    got = {}
    for cid in ids:
        c = store.load_campaign(out / "data" / "campaigns" / cid)
        if c.environment in TIMED:
            keep = c.samples["probe"].isin(PROBES)
            m = dataclasses.replace(c.manifest, conditions=[x for x in c.manifest.conditions if x["probe"] in PROBES],
                                    runs=[x for x in c.manifest.runs if x.probe in PROBES])
            c = dataclasses.replace(c, samples=c.samples[keep].reset_index(drop=True), manifest=m)
        got[c.environment] = c
    return got


def _host(i: int) -> dict:
    """Host facts of synthetic host i: another CPU model (another host, hosts/identity.py); hosts 7 and 8 share
    their label and differ in microcode alone (their labels then carry their keys)."""
    if i >= 7:
        return {"cpu_model": "Synthetic EPYC 9R14", "microcode": f"0x{0xa0011d0 + i:x}"}
    return {"cpu_model": f"Synthetic Xeon {i + 1}{i + 2}80"}


def write_store(root: Path, templates: dict, *, hosts: int, rounds: int, missing: dict | None = None,
                guests: bool = True, seed: int = 0, first_round: int = 0, first_host: int = 0) -> list[str]:
    """``hosts`` synthetic hosts, ``rounds`` rounds each (``missing``: host index -> environments it never
    measured; ``guests``: GNU Mach and Linux counted on each host); every timed environment of a round 3 %
    slower per host index.  The host keys, host 0 first."""
    from osbench_analysis.store import synthetic

    keys = []
    for h in range(hosts):
        for r in range(first_round, first_round + rounds):
            stamp = f"2030{1 + h:02d}{1 + r:02d}T120000Z"
            envs = [e for e in TIMED if e not in (missing or {}).get(h, ())] + (list(GUESTS) if guests else [])
            ids = [f"{stamp}-vm-{e}" for e in envs]
            for k, e in enumerate(envs):
                synthetic.write_synthetic(root, ids[k], base=templates[e], seed=seed + 100 * h + 10 * r + k,
                                          sigma=0.03, host=_host(first_host + h), created_utc=f"2030-{1 + h:02d}-{1 + r:02d}T12:00:00+00:00",
                                          campaign_set=ids)
        from osbench_analysis.store import campaigns as store

        keys.append(store.load_campaign(root / ids[0]).manifest.host_identity.key)
    return keys


#: (hosts, rounds per host, host -> environments missing, guests): each shape the issue names at least once
SHAPES = {
    "1-host-1-round-no-guests": (1, 1, {}, False),
    "2-hosts-3-rounds-fuse-missing": (2, 3, {1: ("fuse",)}, True),
    "5-hosts-1-round-uml-missing": (5, 1, {2: ("uml",), 4: ("uml", "fuse")}, True),
    "9-hosts-2-rounds-no-guests": (9, 2, {3: ("gvisor",)}, False),
}


@pytest.fixture(scope="module")
def published(templates, tmp_path_factory):
    """The published studies' section and figures (report.reference_compare.write_reference), written once
    beside one synthetic host's analysis: their layout does not depend on how many hosts measured (shared
    work: evaluating the published claims is most of a paper's build)."""
    from osbench_analysis.analysis import pipeline
    from osbench_analysis.report import reference_compare

    root = tmp_path_factory.mktemp("published-campaigns")
    write_store(root, templates, hosts=1, rounds=1, guests=False)
    out = tmp_path_factory.mktemp("published")
    reference_compare.write_reference(pipeline.analyze(root=root, n_resamples=300), out_dir=out)
    return out


@pytest.fixture(scope="module")
def new_machine(templates, tmp_path_factory):
    """(campaigns root, host key) of a new machine (another host) that measured one round, gVisor missing:
    what each shape's machine report compares with the paper (the report only reads it)."""
    data = tmp_path_factory.mktemp("new-machine") / "data"
    (key,) = write_store(data, templates, hosts=1, rounds=1, missing={0: ("gvisor",)}, guests=False, seed=7,
                         first_round=20, first_host=20)
    return data, key


def _paper_files(tmp: Path) -> Path:
    d = tmp / "paper"
    (d / "generated").mkdir(parents=True)
    shutil.copy(PAPER_DIR / "paper.tex", d / "paper.tex")
    for extra in PAPER_DIR.glob("*.bib"):
        shutil.copy(extra, d / extra.name)
    return d


@pytest.mark.skipif(not shutil.which("pdflatex") or not shutil.which("pdftoppm"), reason="no TeX or poppler-utils")
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_paper_and_the_machine_report_stay_on_the_page(shape, templates, published, new_machine, tmp_path,
                                                            monkeypatch):
    from osbench_analysis.analysis import hosts as analysis_hosts
    from osbench_analysis.analysis import pipeline
    from osbench_analysis.report import machine, paper, scope

    n_hosts, rounds, missing, guests = SHAPES[shape]
    root = tmp_path / "campaigns"
    keys = write_store(root, templates, hosts=n_hosts, rounds=rounds, missing=missing, guests=guests)
    ref_file = tmp_path / "reference_hosts.txt"
    ref_file.write_text(f"# the paper's host\n{keys[0]}\n")
    monkeypatch.setattr(analysis_hosts, "REFERENCE_HOSTS_FILE", ref_file)   # the paper's host: host 0

    # the paper, as make paper writes it: the reference host's, every host of the store beside it
    got_root, host = scope.paper_inputs(root, reference_file=ref_file)
    assert host == keys[0]
    result = pipeline.analyze(root=got_root, host=host, n_resamples=300)
    d = _paper_files(tmp_path)
    paper.write_generated(result, out_dir=d / "generated", campaigns_root=got_root)
    for f in published.iterdir():                 # written after the analysis' files, as `osbench paper` does
        (shutil.copytree(f, d / "generated" / f.name, dirs_exist_ok=True) if f.is_dir()
         else shutil.copy(f, d / "generated" / f.name))
    assert "built" in paper.build_pdf(d)          # build_pdf runs the check and raises on any problem
    machines = (d / "generated" / "machines.tex").read_text()
    if n_hosts > 1:
        every = (d / "generated" / "machines_figure.tex").read_text()
        assert "longtable" in every and every.count("\\\\\n") >= n_hosts    # a row per host, not a column
        assert "host A" in machines and (f"host {chr(ord('A') + n_hosts - 1)}" in machines)
    else:
        assert "Only this paper's host" in machines

    # the machine report: a new machine (another host) measured one round, gVisor missing
    data, this = new_machine
    assert this not in keys
    rep = machine.machine_report(data, paper_root=got_root, this=this, reference_file=ref_file,
                                 scratch=tmp_path / "mine")
    assert rep.reference == keys[0] and len(rep.table) and not rep.note
    assert set(rep.table["reference_key"]) == {keys[0]}          # every row from the paper's host ...
    assert set(rep.table["this_key"]) == {"this machine"}         # ... to this machine
    assert not rep.table["environment"].eq("gvisor").any()        # not measured here: no row
    said = machine.write_report(rep, tmp_path / "report")   # runs check_paper on its PDF and raises on any problem
    assert said.startswith("built"), said


@pytest.mark.skipif(not shutil.which("pdflatex") or not shutil.which("pdftoppm"), reason="no TeX or poppler-utils")
def test_a_machine_with_nothing_beyond_the_papers_campaigns_gets_a_report_that_says_so(templates, tmp_path):
    from osbench_analysis.report import machine

    paper_root = tmp_path / "paper-campaigns"
    (ref,) = write_store(paper_root, templates, hosts=1, rounds=1, guests=False)
    ref_file = tmp_path / "reference_hosts.txt"
    ref_file.write_text(f"{ref}\n")
    # the paper's host itself, with no round beyond the paper's; then a machine that measured nothing
    for this, said in ((ref, "(it is the paper's host)"), ("amd-epyc-000000", "measured no campaign")):
        rep = machine.machine_report(paper_root, paper_root=paper_root, this=this, reference_file=ref_file,
                                     scratch=tmp_path / "mine")
        assert rep.table.empty and said in rep.note and said in " ".join(rep.sentences())
        out = tmp_path / this
        assert machine.write_report(rep, out).startswith("built")
        assert this in subprocess.run(["pdftotext", str(out / "machine_report.pdf"), "-"], capture_output=True,
                                      text=True).stdout
