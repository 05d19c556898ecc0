"""Linux across its versions (issue 39): each primitive's guest-instruction count per Debian kernel
version (catalog/kernel_versions.py: linux-tcg-<version>, default mitigations and mitigations=off), relative
to the oldest, every change of more than 5 % between consecutive versions, and where each went in the
kernel: the per-function profiles of the same boots' probes (environments/symprofile.py,
data/kernel_profiles/).

    boots = versions.from_campaigns(root)          # per (environment, condition, campaign, boot)
    hist = versions.history(boots)                  # one row per condition, version and mitigation setting
    ch = versions.changes(hist)                     # consecutive versions differing by > 5 %
    ch = versions.explain(ch, versions.profiles())  # + the kernel functions that grew or shrank most
    versions.sentences(ch)                          # "6.1 → 6.12: null_syscall +N instructions, in function X"

Counts are guest instructions (QEMU TCG -icount, kernel and user), a path length, not a time: a
mitigation that adds few instructions but flushes a buffer or a predictor costs far more time than it
counts (the LEBench comparison says where that matters, reference/lebench)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.analysis.microkernel import BOOT_KEYS, boot_counts
from osbench_analysis.catalog import kernel_versions as kernels
from osbench_analysis.paths import REPO_ROOT

PROFILES_DIR = REPO_ROOT / "data" / "kernel_profiles"
THRESHOLD = 0.05
#: a boot's count of a condition: its smallest batch mean.  A batch counts the operation and whatever another
#: task ran meanwhile, which only adds: from 6.12 on a kernel thread runs about 4 M instructions now and then
#: (a batch preempted, nivcsw > 0), and the median of three batches took it in where two of them met it
BATCH_STATISTIC = "min"
MITIGATIONS = {"": "default", "-nomitig": "off"}
HISTORY_COLUMNS = ["probe", "variant", "params_json", "condition", "version", "release", "mitigations",
                   "environment", "median", "boots", "exact", "relative"]
#: how many functions a change names (those that moved most, in the change's direction)
FUNCTIONS_NAMED = 3


def parse_environment(name: str) -> tuple[str, str] | None:
    """('6.12', 'off') for linux-tcg-6.12-nomitig; None for an environment outside the sweep."""
    for k in kernels.KERNELS:
        for suffix, mit in MITIGATIONS.items():
            if name == kernels.env_name(k, suffix):
                return k.name, mit
    return None


def version_order() -> list[str]:
    return [k.name for k in sorted(kernels.KERNELS, key=lambda k: k.sort_key())]


def newest_round(cat: pd.DataFrame) -> list[str]:
    """The newest campaign (not sealed as partial) of each sweep environment in a catalog, oldest version
    first: the sweep's newest round (a round measured later supersedes an earlier one environment by
    environment; the earlier campaigns stay stored, raw data is never edited)."""
    from osbench_analysis.store.campaigns import sealed_partial

    if not len(cat):
        return []
    # boolean masks through .loc: an empty list inside [] would select no columns, not no rows
    sweep = cat.loc[[parse_environment(e) is not None for e in cat["environment"]]]
    sweep = sweep.loc[~sealed_partial(sweep)].sort_values(["created_utc", "campaign_id"])
    # a campaign with the memory model loaded is memevents.memory_campaigns', beside the round, not of it
    sweep = sweep.loc[[not memory_mode(r) for _, r in sweep.iterrows()]]
    if not len(sweep):
        return []
    last = sweep.groupby("environment")["campaign_id"].last()
    order = {kernels.env_name(k, v): i for i, (k, v) in enumerate(
        (k, v) for k in sorted(kernels.KERNELS, key=lambda k: k.sort_key()) for v in MITIGATIONS)}
    return [last[e] for e in sorted(last.index, key=lambda e: order.get(e, len(order)))]


def previous_round(cat: pd.DataFrame) -> list[str]:
    """Per sweep environment, the campaign `newest_round` would have chosen before its newest one (same rules);
    environments measured once have none.  Two rounds of the same kernels tell how far a count moves when
    nothing on its path changed (`round_spread`)."""
    newest = set(newest_round(cat))
    rest = cat[~cat["campaign_id"].isin(newest)] if len(cat) else cat
    return newest_round(rest)


#: the condition whose agreement between two rounds says a version's boots met nothing else: a round's count
#: of it that moved by more than this leaves the version out of `round_spread` (7.1 on, the first round: the
#: crypto self-tests ran beside every batch)
SPREAD_WITNESS, SPREAD_WITNESS_AGREE = "null_syscall", 0.01


def round_spread(hist: pd.DataFrame, earlier: pd.DataFrame) -> pd.DataFrame:
    """Per condition and mitigation setting: how far its count moved between two rounds of the same kernels
    (`history` of each), the median (`spread_percent`) and the largest (`max_percent`) |later / earlier - 1|
    in percent over the versions both measured whose SPREAD_WITNESS agreed within SPREAD_WITNESS_AGREE, and
    how many versions that is.  A change between
    versions no larger than its condition's spread is not told apart from a change of the boot's inputs."""
    cols = ["condition", "mitigations", "spread_percent", "max_percent", "versions"]
    if hist.empty or earlier.empty:
        return pd.DataFrame(columns=cols)
    key = ["condition", "mitigations", "version"]
    both = hist.set_index(key)["median"].to_frame("later").join(earlier.set_index(key)["median"].rename("earlier"),
                                                                how="inner").reset_index()
    both["ratio"] = both["later"] / both["earlier"]
    witness = both[both["condition"] == SPREAD_WITNESS].set_index(["mitigations", "version"])["ratio"]
    clean = {k for k, r in witness.items() if abs(r - 1) <= SPREAD_WITNESS_AGREE}
    both = both[[(m, v) in clean for m, v in zip(both["mitigations"], both["version"])]]
    if both.empty:
        return pd.DataFrame(columns=cols)
    # the median over versions, not the largest: a first-round campaign whose calibration stopped at one
    # iteration a batch (a one-off cost in its first batch) moves one version by up to 80 % on its own
    out = both.groupby(["condition", "mitigations"]).agg(
        spread_percent=("ratio", lambda r: float(100 * (r - 1).abs().median())),
        max_percent=("ratio", lambda r: float(100 * (r - 1).abs().max())), versions=("version", "nunique"))
    return out.reset_index()[cols]


def spread_of(hist: pd.DataFrame, root: str | Path | None = None) -> pd.DataFrame:
    """round_spread of `hist` (the newest round under root) against the round before it under root."""
    from osbench_analysis.store import campaigns as store

    earlier = previous_round(store.catalog(root))
    return round_spread(hist, history(from_campaigns(root, earlier)) if earlier else pd.DataFrame())


def beyond_spread(ch: pd.DataFrame, spread: pd.DataFrame) -> pd.DataFrame:
    """`changes` with its condition's `spread_percent` and `beyond`: the change larger than that spread (True
    where no spread is known)."""
    ch = ch.copy()
    sp = spread.set_index(["condition", "mitigations"])["spread_percent"] if len(spread) else pd.Series(dtype=float)
    ch["spread_percent"] = [float(sp.get((c, m), np.nan)) for c, m in zip(ch["condition"], ch["mitigations"])]
    ch["beyond"] = [not (abs(p) <= s) for p, s in zip(ch["percent"], ch["spread_percent"])]
    return ch


def memory_mode(row: pd.Series) -> str:
    """A catalog row's memory-events mode ('warm', 'polluted'; '' without the model): its `memory_events`
    column where the catalog has one, else its manifest's config."""
    if "memory_events" in row.index:
        return str(row["memory_events"] or "")
    path = row.get("path")
    if not isinstance(path, (str, Path)) or not (Path(path) / "manifest.json").is_file():
        return ""
    return str(json.loads((Path(path) / "manifest.json").read_text()).get("config", {}).get("memory_events") or "")


