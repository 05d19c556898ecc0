"""A host's identity as the paper's Method and the machine report state it (from hosts.identity's parts;
no statistic computed here).  The hosts' tables are the across-machines section's (sections/machines.py)."""
from __future__ import annotations

from osbench_analysis.formatting import tex_escape


def identity_sentence(parts: dict) -> str:
    """A host's identity (hosts.identity parts) as the Method states it, TeX: CPU and its family/model/stepping
    and microcode, the crossing-relevant features, vCPUs and memory, the host kernel, the hypervisor, and the
    mitigations the kernel reports as active or vulnerable (those 'Not affected' left out).  A part an older
    manifest did not record is left out, and the sentence says the identity was derived."""
    p = {k: v for k, v in (parts or {}).items() if v not in (None, "", [], {})}
    cpu = str(p.get("cpu_model", "an unknown CPU"))
    detail = ", ".join(x for x in (
        f"family {p['cpu_family']}" if "cpu_family" in p else "",
        f"model {p['cpu_model_number']}" if "cpu_model_number" in p else "",
        f"stepping {p['cpu_stepping']}" if "cpu_stepping" in p else "",
        f"microcode {p['microcode']}" if "microcode" in p else "",
        ("features " + " ".join(p["features"])) if p.get("features") else "") if x)
    text = cpu + (f" ({detail})" if detail else "")
    if "logical_cpus" in p:
        text += f", {p['logical_cpus']} vCPUs"
    if "memory_gib" in p:
        text += f", {p['memory_gib']} GiB"
    if "kernel_release" in p:
        text += f", host kernel Linux {p['kernel_release']}"
    if "virtualization" in p:
        text += f" under {p['virtualization']}"
    mitig = p.get("mitigations") or {}
    def short(v: str) -> str:   # 'Mitigation: usercopy/swapgs barriers and __user pointer ...' -> 'usercopy/swapgs barriers'
        v = str(v).split(";")[0].removeprefix("Mitigation: ")
        return v.split(" and ")[0]

    active = [f"{k.replace('_', ' ')}: {short(v)}" for k, v in sorted(mitig.items())
              if not str(v).startswith("Not affected")]
    if active:
        text += "; mitigations " + "; ".join(active)
    return tex_escape(text)
