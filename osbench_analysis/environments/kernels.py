"""Linux kernel versions as the variable (issue 39): every Linux series Debian serves here, each booted
as the linux-tcg guest (the same initramfs and probes, the same QEMU command line), with its default
mitigations and with ``mitigations=off``.

`KERNELS` (catalog/kernel_versions.py) is the one table: adding a version is one line (a name, the Debian
suite that serves it, the package holding its vmlinuz, that package's version and the sha256 of its .deb,
as the suite's Packages index gives them).  `make kernels` fetches each pinned package (`apt-get download PACKAGE=VERSION` through
a private APT configuration per suite, guest_install.apt_config; the archive's address is read from this
machine's own sources), refuses a .deb whose sha256 is not the pinned one, extracts the vmlinuz and
decompresses its kernel for QEMU's PVH entry.  The environments are `linux-tcg-<name>` and
`linux-tcg-<name>-nomitig` (registered in environments/__init__.py); `--environment all` leaves them out
(`Environment.in_all`): they are measured when named, by `make kernels` (`sweep_environments`).

`NOT_OBTAINED` names the series this archive does not serve, with the reason (checked 2026-11-28)."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from osbench_analysis.catalog.kernel_versions import (KERNELS, KERNELS_DIR, MITIGATION_VARIANTS,  # noqa: F401
                                                       NOT_OBTAINED, Kernel, by_name, env_name,
                                                       sweep_environments)


# ------------------------------------------------------------------ install (make kernels)

def _apt_conf(suite: str) -> Path | None:
    from osbench_analysis.environments import guest_install

    if not suite:
        return None
    return guest_install.apt_config(KERNELS_DIR / f"apt-{suite}", guest_install.archive_uri(), suite)


def _vmlinuz_member(tmp: Path, deb: Path) -> Path:
    """Unpack only the vmlinuz: /boot/vmlinuz-* (older packages) or /usr/lib/modules/*/vmlinuz."""
    from osbench_analysis.environments.guest_install import GuestInstallError, run

    run(["sh", "-c", f"dpkg-deb --fsys-tarfile '{deb}' | tar -x -C '{tmp}' --wildcards --no-anchored "
                     "'boot/vmlinuz-*' 'usr/lib/modules/*/vmlinuz' 2>/dev/null || true"])
    found = sorted(tmp.glob("boot/vmlinuz-*")) + sorted(tmp.glob("usr/lib/modules/*/vmlinuz"))
    if not found:
        raise GuestInstallError(f"{deb.name} holds no boot/vmlinuz-* or usr/lib/modules/*/vmlinuz")
    return found[0]


def install_kernel(k: Kernel, updated: set[str]) -> dict:
    """Fetch and unpack one pinned kernel (kept while its stamp says the same package); its manifest entry."""
    from osbench_analysis.environments import guest_install as gi

    out = k.folder
    stamp = out / "package.json"
    known = json.loads(stamp.read_text()) if stamp.exists() else {}
    if known.get(k.package, {}).get("sha256") != k.sha256 or not (out / "vmlinuz").exists():
        out.mkdir(parents=True, exist_ok=True)
        conf = _apt_conf(k.suite)
        env = {**os.environ, **({"APT_CONFIG": str(conf)} if conf else {})}
        if k.suite not in updated:
            gi.run(["apt-get", "-q", "update"], env=env)
            updated.add(k.suite)
        with tempfile.TemporaryDirectory(prefix="osbench-kernel-") as tmp:
            gi.run(["apt-get", "download", f"{k.package}={k.version}"], env=env, cwd=Path(tmp))
            deb = next(Path(tmp).glob("*.deb"))
            got = gi.sha256(deb)
            if got != k.sha256:
                raise gi.GuestInstallError(f"{deb.name}: sha256 {got}, the table pins {k.sha256}")
            shutil.copyfile(_vmlinuz_member(Path(tmp), deb), out / "vmlinuz")
            known = {k.package: {"version": k.version, "deb": deb.name, "sha256": got, "suite": k.suite or "(host)",
                                 "vmlinuz_sha256": gi.sha256(out / "vmlinuz")}}
        (out / "vmlinux").unlink(missing_ok=True)
        stamp.write_text(json.dumps(known, indent=1))
    if not (out / "vmlinux").exists():
        gi.extract_vmlinux(out / "vmlinuz", out / "vmlinux")
    return known


def install(names: list[str] | None = None, boot: bool = True) -> dict[str, str]:
    """`make kernels`: every version of the table (or those named), recorded in the guests' manifest, then
    each booted once (one at a time); step -> why it failed (empty: all fine).  The initramfs is
    linux-tcg's: `make envs` builds it."""
    from osbench_analysis.environments import guest_install as gi, linux_tcg, qemu

    problems: dict[str, str] = {}
    if not linux_tcg.INITRAMFS.exists():
        return {"initramfs": f"{linux_tcg.INITRAMFS} missing: run make envs first"}
    ks = [by_name(n) for n in names] if names else list(KERNELS)
    updated: set[str] = set()
    done = []
    for k in ks:
        try:
            got = install_kernel(k, updated)
        except (gi.GuestInstallError, OSError, StopIteration) as e:
            problems[f"linux {k.name}"] = str(e) or type(e).__name__
            continue
        record = qemu.manifest()
        entry = {**got, "initramfs": {"sha256": gi.sha256(linux_tcg.INITRAMFS)}}
        for v in MITIGATION_VARIANTS:
            record[env_name(k, v)] = entry
        qemu.MANIFEST.write_text(json.dumps(record, indent=1, sort_keys=True))
        done.append(k)
    for k in done if boot else ():
        for v in MITIGATION_VARIANTS:
            why = gi.smoke(env_name(k, v))
            if why:
                problems[f"linux {k.name}{v} boot"] = why
    return problems


def main(argv: list[str] | None = None) -> int:
    import argparse
    import time

    ap = argparse.ArgumentParser(description="fetch, unpack and boot the Linux versions of the sweep")
    ap.add_argument("names", nargs="*", help="versions of the table (default: all)")
    ap.add_argument("--no-boot", action="store_true", help="do not boot each once")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    problems = install(args.names or None, boot=not args.no_boot)
    for k in [by_name(n) for n in args.names] if args.names else KERNELS:
        bad = {s: w for s, w in problems.items() if s.startswith(f"linux {k.name}")}
        line = "; ".join(f"{s}: {w}" for s, w in bad.items()) if bad else f"ready ({k.package} {k.version})"
        print(f"{env_name(k):>18}  {line}", flush=True)
    for series, why in NOT_OBTAINED.items():
        print(f"{'not obtained':>18}  {series}: {why}")
    for step, why in problems.items():
        if not step.startswith("linux "):
            print(f"{step}: {why}")
    print(f"kernels: {time.monotonic() - t0:.0f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