def from_campaigns(root: str | Path | None = None, campaigns: list[str] | None = None) -> pd.DataFrame:
    """The boots (microkernel.boot_counts) of the sweep's newest round under root (`newest_round`; or of
    `campaigns`), with the condition's variant."""
    from osbench_analysis.store import campaigns as store
    from osbench_analysis.store import values_cache

    cat = store.catalog(root)
    if campaigns is None:
        campaigns = newest_round(cat)
    parts = [values_cache.derived(_boots_with_variant, c, root, strict=False) for c in campaigns]
    parts = [p for p in parts if p is not None and len(p)]
    if not parts:
        return pd.DataFrame(columns=[*BOOT_KEYS, "variant"])
    return pd.concat(parts, ignore_index=True)


def _boots_with_variant(samples: pd.DataFrame) -> pd.DataFrame:
    boots = boot_counts(samples)
    variants = samples[["probe", "params_json", "variant"]].drop_duplicates(["probe", "params_json"])
    return boots.merge(variants, on=["probe", "params_json"], how="left")


def _label(probe: str, variant) -> str:
    return f"{probe} {variant}" if isinstance(variant, str) and variant else probe


def history(boots: pd.DataFrame) -> pd.DataFrame:
    """One row per condition, version and mitigation setting: the median over boots of each boot's smallest
    batch count per operation (BATCH_STATISTIC), the boots, whether every boot counted the same (`exact`),
    and the count relative to the oldest version measured with the same mitigation setting."""
    rows = []
    releases = {k.name: k.release for k in kernels.KERNELS}
    for (env, probe, pj), g in boots.groupby(["environment", "probe", "params_json"], sort=False):
        parsed = parse_environment(env)
        if parsed is None:
            continue
        med = g["min"].to_numpy(float)   # each boot's cleanest batch (BATCH_STATISTIC)
        variant = g["variant"].iloc[0] if "variant" in g else ""
        rows.append({"probe": probe, "variant": variant if isinstance(variant, str) else "", "params_json": pj,
                     "condition": _label(probe, variant), "version": parsed[0], "release": releases[parsed[0]],
                     "mitigations": parsed[1], "environment": env, "median": float(np.median(med)),
                     "boots": len(med), "exact": bool(len(med) > 1 and np.ptp(med) == 0)})
    hist = pd.DataFrame(rows, columns=HISTORY_COLUMNS[:-1])
    if hist.empty:
        return pd.DataFrame(columns=HISTORY_COLUMNS)
    order = {v: i for i, v in enumerate(version_order())}
    hist["_o"] = hist["version"].map(order)
    hist = hist.sort_values(["condition", "mitigations", "_o"]).drop(columns="_o").reset_index(drop=True)
    first = hist.groupby(["condition", "mitigations"])["median"].transform("first")
    hist["relative"] = hist["median"] / first
    return hist


