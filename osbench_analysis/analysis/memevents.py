"""The guests' memory events (environments/memevents.py): what a count of instructions leaves out, per
operation, from the model's sample columns (store/schema.py MODEL_FIELDS).

    tabs = memevents.from_campaigns(["...-sel4", ...], root)   # every table below at once
    memevents.per_op(samples, modes)      # per condition and mode: events per operation, over the model's boots
    memevents.count_check(samples)        # per condition: the counts with the model == without it (the campaign's
                                          # first boot), and the model's window against the clock
    memevents.known_answers(per_op)       # the known-answer probes against what the stated geometry predicts
    memevents.matched(per_op)             # the matched rows (catalog/matched.py): footprint, misses warm and polluted
    memevents.pti(per_op)                 # linux-tcg beside linux-tcg-pti
    memevents.slowdown(manifests)         # the model's boots' wall time against the boot without it

A model's numbers, not the machine's: no timing, no overlap, stated geometry (docs/environments.md)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.catalog import matched as catalog
from osbench_analysis.catalog.families import plain_name
from osbench_analysis.store.schema import MODEL_FIELDS

#: the model's geometry as the known answers need it (environments/memevents.MODEL says the same)
LINE, PAGE, L1_BYTES, L2_BYTES, DTLB, STLB = 64, 4096, 32 << 10, 1 << 20, 64, 1536
KEYS = ["environment", "probe", "params_json"]
#: the per-operation columns (events / iterations); the footprint columns are per window
EVENTS = tuple(c for c in MODEL_FIELDS if c not in ("lines_touched", "pages_touched"))
FOOTPRINT = ("lines_touched", "pages_touched")


def _modelled(samples: pd.DataFrame) -> pd.DataFrame:
    s = samples[~samples["warmup"].astype(bool)]
    return s[s["mem_insns"].notna()] if "mem_insns" in s else s.iloc[0:0]


def per_op(samples: pd.DataFrame, modes: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per (mode, environment, probe, params_json): every event per operation (the median over the
    measured batches of every model boot), the window's lines and pages touched (median; a polluted
    campaign's batch is one operation: its footprint), the boots, and whether they agree exactly."""
    s = _modelled(samples).copy()
    if s.empty:
        return pd.DataFrame(columns=["mode", *KEYS, "boots", "exact", "iterations", *EVENTS, *FOOTPRINT])
    s["mode"] = s["campaign_id"].map(modes or {}).fillna("warm") if "campaign_id" in s else "warm"
    it = s["iterations"].astype("float64")
    for c in EVENTS:
        s[c] = s[c].astype("float64") / it
    for c in FOOTPRINT:
        s[c] = s[c].astype("float64")
    rows = []
    for (mode, env, probe, pj), g in s.groupby(["mode", *KEYS], sort=False):
        per_boot = g.groupby("run")[[*EVENTS, *FOOTPRINT]].median()
        # exact: every boot's batches the same events, batch by batch
        by_batch = g.pivot_table(index="batch", columns="run", values=["mem_insns", "l1d_misses", "dtlb_misses"],
                                 aggfunc="first")
        exact = bool(len(per_boot) > 1 and (by_batch.T.groupby(level=0).nunique() <= 1).all().all())
        rows.append({"mode": mode, "environment": env, "probe": probe, "params_json": pj,
                     "boots": int(g["run"].nunique()), "exact": exact,
                     "iterations": float(g["iterations"].median()),
                     **{c: float(per_boot[c].median()) for c in (*EVENTS, *FOOTPRINT)}})
    return pd.DataFrame(rows)


