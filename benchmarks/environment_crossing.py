"""What does one crossing into each kernel environment cost on this host?

Measures null_syscall (one getpid) and stat natively and in every sandbox
environment, interleaved in one campaign set (pinned, same_cpu), and prints
per environment and probe: the estimate with its 95% CI, the ratio to native
with the ratio's CI (stats.ratio_table), and the added cost per operation,
environment minus native (architectures.crossing_costs: difference of
geometric means of run medians, delta-method Welch interval).  For getpid that difference is the cost of one crossing (trap to
the Sentry, to the UML kernel); for stat under fuse-nocache and gvisor-gofer
it is what the file server adds to one stat.

    .venv/bin/python benchmarks/environment_crossing.py [--runs 5] [--envs gvisor,uml,...]
"""
from __future__ import annotations

import argparse
import tempfile
import time

import pandas as pd

from osbench_analysis import stats
from osbench_analysis.analysis import architectures
from osbench_analysis.measure import runner

DEFAULT_ENVS = "gvisor,gvisor-ptrace,gvisor-gofer,uml,fuse,fuse-nocache"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--envs", default=DEFAULT_ENVS)
    args = ap.parse_args()
    t0 = time.monotonic()
    campaigns = runner.measure(probes=["null_syscall", "stat"], runs=args.runs, batches=args.batches, warmup=1,
                               min_batch_ms=5, placements=["same_cpu"], precision_target=0,
                               environment="native," + args.envs, output=tempfile.mkdtemp(), progress=False)
    wall = time.monotonic() - t0
    samples = pd.concat([c.samples for c in campaigns], ignore_index=True)
    samples = samples[samples["placement"] == "same_cpu"]
    ratios = stats.ratio_table(samples.assign(variant=""), baseline="native")
    added = pd.concat([architectures.crossing_costs(samples, probe=p) for p in ("null_syscall", "stat")])
    rows = []
    for (probe, env), g in samples.groupby(["probe", "environment"]):
        est = stats.estimate_ci(stats.run_data(g))
        row = {"probe": probe, "environment": env, "estimate_ns": est.estimate_ns,
               "ci_low_ns": est.ci_low_ns, "ci_high_ns": est.ci_high_ns}
        if env != "native":
            r = ratios[(ratios["probe"] == probe) & (ratios["environment"] == env)].iloc[0]
            a = added[(added["probe"] == probe) & (added["environment"] == env)].iloc[0]
            row.update(ratio=r["ratio"], ratio_low=r["ci_low"], ratio_high=r["ci_high"],
                       added_ns=a["cost_ns"], added_low_ns=a["ci_low_ns"], added_high_ns=a["ci_high_ns"])
        rows.append(row)
    table = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    fmt = {c: "{:,.0f}".format for c in table.columns if c.endswith("_ns")}
    fmt.update({c: "{:.2f}".format for c in ("ratio", "ratio_low", "ratio_high")})
    print(table.to_string(index=False, formatters=fmt, na_rep=""))
    print(f"\n{args.runs} runs x {args.batches} batches per condition, pinned (same_cpu); "
          f"campaign set measured in {wall:.0f} s (estimates: median of run medians, 95% CI "
          f"{stats.DEFAULT_CI_METHOD}; added_ns: architectures.crossing_costs)")


if __name__ == "__main__":
    main()