#: the memory model's events the history shows per version (analysis/memevents.py: per operation)
MEMORY_EVENTS = ("mem_insns", "l1i_misses", "l1d_misses", "l2_misses", "itlb_misses", "dtlb_misses", "stlb_misses")


def memory_history(root: str | Path | None = None, campaigns: list[str] | None = None) -> pd.DataFrame:
    """Per sweep environment, mode and condition: the memory model's events per operation (memevents.per_op of
    the newest memory-events campaign of each sweep environment and mode under root, `osbench run
    --memory-events`), with the version, the mitigation setting and each event relative to the oldest version
    measured in the same mode and setting; empty without such campaigns."""
    from osbench_analysis.analysis import memevents

    cols = ["version", "mitigations", "mode", "condition", "probe", "params_json", "environment", "boots", "exact",
            *MEMORY_EVENTS]
    if campaigns is None:
        from osbench_analysis.store import campaigns as store

        campaigns = sweep_memory_campaigns(store.catalog(root))
    if not campaigns:
        return pd.DataFrame(columns=cols)
    tab = memevents.from_campaigns(campaigns, root)["per_op"]
    return memory_rows(tab)


def sweep_memory_campaigns(cat: pd.DataFrame) -> list[str]:
    """The newest memory-events campaign of each sweep environment and mode in a catalog (memory_mode)."""
    if not len(cat):
        return []
    sweep = cat[[parse_environment(e) is not None for e in cat["environment"]]].sort_values(
        ["created_utc", "campaign_id"])
    newest: dict[tuple[str, str], str] = {}
    for _, r in sweep.iterrows():
        mode = memory_mode(r)
        if mode:
            newest[(r["environment"], mode)] = r["campaign_id"]
    return list(newest.values())


