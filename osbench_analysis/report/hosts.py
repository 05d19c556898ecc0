"""The hosts as the paper prints them (issue #28): the cross-host table of the crossing costs and the
"does this host reproduce the reference host(s)" table, with their macros, from analysis/hosts.py's
records (no statistic computed here).  ``write_hosts`` writes them beside the paper's other generated
files; the paper's section that \\input s them is another issue's."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from osbench_analysis.formatting import macro_name, tex_escape


def _tex(text) -> str:
    """Plain table text as TeX: specials escaped, the micro sign as \\textmu."""
    return tex_escape(str(text)).replace("µ", "\\textmu{}")


def _label(text: str) -> str:
    return _tex(str(text).replace(" · ", ", "))


def cross_host_tex(cross, kind: str = "crossing_costs") -> str:
    """One row per condition measured on two hosts or more: each host's value with its interval, the
    spread between hosts and whether the finding holds on every host (TeX tabular; '' with one host)."""
    t = cross.table(kind)
    if t.empty:
        return ""
    labels = [lab for lab in cross.labels.values() if lab in t.columns]
    head = " & ".join(["environment", "probe", *(_label(lab) for lab in labels), "spread", "on every host"])
    rows = []
    for r in t.itertuples(index=False):
        d = dict(zip(t.columns, r))
        cells = [tex_escape(d["environment"]), tex_escape(d["probe"]),
                 *(_tex(d.get(lab)) if isinstance(d.get(lab), str) else "--" for lab in labels),
                 f"{d['spread']:.2f}$\\times$" if pd.notna(d["spread"]) else "--",
                 "yes" if d["holds_on_every_host"] else "no"]
        rows.append(" & ".join(cells) + " \\\\")
    return ("\\begin{tabular}{ll" + "r" * len(labels) + "rl}\n\\toprule\n" + head + " \\\\\n\\midrule\n"
            + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}\n")


def reproduction_tex(table: pd.DataFrame) -> str:
    """analysis.hosts.reproduction as a TeX tabular: per conclusion and reference host, the value there
    and here, here over there, and whether it holds (and in size too) ('' without a reference host)."""
    if table.empty:
        return ""
    rows = [" & ".join([tex_escape(r.conclusion), _label(r.reference_host), _tex(r.reference), _tex(r.here),
                        f"{r.here_over_reference:.2f}$\\times$",
                        "yes, in size too" if r.same_size else "yes" if r.holds else "no"]) + " \\\\"
            for r in table.itertuples()]
    return ("\\begin{tabular}{llrrrl}\n\\toprule\nconclusion & reference host & there & here & here/there & holds \\\\\n"
            f"\\multicolumn{{6}}{{l}}{{\\footnotesize this host: {_label(table['this_host'].iloc[0])}}} \\\\\n"
            "\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}\n")


def host_macros(cross, table: pd.DataFrame) -> dict[str, str]:
    """osbHostsCount (hosts that measured the conditions), osbHostsLabels, osbReproduceHeld /
    osbReproduceTotal (conclusions of the reference host(s) that hold here, of how many) and
    osbReproduceThisHost."""
    m = {macro_name("hosts", "count"): str(len(cross.hosts)),
         macro_name("hosts", "labels"): "; ".join(_label(lab) for lab in cross.labels.values())}
    if len(table):
        m[macro_name("reproduce", "held")] = str(int(table["holds"].sum()))
        m[macro_name("reproduce", "total")] = str(len(table))
        m[macro_name("reproduce", "this", "host")] = _label(table["this_host"].iloc[0])
    return m


def write_hosts(cross, table: pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """hosts_crossing.tex, hosts_ratios.tex, hosts_reproduce.tex and hosts_macros.tex under out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"hosts_crossing.tex": cross_host_tex(cross, "crossing_costs"),
             "hosts_ratios.tex": cross_host_tex(cross, "ratios"),
             "hosts_reproduce.tex": reproduction_tex(table),
             "hosts_macros.tex": "".join(f"\\newcommand{{\\{k}}}{{{v}}}\n" for k, v in host_macros(cross, table).items())}
    written = []
    for name, text in files.items():
        (out / name).write_text(text)
        written.append(out / name)
    return written


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
