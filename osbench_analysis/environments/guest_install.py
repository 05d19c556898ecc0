"""`make envs` for the emulated-CPU guests (mach, linux-tcg, xen-linux) from Debian, and seL4
(sel4_install.py) from crates.io and PyPI.

- GNU Mach: bookworm's kernel cannot run any user trap (its 64-bit syscall
  entry starts with `ud2`), so the kernel, its headers and MIG come from
  Debian trixie (`TRIXIE_PACKAGES`) through a private APT configuration under
  build/ (`apt_config`): the system's APT sources are never touched, and the
  archive's address is read from the machine's own sources (`archive_uri`),
  so no host name is written in this repository.  The archive serves only
  the current version of each package: the current one is taken and its
  version and sha256 recorded in the manifest (qemu.MANIFEST), which every
  campaign's facts carry.  The .debs are only unpacked (dpkg-deb -x).
- The bootstrap task (probes/mach/): MIG stubs generated now, then a
  freestanding static ELF64.
- Linux: the machine's release's linux-image-*-amd64 (what linux-image-amd64
  depends on), vmlinuz extracted, not installed, and its kernel ELF decompressed
  for QEMU's PVH entry (extract_vmlinux); osbench-guest-init
  (probes/guest/) linked statically with the harness and probes; the
  initramfs written by qemu.newc.

Every step is idempotent: a built file is kept while its inputs are unchanged."""
from __future__ import annotations

import glob
import gzip
import hashlib
import json
import lzma
import struct
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from pathlib import Path

from osbench_analysis.environments import linux_tcg, mach, memevents, qemu
from osbench_analysis.paths import PROBES_DIR

#: host tools from the machine's own release: package -> a file it installs
HOST_PACKAGES = {"qemu-system-x86": "/usr/bin/qemu-system-x86_64", "grub-pc-bin": "/usr/lib/grub/i386-pc/kernel.img",
                 "grub-common": "/usr/bin/grub-mkrescue", "xorriso": "/usr/bin/xorriso", "mtools": "/usr/bin/mformat",
                 "cpio": "/usr/bin/cpio"}   # cpio: reads our initramfs back (the guest build writes newc itself)
TRIXIE = "trixie"
TRIXIE_PACKAGES = ("gnumach-image-1.8-amd64-up", "gnumach-dev", "mig-x86-64-gnu")
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
APT_DIR = qemu.GUESTS_DIR / "apt-trixie"
MIG_DEFS = ("device/device", "mach/mach", "mach/mach_port")
MACH_CFLAGS = ["-O2", "-ffreestanding", "-nostdlib", "-fno-pie", "-no-pie", "-static", "-fno-stack-protector",
               "-fno-asynchronous-unwind-tables", "-mgeneral-regs-only", "-mno-red-zone", "-Wall",
               "-Wno-unused-function", "-Wl,--build-id=none", "-Wl,-e,_start"]
GUEST_CFLAGS = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-static", "-pthread"]


class GuestInstallError(RuntimeError):
    pass


def run(argv: list[str], env: dict | None = None, cwd: Path | None = None) -> str:
    r = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
        raise GuestInstallError(f"`{' '.join(argv[:4])} ...` failed: {tail}")
    return r.stdout


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ------------------------------------------------------------------ APT

def archive_uri(paths: list[str] | None = None) -> str:
    """The Debian archive this machine's own APT sources use (the first
    non-security `deb` URI, one-line .list or deb822 .sources), '' if none."""
    if paths is None:
        paths = ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list")),
                 *sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))]
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        if path.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
                if "deb" not in fields.get("Types", "").split() or fields.get("Enabled", "yes") == "no":
                    continue
                for uri in fields.get("URIs", "").split():
                    if "security" not in uri and "debian" in uri:
                        return uri.rstrip("/")
        else:
            for line in text.splitlines():
                words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
                if len(words) >= 3 and words[0] == "deb" and "security" not in words[1] and "debian" in words[1]:
                    return words[1].rstrip("/")
    return ""