def count_check(samples: pd.DataFrame) -> pd.DataFrame:
    """Per condition of a memory-events campaign: whether its first boot (no model) counted, batch by batch,
    what its model boots counted (`same_counts`; else the largest relative difference of a batch,
    `max_relative_difference`: xen-linux's boots never repeat exactly), and the largest difference between the model's window
    and the clock's count per batch (`window_minus_clock`: the marker or RDTSC instructions and the
    clock read's own, a few instructions whatever the batch)."""
    s = samples[~samples["warmup"].astype(bool)]
    rows = []
    for key, g in s.groupby(["campaign_id", *KEYS], sort=False):
        plain, model = g[g["mem_insns"].isna()], g[g["mem_insns"].notna()]
        if plain.empty or model.empty:
            continue
        ref = plain.groupby("batch")["elapsed_ns"].first()
        per_boot = [m.set_index("batch")["elapsed_ns"].reindex(ref.index) for _, m in model.groupby("run")]
        same = all((b == ref).all() for b in per_boot)
        # a guest whose boots never repeat exactly (xen-linux: Xen's timer) differs by this much at most
        rel = max(float(((b - ref).abs() / ref).max()) for b in per_boot)
        diff = (model["mem_insns"].astype("float64") - model["elapsed_ns"].astype("float64")).abs()
        rows.append({"campaign_id": key[0], "environment": key[1], "probe": key[2], "params_json": key[3],
                     "plain_boots": int(plain["run"].nunique()), "model_boots": int(model["run"].nunique()),
                     "same_counts": bool(same), "max_relative_difference": rel,
                     "window_minus_clock": float(diff.max())})
    return pd.DataFrame(rows, columns=["campaign_id", *KEYS, "plain_boots", "model_boots", "same_counts",
                                       "max_relative_difference", "window_minus_clock"])


#: the known-answer probes and their buffer when it is fixed (GNU Mach's task takes no size parameter)
KNOWN_ANSWER_PROBES = ("mem_page_pass", "mem_line_pass", "mach_page_pass", "mach_line_pass_64k", "mach_line_pass_16k",
                       "sel4_page_pass", "sel4_line_pass_64k", "sel4_line_pass_16k")
FIXED_BYTES = {"mach_page_pass": 256 * PAGE, "sel4_page_pass": 128 * PAGE, "mach_line_pass_64k": 64 << 10,
               "sel4_line_pass_64k": 64 << 10, "mach_line_pass_16k": 16 << 10, "sel4_line_pass_16k": 16 << 10}


def _size(probe: str, pj: str) -> int:
    return FIXED_BYTES.get(probe) or int(json.loads(pj).get("bytes", 0))


