"""From counts to time, measured (issue 38, item 5): the same Linux probes timed natively on the host (ns)
and counted in linux-tcg (guest instructions and the memory model's events), per primitive.

    tab = counts_to_time.table(native_samples, per_op)   # per probe: ns, instructions, ns per instruction,
                                                          # the cost model's ns and its ratio to the native ns
    counts_to_time.summary(tab)                           # how the model and the bare count rank and scale

The stated cost model (`COSTS`): every instruction `ns_per_insn`, an L1 miss that hits L2 `l2_hit_ns`, an
L2 miss `memory_ns`, a page walk `walk_ns`, and a kernel entry (with its exit) at its natively measured
price: the native null system call's time less its instructions' (`entry_price`).  Its latencies are
stated, typical figures, not this host's; the spread of the ratio is the answer, whatever it is.  The
native ns come from another kernel (the host's) than the guest's: the comparison is per primitive, and
what differs between the two kernels is part of the spread."""
from __future__ import annotations

import numpy as np
import pandas as pd

#: the model's prices (ns): one instruction at about 3 GHz and one per cycle; typical latencies
COSTS = {"ns_per_insn": 0.33, "l2_hit_ns": 4.0, "memory_ns": 80.0, "walk_ns": 10.0}
#: the probe whose native time prices a kernel entry
ENTRY_PROBE = "null_syscall"
#: the memory model's known-answer probes: streams, where the model's no-overlap pricing is at its worst
KNOWN_ANSWERS = ("mem_page_pass", "mem_line_pass")


def native_ns(samples: pd.DataFrame, placement: str = "same_cpu") -> pd.DataFrame:
    """Per (probe, params_json): the median over measured batches of ns per operation (one placement)."""
    s = samples[~samples["warmup"].astype(bool) & (samples["placement"] == placement)]
    per = s["elapsed_ns"].astype("float64") / s["iterations"].astype("float64")
    return per.groupby([s["probe"], s["params_json"]]).median().rename("native_ns").reset_index()


def _events(r: pd.Series) -> tuple[float, float, float]:
    l1 = float(r["l1i_misses"] + r["l1d_misses"])
    l2 = float(r["l2_misses"])
    return max(l1 - l2, 0.0), l2, float(r["stlb_misses"])


def entry_price(native: pd.DataFrame, counted: pd.DataFrame, costs: dict = COSTS) -> float:
    """A kernel entry and exit at its native price: the null system call's native ns less what its counted
    instructions and misses cost in the model (NaN when either side lacks it)."""
    n = native[native["probe"] == ENTRY_PROBE]
    c = counted[counted["probe"] == ENTRY_PROBE]
    if n.empty or c.empty:
        return np.nan
    r = c.iloc[0]
    l2_hits, mem, walks = _events(r)
    rest = (r["mem_insns"] * costs["ns_per_insn"] + l2_hits * costs["l2_hit_ns"] + mem * costs["memory_ns"]
            + walks * costs["walk_ns"])
    return float(n["native_ns"].iloc[0] - rest) / max(float(r["kernel_entries"]), 1.0)


def table(native_samples: pd.DataFrame, per_op: pd.DataFrame, environment: str = "linux-tcg",
          costs: dict = COSTS) -> pd.DataFrame:
    """Per probe measured both natively and in `environment` (warm model): native ns per operation, guest
    instructions and events per operation, ns per instruction, the cost model's ns (`modelled_ns`) and
    the bare count's (instructions at the median ns per instruction: `count_ns`), each over the native."""
    return from_native(native_ns(native_samples), per_op, environment, costs)


