"""Our version history beside LEBench's (Ren et al., SOSP'19; data/reference/lebench/, transcribed with its
source and what is inferred): where their findings and ours overlap, whether they agree.

Their 41 kernels (3.0-4.20) and our Debian kernels (5.10 onwards) share no version, so no change between
two versions can be compared.  What overlaps is a cause: the Meltdown and Spectre patches, which entered
their series between 4.13 and 4.14 (4.14.15 is the first of their kernels built with both), and which our
sweep switches off with ``mitigations=off`` in every version.  Their figure is time on one Xeon; ours is
guest instructions on an emulated CPU (QEMU TCG, qemu64), where kernel page-table isolation is not
enabled (qemu64 says AuthenticAMD) and the time a mitigation costs without instructions (a CR3 write, a
TLB or predictor flush) is not seen: so the comparison is of direction and ranking, never magnitude.

    lebench.figure1()            # test, series, percent (as printed)
    lebench.agreement(hist)      # one row per LEBench test with an osbench counterpart"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from osbench_analysis.paths import REFERENCE_DIR

FOLDER = "lebench"
#: LEBench's test -> our probe in the linux-tcg guests, and how close the two operations are
MAPPING = {
    "small-read": ("null_syscall", "analog: a 1-byte read() against our cheapest system call; both are mostly "
                                   "the kernel's entry and exit"),
    "send & recv": ("unix_pingpong", "analog: a send and a receive against a round trip over an AF_UNIX "
                                     "socket between two processes"),
    "fork": ("fork_exit", "close: fork of a small process (ours also waits for the child's exit)"),
    "thrcreate": ("thread_create_join", "close: thread creation (ours also joins the thread)"),
    "small-pagefault": ("mmap_touch", "analog: page faults on a small mapping against mmap + touch + munmap"),
}
#: the kernels in their series between which the Meltdown and Spectre patches arrived
MITIGATION_STEP = ("4.13", "4.14")


def _order() -> dict[str, int]:
    """Our versions' names -> their place, oldest first (the sweep's table)."""
    from osbench_analysis.catalog import kernel_versions as kernels

    return {k.name: i for i, k in enumerate(sorted(kernels.KERNELS, key=lambda k: k.sort_key()))}


def figure1(root: str | Path | None = None) -> pd.DataFrame:
    path = Path(root or REFERENCE_DIR) / FOLDER / "figure1_percent.csv"
    tab = pd.read_csv(path, dtype={"series": str})
    tab["percent"] = tab["percent_as_printed"].astype(float)
    return tab


def root_causes(root: str | Path | None = None) -> pd.DataFrame:
    return pd.read_csv(Path(root or REFERENCE_DIR) / FOLDER / "root_causes.csv")


def mitigation_step(fig: pd.DataFrame) -> pd.Series:
    """Per test: the change of LEBench's latency from 4.13 to 4.14, in percent of 4.13's."""
    a, b = MITIGATION_STEP
    piv = fig.pivot_table(index="test", columns="series", values="percent", aggfunc="first")
    return 100 * ((1 + piv[b] / 100) / (1 + piv[a] / 100) - 1)


def our_mitigation_cost(hist: pd.DataFrame) -> pd.DataFrame:
    """Per probe (its unparameterised condition) and version: default / mitigations=off - 1, in percent."""
    on = hist[hist["mitigations"] == "default"].set_index(["condition", "version"])["median"]
    off = hist[hist["mitigations"] == "off"].set_index(["condition", "version"])["median"]
    both = pd.concat({"on": on, "off": off}, axis=1).dropna()
    both["percent"] = 100 * (both["on"] / both["off"] - 1)
    return both.reset_index()


def executed_mitigation_cost(prof: pd.DataFrame) -> pd.DataFrame:
    """Per probe (unparameterised) and version: default / mitigations=off - 1 of the instructions the profiled
    batches executed (their idle time left out, symprofile.IDLE), in percent; empty without profiles."""
    cols = ["probe", "version", "percent"]
    if prof is None or prof.empty:
        return pd.DataFrame(columns=cols)
    ran = prof[prof["space"] != "idle"]
    tot = ran.groupby(["environment", "probe", "params_json"])["instructions_per_op"].sum().reset_index()
    rows = []
    for name in _order():
        on = tot[tot["environment"] == f"linux-tcg-{name}"]
        off = tot[tot["environment"] == f"linux-tcg-{name}-nomitig"]
        both = on.merge(off, on=["probe", "params_json"], suffixes=("_on", "_off"))
        for _, r in both.iterrows():
            rows.append({"probe": r["probe"], "params_json": r["params_json"], "version": name,
                         "percent": 100 * (r["instructions_per_op_on"] / r["instructions_per_op_off"] - 1)})
    out = pd.DataFrame(rows, columns=["probe", "params_json", "version", "percent"])
    # a probe's own parameters: the first parameter set profiled (the unparameterised probes have one)
    first = out.groupby("probe")["params_json"].transform("first") if len(out) else out["params_json"]
    return out[out["params_json"] == first][cols].reset_index(drop=True)


def agreement(hist: pd.DataFrame, root: str | Path | None = None, prof: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per LEBench test with a counterpart: LEBench's 4.13 -> 4.14 step (time, Meltdown + Spectre
    patches), what the default mitigations cost our counterpart (instructions; the newest version and the
    range over versions), the same from the profiled batches' executed instructions (`prof`: idle time left
    out) where both settings were profiled, and the verdict: whether both go the same way."""
    step = mitigation_step(figure1(root))
    executed = executed_mitigation_cost(prof)
    cost = our_mitigation_cost(hist) if len(hist) else pd.DataFrame(columns=["condition", "version", "percent"])
    rows = []
    for test, (probe, match) in MAPPING.items():
        ours = cost[cost["condition"] == probe]
        theirs = float(step.get(test, np.nan))
        if ours.empty:
            rows.append({"lebench_test": test, "probe": probe, "match": match, "lebench_step_percent": theirs,
                         "ours_newest_percent": np.nan, "ours_min_percent": np.nan, "ours_max_percent": np.nan,
                         "verdict": "not measured here"})
            continue
        newest = ours.loc[ours["version"].map(_order()).idxmax()]
        lo, hi = float(ours["percent"].min()), float(ours["percent"].max())
        ran = executed[executed["probe"] == probe]
        ran_newest = ran.loc[ran["version"].map(_order()).idxmax()] if len(ran) else None
        # the verdict on the executed instructions where profiled (no idle time), else on the campaigns' counts
        basis = float(ran_newest["percent"]) if ran_newest is not None else float(newest["percent"])
        same = bool(np.sign(theirs) == np.sign(basis)) if abs(basis) >= 1 else None
        verdict = ("same direction (the mitigations cost both)" if same else
                   "opposite directions" if same is False else
                   "ours changes by under 1 %: the instructions the mitigations add are few; LEBench's step is time")
        rows.append({"lebench_test": test, "probe": probe, "match": match, "lebench_step_percent": theirs,
                     "ours_newest_percent": float(newest["percent"]), "ours_min_percent": lo, "ours_max_percent": hi,
                     "executed_newest_percent": float(ran_newest["percent"]) if ran_newest is not None else np.nan,
                     "executed_min_percent": float(ran["percent"].min()) if len(ran) else np.nan,
                     "executed_max_percent": float(ran["percent"].max()) if len(ran) else np.nan,
                     "verdict": verdict})
    return pd.DataFrame(rows)


