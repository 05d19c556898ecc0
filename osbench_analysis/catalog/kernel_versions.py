"""The Linux versions of the kernel-version sweep (issue 39, docs/kernels.md): the one table.

Each line is a version: a name (the environments are linux-tcg-<name> and linux-tcg-<name>-nomitig), the
Debian suite that serves it, the package holding its vmlinuz, that package's version and the sha256 of its
.deb as the suite's Packages index gives them.  Adding a version is one line in `KERNELS`.  Data only:
environments/kernels.py fetches and unpacks them, catalog/guests.py counts their environments among the
guests that count instructions."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from osbench_analysis.paths import ENVS_BUILD_DIR

KERNELS_DIR = ENVS_BUILD_DIR / "guests" / "kernels"


@dataclass(frozen=True)
class Kernel:
    name: str       # the series as environments name it: linux-tcg-<name>
    suite: str      # the Debian suite serving it ("" = this machine's own APT sources)
    package: str    # the package whose files hold the vmlinuz (linux-binary-* since Debian split the image)
    version: str    # the package's Debian version, pinned
    sha256: str     # the .deb's sha256, pinned (the suite's Packages index has it)

    @property
    def folder(self) -> Path:
        """Where `make kernels` unpacks it (build/envs/guests/kernels/<name>/)."""
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

#: on every sweep boot's command line (docs/kernels.md, "The post-boot task"): from 7.1 on, the crypto
#: subsystem's self-tests (testmgr's alg_test_sig: ECDSA and RSA signature checks, in vli_*, ecc_point_* and
#: mpihelp_*) still run in kernel threads when init starts and take 70 % of the CPU for the whole campaign
#: boot; cryptomgr.notests=1 (a parameter of every version's testmgr) skips them.  No probe's path runs them.
SWEEP_ARGS = ("cryptomgr.notests=1",)


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