def memory_rows(tab: pd.DataFrame) -> pd.DataFrame:
    """memevents.per_op's rows of the sweep's environments, oldest version first, with the version, the
    mitigation setting, the condition's label and every event relative to the oldest version (`<event>_rel`)."""
    cols = ["version", "mitigations", "mode", "condition", "probe", "params_json", "environment", "boots", "exact",
            *MEMORY_EVENTS]
    rows = []
    for _, r in tab.iterrows():
        parsed = parse_environment(r["environment"])
        if parsed is None:
            continue
        params = json.loads(r["params_json"]) if isinstance(r["params_json"], str) else {}
        variant = f"bytes={params['bytes']}" if params.get("bytes") else ""
        rows.append({"version": parsed[0], "mitigations": parsed[1], "mode": r["mode"],
                     "condition": _label(r["probe"], variant), "probe": r["probe"], "params_json": r["params_json"],
                     "environment": r["environment"], "boots": r["boots"], "exact": r["exact"],
                     **{e: float(r[e]) for e in MEMORY_EVENTS if e in r}})
    out = pd.DataFrame(rows, columns=cols)
    if out.empty:
        return out
    order = {v: i for i, v in enumerate(version_order())}
    out = out.assign(_o=out["version"].map(order)).sort_values(["mode", "mitigations", "condition", "_o"]).drop(
        columns="_o").reset_index(drop=True)
    for e in MEMORY_EVENTS:
        first = out.groupby(["mode", "mitigations", "condition"])[e].transform("first")
        out[f"{e}_rel"] = out[e] / first.where(first > 0)
    return out


def executed_history(prof: pd.DataFrame, hist: pd.DataFrame) -> pd.DataFrame:
    """`history`'s rows from the profiled boots instead: each condition's instructions executed per operation
    in its cleanest fixed batch (idle time and other tasks' waits left out only where they missed that batch),
    relative to the oldest version profiled; the conditions and labels of `hist`."""
    if prof.empty or hist.empty:
        return pd.DataFrame(columns=HISTORY_COLUMNS)
    ran = prof[prof["space"] != "idle"].groupby(["environment", "probe", "params_json"])["instructions_per_op"].sum()
    rows = []
    for _, r in hist.iterrows():
        hit = [v for (env, probe, pj), v in ran.items()
               if env == r["environment"] and probe == r["probe"] and _same_params(pj, r["params_json"])]
        if hit:
            rows.append({**r.to_dict(), "median": float(hit[0]), "boots": 1, "exact": False})
    out = pd.DataFrame(rows, columns=HISTORY_COLUMNS)
    if out.empty:
        return out
    first = out.groupby(["condition", "mitigations"])["median"].transform("first")
    out["relative"] = out["median"] / first
    return out


def grid(hist: pd.DataFrame, mitigations: str = "default", value: str = "relative") -> pd.DataFrame:
    """conditions x versions (oldest first) of one mitigation setting."""
    h = hist[hist["mitigations"] == mitigations]
    cols = [v for v in version_order() if v in set(h["version"])]
    return h.pivot_table(index="condition", columns="version", values=value, aggfunc="first").reindex(columns=cols)


def changes(hist: pd.DataFrame, threshold: float = THRESHOLD) -> pd.DataFrame:
    """Every change of more than `threshold` between consecutive versions measured (per condition and
    mitigation setting): from, to, the counts, the difference in instructions and in percent."""
    rows = []
    for (cond, mit), g in hist.groupby(["condition", "mitigations"], sort=False):
        g = g.reset_index(drop=True)
        for a, b in zip(g.index[:-1], g.index[1:]):
            before, after = g.at[a, "median"], g.at[b, "median"]
            if before > 0 and abs(after / before - 1) > threshold:
                rows.append({"condition": cond, "probe": g.at[a, "probe"], "params_json": g.at[a, "params_json"],
                             "mitigations": mit, "from": g.at[a, "version"], "to": g.at[b, "version"],
                             "from_env": g.at[a, "environment"], "to_env": g.at[b, "environment"],
                             "before": before, "after": after, "delta": after - before,
                             "percent": 100 * (after / before - 1)})
    return pd.DataFrame(rows, columns=["condition", "probe", "params_json", "mitigations", "from", "to", "from_env",
                                       "to_env", "before", "after", "delta", "percent"])


