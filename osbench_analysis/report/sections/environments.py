"""The kernel environments measured (environments.tex, Table tab:environments): design, kernel as seen
inside, the file probes' folder, version, and a hosted kernel's own release; the appendix's host and
environments in detail (setup_detail.tex): the host's identity, the root and work folder each sandbox mounts
and which sandboxes ran their file probes in two folders."""
from __future__ import annotations

from osbench_analysis.catalog.families import print_design
from osbench_analysis.formatting import tex_escape
from osbench_analysis.report.estimand import environment_file_systems, environment_folders
from osbench_analysis.report.sections.common import _table


def short_version(version: str) -> str:
    """A Go pseudo-version (runsc: v0.0.0-20260905035102-160fafc42237) as its
    date and commit, 'release 2026-09-05 (160fafc)'; anything else unchanged."""
    import re

    m = re.fullmatch(r"v0\.0\.0-(\d{4})(\d{2})(\d{2})\d{6}-([0-9a-f]{7})[0-9a-f]*", version)
    return f"release {m[1]}-{m[2]}-{m[3]} ({m[4]})" if m else version


def environments_tex(result) -> str:
    """The body's sentences on the environments: the same binaries everywhere, and every environment whose
    kernel release differs from the host's (their table is the appendix's, setup_detail_tex)."""
    return _environments(result)[1]


def _environments(result) -> tuple[str, str]:
    """(the table of the environments measured: design, kernel as seen inside, the file system the file probes
    used, version; the body's sentences)."""
    from osbench_analysis.plots.architectures import env_short

    several_hosts = len(result.hosts) > 1
    fs = environment_folders(result.primary_estimates)
    rows, kernels = [], {}
    for cid in result.primary_ids:
        mf = result.manifests[cid]
        facts = mf.environment_facts or {}
        kernel = facts.get("kernel_release") or mf.host.get("kernel_release", "")
        kernels[mf.environment] = (str(kernel), str(mf.host.get("kernel_release", "")), mf.arch_class)
        info = mf.environment_info or {}
        version = short_version(str(info.get("version") or info.get("runsc_version") or info.get("package_version")
                                    or info.get("libfuse_version") or "--"))
        if info.get("platform"):
            version = f"{version}, {info['platform']}"
        if "directfs" in info:         # what tells gVisor from gVisor (gofer): who opens the volume's files
            version = f"{version}, {'directfs' if info['directfs'] else 'files via the gofer'}"
        if info.get("cache"):
            version = f"{version}, cache={info['cache']}"
        rows.append(f"{tex_escape(env_short(mf.environment))} & {tex_escape(print_design(mf.arch_class))} & {tex_escape(str(kernel))} & "
                    f"{tex_escape(fs.get(mf.environment, '--'))} & {tex_escape(str(version))}"
                    + (f" & {tex_escape(mf.host_identity.label.replace(' · ', ', '))}" if several_hosts else "") + " \\\\")
    head = "Environment & Design & Kernel inside & File probes' folder & Version" + (" & Host" if several_hosts else "")
    # names and kernel releases never break; the folder and the version wrap in their own widths
    table = _table("lll>{\\raggedright\\arraybackslash}p{0.2\\linewidth}>{\\raggedright\\arraybackslash}p{0.21\\linewidth}"
                   + ("l" if several_hosts else ""), head, rows,
                   "Kernel environments measured, as the worker recorded them inside each (folder: the file system "
                   "of the file probes' folder; for a sandbox measured on two, the host-backed volume and the guest "
                   "kernel's own tmpfs).", "tab:environments", size=r"\scriptsize")
    hosted = [(env, k) for env, k in kernels.items() if k[2] == "hosted-kernel" and k[0] and k[0] != k[1]]
    text = ""
    if _mounts(result):
        text += ("The probes, the worker and the C library are the host's own files in every environment: each sandbox "
                 "mounts the host's root file system read-only (Appendix~\\ref{sec:setup} gives each one's mounts and "
                 "folders).\n")
    if hosted:
        text += ("A hosted kernel brings its own release: "
                + "; ".join(f"{tex_escape(env_short(env))} serves its probes with Linux {tex_escape(k[0])} on a "
                            f"{tex_escape(k[1])} host" for env, k in hosted)
                + ". Its factors measure the hosted design together with another kernel's implementation of each "
                "primitive, and a primitive's cost can change between Linux releases by itself "
                "(LEBench~\\citep{ren2019lebench}).\n")
    return table, text


def setup_detail_tex(result) -> str:
    """The appendix's host and environments in detail: the environments' table (Table tab:environments), the
    host's identity (macro osbHostIdentity), the baseline campaign's measuring time, the mounts of every sandbox
    and the folders of their file probes."""
    return (_environments(result)[0]
            + "The paper's host: \\osbHostIdentity.  Measuring its baseline campaign took \\osbMeasuringSeconds~s.\n\n"
            + _same_binaries_sentence(result) + _two_folders_sentence(result))


def _two_folders_sentence(result) -> str:
    """Which sandboxes ran their file probes in two folders (registry.WORKDIR_FS), from the conditions measured."""
    from osbench_analysis.plots.architectures import env_short
    from osbench_analysis.catalog.registry import WORKDIR_FS

    est = result.primary_estimates
    both = [e for e in dict.fromkeys(est["environment"])
            if est.loc[est["environment"] == e, "variant"].fillna("").str.contains(f"{WORKDIR_FS}=", regex=False).any()]
    if not both:
        return ""
    host = environment_file_systems(est, guest=False)
    base = host.get(result.settings.baseline)
    return (f"Inside {', '.join(tex_escape(env_short(e)) for e in both)} every file probe ran in two folders: on the "
            "host-backed volume (" + ", ".join(dict.fromkeys(tex_escape(host[e]) for e in both if e in host))
            + "), the crossing to the host that the tables compare with native Linux"
            + (f"'s {tex_escape(base)}" if base else "") + ", and on a tmpfs the guest kernel serves itself, which "
            "leaves the host out (Table~\\ref{tab:environments}).\n")


def _mounts(result) -> dict[tuple[str, str], list[str]]:
    """(root mount, work folder mount) -> the sandboxes that mount them, as their manifests record them."""
    from osbench_analysis.plots.architectures import env_short

    mounts: dict[tuple[str, str], list[str]] = {}
    for cid in result.primary_ids:
        mf = result.manifests[cid]
        info = mf.environment_info or {}
        if info.get("root_mount"):
            mounts.setdefault((str(info["root_mount"]), str(info.get("workdir_mount", ""))), []).append(
                env_short(mf.environment))
    return mounts


def _same_binaries_sentence(result) -> str:
    """How every environment runs the same probe binaries and C library: the root and work folder each
    sandbox mounts, as its manifest records them (environment_info)."""
    mounts = _mounts(result)
    if not mounts:
        return ""
    parts = [f"{', '.join(tex_escape(e) for e in envs)}: root {tex_escape(root)}"
             + (f"; probes' folder: {tex_escape(work)}" if work else "") for (root, work), envs in mounts.items()]
    return ("The probes, the worker and the C library are the host's own files in every environment, because each "
            "sandbox mounts the host's root file system read-only (" + ". ".join(parts) + "); the FUSE environments "
            "run natively with only the probes' folder served by the FUSE server.\n")
