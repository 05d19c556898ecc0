"""`osbench run|list|host|analyze|paper`: the batch front end.  Every command calls
the same package function the notebooks call, with the same parameters."""
from __future__ import annotations

import argparse
import json
import shlex
import sys

from osbench_analysis.measure import config
from osbench_analysis.catalog import registry, views
from osbench_analysis.measure import runner
from osbench_analysis.store import campaigns as store
from osbench_analysis.errors import OsbenchError
from osbench_analysis.fleet.certs import MAX_CERT_DAYS   # --days: the limit make_certs itself refuses beyond


def _csv(cast=str):
    def parse(text: str):
        return [cast(x) for x in text.split(",") if x.strip()]
    return parse


def _json(text: str):
    """A JSON option's value; one line for JSON nested too deep to read (N1: 5,000 '[' gave a RecursionError)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise argparse.ArgumentTypeError("JSON nested too deeply") from None
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None


def _days(text: str) -> int:
    try:
        days = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of days: {text!r}") from None
    if not 1 <= days <= MAX_CERT_DAYS:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_CERT_DAYS} days (got {days})")
    return days


def _add_run(sub):
    p = sub.add_parser("run", help="measure a campaign on this machine and seal it under data/campaigns/")
    add_campaign_parameters(p)
    p.add_argument("--resume", metavar="ID",
                   help="continue the interrupted campaign ID (its parameters come from its journal)")
    p.add_argument("--wait", action="store_true",
                   help="if another campaign is measuring on this host, start after it instead of refusing")
    p.add_argument("--no-progress", action="store_true")


def add_campaign_parameters(p):
    """The parameters of one campaign, shared by `osbench run` and `osbench fleet run`."""
    p.add_argument("--profile", choices=sorted(config.PROFILES), help="quick (default) or full")
    p.add_argument("--probes", type=_csv(), help=f"comma-separated; default: all ({','.join(registry.DEFAULT_PROBES)})")
    p.add_argument("--runs", type=int,
                   help="worker processes per condition in the first round; with a precision target (both "
                        "profiles have one) precision may add runs, up to --max-runs per condition")
    p.add_argument("--batches", type=int, help="measured batches per worker")
    p.add_argument("--guest-batches", type=int,
                   help="measured batches per boot of a guest counting instructions, whose count repeats boot "
                        "after boot (the profile's: quick 5, full its --batches)")
    p.add_argument("--warmup", type=int, help="extra warm-up batches per worker (kept, flagged)")
    p.add_argument("--timed-warmup", type=int,
                   help="extra warm-up batches per worker in the environments timed in ns (native, gVisor, UML, "
                        "FUSE); the calibration's last, full-size batch is one already (quick: 0; default: --warmup)")
    p.add_argument("--min-batch-ms", type=float, help="calibration target for one batch")
    p.add_argument("--placements", type=_csv(), help="same_cpu,cross_cpu,unpinned")
    p.add_argument("--cpus", type=_csv(int), help="first and second CPU for pinning, e.g. 0,1")
    p.add_argument("--workdir", help="folder where file probes make their private folder (default tmpfs /dev/shm)")
    p.add_argument("--sandbox-probes", type=_csv(),
                   help="what environments other than native measure: comma-separated probes or 'all' "
                        "(quick profile: the architecture primitives; --probes given: all of them)")
    p.add_argument("--sandbox-fs", type=_csv(),
                   help="where gVisor's and UML's file probes run: host-volume,guest-tmpfs (default both: the "
                        "guest kernel's own tmpfs separates the crossing to the host)")
    p.add_argument("--guest-boots", type=int,
                   help="boots of a guest counting instructions (mach, linux-tcg, sel4, xen-linux): its counts "
                        "repeat, so two show it (the quick profile's 2, the full profile's 3); at most --runs (xen-linux: 2)")
    p.add_argument("--guest-budget-s", type=float,
                   help="wall seconds the guests' boots may take here: every guest boots once, a repeat boot only if "
                        "its first boot's wall says it ends within them (the quick profile's 45; the full profile: "
                        "none, every guest boots --guest-boots times)")
    p.add_argument("--memory-events", nargs="?", const="warm", choices=("warm", "polluted"),
                   help="load the guests' memory-system model (cache and TLB misses, CR3 writes, kernel entries per "
                        "batch; docs/environments.md): warm (the default), or polluted (caches emptied before each "
                        "one-operation batch); one boot more, without it, checks the counts")
    p.add_argument("--environment", help="kernel environment: native (default), a name from `osbench envs`, "
                                         "several comma-separated, or 'all' (interleaved, one campaign each); "
                                         "'all-guests' / 'all-timed': the available guests counting instructions / "
                                         "native and the environments timed in ns (make all: two rounds)")
    p.add_argument("--variants", type=_json,
                   help='probe parameter sets as JSON, e.g. \'{"fork_exec": [{"linkage": "static"}]}\'')
    p.add_argument("--campaign-id", help="default: <UTC time>-<host>-<environment>")
    p.add_argument("--output", help="campaigns folder (default data/campaigns)")
    p.add_argument("--timeout-s", type=float, help="per worker process")
    p.add_argument("--precision-target", type=float,
                   help="add runs until each CI half-width <= this fraction of the estimate (0: exactly --runs)")
    p.add_argument("--max-runs", type=int, help="with a precision target: most runs per condition")
    p.add_argument("--time-budget-s", type=float, help="with a precision target: measuring time to spend at most")
    p.add_argument("--command-prefix", type=shlex.split,
                   help="wrap each worker inside its environment, e.g. 'nice -n -5'")
    p.add_argument("--note", help="free text stored in the manifest")


def _add_fleet(sub):
    fp = sub.add_parser("fleet", help="campaigns on many hosts through Dask distributed, the extra "
                                      "osbench-analysis[fleet] (docs/fleet.md)")
    fsub = fp.add_subparsers(dest="fleet_command", required=True)
    p = fsub.add_parser("run", help="measure one campaign on every host and store them here")
    p.add_argument("--scheduler", required=True, help="Dask scheduler address, e.g. tls://lab0:8786")
    p.add_argument("--hosts", required=True, type=_csv(),
                   help="the measured hosts: their certificates' names (`osbench fleet certs --hosts`)")
    add_campaign_parameters(p)
    p.add_argument("--wait", action="store_true",
                   help="a host busy with another campaign measures after it instead of refusing")
    p.add_argument("--tls-ca-file", help="the fleet's CA certificate (`osbench fleet certs`: DIR/client/ca.pem)")
    p.add_argument("--tls-cert", help="this client's certificate (DIR/client/cert.pem)")
    p.add_argument("--tls-key", help="this client's private key (DIR/client/key.pem)")
    p.add_argument("--insecure", action="store_true",
                   help="accept a plaintext tcp:// scheduler without authentication: one trusted machine only")
    c = fsub.add_parser("certs", help="make a CA and certificates for the scheduler, the client and every host")
    c.add_argument("--hosts", required=True, type=_csv(), help="the measured hosts (their certificates' names)")
    c.add_argument("--out", required=True, help="an empty or new folder for the certificates")
    c.add_argument("--scheduler-host", help="the machine running the scheduler (default: this one)")
    c.add_argument("--port", type=int, default=8786, help="the scheduler's port in the printed commands")
    c.add_argument("--days", type=_days, default=825,
                   help=f"how long the certificates are valid (at most {MAX_CERT_DAYS} days)")


def _fleet(args) -> int:
    from osbench_analysis.fleet import run as fleet

    if args.fleet_command == "certs":
        from osbench_analysis.fleet import certs as fleet_certs

        made = fleet_certs.make_certs(args.hosts, args.out, args.scheduler_host, args.port, args.days)
        print(f"wrote the CA and the scheduler, client and host certificates to {made.out} (keys 0600)")
        print(made.commands())
        return 0
    params = {k: v for k, v in vars(args).items()
              if k not in ("command", "fleet_command", "scheduler", "hosts", "profile", "wait")}
    result = fleet.fleet_run(args.scheduler, args.hosts, profile=args.profile, wait=args.wait,
                             say=lambda m: print(m, file=sys.stderr), **params)
    print(result.table().drop(columns=["path"]).to_string(index=False))
    _fleet_hosts(result, args.output)
    if result.unfinished:
        print(f"{len(result.unfinished)} host(s) unfinished: run the same command with --campaign-id "
              f"{result.prefix} to resume them", file=sys.stderr)
        return 1
    return 0


def _fleet_hosts(result, output) -> None:
    """The fleet's hosts side by side (analysis/hosts.py) when its campaigns came from two hosts or more."""
    from osbench_analysis.analysis import hosts as analysis_hosts

    cat = store.catalog(output)
    keys = list(dict.fromkeys(cat.loc[cat["campaign_id"].isin(result.campaigns), "host"]))
    if len(keys) > 1:
        cross = analysis_hosts.cross_host(output, hosts=keys)
        print("\nhosts side by side:\n" + cross.hosts.to_string(index=False) + "\n" + "\n".join(cross.findings()))