def native_from_estimates(est: pd.DataFrame, environment: str = "native", placement: str = "same_cpu") -> pd.DataFrame:
    """The native side from an analysis' estimates (the paper's, with their intervals): per (probe,
    params_json) of `environment` at `placement`, native_ns and its interval (native_low, native_high)."""
    need = {"environment", "placement", "probe", "params_json", "estimate_ns", "ci_low_ns", "ci_high_ns"}
    if est.empty or not need <= set(est.columns):
        return pd.DataFrame(columns=["probe", "params_json", "native_ns", "native_low", "native_high"])
    e = est[(est["environment"] == environment) & (est["placement"] == placement)]
    out = e[["probe", "params_json", "estimate_ns", "ci_low_ns", "ci_high_ns"]].rename(columns={
        "estimate_ns": "native_ns", "ci_low_ns": "native_low", "ci_high_ns": "native_high"})
    return out.drop_duplicates(["probe", "params_json"]).reset_index(drop=True)


def from_native(native: pd.DataFrame, per_op: pd.DataFrame, environment: str = "linux-tcg",
                costs: dict = COSTS) -> pd.DataFrame:
    """table() from a native side already per (probe, params_json) (native_ns, or native_from_estimates with
    its interval: then ns per instruction has one too, `ns_per_insn_low` and `ns_per_insn_high`)."""
    counted = per_op[(per_op["environment"] == environment) & (per_op["mode"] == "warm")]
    both = native.merge(counted, on=["probe", "params_json"])
    price = entry_price(native, counted, costs)
    rows = []
    for _, r in both.iterrows():
        l2_hits, mem, walks = _events(r)
        modelled = (r["mem_insns"] * costs["ns_per_insn"] + l2_hits * costs["l2_hit_ns"]
                    + mem * costs["memory_ns"] + walks * costs["walk_ns"] + r["kernel_entries"] * price)
        rows.append({"probe": r["probe"], "params_json": r["params_json"], "native_ns": r["native_ns"],
                     "instructions": r["mem_insns"], "kernel_entries": r["kernel_entries"],
                     "l1_misses": r["l1i_misses"] + r["l1d_misses"], "l2_misses": mem, "page_walks": walks,
                     "ns_per_insn": r["native_ns"] / r["mem_insns"], "modelled_ns": modelled,
                     **({"ns_per_insn_low": r["native_low"] / r["mem_insns"],
                         "ns_per_insn_high": r["native_high"] / r["mem_insns"]} if "native_low" in r else {})})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    # the model's known answers are streams over a buffer, no system's primitive: kept apart in the summary
    out["known_answer"] = out["probe"].isin(KNOWN_ANSWERS)
    per_insn = float(out.loc[~out["known_answer"], "ns_per_insn"].median()) if (~out["known_answer"]).any() \
        else float(out["ns_per_insn"].median())
    out["count_ns"] = out["instructions"] * per_insn
    out["modelled_over_native"] = out["modelled_ns"] / out["native_ns"]
    out["count_over_native"] = out["count_ns"] / out["native_ns"]
    out.attrs.update({"entry_price_ns": price, "costs": dict(costs), "environment": environment})
    return out.sort_values("native_ns").reset_index(drop=True)


def summary(tab: pd.DataFrame, known_answers: bool = False) -> dict:
    """How each prediction ranks (Spearman's rho with the native ns) and scales (the spread of its ratio to
    the native ns: max / min) the primitives (the known-answer streams too when `known_answers`)."""
    from scipy import stats

    if not known_answers and "known_answer" in tab:
        tab = tab[~tab["known_answer"].astype(bool)]
    if len(tab) < 3:
        return {}
    out = {"primitives": len(tab), "entry_price_ns": tab.attrs.get("entry_price_ns", np.nan),
           "ns_per_insn_min": float(tab["ns_per_insn"].min()), "ns_per_insn_max": float(tab["ns_per_insn"].max())}
    for name, col in (("model", "modelled_ns"), ("count", "count_ns")):
        ratio = tab[col] / tab["native_ns"]
        out[f"{name}_spearman"] = float(stats.spearmanr(tab[col], tab["native_ns"]).statistic)
        out[f"{name}_ratio_min"], out[f"{name}_ratio_max"] = float(ratio.min()), float(ratio.max())
        out[f"{name}_spread"] = float(ratio.max() / ratio.min())
    return out
