"""Install or build what each kernel environment needs, idempotently, into
the project-local, git-ignored build/envs/ (`make envs`):

- as root, Debian packages: user-mode-linux, fuse3, libfuse3-dev, linux-perf, strace (only those missing);
- runsc, built with `go install` at the pinned pseudo-version (CGO_ENABLED=0:
  a cgo build fails inside the sandbox after pivot_root, where the ELF
  interpreter is missing), with a module and build cache in a temporary
  folder deleted afterwards (~600 MB);
- the C helpers in probes/environments/ (FUSE server, UML XSAVE shim);
- the emulated-CPU guests, GNU Mach (from Debian trixie, through a private APT
  configuration) and Linux, with QEMU and GRUB from this release (guest_install.py).

runsc's build (Go, CPU-bound) runs beside the rest (apt downloads and dpkg,
then the C helpers and the guests).  The steps "packages" and "runsc" import
only the standard library: `make setup` runs them with the system's Python
beside the virtualenv's pip install (`--only packages`, `--only runsc`), then
"local" (the guests' build needs the virtualenv's cffi) once both packages
and virtualenv are in, then the report.

Prints one line per environment: ready, or not available and why.

    python -m osbench_analysis.environments.install [--no-apt] [--no-go] [--strict] [--also PKG ...]
                                                    [--only STEP ...] [--report]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from osbench_analysis import environments
from osbench_analysis.environments import fuse, guest_install, gvisor, hostops, sel4_install, uml, xen_linux
from osbench_analysis.paths import PROBES_DIR

DEB_PACKAGES = {"user-mode-linux": "/usr/bin/linux.uml", "fuse3": "/usr/bin/fusermount3",
                "libfuse3-dev": "/usr/include/fuse3/fuse.h", "pkg-config": "/usr/bin/pkg-config",
                "linux-perf": "/usr/bin/perf",   # measure/counting.py: host events per guest operation
                "strace": "/usr/bin/strace",     # measure/syscall_mix.py: the workloads' system calls by name
                "openssh-server": "/usr/sbin/sshd",  # tests/test_fleet.py: Dask's SSHCluster against sshd on 127.0.0.1
                **guest_install.HOST_PACKAGES,
                # xen-linux: the hypervisor (it depends on nothing; it only puts xen-4.17-amd64.gz in /boot)
                xen_linux.XEN_PACKAGE: str(xen_linux.XEN)}
SOURCES = PROBES_DIR / "environments"
CFLAGS = ["-O2", "-Wall", "-Wextra"]


def say(msg: str) -> None:
    print(msg, flush=True)


def apt_install(missing: list[str]) -> str:
    """'' on success, else why not."""
    if os.geteuid() != 0:
        return f"not root: install {' '.join(missing)} with apt-get as root"
    if not hostops.which("apt-get"):
        return f"no apt-get: install {' '.join(missing)} with this system's package manager"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"],
                 ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
        r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if r.returncode != 0:
            return f"`{' '.join(argv)}` failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}"
    return ""


def find_go() -> str | None:
    return shutil.which("go") or next((g for g in ("/usr/local/go/bin/go", "/usr/lib/go/bin/go")
                                       if os.access(g, os.X_OK)), None)


def build_runsc() -> str:
    """'' when runsc at the pinned version is in place (built now or before), else why not."""
    if os.access(gvisor.RUNSC, os.X_OK) and gvisor.runsc_version_built() == gvisor.RUNSC_VERSION:
        return ""
    go = find_go()
    if go is None:
        return "no Go toolchain to build runsc (install Go >= 1.24: https://go.dev/dl, or apt-get install golang)"
    hostops.BIN.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="osbench-go-"))
    env = {**os.environ, "CGO_ENABLED": "0", "GOBIN": str(hostops.BIN), "GOMODCACHE": str(tmp / "mod"),
           "GOCACHE": str(tmp / "cache"), "GOPATH": str(tmp / "gopath"),
           "GOFLAGS": "-modcacherw"}
    say(f"building runsc {gvisor.RUNSC_VERSION} with {go} (about 2 minutes on 2 cores) ...")
    t0 = time.monotonic()
    try:
        # niced: it runs beside pip, apt and the guests' build (make setup), which then finish first and
        # leave it both CPUs, instead of all of them sharing the CPUs to the end
        nice = ["nice", "-n", "10"] if shutil.which("nice") else []
        r = subprocess.run([*nice, go, "install", "-ldflags=-s -w", f"{gvisor.RUNSC_MODULE}@{gvisor.RUNSC_VERSION}"],
                           env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
        return f"go install of runsc failed: {tail}"
    gvisor.VERSION_STAMP.write_text(gvisor.RUNSC_VERSION + "\n")
    say(f"built runsc in {time.monotonic() - t0:.0f} s")
    return ""


def compile_c(source: Path, target: Path, extra: list[str], shared: bool = False) -> str:
    """'' when target is newer than source (or was built now), else the compiler's complaint."""
    if target.exists() and target.stat().st_mtime >= source.stat().st_mtime:
        return ""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return "no C compiler (apt-get install gcc)"
    hostops.BIN.mkdir(parents=True, exist_ok=True)
    argv = [cc, *CFLAGS, *(["-shared", "-fPIC"] if shared else []), "-o", str(target), str(source), *extra]
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        target.unlink(missing_ok=True)
        return f"compiling {source.name} failed: {' | '.join(r.stderr.strip().splitlines()[-3:])}"
    return ""