def _add_analysis(sub, name, help_):
    """The parameters of analyze.ipynb (and, with --reference-root, reference_comparisons.ipynb)."""
    from osbench_analysis import stats

    p = sub.add_parser(name, help=help_)
    p.add_argument("campaigns", nargs="*",
                   help="campaign ids; default: the newest complete one of each environment on one host (--host)")
    p.add_argument("--root", help="campaigns folder (default data/campaigns)")
    p.add_argument("--out-dir", help="where generated tables/figures go (default paper/generated)")
    p.add_argument("--level", type=float, default=stats.DEFAULT_LEVEL, help="confidence level of every interval")
    p.add_argument("--n-resamples", type=int, default=stats.DEFAULT_RESAMPLES,
                   help="resamples, for the bootstrap CI methods and quality checks")
    p.add_argument("--seed", type=int, default=stats.DEFAULT_SEED, help="random seed: same data, same intervals")
    p.add_argument("--ci-method", default=stats.DEFAULT_CI_METHOD, choices=stats.CI_METHODS,
                   help="interval method (docs/statistics.md)")
    p.add_argument("--baseline", default="native", help="environment every other environment is compared with")
    p.add_argument("--host", help="the host to analyse: its key or words of its label (osbench list), e.g. 'intel', "
                                  "or 'this' (this machine); default: the paper's (reference) host, from the "
                                  "campaigns data/paper_campaigns.txt names (without --root)")
    return p