def apt_config(root: Path, uri: str, suite: str = TRIXIE) -> Path:
    """A private APT configuration under `root` reading `suite` from `uri`: its
    own sources, lists and cache, no system source parts; returns apt.conf
    (use it with APT_CONFIG=...).  Nothing under /etc/apt changes."""
    if not uri:
        raise GuestInstallError("no Debian archive found in /etc/apt/sources.list or sources.list.d/ "
                                "(a `deb` line or a deb822 .sources stanza): cannot fetch GNU Mach from trixie")
    for sub in ("lists/partial", "cache/archives/partial"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "sources.list").write_text(f"deb [signed-by={KEYRING}] {uri} {suite} main\n")
    conf = root / "apt.conf"
    conf.write_text("\n".join([
        f'Dir::Etc::SourceList "{root / "sources.list"}";',
        'Dir::Etc::SourceParts "/dev/null";',
        f'Dir::State::Lists "{root / "lists"}";',
        f'Dir::Cache::Archives "{root / "cache" / "archives"}";',
        'Dir::State::status "/dev/null";',
        'APT::Architecture "amd64";',
        "",
    ]))
    return conf


def download(packages: list[str], into: Path, apt_conf: Path | None = None) -> dict[str, dict]:
    """`apt-get download` of each package's current version into `into`:
    package -> {version, deb, sha256}."""
    env = {**os.environ, **({"APT_CONFIG": str(apt_conf)} if apt_conf else {})}
    into.mkdir(parents=True, exist_ok=True)
    for old in into.glob("*.deb"):
        old.unlink()
    run(["apt-get", "download", *packages], env=env, cwd=into)
    found = {}
    for deb in into.glob("*.deb"):
        name = run(["dpkg-deb", "-f", str(deb), "Package"]).strip()
        found[name] = {"version": run(["dpkg-deb", "-f", str(deb), "Version"]).strip(), "deb": deb.name,
                       "sha256": sha256(deb)}
    missing = set(packages) - set(found)
    if missing:
        raise GuestInstallError(f"apt-get download gave no {sorted(missing)}")
    return found


# ------------------------------------------------------------------ GNU Mach

def _kept(stamp: Path, key: str, *outputs: Path) -> bool:
    """Whether every output exists and was built from the inputs `key` names (the stamp beside them)."""
    try:
        return stamp.read_text() == key and all(p.exists() for p in outputs)
    except OSError:
        return False


