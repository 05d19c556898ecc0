"""Four kernel designs on one emulated CPU, like against like: the matched
primitives (catalog/matched.py) of Linux, Linux as Xen's PV dom0, GNU Mach
and seL4, in guest instructions per operation (the unit and its limits:
microkernel.py).

    tab = kernels.matched(samples)      # one line per (row, entry, environment), or the reason it is empty
    kernels.matched_screen(tab)         # rows x kernels, as a notebook shows it
    kernels.determinism(samples)        # per kernel: do its boots repeat their counts, or only their minima

Every cell is the kernel's own operation for the row, or an analog named as
one, or empty with the reason; no count is ever set beside another kernel's
under a name it does not earn."""
from __future__ import annotations

import numpy as np
import pandas as pd

from osbench_analysis.analysis.microkernel import _condition, _count, boot_counts, summarise
from osbench_analysis.catalog import matched as catalog
from osbench_analysis.catalog.guests import UNIT
from osbench_analysis.catalog.families import plain_name, print_name
from osbench_analysis.formatting import tex_escape

STATS = ("median", "lo", "hi", "min", "mean", "boots", "exact")


def matched(samples: pd.DataFrame, environments: tuple[str, ...] | None = None) -> pd.DataFrame:
    """One line per matched row, kernel entry and environment (catalog.COLUMNS order): the probe, what
    the kernel does, whether it is an analog, the counts over boots (median, range, min, mean, boots,
    exact), or `absent`: why that kernel has no counterpart."""
    boots = boot_counts(samples) if len(samples) else pd.DataFrame(
        columns=["environment", "probe", "params_json", "run", "min", "median", "mean", "batches"])
    out = []
    for row in catalog.ROWS:
        for env in environments or tuple(catalog.COLUMNS):
            design = catalog.COLUMNS[env]
            cell = catalog.cells(row, design)
            base = {"row": row.key, "title": row.title, "design": design, "environment": env}
            if isinstance(cell, str):
                out.append({**base, "probe": "", "params": "", "does": "", "analog": False, "absent": cell,
                            **summarise(boots.iloc[0:0])})
                continue
            for entry in cell:
                params = dict(entry.params)
                st = _condition(boots, env, entry.probe, params)
                out.append({**base, "probe": entry.probe, "params": ", ".join(f"{k}={v}" for k, v in params.items()),
                            "does": entry.does, "analog": entry.analog, "absent": "", **st})
    return pd.DataFrame(out)


def row_min(tab: pd.DataFrame, row: str, env: str) -> float:
    """The smallest median count of `env`'s entries in `row` (NaN if none was measured)."""
    v = tab[(tab["row"] == row) & (tab["environment"] == env)]["median"].to_numpy(float)
    v = v[np.isfinite(v)]
    return float(v.min()) if len(v) else np.nan


def ipc_round_trip(tab: pd.DataFrame) -> pd.DataFrame:
    """The request-reply round trips (across address spaces, and across threads) of every kernel: what the
    explorer's "compare the IPC round trip across kernels" shows."""
    part = tab[tab["row"].isin(("rtt_spaces", "rtt_threads"))]
    return matched_screen(part)


def _cell_text(r: pd.Series) -> str:
    if r["absent"]:
        return f"— ({r['absent']})"
    if not r["boots"]:
        return "not measured"
    lo, hi = _count(r["lo"]), _count(r["hi"])
    spread = "" if r["exact"] else (f" [{lo}, {hi}]" if lo != hi else " (boots differ past 3 digits)")
    count = _count(r["median"]) + spread
    return count + (" (analog)" if r["analog"] else "")


def matched_screen(tab: pd.DataFrame) -> pd.DataFrame:
    """matched() as a notebook shows it: one line per row and entry, one column per environment."""
    if tab.empty:
        return pd.DataFrame()
    lines = []
    for (key, title), part in tab.groupby(["row", "title"], sort=False):
        # one line per entry position: Linux's three round trips beside seL4's two
        width = int(part.groupby("environment").size().max())
        for k in range(width):
            line = {"primitive": title if k == 0 else ""}
            for env, cells in part.groupby("environment", sort=False):
                label = catalog.COLUMN_LABELS[env]
                if k < len(cells):
                    r = cells.iloc[k]
                    line[label] = (_cell_text(r) if r["absent"] else f"{plain_name(r['probe'])}: {_cell_text(r)}")
                else:
                    line[label] = ""
            lines.append(line)
    out = pd.DataFrame(lines)
    out.attrs["caption"] = (f"Counts are {UNIT} (QEMU TCG -icount, kernel and user): median over boots, exact "
                            "when every boot counted the same, else [range of the boots' medians]; a path "
                            "length, not a time. An analog does other work than the row's.")
    return out