def _analysis_kwargs(args) -> dict:
    restrict = {k: getattr(args, k) for k in ("probes", "environments", "host") if getattr(args, k, None)}
    return dict(root=args.root, level=args.level, n_resamples=args.n_resamples, seed=args.seed,
                ci_method=args.ci_method, baseline=args.baseline, **restrict)


def _analyze(args) -> None:
    from osbench_analysis.analysis import pipeline as analysis
    from osbench_analysis.report import paper
    from osbench_analysis.report import reference_compare

    # every analysis option checked before anything is read or written (one line each, like `run`'s)
    analysis.AnalysisSettings(level=args.level, n_resamples=args.n_resamples, seed=args.seed,
                              ci_method=args.ci_method, baseline=args.baseline)
    if args.command == "paper" and args.pdf_only:
        print(paper.build_pdf())
        return
    if args.command != "reference":   # a bad --out-dir refused before the analysis, not after it (B95)
        paper.check_out_dir(args.out_dir)
    if not args.campaigns:            # the paper's files: the reference host's pinned campaigns unless a host is named
        from osbench_analysis.report import scope

        args.root, args.host = scope.paper_inputs(args.root, args.host)
    if args.command == "reference":
        try:
            result = analysis.analyze(args.campaigns or None, **_analysis_kwargs(args))
        except store.StoreError as e:  # the published data alone, as the notebook does
            print(f"{e}; showing published data only", file=sys.stderr)
            result = None
        written = reference_compare.write_reference(result, args.reference_root, args.out_dir)
    else:
        result = analysis.analyze(args.campaigns or None, **_analysis_kwargs(args))
        written = paper.write_generated(result, out_dir=args.out_dir, campaigns_root=args.root)
        if args.command == "paper":
            written += reference_compare.write_reference(result, args.reference_root, args.out_dir)
    print(f"wrote {len(written)} files to {written[0].parent if written else args.out_dir}")
    if args.command == "paper" and not args.no_pdf:
        print(paper.build_pdf())


