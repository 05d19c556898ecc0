"""The paper's predicted-versus-measured table for the application workloads (issue #32, item 4):
each workload's time in each environment predicted from its counted system-call mix priced by the
measured primitives (analysis/syscall_mix.py), beside the time measured, with the verdict in words."""
from __future__ import annotations

import pandas as pd

from osbench_analysis.analysis import syscall_mix
from osbench_analysis.analysis.pipeline import without_fs
from osbench_analysis.catalog import registry
from osbench_analysis.catalog.families import print_name
from osbench_analysis.formatting import ratio_with_ci
from osbench_analysis.report import mechanism as paper_mechanism
from osbench_analysis.report.estimand import paper_estimates

MAIN_PLACEMENT = "same_cpu"


def _env(name: str) -> str:
    from osbench_analysis.plots.architectures import env_short

    return env_short(name)


def prediction_table(result, counts: pd.DataFrame) -> pd.DataFrame:
    """Per (workload, environment) of the paper's host: measured and predicted slowdown over native, each
    with its interval, the verdict, and what the intervals cover."""
    est = paper_estimates(result.primary_estimates)
    est = est[(est["host"] == result.hosts[0]) & (est["placement"] == MAIN_PLACEMENT)]
    var = est["variant"].fillna("")
    apps = est[est["probe"].isin(registry.APPLICATION_PROBES)
               & ~var.str.contains(f"{registry.WORKDIR_FS}=", regex=False)].drop_duplicates(["environment", "probe"])
    prims = est[~est["probe"].isin(registry.APPLICATION_PROBES) & (var.map(without_fs) == "")]
    prims = prims.drop_duplicates(["environment", "probe"])
    base = result.settings.baseline
    native = {r.probe: (r.estimate_ns, (r.ci_high_ns - r.ci_low_ns) / 2)
              for r in apps[apps["environment"] == base].itertuples()}
    extra = syscall_mix.extra_costs(prims[["environment", "probe", "estimate_ns", "ci_low_ns", "ci_high_ns"]], base)
    pred = syscall_mix.predict(counts, native, extra)
    slow = paper_mechanism.applications(result)[1]   # the measured slowdowns, as the applications table has them
    rows = []
    skipped = sorted({p.environment for p in pred.itertuples() if p.missing})
    for p in pred.itertuples():
        m = slow[(slow["environment"] == p.environment) & (slow["probe"] == p.workload)]
        if m.empty or p.missing:
            continue
        m = m.iloc[0]
        t0 = native[p.workload][0]
        r = dict(workload=p.workload, environment=p.environment,
                 measured=m["ratio"], measured_low=m["ci_low"], measured_high=m["ci_high"],
                 predicted=p.predicted_ns / t0, predicted_low=(p.predicted_ns - p.half_ns) / t0,
                 predicted_high=(p.predicted_ns + p.half_ns) / t0, interval_over=m.get("interval_over", ""),
                 fallback=", ".join(print_name(x) for x in p.fallback))
        r["verdict"] = syscall_mix.verdict(r["predicted_low"], r["predicted_high"], r["measured_low"],
                                           r["measured_high"])
        rows.append(r)
    out = pd.DataFrame(rows)
    out.attrs["not_predicted"] = skipped
    return out


def _grouped(part: pd.DataFrame, values: bool) -> str:
    """'the key-value session on loopback under gVisor (1.68 predicted, 3.61 measured) and UML (...)': one
    clause per workload, its environments after it."""
    out = []
    for w, g in part.groupby("workload", sort=False):
        envs = [f"{_env(r.environment)}" + (f" ({r.predicted:.3g} predicted, {r.measured:.3g} measured)" if values else "")
                for r in g.itertuples()]
        out.append(f"the {print_name(w)} under " + (", ".join(envs[:-1]) + " and " + envs[-1] if len(envs) > 1 else envs[0]))
    return "; ".join(out)


def prediction_tex(result, counts: pd.DataFrame | None = None, provenance: dict | None = None) -> tuple[str, pd.DataFrame, str]:
    """(the sentences saying where prediction and measurement disagree, the prediction table for
    Table tab:apps, its caption part); ('', empty, '') without counts."""
    if counts is None:
        counts, provenance = syscall_mix.load_mix()
    if counts.empty:
        return "", pd.DataFrame(), ""
    t = prediction_table(result, counts)
    if t.empty:
        return "", t, ""
    cov = syscall_mix.coverage(counts)
    unpriced = sorted({n for u in cov["unpriced"] for n in u})
    covered = (", ".join(f"{c.calls:.0f}" for c in cov.itertuples()) + " calls per run of the "
               + ", ".join(print_name(w) for w in cov["workload"])
               + (f"; unpriced: {', '.join(unpriced)}" if unpriced else ", every one priced"))
    counted_on = (provenance or {}).get("host_key", "an unrecorded host")
    fb = sorted({x for f in t["fallback"] for x in f.split(", ") if x})
    caption = ("Indented: predicted, native time plus each counted call times its primitive's extra time here, "
               "over native time (interval: quadrature, counts fixed); $^{<}$/$^{>}$: below/above the measured "
               "interval." + (f" Not measured here, so priced as a null system call: {', '.join(fb)}." if fb else ""))
    counted_on = (provenance or {}).get("host_key", "an unrecorded host")
    fb = sorted({x for f in t["fallback"] for x in f.split(", ") if x})
    caption = ("Predicted (indented rows): native time plus each counted call times the extra cost of the "
               "measured primitive that prices it (the environment's time minus native's, same host), over native "
               "time; its interval combines native's and each primitive's in quadrature, counts fixed; "
               "$^{<}$/$^{>}$: below/above the measured interval."
               + (f" Primitives not measured in an environment ({', '.join(fb)}) are priced there as one null "
                  "system call." if fb else ""))
    text = (r"\paragraph{Predicted from the system calls.} Counted natively with strace (on host "
            + counted_on.replace("_", r"\_") + "; a program's calls are the same on every host): " + covered
            + r"; priced by the measured primitives, they give Table~\ref{tab:apps}'s indented rows.")
    agree = t[t["verdict"] == "agrees"]
    text += f" Prediction and measurement agree for {len(agree)} of {len(t)} pairs."
    for verdict, lead, why in (("under", "The prediction falls short for", "the program pays for more than its crossings"),
                               ("over", "It overshoots for", "a call costs the program less than its probe")):
        part = t[t["verdict"] == verdict]
        if len(part):
            text += f" {lead} " + _grouped(part, True) + f": {why}."
    wide = t[(t["verdict"] == "agrees") & (t["measured_high"] > 2 * t["measured_low"])]
    if len(wide):
        text += (" Agreement says little for " + _grouped(wide, False)
                 + ", whose measured intervals span more than a factor of two.")
    if t.attrs.get("not_predicted"):
        text += (" Not predicted: " + ", ".join(_env(e) for e in t.attrs["not_predicted"])
                 + " (a primitive the calls need, and the null system call, not measured there).")
    return text + "\n", t, caption
