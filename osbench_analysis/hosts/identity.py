"""Which host measured a campaign: an identity from what determines the numbers (issue #28).

Every VM cloned from one image has the same ``/etc/machine-id`` and hostname, so ``host_id`` (machine.py)
cannot tell an Intel Xeon from an AMD EPYC, and campaigns of both were pooled as one host.  A host here
is what its numbers depend on: the CPU (vendor, model name, family/model/stepping, microcode, the size
of the signal frame that carries the XSAVE area, the features that change a kernel crossing's cost), the
logical CPUs and memory, the kernel release and its mitigations, and the hypervisor.  Two campaigns
are of one host when all of these agree; the machine-id and hostname take no part.

``host_identity(manifest.host)`` reads these from a manifest's ``host`` record.  Manifests of schema
version 3 record every part (``RECORDED_FACTS``, gathered by machine.collect_host_info); older ones get
an identity *derived* from what they hold (the CPU model name, logical CPUs, memory, kernel release,
mitigations, hypervisor; the vendor read off the model name), marked ``derived``: what they lack
(family/model/stepping, microcode, features, signal frame) could not be compared, so its key differs from
that of a recorded host of the same machine.

One machine, one host (issue 37, item 4): ``merges`` compares every derived identity of a set (a campaigns
root) with its recorded ones, and a derived identity whose every fact it has (``COMPARED_FACTS``: the CPU
vendor and model name, logical CPUs, memory, the host kernel build, every mitigation, the hypervisor)
agrees with exactly one recorded identity is that machine (``Merge``: the facts it rests on and those the
older manifest lacks, said wherever the host is listed).  It agreeing with two recorded identities (they
differ only in what it lacks) is no merge, and said; a fact differing, or nothing about the machine
recorded, is another host.  Standard library only: the store's catalog and the analysis both call it.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

#: host facts a schema-3 manifest must hold (machine.HostInfo fields), beside the older ones below
RECORDED_FACTS = ("cpu_vendor", "cpu_family", "cpu_model_number", "cpu_stepping", "microcode", "cpu_flags",
                  "signal_frame_bytes")
#: host facts every manifest holds, from which an older manifest's identity is derived
DERIVABLE_FACTS = ("cpu_model", "cpu_count_logical", "memory_bytes", "kernel_release", "mitigations",
                   "virtualization")
#: CPU features that change what a kernel crossing costs (state saved and restored per signal or
#: context switch, TLB tagging, the kernel's entry path): part of the identity and shown in the label
CROSSING_FEATURES = ("amx_tile", "avx512f", "avx2", "xsaves", "xsavec", "xsaveopt", "xfd", "pcid", "invpcid",
                     "pku", "fsgsbase", "smap", "smep", "ibrs_enhanced", "pti", "md_clear", "flush_l1d")
#: the features the label names (the first one present of each group), in this order
LABEL_FEATURES = (("amx_tile", "AMX"), ("avx512f", "AVX-512"))
VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon", "CentaurHauls": "Centaur"}


@dataclass(frozen=True)
class HostIdentity:
    """``key``: a short stable name (readable prefix, 6 hex digits of the facts' hash), the value of the
    ``host`` column everywhere; ``label``: what a person reads, e.g. 'Intel Xeon (AVX-512) · 2 vCPU ·
    6.18.44-fc-v657'; ``parts``: the facts the key is a hash of (None: not recorded); ``derived``: from
    a manifest older than the recorded identity (schema < 3)."""
    key: str
    label: str
    parts: dict = field(compare=False)
    derived: bool = False


def cpu_vendor_of(model_name: str) -> str:
    """The vendor id as /proc/cpuinfo names it, read off a model name ('' if none is recognised)."""
    low = str(model_name or "").lower()
    for vendor_id, short in VENDORS.items():
        if short.lower() in low:
            return vendor_id
    return ""


def short_cpu_name(model_name: str) -> str:
    """'Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz' -> 'Intel Xeon Platinum 8481C'; 'AMD EPYC' stays."""
    s = re.sub(r"\((R|TM|tm|r)\)", "", str(model_name or ""))
    s = re.sub(r"@.*$", "", s)
    s = re.sub(r"\b(CPU|Processor|\d+-Core)\b", "", s)
    s = re.sub(r"\s+", " ", s).strip()
    return s or "unknown CPU"


def crossing_features(flags) -> list[str]:
    """The CROSSING_FEATURES among a CPU's flags (a list, or /proc/cpuinfo's space-separated string)."""
    have = set(flags.split() if isinstance(flags, str) else flags or ())
    return [f for f in CROSSING_FEATURES if f in have]


def _memory_gib(n) -> int | None:
    try:
        return round(int(n) / 2 ** 30)
    except (TypeError, ValueError):
        return None


def identity_parts(host: dict) -> tuple[dict, bool]:
    """(the facts an identity is a hash of, derived?) from a manifest's ``host`` record."""
    host = host or {}
    derived = any(k not in host for k in RECORDED_FACTS)
    flags = host.get("cpu_flags")
    parts = {
        "cpu_vendor": host.get("cpu_vendor") or cpu_vendor_of(host.get("cpu_model", "")) or None,
        "cpu_model": host.get("cpu_model"),
        "cpu_family": host.get("cpu_family"),
        "cpu_model_number": host.get("cpu_model_number"),
        "cpu_stepping": host.get("cpu_stepping"),
        "microcode": host.get("microcode"),
        "signal_frame_bytes": host.get("signal_frame_bytes"),
        "features": crossing_features(flags) if flags is not None else None,
        "logical_cpus": host.get("cpu_count_logical"),
        "memory_gib": _memory_gib(host.get("memory_bytes")),
        "kernel_release": host.get("kernel_release"),
        "mitigations": dict(sorted((host.get("mitigations") or {}).items())) or None,
        "virtualization": host.get("virtualization"),
    }
    if all(parts[k] is None for k in ("cpu_model", "logical_cpus", "kernel_release")):
        # nothing about the machine recorded (a hand-made manifest): only its host id or name can tell it apart
        parts["host_id"] = host.get("host_id") or host.get("hostname") or "unknown"
    return parts, derived


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:24] or "host"