def predicted(probe: str, size: int) -> dict:
    """What the stated geometry gives per pass of a known-answer probe, for a buffer of `size` bytes:
    an LRU structure swept cyclically by more than it holds (per set) misses every time, else never."""
    pages, lines = size // PAGE, size // LINE
    if probe in ("mem_page_pass", "mach_page_pass", "sel4_page_pass"):   # one line per page, lines spread over every L1 set (page p: line p mod 64)
        return {"dtlb_misses": pages if pages > DTLB else 0, "stlb_misses": pages if pages > STLB else 0,
                "l1d_misses": pages if pages > L1_BYTES // LINE else 0}
    return {"l1d_misses": lines if size > L1_BYTES else 0, "l2_misses": lines if size > L2_BYTES else 0,
            "dtlb_misses": pages if pages > DTLB else 0, "stlb_misses": pages if pages > STLB else 0}


#: a window's pages beyond its buffer's: the loop's code and stack, and what a timer interrupt in the window
#: touches (GNU Mach, seL4 and Linux: 4 to 23 pages measured)
FOOTPRINT_SLACK = 32


def known_answers(tab: pd.DataFrame, tolerance: float = 0.02, slack: float = 2.0) -> pd.DataFrame:
    """The known-answer probes (warm): per probe, size and event, the misses per pass the geometry predicts
    and the model's, and whether they agree (within `tolerance` of the prediction plus `slack` per pass:
    the guest's timer interrupts and the first pass after the batch's printing); and the window's distinct
    physical pages (`pages_touched`, where the table has it): every page of the buffer, plus at most
    FOOTPRINT_SLACK of code, stack and interrupts."""
    part = tab[tab["probe"].isin(KNOWN_ANSWER_PROBES) & (tab["mode"] == "warm")]
    rows = []
    for _, r in part.iterrows():
        size = _size(r["probe"], r["params_json"])
        for event, want in predicted(r["probe"], size).items():
            got = float(r[event])
            rows.append({"environment": r["environment"], "probe": r["probe"], "bytes": size, "event": event,
                         "predicted": want, "measured": got,
                         "agrees": bool(abs(got - want) <= tolerance * want + slack)})
        if "pages_touched" in r and pd.notna(r["pages_touched"]):
            want, got = size // PAGE, float(r["pages_touched"])
            rows.append({"environment": r["environment"], "probe": r["probe"], "bytes": size, "event": "pages_touched",
                         "predicted": want, "measured": got, "agrees": bool(want <= got <= want + FOOTPRINT_SLACK)})
    return pd.DataFrame(rows, columns=["environment", "probe", "bytes", "event", "predicted", "measured", "agrees"])


#: what the matched table shows per kernel and row (per operation)
MATCHED_COLUMNS = {"mem_insns": "instructions", "lines_touched": "lines touched", "pages_touched": "pages touched",
                   "l1_misses": "L1 misses", "l2_misses": "L2 misses", "tlb_misses": "TLB misses",
                   "walks": "page walks", "cr3_writes": "CR3 writes", "kernel_entries": "kernel entries"}


def _row_of(env: str, probe: str, pj: str) -> tuple[str, str] | None:
    design = catalog.COLUMNS.get(env) or ("linux" if env.startswith("linux-tcg") else None)
    if design is None:
        return None
    params = json.loads(pj)
    for row in catalog.ROWS:
        cell = catalog.cells(row, design)
        if isinstance(cell, str):
            continue
        for e in cell:
            if e.probe == probe and all(params.get(k) == v for k, v in e.params):
                return row.key, row.title
    return None


def matched(tab: pd.DataFrame) -> pd.DataFrame:
    """The matched rows in memory terms: per row, kernel (environment) and entry, per operation: instructions,
    footprint (lines and pages touched by one operation: the polluted campaign's one-operation batches), and
    for warm and polluted caches L1 (I + D) misses, L2 misses, L1 TLB misses, page walks, CR3 writes and
    kernel entries."""
    rows = []
    for (env, probe, pj), g in tab.groupby(KEYS, sort=False):
        where = _row_of(env, probe, pj)
        if where is None:
            continue
        line = {"row": where[0], "title": where[1], "environment": env, "probe": probe,
                "label": catalog.COLUMN_LABELS.get(env, env)}
        for mode in ("warm", "polluted"):
            m = g[g["mode"] == mode]
            if m.empty:
                continue
            r = m.iloc[0]
            line[f"{mode}:instructions"] = r["mem_insns"]
            line[f"{mode}:L1 misses"] = r["l1i_misses"] + r["l1d_misses"]
            line[f"{mode}:L1I misses"] = r["l1i_misses"]
            line[f"{mode}:L1D misses"] = r["l1d_misses"]
            line[f"{mode}:L2 misses"] = r["l2_misses"]
            line[f"{mode}:TLB misses"] = r["itlb_misses"] + r["dtlb_misses"]
            line[f"{mode}:page walks"] = r["stlb_misses"]
            line[f"{mode}:CR3 writes"] = r["cr3_writes"]
            line[f"{mode}:kernel entries"] = r["kernel_entries"]
            line[f"{mode}:boots"] = r["boots"]
            line[f"{mode}:exact"] = r["exact"]
            if mode == "polluted":   # one operation per batch: its window's lines and pages are its footprint
                line["footprint lines"] = r["lines_touched"]
                line["footprint pages"] = r["pages_touched"]
        if "polluted:instructions" in line and line.get("warm:instructions"):
            # a one-operation window holds more than the operation where the guest does work of its own between
            # batches (Linux: the console's interrupts after the batch's line, a partner woken): its footprint and
            # cold misses then include that work; 1.0 where the window is the operation alone
            line["polluted window / operation"] = line["polluted:instructions"] / line["warm:instructions"]
        rows.append(line)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    order = {r.key: i for i, r in enumerate(catalog.ROWS)}
    envs = list(dict.fromkeys([*catalog.COLUMNS, *out["environment"]]))
    out["_r"] = out["row"].map(order)
    out["_e"] = out["environment"].map(envs.index)
    return out.sort_values(["_r", "_e"]).drop(columns=["_r", "_e"]).reset_index(drop=True)


#: the round trips the body's table shows (catalog/matched.py rows): a null entry, and request-reply between
#: two address spaces and within one
ROUND_TRIPS = ("null_entry", "rtt_spaces", "rtt_threads")
#: the kernels it shows, in its order (seL4 without its fastpath: the appendix's full table)
KERNELS = ("linux-tcg", "linux-tcg-pti", "xen-linux", "mach", "sel4")


def round_trips(tab: pd.DataFrame, rows=ROUND_TRIPS, kernels=KERNELS) -> pd.DataFrame:
    """matched() cut to the round trips of `rows` on `kernels`, one entry per (row, kernel): the entry with
    the fewest warm instructions, Linux's choice (linux-tcg) taken by Linux with PTI and on Xen too, so the
    three Linux columns run the same probe."""
    if tab.empty:
        return tab
    part = tab[tab["row"].isin(rows) & tab["environment"].isin(kernels) & tab["warm:instructions"].notna()]
    out = []
    for row in rows:
        r = part[part["row"] == row]
        linux = r[r["environment"] == "linux-tcg"]
        linux_probe = linux.loc[linux["warm:instructions"].astype(float).idxmin(), "probe"] if len(linux) else None
        for env in kernels:
            e = r[r["environment"] == env]
            if env.startswith("linux") or env == "xen-linux":
                e = e[e["probe"] == linux_probe] if linux_probe is not None else e.iloc[0:0]
            if len(e):
                out.append(e.loc[e["warm:instructions"].astype(float).idxmin()])
    return pd.DataFrame(out).reset_index(drop=True) if out else tab.iloc[0:0]


def matched_screen(tab: pd.DataFrame) -> pd.DataFrame:
    """matched() as a notebook shows it: one line per row and kernel entry, three significant digits."""
    from osbench_analysis.formatting import sig3

    if tab.empty:
        return tab
    cols = ["footprint lines", "footprint pages", "warm:instructions", "warm:L1 misses", "warm:L2 misses",
            "warm:TLB misses", "polluted:L1 misses", "polluted:L2 misses", "polluted:TLB misses",
            "warm:CR3 writes", "warm:kernel entries", "polluted window / operation"]
    out = tab[["title", "label", "probe"]].copy()
    out["probe"] = out["probe"].map(plain_name)
    for c in cols:
        out[c] = [sig3(v) if c in tab and pd.notna(v) else "" for v in (tab[c] if c in tab else [np.nan] * len(tab))]
    out.attrs["caption"] = ("Per operation, from the guests' memory-system model (stated geometry, no timing): "
                            "footprint = distinct 64 B lines and 4 KiB pages one operation touches (one-operation "
                            "batches), misses with the caches as the previous operation left them (warm) and "
                            "emptied before the operation (polluted, one-operation batches: 'polluted window / "
                            "operation' above 1 says the window held the guest's own work too).")
    return out


def pti(tab: pd.DataFrame, base: str = "linux-tcg", other: str = "linux-tcg-pti") -> pd.DataFrame:
    """linux-tcg beside linux-tcg-pti, per probe (warm): instructions, CR3 writes, TLB misses and page walks
    per operation, and the ratio of instructions."""
    w = tab[tab["mode"] == "warm"]
    a, b = w[w["environment"] == base], w[w["environment"] == other]
    both = a.merge(b, on=["probe", "params_json"], suffixes=("", "_pti"))
    rows = []
    for _, r in both.iterrows():
        rows.append({"probe": r["probe"], "params_json": r["params_json"],
                     "instructions": r["mem_insns"], "instructions PTI": r["mem_insns_pti"],
                     "ratio": r["mem_insns_pti"] / r["mem_insns"] if r["mem_insns"] else np.nan,
                     "CR3 writes": r["cr3_writes"], "CR3 writes PTI": r["cr3_writes_pti"],
                     "TLB misses": r["itlb_misses"] + r["dtlb_misses"],
                     "TLB misses PTI": r["itlb_misses_pti"] + r["dtlb_misses_pti"],
                     "page walks": r["stlb_misses"], "page walks PTI": r["stlb_misses_pti"]})
    return pd.DataFrame(rows)


def same_batches(samples: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Guest counts against another campaign's (another host's, another day's), batch by batch: per
    environment and probe, the batches both campaigns ran with the same (params, boot, batch, iterations) --
    the model's boots left out, the guest's calibration sets the later batches' iterations by its clock --
    how many there are and how many counted exactly the same instructions (`same`), and the largest relative
    difference of the others.  Counts under -icount depend on the guest's code and inputs, not on the host."""
    keys = ["probe", "params_json", "run", "batch", "iterations"]
    plain = samples[samples["mem_insns"].isna()] if "mem_insns" in samples else samples
    both = plain[["environment", *keys, "elapsed_ns"]].merge(
        reference[["environment", *keys, "elapsed_ns"]], on=["environment", *keys], suffixes=("", "_ref"))
    rows = []
    for (env, probe), g in both.groupby(["environment", "probe"], sort=False):
        a, b = g["elapsed_ns"].astype("float64"), g["elapsed_ns_ref"].astype("float64")
        rel = ((a - b).abs() / b).max()
        rows.append({"environment": env, "probe": probe, "batches": len(g), "same": int((a == b).sum()),
                     "max_relative_difference": float(rel)})
    return pd.DataFrame(rows, columns=["environment", "probe", "batches", "same", "max_relative_difference"])


def slowdown(manifests: dict) -> pd.DataFrame:
    """Per memory-events campaign: the wall time of its boot without the model (run 0) and the mean of its
    model boots, and their ratio (boots side by side on a shared host: a rough figure)."""
    rows = []
    for cid, m in manifests.items():
        mode = (m.config or {}).get("memory_events", "")
        if not mode:
            continue
        wall: dict[int, float] = {}
        for r in m.runs:
            wall[r.run] = wall.get(r.run, 0.0) + float(r.wall_s)
        if 0 not in wall or len(wall) < 2:
            continue
        model = [v for k, v in wall.items() if k > 0]
        rows.append({"campaign_id": cid, "environment": m.environment, "mode": mode, "plain_s": wall[0],
                     "model_s": float(np.mean(model)), "slowdown": float(np.mean(model)) / wall[0]})
    return pd.DataFrame(rows)


def from_campaigns(campaigns: list[str], root=None, reference: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Every table of this module from sealed campaigns (their manifests say each one's mode); with
    `reference` (guest campaigns without the model, e.g. the paper's round of the four designs) also
    same_batches() against them, its attrs saying per environment whether both ran the same probe code."""
    from osbench_analysis.store import campaigns as store

    manifests, samples, tab, checked = _read(campaigns, root)
    modes = {cid: (m.config or {}).get("memory_events", "") or "warm" for cid, m in manifests.items()}
    m = matched(tab)
    # the model's geometry and global pages, as each campaign's manifest records them
    m.attrs["model"] = {mf.environment: dict((mf.environment_facts or {}).get("memory_model") or {})
                        for mf in manifests.values()}
    m.attrs["campaigns"] = {cid: (mf.environment, modes[cid]) for cid, mf in manifests.items()}
    out = {"per_op": tab, "count_check": checked, "known_answers": known_answers(tab),
           "matched": m, "pti": pti(tab), "slowdown": slowdown(manifests)}
    envs = {mf.environment for mf in manifests.values()}
    if reference:
        ref_m, ref_s = store.load_campaigns(reference, root)
        ref_m = {c: mf for c, mf in ref_m.items() if mf.environment in envs}
        same = same_batches(samples, ref_s[ref_s["campaign_id"].isin(ref_m)])

        def code(mf) -> str:
            return str(((mf.host or {}).get("probes") or {}).get("source_sha256", ""))
        same.attrs["same_probe_code"] = {mf.environment: all(code(mf) == code(o) for o in manifests.values()
                                                            if o.environment == mf.environment)
                                         for mf in ref_m.values()}
        same.attrs["same_host"] = ({mf.host_identity.key for mf in ref_m.values()}
                                   == {mf.host_identity.key for mf in manifests.values()})
        out["same_batches"] = same
    return out


#: (campaign id, folder, seal) of each campaign read -> what _read computed from them; the newest few kept
_READ: dict = {}


def _read(campaigns: list[str], root=None) -> tuple:
    """The campaigns' manifests and samples, per_op and count_check of them, computed once per process for
    the same sealed campaigns (analyze.ipynb's memory cell and the paper's memory section read the same
    ones): keyed by each campaign's folder and seal (SHA256SUMS), which a sealed campaign never changes.
    Each caller gets its own copy."""
    import copy

    from osbench_analysis.store import campaigns as store

    def compute() -> tuple:
        manifests, samples = store.load_campaigns(campaigns, root)
        modes = {cid: (m.config or {}).get("memory_events", "") or "warm" for cid, m in manifests.items()}
        return manifests, samples, per_op(samples, modes), count_check(samples)

    try:
        key = tuple((c, str(p), (p / store.SEAL_FILE).read_bytes())
                    for c, p in ((c, Path(store.resolve(c, root))) for c in campaigns))
    except (OSError, store.StoreError):
        return compute()      # not there or not sealed: load_campaigns says which, as it always did
    if key not in _READ:
        if len(_READ) >= 4:
            _READ.pop(next(iter(_READ)))
        _READ[key] = compute()
    return copy.deepcopy(_READ[key])


def memory_campaigns(root=None) -> list[str]:
    """The newest campaign of each (guest environment, mode) under root that loaded the memory model; the
    kernel-version sweep's are versions.memory_history's, not these (catalog.guests.VERSION_GUESTS)."""
    from osbench_analysis.catalog.guests import DESIGN_GUESTS as GUEST_ENVIRONMENTS
    from osbench_analysis.store import campaigns as store
    from osbench_analysis.store.records import Manifest

    cat = store.catalog(root)
    if not len(cat):
        return []
    cat = cat[cat["environment"].isin(GUEST_ENVIRONMENTS)].sort_values(["created_utc", "campaign_id"])
    newest: dict[tuple[str, str], str] = {}
    for _, r in cat.iterrows():
        m = Manifest.from_json((Path(r["path"]) / store.MANIFEST_FILE).read_text())
        mode = (m.config or {}).get("memory_events", "")
        if mode:
            newest[(r["environment"], mode)] = r["campaign_id"]
    return list(newest.values())


def write_files(tabs: dict[str, pd.DataFrame], out_dir, calibration: pd.DataFrame | None = None) -> list:
    """The tables as CSV (memory_*.csv, counts_to_time.csv) and the two figures (memory_matched.pdf,
    counts_to_time.pdf) in `out_dir`: what from_campaigns (and counts_to_time.table) computed."""
    from osbench_analysis.plots import memevents as plots
    from osbench_analysis.plots.forest import save_figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in ("matched", "known_answers", "pti", "count_check", "slowdown", "per_op"):
        if name in tabs and len(tabs[name]):
            tabs[name].to_csv(out / f"memory_{name}.csv", index=False)
            written.append(out / f"memory_{name}.csv")
    if len(tabs.get("matched", ())):
        written += save_figure(plots.plot_memory_matched(tabs["matched"]), out, "memory_matched", formats=("pdf",))
    if calibration is not None and len(calibration):
        calibration.to_csv(out / "counts_to_time.csv", index=False)
        written.append(out / "counts_to_time.csv")
        written += save_figure(plots.plot_counts_to_time(calibration), out, "counts_to_time", formats=("pdf",))
    return written
