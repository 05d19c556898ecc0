"""Linux kernel versions as the variable (issue 39): every Linux series Debian serves here, each booted
as the linux-tcg guest (the same initramfs and probes, the same QEMU command line), with its default
mitigations and with ``mitigations=off``.

`KERNELS` is the one table: adding a version is one line (a name, the Debian suite that serves it, the
package holding its vmlinuz, that package's version and the sha256 of its .deb, as the suite's Packages
index gives them).  `make kernels` fetches each pinned package (`apt-get download PACKAGE=VERSION` through
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
from dataclasses import dataclass
from pathlib import Path

from osbench_analysis.environments.qemu import GUESTS_DIR

KERNELS_DIR = GUESTS_DIR / "kernels"


@dataclass(frozen=True)
class Kernel:
    name: str       # the series as environments name it: linux-tcg-<name>
    suite: str      # the Debian suite serving it ("" = this machine's own APT sources)
    package: str    # the package whose files hold the vmlinuz (linux-binary-* since Debian split the image)
    version: str    # the package's Debian version, pinned
    sha256: str     # the .deb's sha256, pinned (the suite's Packages index has it)

    @property
    def folder(self) -> Path:
        return KERNELS_DIR / self.name

    @property
    def release(self) -> str:
        """The upstream release, e.g. 6.12.117 (from the package version)."""
        return self.version.split("-", 1)[0]

    def sort_key(self) -> tuple:
        return tuple(int(x) for x in self.release.split(".")[:3] if x.isdigit())


#: oldest first; the generic amd64 flavour of each series' newest version in the suite that serves it
KERNELS = (
    Kernel("5.10", "bullseye", "linux-image-5.10.0-32-amd64", "5.10.223-1",
           "86a6792f3a03ab15a643f385830cdaa921f15e3e9c8bf63aa55a9243c62fc797"),
    Kernel("6.1", "", "linux-image-6.1.0-56-amd64", "6.1.192-2",   # today's linux-tcg guest (bookworm)
           "a86e2049672f52354c4536a089203b6c82639420424d31c91cf31a181fd4d8f1"),
    Kernel("6.12", "trixie", "linux-image-6.12.117+deb13-amd64", "6.12.117-1",
           "ca712d36790184f6ac125ce2b20ea4e2202ae6bb7817b7de268f1f0115ccda73"),
    Kernel("6.16", "trixie-backports", "linux-image-6.16.12+deb13-amd64", "6.16.12-1~bpo13+1",
           "a54583c502202b9ec1709d6dc952870cd32eb92b29a32756f0fd240b514ed1f2"),
    Kernel("6.17", "trixie-backports", "linux-image-6.17.13+deb13-amd64", "6.17.13-1~bpo13+1",
           "4c0643e5db69d9248f4139ec0c765671a2585aa53fc498dcc49b102fd5766696"),
    Kernel("6.18", "trixie-backports", "linux-image-6.18.15+deb13-amd64", "6.18.15-1~bpo13+1",
           "d38a7af6260782a47cd615ad717347a528b45f076245b4deabb3f1ecf8459186"),
    Kernel("6.19", "trixie-backports", "linux-binary-6.19.14+deb13-amd64", "6.19.14-1~bpo13+1",
           "64a48046a3fa5f894a5a40dc36f2e42a67a7193e2266e43c09143a769aeab8e3"),
    Kernel("7.0", "trixie-backports", "linux-binary-7.0.13+deb13-amd64", "7.0.13-1~bpo13+1",
           "108e1c0e8e36a5cb13d62fc3f03c05f23448b7801657553c6e9880591c4f97d3"),
    Kernel("7.1", "trixie-backports", "linux-binary-7.1.13+deb13-amd64", "7.1.13-1~bpo13+1",
           "454df41f72dbc25c02c7941055d1c8d2a0deb891b8d962241423e8ca4ab81d1e"),
    Kernel("7.2", "sid", "linux-binary-7.2.13+deb14-amd64", "7.2.13-1",
           "fb8cd0ade4ef82d9dde1dcf183d4bf4033db1b549b0acc9973855ad9cc48c4f5"),
    Kernel("7.3", "trixie-backports", "linux-binary-7.3.4+deb13-amd64", "7.3.4-1~bpo13+1",
           "7e3248d03a84dcdda88c567aa8c4038f2e7795d2dd167b112c56f8901b6f513f"),
)

#: series not in the sweep and why (what this machine's archive serves, checked 2026-11-28)
NOT_OBTAINED = {
    "4.19 and older (buster, stretch)": "the archive has no Release file for buster, stretch or "
                                        "buster-backports (archived suites are not served)",
    "5.11-5.19": "no suite serves them (bullseye-backports has no kernel; bookworm starts at 6.1)",
    "6.2-6.11": "no suite serves them (bookworm-backports carries 6.12 only)",
    "6.13-6.15": "no suite serves them (trixie-backports starts at 6.16)",
    "7.3-rc7 (experimental)": "older than 7.3.4, which trixie-backports serves",
    "cloud and rt flavours": "served for every series above; not in the sweep (one line each would add "
                             "them: another name, the -cloud-/-rt- package)",
}

MITIGATION_VARIANTS = {"": (), "-nomitig": ("mitigations=off",)}


def by_name(name: str) -> Kernel:
    for k in KERNELS:
        if k.name == name:
            return k
    from osbench_analysis.errors import ConfigError

    raise ConfigError(f"no kernel version {name!r} in the table (known: {', '.join(k.name for k in KERNELS)})")


def env_name(kernel: Kernel | str, variant: str = "") -> str:
    return f"linux-tcg-{kernel if isinstance(kernel, str) else kernel.name}{variant}"


def sweep_environments(names: list[str] | None = None) -> list[str]:
    """The environments of the version sweep (both mitigation settings of each version), oldest first."""
    ks = [by_name(n) for n in names] if names else list(KERNELS)
    return [env_name(k, v) for k in ks for v in MITIGATION_VARIANTS]


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