def fuse_flags() -> list[str] | None:
    try:
        r = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True, text=True)
    except OSError:
        return None
    return r.stdout.split() if r.returncode == 0 else None


def not_installed(packages: list[str]) -> list[str]:
    """Those of `packages` dpkg does not have installed (all of them where there is no dpkg)."""
    if not packages or not hostops.which("dpkg-query"):
        return list(packages)
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Abbrev}\\n", *packages],
                       capture_output=True, text=True)
    ok = {line.split()[0] for line in r.stdout.splitlines() if line.split()[1:2] == ["ii"]}
    return [p for p in packages if p not in ok]


#: the steps, in order: Debian packages (standard library only), runsc (standard library and Go),
#: and what is built here from the packages (the C helpers, the guests: the virtualenv's cffi too)
STEPS = ("packages", "runsc", "local")


def install(apt: bool = True, go: bool = True, also: list[str] = (), only: tuple[str, ...] = STEPS,
            boot: bool = True) -> dict[str, str]:
    """Run the steps in `only`, runsc's build beside the others; returns step -> '' (fine) or
    why it failed.  `also`: more Debian packages for the same apt-get (the paper's TeX, from the
    Makefile).  boot=False: the guests are built but not booted once to check them (`make all`: the
    campaign's pre-flight boots each of them at once, and says why one that fails is left out)."""
    problems: dict[str, str] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="runsc") as pool:
        runsc = pool.submit(build_runsc) if go and "runsc" in only else None
        if "packages" in only:
            missing = [p for p, path in DEB_PACKAGES.items() if not os.path.exists(path)] + not_installed(list(also))
            if missing:
                problems["packages"] = apt_install(missing) if apt else f"missing packages {missing} (--no-apt given)"
        if "local" in only:
            problems.update(_build_local(boot))
        if runsc is not None:
            problems["runsc"] = runsc.result()
    return {k: v for k, v in problems.items() if v}


def _build_local(boot: bool = True) -> dict[str, str]:
    """The C helpers and the guests (after the packages they build with), each guest booted once unless
    boot=False."""
    problems: dict[str, str] = {}
    problems["uml shim"] = compile_c(SOURCES / "uml_xsave_shim.c", uml.XSAVE_SHIM, ["-ldl", "-lpthread"],
                                     shared=True)
    flags = fuse_flags()
    problems["fuse server"] = ("libfuse3 development files missing (apt-get install libfuse3-dev pkg-config)"
                               if flags is None else compile_c(SOURCES / "fuse_passthrough.c", fuse.SERVER, flags))
    t0 = time.monotonic()
    problems.update(guest_install.install(sel4_build=sel4_install.install, boot=boot))
    say(f"guests (mach, linux-tcg, sel4, xen-linux) fetched, built{' and booted' if boot else ''} in "
        f"{time.monotonic() - t0:.0f} s")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-apt", action="store_true", help="do not install Debian packages")
    ap.add_argument("--no-go", action="store_true", help="do not build runsc")
    ap.add_argument("--strict", action="store_true", help="exit 1 when an environment is not available")
    ap.add_argument("--also", nargs="*", default=[], metavar="PKG",
                    help="more Debian packages for the same apt-get, where missing (make: the paper's TeX)")
    ap.add_argument("--only", nargs="+", choices=STEPS, default=None,
                    help="run only these steps, without the report (make setup runs them side by side)")
    ap.add_argument("--report", action="store_true", help="print the report; alone: only the report")
    ap.add_argument("--no-boot", action="store_true",
                    help="build the guests without booting each once (make all: its pre-flight boots them)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    steps = tuple(args.only) if args.only else () if args.report else STEPS
    failed = install(apt=not args.no_apt, go=not args.no_go, also=args.also, only=steps,
                     boot=not args.no_boot) if steps else {}
    for step, why in failed.items():
        say(f"{step}: {why}")
    if args.only and not args.report:
        return 1 if args.strict and failed else 0
    width = max(len(env.name) for env in environments.REGISTRY)
    ready = []
    sweep = [env for env in environments.REGISTRY if not env.in_all]
    for env in environments.REGISTRY:
        if not env.in_all:   # the kernel-version sweep's guests: `make kernels`, one line for all below
            continue
        ok = env.availability()
        ready.append(bool(ok))
        say(f"{env.name:<{width}}  ready: {ok.reason}" if ok else
            f"{env.name:<{width}}  not available: {ok.reason}" + (f" (install: {ok.install_hint})"
                                                                 if ok.install_hint else ""))
    if sweep:
        built = sum(bool(env.availability()) for env in sweep)
        say(f"{'linux-tcg-<version>':<{width}}  kernel-version sweep: {built} of {len(sweep)} built "
            "(make kernels fetches, measures and profiles them; docs/kernels.md)")
    say(f"environments set up in {time.monotonic() - t0:.1f} s")
    return 1 if args.strict and not all(ready) else 0


if __name__ == "__main__":
    sys.exit(main())