def _inputs_key(*parts: object, files: list[Path] = ()) -> str:
    """One hash of the settings and the files' names and bytes a build step reads."""
    h = hashlib.sha256(repr(parts).encode())
    for f in sorted(files):
        h.update(str(f.relative_to(PROBES_DIR)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def install_mach() -> dict:
    """trixie's GNU Mach, kept once fetched (the manifest's record; delete build/envs/guests/mach to take
    the archive's current one), and the task, built again when its sources or flags change."""
    out = mach.KERNEL.parent
    out.mkdir(parents=True, exist_ok=True)
    tree = out / "trixie"
    packages = {k: v for k, v in qemu.manifest().get("mach", {}).items() if k != "task"}
    fetched = (set(TRIXIE_PACKAGES) <= set(packages) and mach.KERNEL.exists() and any(tree.glob("usr/bin/*-mig"))
               and packages.get("kernel", {}).get("sha256") == sha256(mach.KERNEL))
    if not fetched:
        conf = apt_config(APT_DIR, archive_uri())
        run(["apt-get", "-q", "update"], env={**os.environ, "APT_CONFIG": str(conf)})
        debs = out / "debs"
        packages = download(list(TRIXIE_PACKAGES), debs, conf)
        shutil.rmtree(tree, ignore_errors=True)
        for info in packages.values():
            run(["dpkg-deb", "-x", str(debs / info["deb"]), str(tree)])
        image = next(tree.glob("boot/gnumach*.gz"))
        mach.KERNEL.write_bytes(gzip.decompress(image.read_bytes()))
        packages["kernel"] = {"file": image.name, "sha256": sha256(mach.KERNEL)}
        shutil.rmtree(debs, ignore_errors=True)
    stamp = out / "task.inputs"
    key = _inputs_key(MACH_CFLAGS, MIG_DEFS, packages["kernel"]["sha256"],
                      files=[p for p in (PROBES_DIR / "mach").rglob("*") if p.is_file()])
    if not (fetched and _kept(stamp, key, mach.TASK)):
        stamp.unlink(missing_ok=True)
        build_mach_task(tree, out)
        stamp.write_text(key)
    packages["task"] = {"sha256": sha256(mach.TASK)}
    return packages


def build_mach_task(tree: Path, out: Path) -> None:
    """MIG stubs for the device, task/thread and port interfaces, then the task."""
    inc = tree / "usr/include/x86_64-linux-gnu"
    mig = next(tree.glob("usr/bin/*-mig"))
    gen = out / "mig"
    gen.mkdir(exist_ok=True)

    # MIG is a shell script that evals its paths unquoted: it runs from `out` with relative paths,
    # so a checkout whose path has a space builds too
    def rel(p: Path) -> str:
        return os.path.relpath(p, out)

    env = {**os.environ, "CC": "gcc", "MIGDIR": rel(tree / "usr/lib/mig")}
    stubs = []
    for d in MIG_DEFS:
        b = d.rsplit("/", 1)[1]
        run([f"./{rel(mig)}", "-nostdinc", f"-I{rel(inc)}", "-server", "/dev/null", "-user", rel(gen / f"{b}User.c"),
             "-header", rel(gen / f"{b}.h"), rel(inc / f"{d}.defs")], env=env, cwd=out)
        stubs.append(str(gen / f"{b}User.c"))
    src = PROBES_DIR / "mach"
    run(["gcc", *MACH_CFLAGS, "-isystem", str(src / "include"), "-isystem", str(inc), f"-I{gen}",
         "-o", str(mach.TASK), str(src / "start.S"), str(src / "task.c"), *stubs])


# ------------------------------------------------------------------ Linux

def linux_image_package() -> str:
    """The versioned kernel package linux-image-amd64 depends on in this machine's release."""
    text = run(["apt-cache", "depends", "linux-image-amd64"])
    m = re.search(r"Depends:\s*(linux-image-[0-9][^\s]*-amd64)", text)
    if not m:
        raise GuestInstallError("apt-cache depends linux-image-amd64 names no linux-image-*-amd64 "
                                "(run apt-get update as root)")
    return m.group(1)


def install_linux() -> dict:
    out = linux_tcg.VMLINUZ.parent
    out.mkdir(parents=True, exist_ok=True)
    name = linux_image_package()
    stamp = out / "package.json"
    known = json.loads(stamp.read_text()) if stamp.exists() else {}
    if name not in known or not linux_tcg.VMLINUZ.exists():
        linux_tcg.VMLINUX.unlink(missing_ok=True)   # made again from the new vmlinuz below
        with tempfile.TemporaryDirectory(prefix="osbench-linux-image-") as tmp:
            known = download([name], Path(tmp))
            deb = Path(tmp) / known[name]["deb"]
            run(["sh", "-c", f"dpkg-deb --fsys-tarfile '{deb}' | tar -x -C '{tmp}' --wildcards './boot/vmlinuz-*'"])
            shutil.copyfile(next(Path(tmp).glob("boot/vmlinuz-*")), linux_tcg.VMLINUZ)
        known[name]["vmlinuz_sha256"] = sha256(linux_tcg.VMLINUZ)
        stamp.write_text(json.dumps(known, indent=1))
    if not linux_tcg.VMLINUX.exists():
        extract_vmlinux(linux_tcg.VMLINUZ, linux_tcg.VMLINUX)
    build_guest_init(out)
    return {**known, "initramfs": {"sha256": sha256(linux_tcg.INITRAMFS)}}


#: compressed payloads a bzImage may carry (magic -> decompressor); others (zstd, lz4) keep the vmlinuz boot
# (a decompressor object stops at its stream's end: the bytes the bzImage has after it are ignored)
_PAYLOADS = {b"\xfd7zXZ\x00": lambda b: lzma.LZMADecompressor().decompress(b),
             b"\x1f\x8b\x08": lambda b: zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(b),
             b"\x28\xb5\x2f\xfd": lambda b: _unzstd(b)}   # Debian's kernels from 6.12 on


def _unzstd(data: bytes) -> bytes:
    """A zstd stream's first frame through the zstd program (absent: b'', the guest boots the vmlinuz); it
    complains of the bytes the bzImage has after the frame, so its status is not looked at: the ELF and
    its PVH note are checked after."""
    if not shutil.which("zstd"):
        return b""
    return subprocess.run(["zstd", "-dcq"], input=data, capture_output=True).stdout
XEN_ELFNOTE_PHYS32_ENTRY = 18


def has_pvh_entry(elf: bytes) -> bool:
    """Whether an x86-64 ELF kernel carries the Xen PHYS32_ENTRY note QEMU's -kernel enters it by."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return False
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        if p_type != 4:   # PT_NOTE
            continue
        pos, end = p_offset, p_offset + p_filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def extract_vmlinux(vmlinuz: Path, out: Path) -> bool:
    """Decompress a bzImage's kernel into ``out`` when it is an ELF with a PVH entry (Debian's
    are xz); False, writing nothing, when it is not (the guest then boots the vmlinuz)."""
    data = vmlinuz.read_bytes()
    for magic, unpack in _PAYLOADS.items():
        at = data.find(magic)
        while at >= 0:
            try:
                elf = unpack(data[at:])
            except (lzma.LZMAError, zlib.error, OSError, EOFError):
                elf = b""
            if has_pvh_entry(elf):
                tmp = out.with_name(out.name + ".tmp")
                tmp.write_bytes(elf)
                tmp.replace(out)
                return True
            at = data.find(magic, at + 1)
    return False


def build_guest_init(out: Path) -> None:
    """osbench-guest-init: the harness and every campaign probe family, static."""
    import sys

    sys.path.insert(0, str(PROBES_DIR))
    import build_probes

    fams = build_probes.families()
    init = out / "osbench-guest-init"
    stamp = out / "osbench-guest-init.inputs"   # kept while the probes' sources and the flags are unchanged
    key = _inputs_key(GUEST_CFLAGS, fams, build_probes.source_sha256())
    if _kept(stamp, key, init, linux_tcg.INITRAMFS):
        return
    stamp.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="osbench-guest-build-") as tmp:
        table = Path(tmp) / "osb_families.c"
        table.write_text('#include "harness.h"\n' + build_probes.family_table_c(fams))
        run(["gcc", *GUEST_CFLAGS, f"-I{PROBES_DIR}", f'-DOSB_SOURCE_HASH="{build_probes.source_sha256()}"',
             "-o", str(init), str(PROBES_DIR / "guest" / "guest_init.c"), str(PROBES_DIR / "harness.c"),
             *(str(PROBES_DIR / f"probe_{f}.c") for f in fams), str(table)])
    entries = [("dev", 0o040755, b""), ("dev/console", 0o020600, b"", (5, 1)), ("proc", 0o040755, b""),
               ("sys", 0o040755, b""), ("tmp", 0o041777, b""), ("init", 0o100755, init.read_bytes())]
    linux_tcg.INITRAMFS.write_bytes(qemu.gzip_bytes(qemu.newc(entries)))
    stamp.write_text(key)


#: the one tiny job each guest must finish after it is built (its null kernel entry)
SMOKE = {"mach": "mach_null_trap", "linux-tcg": "null_syscall", "linux-tcg-pti": "null_syscall", "sel4": "sel4_poll_ntfn",
         "sel4-slowpath": "sel4_poll_ntfn", "xen-linux": "null_syscall"}


def smoke(env_name: str) -> str:
    """'' when the built guest boots and measures one tiny job, else why not:
    the archive serves only trixie's current GNU Mach, and a newer one may no
    longer run our task (the panic line, or the task's error, says how)."""
    from osbench_analysis import environments
    from osbench_analysis.catalog import registry
    from osbench_analysis.environments import RoundJob
    from osbench_analysis.worker.request import WorkerRequest

    env = environments.get(env_name)
    if not env.availability():
        return env.availability().reason
    probe = SMOKE.get(env_name, "null_syscall")   # the kernel-version sweep's linux-tcg-<version>: as linux-tcg
    req = WorkerRequest(probe, {}, 100_000, 0, 1, registry.PROBES[probe].max_iterations)
    with tempfile.TemporaryDirectory(prefix="osbench-smoke-") as tmp:
        job = RoundJob(req, [], Path(tmp) / "out.jsonl", 300.0)
        with env.session(Path(tmp) / "s") as sess:
            outcome = next(iter(sess.run_round([job], cpus=None)))
    if outcome.status == "ok":
        return ""
    version = env.version()
    return f"{version} was built but does not run {probe}: {outcome.status}: {outcome.message}"


def install_xen() -> dict:
    """Xen comes installed (make envs' Debian packages): its version and the hypervisor's sha256."""
    from osbench_analysis.environments import xen_linux

    version = run(["dpkg-query", "-W", "-f", "${Version}", xen_linux.XEN_PACKAGE]).strip()
    return {xen_linux.XEN_PACKAGE: {"version": version, "file": str(xen_linux.XEN), "sha256": sha256(xen_linux.XEN)}}


def install(sel4_build=None, boot: bool = True) -> dict[str, str]:
    """Fetch and build the guests, then (boot=True) boot each once, two at a time; step ->
    '' or why it failed.  Writes the manifest.  `sel4_build`: seL4's build
    (sel4_install.install, which install.py hands in), run beside the rest."""
    import concurrent.futures

    problems: dict[str, str] = {}
    record = qemu.manifest()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="guests")
    with pool:
        sel4_build = pool.submit(sel4_build or dict)   # its make runs beside the downloads below
        for step, env_name, fn in (("mach guest", "mach", install_mach), ("linux guest", "linux-tcg", install_linux),
                                   ("xen guest", "xen-linux", install_xen)):
            try:
                record[env_name] = fn()
            except (GuestInstallError, OSError, StopIteration) as e:
                problems[step] = str(e) or type(e).__name__
        try:
            record.update(sel4_build.result())
        except (GuestInstallError, OSError, StopIteration) as e:
            problems["sel4 guest"] = str(e) or type(e).__name__
    try:   # the memory-system model every guest loads when a campaign asks (memevents.py)
        memevents.build()
        record["memory-model"] = {"plugin_sha256": sha256(memevents.PLUGIN)}
    except (memevents.MemoryEventsError, OSError) as e:
        problems["memory model"] = str(e)
    record["linux-tcg-nomitig"] = record.get("linux-tcg", {})
    record["linux-tcg-pti"] = record.get("linux-tcg", {})
    qemu.GUESTS_DIR.mkdir(parents=True, exist_ok=True)
    qemu.MANIFEST.write_text(json.dumps(record, indent=1, sort_keys=True))
    built = [("mach guest", "mach"), ("linux guest", "linux-tcg"), ("linux guest", "linux-tcg-pti"),
             ("xen guest", "xen-linux")]
    if "sel4" in record:
        built += [("sel4 guest", "sel4"), ("sel4 guest", "sel4-slowpath")]
    boots = [(f"{step} boot", env) for step, env in built if step not in problems] if boot else []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="smoke") as pool:
        for (step, env), why in zip(boots, pool.map(lambda b: smoke(b[1]), boots)):
            if why:
                problems[f"{step} ({env})"] = why
    return {k: v for k, v in problems.items() if v}