def determinism(samples: pd.DataFrame) -> pd.DataFrame:
    """Per environment: boots, conditions, how many are exact (every boot the same min, median and mean),
    how many repeat their minimum batch, and the widest range of the boots' medians (relative)."""
    boots = boot_counts(samples)
    rows = []
    for env, part in boots.groupby("environment"):
        conds = part.groupby(["probe", "params_json", *(["campaign_id"] if "campaign_id" in part else [])])
        exact = same_min = single = 0
        spread = 0.0
        for _, g in conds:
            single += len(g) < 2     # one boot: nothing to compare it with
            st = summarise(g)
            exact += st["exact"]
            same_min += bool(np.ptp(g["min"].to_numpy(float)) == 0) if len(g) > 1 else False
            spread = max(spread, (st["hi"] - st["lo"]) / st["median"] if st["median"] else 0.0)
        n = conds.ngroups
        verdict = ("one boot: whether its counts repeat is not checked" if single == n else
                   "identical counts in every boot" if exact == n else
                   f"{exact} of {n} conditions exact, the boots' medians within {100 * spread:.2g}%")
        rows.append({"environment": env, "boots": int(part["run"].nunique()), "conditions": n, "exact": exact,
                     "single_boot": single,
                     "same_minimum": same_min, "max_spread": spread, "verdict": verdict})
    return pd.DataFrame(rows)


def _tex_count(r: pd.Series) -> str:
    """A cell's count for the paper: '432', '20\\,900$^*$' (boots differ past the digits shown),
    '22\\,800 [22\\,700, 22\\,800]', '1\\,100$^1$' (one boot: whether it repeats is not shown), with $^a$
    for an analog; '--' when not measured."""
    if not r["boots"]:
        return "--"
    med, lo, hi = (_count(r[k]).replace(",", "\\,") for k in ("median", "lo", "hi"))
    spread = "$^1$" if int(r["boots"]) == 1 else "" if r["exact"] else "$^*$" if lo == hi else f" [{lo}, {hi}]"
    return med + spread + ("$^a$" if r["analog"] else "")


def matched_tex(tab: pd.DataFrame) -> str:
    """The matched table as a LaTeX tabular: rows x kernels, each cell the probe and its count, or why empty."""
    envs = list(dict.fromkeys(tab["environment"]))
    lines = [r"\begin{tabular}{>{\raggedright\arraybackslash}p{2.2cm}" + r">{\raggedright\arraybackslash}p{2.5cm}" * len(envs)
             + "}", r"\toprule",
             "Primitive & " + " & ".join(tex_escape(catalog.COLUMN_LABELS[e]) for e in envs) + r" \\",
             r"\midrule"]
    for _, part in tab.groupby("row", sort=False):
        width = int(part.groupby("environment").size().max())
        for k in range(width):
            cells = []
            for env in envs:
                c = part[part["environment"] == env]
                if k >= len(c):
                    cells.append("")
                    continue
                r = c.iloc[k]
                if r["absent"]:
                    cells.append(r"\emph{none}" if k == 0 else "")
                    continue
                cells.append(f"{print_name(r['probe'])}: {_tex_count(r)}")   # a reader's name, never the identifier
            title = tex_escape(part.iloc[0]["title"]) if k == 0 else ""
            if k:
                lines.append(r"\addlinespace[3pt]")      # a kernel's second operation for the row, set apart
            lines.append(f"{title} & " + " & ".join(cells) + r" \\")
        lines.append(r"\addlinespace")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def paths_table() -> pd.DataFrame:
    """What the instruction count flatters, bounded from each kernel's own path (catalog.PATHS): per row
    and design, kernel entries, address-space switches and copies per operation."""
    row_order = [r.key for r in catalog.ROWS]
    design_order = list(catalog.DESIGNS)
    paths = sorted(catalog.PATHS.items(), key=lambda kv: (row_order.index(kv[0][0]), design_order.index(kv[0][1])))
    rows = [{"row": next(r.title for r in catalog.ROWS if r.key == key), "design": catalog.DESIGNS[design][0],
             "kernel entries": p.entries, "address-space switches": p.switches, "copies": p.copies,
             "from": p.source} for (key, design), p in paths]
    return pd.DataFrame(rows)


