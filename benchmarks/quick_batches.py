"""What fewer measured batches per run would change in sealed campaigns (prints figures; asserts nothing).

    .venv/bin/python benchmarks/quick_batches.py CAMPAIGN_DIR... [--keep 3] [--probes null_syscall pipe_pingpong]

Each campaign's samples are summarized twice with the package's own statistics (stats.summarize): as sealed,
and with only the first --keep measured batches of every run (warm-ups and calibration untouched).  Printed:
per environment, how many quoted estimates move and by how much, and the CI half-widths (relative) before and
after, their median and largest; then every condition of the named probes.  For a guest counting its
instructions the quoted number is the median count, so the same comparison says how many counts move.
Used for issue 37's `make all` budget: which batch counts of the quick profile keep its intervals.
--mode warmup0 asks what one warm-up batch fewer would change (the quick profile's warmup 1 -> 0), with
--mode shift as its control (one batch swapped for its later neighbour); both on campaigns measured with
warmup 1 and at least --keep + 1 measured batches.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from osbench_analysis import stats  # noqa: E402

KEYS = ["probe", "variant", "placement"]


def first_batches(samples: pd.DataFrame, keep: int) -> pd.DataFrame:
    """The warm-up rows and the first `keep` measured batches of every run."""
    measured = samples[~samples["warmup"].astype(bool)].sort_values("batch")
    rank = measured.groupby([*KEYS, "run"], sort=False).cumcount()
    return pd.concat([samples[samples["warmup"].astype(bool)], measured[rank < keep]]).sort_index()


def warmup_as_measured(samples: pd.DataFrame, keep: int, shift_only: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the first `keep` measured batches of every run, the same number with one batch moved): a run measured
    with one warm-up batch fewer (warmup 1 -> 0: the calibration's last, full-size batch is then the only
    warm-up) is, batch for batch, the sealed run's explicit warm-up followed by its first keep-1 measured
    batches.  shift_only: the control, measured batches 1..keep instead (one batch later, none warmer), which
    says how far estimates move when one batch of a run is swapped for its neighbour."""
    s = samples.sort_values("batch")
    measured = s[~s["warmup"].astype(bool)]
    rank = measured.groupby([*KEYS, "run"], sort=False).cumcount()
    calib = s[s["warmup"].astype(bool)]
    base = pd.concat([calib, measured[rank < keep]]).sort_index()
    if shift_only:
        moved = measured[(rank >= 1) & (rank <= keep)]
        return base, pd.concat([calib, moved]).sort_index()
    # the explicit warm-up: a run's last warm-up batch, measured as the first of the new plan
    last_w = calib.groupby([*KEYS, "run"], sort=False).tail(1).copy()
    last_w["warmup"] = False
    rest = calib.drop(last_w.index)
    return base, pd.concat([rest, last_w, measured[rank < keep - 1]]).sort_index()


def compare(samples: pd.DataFrame, keep: int, mode: str = "fewer") -> pd.DataFrame:
    cols = [*KEYS, "estimate_ns", "halfwidth_rel", "n_batches"]
    if mode == "fewer":
        before = stats.summarize(samples, quality=False)[cols]
        after = stats.summarize(first_batches(samples, keep), quality=False)[cols]
    else:
        base, other = warmup_as_measured(samples, keep, shift_only=mode == "shift")
        before = stats.summarize(base, quality=False)[cols]
        after = stats.summarize(other, quality=False)[cols]
    t = before.merge(after, on=KEYS, suffixes=("", f"_{keep}"))
    t["moved_rel"] = t[f"estimate_ns_{keep}"] / t["estimate_ns"] - 1
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaigns", nargs="+", help="sealed campaign folders (with samples.parquet)")
    ap.add_argument("--keep", type=int, default=3, help="measured batches kept per run (default 3)")
    ap.add_argument("--probes", nargs="*", default=["null_syscall", "pipe_pingpong"],
                    help="probes whose every condition is printed")
    ap.add_argument("--mode", choices=["fewer", "warmup0", "shift"], default="fewer",
                    help="fewer: all measured batches against the first --keep; warmup0: the first --keep against "
                         "a run with one warm-up fewer (its warm-up and first keep-1 batches); shift: the control, "
                         "the first --keep against batches 1..keep")
    args = ap.parse_args(argv)
    rows = []
    for d in map(Path, args.campaigns):
        manifest = json.loads((d / "manifest.json").read_text())
        t = compare(pd.read_parquet(d / "samples.parquet"), args.keep, args.mode)
        t.insert(0, "environment", manifest["environment"])
        rows.append(t)
        hw, hw_k = t["halfwidth_rel"], t[f"halfwidth_rel_{args.keep}"]
        moved = t["moved_rel"].abs()
        print(f"{manifest['environment']:18s} {len(t):3d} conditions, keep {args.keep} batches a run: "
              f"estimates moved >0.1 %: {int((moved > 0.001).sum())}, median |move| {100 * moved.median():.2f} %, "
              f"largest {100 * moved.max():.2f} %; CI half-width median {100 * hw.median():.1f} % -> "
              f"{100 * hw_k.median():.1f} %, largest {100 * hw.max():.1f} % -> {100 * hw_k.max():.1f} %")
    every = pd.concat(rows, ignore_index=True)
    picked = every[every["probe"].isin(args.probes)]
    if len(picked):
        print()
        with pd.option_context("display.width", 200, "display.max_rows", 200):
            print(picked[["environment", *KEYS, "estimate_ns", f"estimate_ns_{args.keep}", "halfwidth_rel",
                          f"halfwidth_rel_{args.keep}"]].round(4).to_string(index=False))
    moved = every["moved_rel"].abs()
    print(f"\nall: {len(every)} conditions; moved by more than 1 %: {int((moved > 0.01).sum())}; "
          f"half-width median {100 * np.nanmedian(every['halfwidth_rel']):.1f} % -> "
          f"{100 * np.nanmedian(every[f'halfwidth_rel_{args.keep}']):.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