def ranking(agree: pd.DataFrame) -> float:
    """Spearman's rank correlation between LEBench's step and our mitigation cost over the tests both
    measured (nan under three)."""
    ok = agree.dropna(subset=["lebench_step_percent", "ours_newest_percent"])
    if len(ok) < 3:
        return float("nan")
    return float(ok["lebench_step_percent"].rank().corr(ok["ours_newest_percent"].rank()))


def agreement_markdown(agree: pd.DataFrame) -> str:
    lines = ["LEBench's latency step 4.13 → 4.14 (Meltdown + Spectre patches; time on an Intel Xeon E5-2630 v3) "
             "beside what the default mitigations cost each counterpart here (guest instructions, "
             "default / mitigations=off − 1; kernel page-table isolation is not on in these guests).", "",
             "| LEBench test | osbench probe | LEBench 4.13→4.14 | ours, newest version | ours, range over versions "
             "| executed only (profiles), newest | range | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for _, r in agree.iterrows():
        ex = r.get("executed_newest_percent", np.nan)
        lines.append(f"| {r['lebench_test']} | {r['probe']} | {r['lebench_step_percent']:+.0f} % | "
                     f"{r['ours_newest_percent']:+.1f} % | {r['ours_min_percent']:+.1f} … {r['ours_max_percent']:+.1f} % | "
                     + (f"{ex:+.1f} % | {r['executed_min_percent']:+.1f} … {r['executed_max_percent']:+.1f} % | "
                        if np.isfinite(ex) else "not profiled | | ") + f"{r['verdict']} |")
    rho = ranking(agree)
    lines += ["", f"Rank correlation (Spearman) of the two columns over {agree['ours_newest_percent'].notna().sum()} "
                  f"tests: {rho:.2f}." if np.isfinite(rho) else "", "",
              "No version is in both studies (LEBench: 3.0-4.20; here: 5.10 onwards): no change between two "
              "versions can be compared.  A round trip's count here includes the time its guest waited idle for a "
              "timer (QEMU -icount sleep=off warps the clock to it), which moves with the scheduler from version "
              "to version: read the ranges of the ping-pong rows with that in mind."]
    return "\n".join(lines) + "\n"