def newest_round(cat: pd.DataFrame) -> list[str]:
    """The newest campaign (not sealed as partial) of each guest environment in a catalog: one round, whose boots are compared
    with each other (campaigns of other days may count otherwise: another build of a guest, another
    set of jobs before a probe in the same boot)."""
    from osbench_analysis.catalog.guests import DESIGN_GUESTS
    from osbench_analysis.store.campaigns import memory_model, sealed_partial

    if not len(cat):
        return []
    # the four designs' guests; the kernel-version sweep's are analysed by versions.py
    guests = cat[cat["environment"].isin(DESIGN_GUESTS)].sort_values(["created_utc", "campaign_id"])
    guests = guests[~sealed_partial(guests)]     # a campaign sealed as partial is no round's
    guests = guests[~memory_model(guests)]       # nor one of the memory model's (analysis/memevents.py)
    return list(guests.groupby("environment")["campaign_id"].last())


def from_campaigns(campaigns: list[str] | None = None, root=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """matched() and determinism() of sealed campaigns (default: the newest campaign of each guest
    environment under root, `newest_round`)."""
    from osbench_analysis.store import campaigns as store

    if campaigns is None:
        campaigns = newest_round(store.catalog(root))
    if not campaigns:
        return pd.DataFrame(), pd.DataFrame()
    manifests, samples = store.load_campaigns(campaigns, root)
    tab = matched(samples)
    tab.attrs["facts"] = {m.environment: dict(m.environment_facts or {}) for m in manifests.values()}
    return tab, determinism(samples)


def measured(tab: pd.DataFrame | None) -> bool:
    """Whether `tab` (matched) holds a count of at least two designs."""
    if tab is None or tab.empty:
        return False
    return tab[tab["boots"].astype(float) > 0]["design"].nunique() >= 2


def _paths_tex() -> str:
    short = {long: catalog.COLUMN_LABELS[envs[0]] for long, envs in catalog.DESIGNS.values()}
    lines = [r"\begin{tabular}{>{\raggedright\arraybackslash}p{2.6cm}>{\raggedright\arraybackslash}p{1.9cm}>{\raggedright\arraybackslash}p{3.3cm}"
             r">{\raggedright\arraybackslash}p{3.3cm}>{\raggedright\arraybackslash}p{2.3cm}}", r"\toprule",
             r"Primitive & Kernel & Kernel entries & Address-space switches & Copies \\", r"\midrule"]
    last = None
    for _, r in paths_table().iterrows():
        if last is not None and r["row"] != last:
            lines.append(r"\addlinespace")
        title = tex_escape(str(r["row"])) if r["row"] != last else ""     # the row's title once per group
        last = r["row"]
        lines.append(" & ".join([title, tex_escape(short.get(r["design"], r["design"]))]
                                + [tex_escape(str(r[c])) for c in ("kernel entries", "address-space switches", "copies")])
                     + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def determinism_sentence(det: pd.DataFrame) -> str:
    """Per kernel, whether its boots repeated their counts (every number from `det`)."""
    if det.empty:
        return ""
    order = list(catalog.COLUMNS)
    det = det.assign(_o=[order.index(e) if e in order else len(order) for e in det["environment"]]).sort_values("_o")
    parts = []
    for _, r in det.iterrows():
        minima = ("" if int(r["exact"]) == int(r["conditions"]) or r.get("single_boot", 0) == r["conditions"] else
                  f", its minimum batch the same in every boot for {int(r['same_minimum'])} of them")
        parts.append(f"{tex_escape(catalog.COLUMN_LABELS.get(r['environment'], r['environment']))}: "
                     f"{tex_escape(r['verdict'])}{minima} ({int(r['conditions'])} conditions, {int(r['boots'])} boots)")
    return "Boot to boot, within this round: " + "; ".join(parts) + "."


def write_files(tab: pd.DataFrame, det: pd.DataFrame, out_dir) -> list:
    """paper/generated/: microkernel_matched.tex (table), .csv, .pdf (figure) and microkernel_paths.tex (the
    section's text that inputs them is report/sections/kernels.py's); nothing, and no stale file, unless two
    designs were measured."""
    from pathlib import Path

    from osbench_analysis.plots import microkernel as plots_microkernel

    out = Path(out_dir)
    names = ("microkernel_matched.tex", "microkernel_matched.csv", "microkernel_matched.pdf",
             "microkernel_paths.tex")
    if not measured(tab):
        for name in names:
            (out / name).unlink(missing_ok=True)
        return []
    out.mkdir(parents=True, exist_ok=True)
    (out / names[0]).write_text(matched_tex(tab))
    tab.to_csv(out / names[1], index=False)
    fig = plots_microkernel.plot_matched(tab)
    fig.savefig(out / names[2], bbox_inches="tight", metadata={"CreationDate": None})   # the same bytes any day
    (out / names[3]).write_text(_paths_tex())
    return [out / n for n in names]