# ------------------------------------------------------------------ where the kernel went

def profiles(folder: str | Path | None = None) -> pd.DataFrame:
    """Every per-function profile saved under `folder` (symprofile.save: <environment>.csv)."""
    folder = Path(folder) if folder is not None else PROFILES_DIR
    parts = [pd.read_csv(p, dtype={"params_json": str}) for p in sorted(folder.glob("linux-tcg-*.csv"))]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["environment", "probe", "params_json", "function", "space", "instructions_per_op"])


def _same_params(a: str, b: str) -> bool:
    try:
        return json.loads(a) == json.loads(b)
    except (TypeError, ValueError):
        return a == b


def function_deltas(prof: pd.DataFrame, from_env: str, to_env: str, probe: str, params_json: str) -> pd.DataFrame:
    """Per function: instructions per operation in each environment and the difference, largest move
    first; empty when either profile is missing."""
    def one(env):
        p = prof[(prof["environment"] == env) & (prof["probe"] == probe)]
        p = p[np.array([_same_params(j, params_json) for j in p["params_json"]], dtype=bool)]
        return p.groupby(["function", "space"])["instructions_per_op"].sum()

    a, b = one(from_env), one(to_env)
    if a.empty or b.empty:
        return pd.DataFrame(columns=["function", "space", "before", "after", "delta"])
    d = pd.concat({"before": a, "after": b}, axis=1).fillna(0.0).reset_index()
    d["delta"] = d["after"] - d["before"]
    return d.reindex(d["delta"].abs().sort_values(ascending=False).index).reset_index(drop=True)


def explain(ch: pd.DataFrame, prof: pd.DataFrame, named: int = FUNCTIONS_NAMED) -> pd.DataFrame:
    """`changes` with the functions that moved most in the change's direction (`functions`: 'name +N,
    ...'), the profiles' own totals (`profiled_delta`) and the share of the change those functions carry."""
    ch = ch.copy()
    funcs, totals, shares = [], [], []
    for _, r in ch.iterrows():
        d = function_deltas(prof, r["from_env"], r["to_env"], r["probe"], r["params_json"])
        if d.empty:
            funcs.append("")
            totals.append(np.nan)
            shares.append(np.nan)
            continue
        same = d[np.sign(d["delta"]) == np.sign(r["delta"])].head(named)
        funcs.append(", ".join(f"{f} {v:+,.0f}" for f, v in zip(same["function"], same["delta"])))
        total = float(d["delta"].sum())
        totals.append(total)
        shares.append(float(same["delta"].sum() / total) if total else np.nan)
    ch["functions"], ch["profiled_delta"], ch["share_named"] = funcs, totals, shares
    ch["confirmed"] = [confirmed(d, p) for d, p in zip(ch["delta"], ch["profiled_delta"])]
    return ch


def confirmed(delta: float, profiled: float) -> str:
    """Whether the profiled boots (fixed batches of the campaigns' length, the cleanest of three) show the
    campaigns' change: 'yes' when the profiles' difference has its sign and at least half its size, 'no'
    otherwise (a campaign's calibration that stopped at one iteration a batch, when its first batch carried
    a one-off cost, counts that batch's set-up in every operation), '' without both profiles."""
    if not np.isfinite(profiled):
        return ""
    return "yes" if np.sign(profiled) == np.sign(delta) and abs(profiled) >= 0.5 * abs(delta) else "no"