def host_label(parts: dict, derived: bool = False) -> str:
    """'Intel Xeon (AVX-512) · 2 vCPU · 6.18.44-fc-v657' from identity_parts (``derived`` is not shown:
    HostIdentity.derived and the key say it)."""
    name = short_cpu_name(parts.get("cpu_model") or "")
    vendor = VENDORS.get(parts.get("cpu_vendor") or "", "")
    if vendor and not name.lower().startswith(vendor.lower()):
        name = f"{vendor} {name}"
    feats = parts.get("features")
    if feats:
        shown = [label for flag, label in LABEL_FEATURES if flag in feats][:1]
        name += f" ({shown[0]})" if shown else ""
    virtual = (parts.get("virtualization") or "none") not in ("none", "")
    cpus = parts.get("logical_cpus")
    bits = [name, f"{cpus} {'vCPU' if virtual else 'CPU'}" if cpus else "", str(parts.get("kernel_release") or "")]
    if "host_id" in parts:
        bits.append(str(parts["host_id"]))
    return " · ".join(b for b in bits if b)


def host_identity(host: dict) -> HostIdentity:
    """The identity of the host a manifest's ``host`` record describes (see the module's docstring)."""
    parts, derived = identity_parts(host)
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:6]
    name = short_cpu_name(parts.get("cpu_model") or parts.get("host_id") or "")
    return HostIdentity(f"{_slug(name)}-{digest}", host_label(parts, derived), parts, derived)


#: the facts a derived identity holds and is compared on (identity_parts' names), as a reader names them
COMPARED_FACTS = {"cpu_vendor": "CPU vendor", "cpu_model": "CPU model", "logical_cpus": "logical CPUs",
                  "memory_gib": "memory", "kernel_release": "host kernel build", "mitigations": "mitigations",
                  "virtualization": "hypervisor"}
#: what only a recorded identity holds, as a reader names it (not compared: a derived identity lacks it)
LACKED_FACTS = {"cpu_family": "family/model/stepping", "microcode": "microcode", "features": "CPU features",
                "signal_frame_bytes": "signal frame size"}