def _envs() -> None:
    from osbench_analysis import environments

    for env in environments.REGISTRY:
        ok = env.availability()
        why = ok.reason + (f" (install: {ok.install_hint})" if not ok and ok.install_hint else "")
        print(f"{env.name:16s} {env.arch_class:18s} {'ready' if ok else 'not available'}: {why}")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="osbench", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    _add_run(sub)
    _add_fleet(sub)
    lp = sub.add_parser("list", help="every folder of the campaigns root and its state (sealed, damaged and why, "
                                     "interrupted, ...)")
    lp.add_argument("--root")
    hp = sub.add_parser("host", help="which host this machine is: its key and label, its campaigns under --root, "
                                     "and whether it is the paper's reference host")
    hp.add_argument("--root")
    vp = sub.add_parser("verify", help="check every campaign's seal and signature: signed by which host, or unsigned")
    vp.add_argument("campaigns", nargs="*", help="campaign ids or folders (default: every campaign under --root)")
    vp.add_argument("--root")
    vp.add_argument("--ca", help="the fleet's CA certificate: a signature must also be by a certificate it issued")
    dp = sub.add_parser("discard", help="drop an interrupted campaign's journal (its measured runs) so the id "
                                        "can be used again")
    dp.add_argument("campaign_id")
    dp.add_argument("--output", help="campaigns folder (default data/campaigns)")
    sub.add_parser("probes", help="list the probe catalog")
    sub.add_parser("envs", help="list the kernel environments and whether each is ready here")
    ap_ = _add_analysis(sub, "analyze", "estimate per-op times with CIs and write tables/figures")
    ap_.add_argument("--probes", type=_csv(), help="comma-separated probes to analyse (default: all)")
    ap_.add_argument("--environments", type=_csv(), help="comma-separated environments to analyse (default: all)")
    rp = _add_analysis(sub, "reference", "the published studies' data beside ours: tables, figures, paper section")
    pp = _add_analysis(sub, "paper", "analyze and compare with the published data, then build paper/paper.pdf")
    for p in (rp, pp):
        p.add_argument("--reference-root", help="folder of the reference data (default data/reference)")
    only = pp.add_mutually_exclusive_group()
    only.add_argument("--no-pdf", action="store_true", help="only regenerate the generated/ files")
    only.add_argument("--pdf-only", action="store_true", help="only build the PDF from the generated/ files")
    return ap