def sentences(ch: pd.DataFrame) -> list[str]:
    """One line per change: '6.1 → 6.12 (default): null_syscall +47 instructions (+15.2 %), in X +30, Y +12'."""
    out = []
    for _, r in ch.iterrows():
        s = (f"{r['from']} → {r['to']} ({r['mitigations']} mitigations): {r['condition']} {r['delta']:+,.0f} "
             f"instructions ({r['percent']:+.1f} %)")
        if isinstance(r.get("functions"), str) and r["functions"]:
            s += f", in {r['functions']}"
        if r.get("confirmed") == "no":
            s += f" [not in the profiled boots: {r['profiled_delta']:+,.0f} there]"
        if r.get("beyond") is False:
            s += f" [within the condition's between-round spread, {r['spread_percent']:.1f} %]"
        out.append(s)
    return out


def mitigation_cost(hist: pd.DataFrame) -> pd.DataFrame:
    """conditions x versions: default / mitigations=off, what the defaults cost in instructions per version."""
    on, off = grid(hist, "default", "median"), grid(hist, "off", "median")
    return (on / off.reindex_like(on)).dropna(how="all")


def table_markdown(ch: pd.DataFrame) -> str:
    """The changes as a Markdown table (analysis output beside the figure)."""
    cols = ["from", "to", "mitigations", "condition", "before", "after", "delta", "percent", "functions",
            "profiled_delta", "confirmed", "round spread %"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in ch.iterrows():
        cells = [str(r["from"]), str(r["to"]), r["mitigations"], r["condition"], f"{r['before']:,.0f}",
                 f"{r['after']:,.0f}", f"{r['delta']:+,.0f}", f"{r['percent']:+.1f}", str(r.get("functions", "") or ""),
                 f"{r['profiled_delta']:+,.0f}" if np.isfinite(r.get("profiled_delta", np.nan)) else "",
                 str(r.get("confirmed", "")),
                 f"{r['spread_percent']:.1f}" if np.isfinite(r.get("spread_percent", np.nan)) else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write(out_dir: str | Path, root: str | Path | None = None, profiles_dir: str | Path | None = None) -> list[Path]:
    """The history figure (kernel_history.pdf/.png; kernel_history_executed: from the profiles' executed
    instructions), the changes' table (kernel_changes.md, .csv) and the
    LEBench comparison (kernel_lebench.md) into out_dir; nothing when no sweep campaign is stored."""
    from osbench_analysis.analysis import lebench
    from osbench_analysis.plots import versions as plots_versions

    hist = history(from_campaigns(root))
    if hist.empty:
        return []
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ch = beyond_spread(explain(changes(hist), profiles(profiles_dir)), spread_of(hist, root))
    written = []
    executed = executed_history(profiles(profiles_dir), hist)
    for name, h in (("kernel_history", hist), ("kernel_history_executed", executed)):
        if h.empty:
            continue
        fig = plots_versions.plot_history(h, version_order())
        for ext in ("pdf", "png"):
            fig.savefig(out / f"{name}.{ext}", dpi=150)
            written.append(out / f"{name}.{ext}")
    (out / "kernel_changes.md").write_text(table_markdown(ch))
    ch.drop(columns=["from_env", "to_env"]).to_csv(out / "kernel_changes.csv", index=False, float_format="%.6g")
    (out / "kernel_lebench.md").write_text(lebench.agreement_markdown(lebench.agreement(hist, prof=profiles(profiles_dir))))
    return [*written, out / "kernel_changes.md", out / "kernel_changes.csv", out / "kernel_lebench.md"]


def main(argv: list[str] | None = None) -> int:
    """python -m osbench_analysis.analysis.versions [--out DIR] [--root CAMPAIGNS]: the history's figure, the
    changes' table and the LEBench comparison (make kernels), and the changes in words."""
    import argparse

    from osbench_analysis.paths import GENERATED_DIR

    ap = argparse.ArgumentParser(description="the kernel-version history: figure, changes, LEBench")
    ap.add_argument("--out", type=Path, default=GENERATED_DIR)
    ap.add_argument("--root", type=Path, default=None)
    args = ap.parse_args(argv)
    written = write(args.out, args.root)
    if not written:
        print("no kernel-version sweep campaign: make kernels")
        return 1
    hist = history(from_campaigns(args.root))
    for line in sentences(beyond_spread(explain(changes(hist), profiles()), spread_of(hist, args.root))):
        print(line)
    print(f"wrote {', '.join(p.name for p in written)} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