#: a derived identity is compared only when it holds at least these (else it says too little to be a machine)
REQUIRED_FACTS = ("cpu_model", "logical_cpus", "kernel_release")


@dataclass(frozen=True)
class Merge:
    """A derived identity treated as a recorded one: ``derived`` (its key) is the machine ``into``
    (a recorded key), every fact of ``facts`` (name -> the value both hold) agreeing; ``lacked``: what the
    older manifest did not record, so not compared."""
    derived: str
    into: str
    facts: dict = field(compare=False)
    lacked: tuple[str, ...] = ()

    def sentence(self) -> str:
        """'amd-epyc-3c69ac (derived) is amd-epyc-a1580e: the same CPU model (AMD EPYC), ... ; not
        recorded by it, so not compared: microcode, ...'."""
        return (f"{self.derived} (derived: its manifests predate the recorded identity facts) is treated as "
                f"{self.into}, every fact it records agreeing: {fact_text(self.facts)}"
                + (f"; not recorded by it, so not compared: {', '.join(self.lacked)}" if self.lacked else ""))


def fact_text(facts: dict) -> str:
    """The agreeing facts as a reader reads them: 'CPU model AMD EPYC, logical CPUs 2, memory 24 GiB, ...,
    mitigations (19, all the same)'."""
    out = []
    for k, v in facts.items():
        name = COMPARED_FACTS.get(k, k)
        if k == "mitigations":
            out.append(f"{name} ({len(v or {})}, each the same)")
        elif k == "memory_gib":
            out.append(f"{name} {v} GiB")
        else:
            out.append(f"{name} {v}")
    return ", ".join(out)


def agreeing_facts(derived: HostIdentity, recorded: HostIdentity) -> dict | None:
    """The facts (name -> value) on which ``derived`` agrees with ``recorded`` when it agrees on every fact
    it holds (COMPARED_FACTS that are not None); None when one differs, when ``derived`` is not derived or
    ``recorded`` is, or when ``derived`` holds too little to name a machine (REQUIRED_FACTS, a host id)."""
    if not derived.derived or recorded.derived or "host_id" in derived.parts:
        return None
    held = {k: derived.parts.get(k) for k in COMPARED_FACTS if derived.parts.get(k) is not None}
    if any(k not in held for k in REQUIRED_FACTS):
        return None
    return held if all(recorded.parts.get(k) == v for k, v in held.items()) else None


def merges(identities) -> tuple[dict[str, Merge], dict[str, str]]:
    """Of a set of identities (a root's campaigns'): derived key -> Merge for every derived identity whose
    facts agree with exactly one recorded identity (agreeing_facts), and derived key -> a sentence for each
    that agrees with several (they differ only in what it lacks: kept apart, never guessed)."""
    unique = {i.key: i for i in identities}
    recorded = [i for i in unique.values() if not i.derived]
    out, notes = {}, {}
    for d in sorted((i for i in unique.values() if i.derived), key=lambda i: i.key):
        agree = [(r, f) for r in sorted(recorded, key=lambda i: i.key) if (f := agreeing_facts(d, r)) is not None]
        if len(agree) == 1:
            r, facts = agree[0]
            lacked = tuple(name for k, name in LACKED_FACTS.items() if r.parts.get(k) is not None)
            out[d.key] = Merge(d.key, r.key, facts, lacked)
        elif agree:
            notes[d.key] = (f"{d.key} (derived) agrees with {len(agree)} recorded hosts "
                            f"({', '.join(r.key for r, _ in agree)}), which differ only in what its manifests "
                            "lack: kept a host of its own")
    return out, notes


def differences(a: HostIdentity, b: HostIdentity) -> dict[str, tuple]:
    """part -> (a's value, b's value) for every part on which two hosts differ (what tells them apart)."""
    keys = dict.fromkeys([*a.parts, *b.parts])
    return {k: (a.parts.get(k), b.parts.get(k)) for k in keys if a.parts.get(k) != b.parts.get(k)}