def _verify(args) -> int:
    """One line per campaign: its seal, and who signed it (store/signature.py); exit 1 if any fails.  Without
    ids every folder of the root is checked, a damaged one too (the catalog would leave it out), and a last
    line counts and names the damaged ones."""
    from pathlib import Path

    from osbench_analysis.store import inventory

    if args.ca and not Path(args.ca).is_file():
        raise store.StoreError(f"--ca {args.ca!r} is not a file; give the fleet's ca.pem (`osbench fleet certs`)")
    ca = Path(args.ca).read_bytes() if args.ca else None
    if ca is not None:
        _check_ca(args.ca, ca)
    if args.campaigns:   # (path, why it is damaged or None)
        rows = [(store.resolve(c, args.root), None) for c in args.campaigns]
    else:
        root = Path(args.root or store.default_root())
        table = inventory.inventory(root)
        table = table[~table["folder"].str.startswith(".")]     # journals and seals being written: `osbench list`
        rows = [(root / r.folder, r.why if r.state == "damaged" else None) for r in table.itertuples()
                if r.state in ("sealed", "partial", "damaged")]
    if not rows:
        print("no campaigns")
    bad = []
    for path, why in rows:
        try:
            if why is not None:
                raise store.CampaignCorrupted(why)
            store.verify_seal(path)
            print(f"{path.name}: seal intact, {store.signed_by(path, ca)}")
        except store.StoreError as e:
            bad.append(path.name)
            print(f"{path.name}: DAMAGED: {e}")
    if bad:
        print(f"{len(bad)} of {len(rows)} campaign folder(s) damaged: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


def _check_ca(name: str, pem: bytes) -> None:
    """--ca must be a certificate (N29: any file was accepted while no campaign was signed)."""
    from cryptography import x509

    try:
        x509.load_pem_x509_certificate(pem)
    except ValueError:
        raise store.StoreError(f"--ca {name!r} is not a PEM certificate; give the fleet's ca.pem "
                               "(`osbench fleet certs`)") from None


def _list(args) -> int:
    """`osbench list`: every folder and its state; exit 1 when a campaign folder is damaged (named last)."""
    from osbench_analysis.analysis.hosts import hosts_table, merge_notes
    from osbench_analysis.store import inventory

    table = inventory.inventory(args.root)
    print(inventory.format_inventory(table))
    cat = store.catalog(args.root)
    if len(cat):   # the hosts (hosts/identity.py), each named as --host takes it; one machine, one host
        print("\nhosts (--host takes a key or words of a label):\n" + hosts_table(cat).to_string(index=False))
        for note in merge_notes(cat):
            print(f"  one machine, one host: {note}")
    damaged = list(table.loc[table["state"] == "damaged", "folder"])
    if damaged:
        print(f"{len(damaged)} folder(s) damaged: {', '.join(damaged)} (see above; `osbench verify` checks "
              "every seal)", file=sys.stderr)
        return 1
    return 0


def _one_line_warnings(command: str) -> None:
    """A campaign left out (store.DamagedCampaign) is one line on stderr, like an error, not a source line."""
    import warnings

    shown, said = warnings.showwarning, set()

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, store.DamagedCampaign):
            if str(message) not in said:   # once, whichever layer noticed it
                said.add(str(message))
                print(f"osbench {command}: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)
    warnings.showwarning = show


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _one_line_warnings(args.command)

    try:
        if args.command == "run":
            params = {k: v for k, v in vars(args).items()
                      if k not in ("command", "profile", "no_progress", "resume", "wait")}
            profile = args.profile if args.resume or args.profile else "quick"
            for c in runner.measure(profile, progress=not args.no_progress, resume=args.resume, wait=args.wait,
                                    **params):
                print(f"sealed campaign {c.id} at {c.path} ({len(c.samples)} batches, "
                      f"{len(c.errors)} failed workers, {c.manifest.measuring_seconds:.1f} s measuring)")
                from osbench_analysis.report import run_report

                print(f"  runs: {run_report.stop_words(c.manifest.precision)}")
                for e in c.errors.itertuples():
                    print(f"  {e.probe} {e.placement} run {e.run}: {e.status}: {e.message}", file=sys.stderr)
        elif args.command == "fleet":
            return _fleet(args)
        elif args.command == "verify":
            return _verify(args)
        elif args.command == "list":
            return _list(args)
        elif args.command == "host":
            from osbench_analysis.explore import questions

            print("\n".join(questions.this_host(args.root).lines()))
        elif args.command == "discard":
            from osbench_analysis.measure import journal

            path = journal.discard(args.output or store.default_root(), args.campaign_id)
            print(f"discarded the interrupted campaign {args.campaign_id!r} ({path} removed)")
        elif args.command == "probes":
            print(views.format_catalog())
        elif args.command == "envs":
            _envs()
        else:
            _analyze(args)
    except OsbenchError as e:
        print(f"osbench {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:   # Ctrl-C: one line (the runner's says what was kept and how to resume)
        print(f"osbench {args.command}: interrupted{': ' + str(e) if str(e) else ''}", file=sys.stderr)
        return 130
    except OSError as e:   # a folder or file the system refuses (N10: an unreadable campaigns folder)
        where = f" {e.filename}" if e.filename else ""
        print(f"osbench {args.command}: error: cannot use{where}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
