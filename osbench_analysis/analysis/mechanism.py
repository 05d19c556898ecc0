"""What one crossing is made of (issue #22, "Mechanism"): for each sandbox
environment, the measured cost of one crossing (the environment's null system
call minus native's, as `architectures.crossing_costs`) beside the sum of the
native pieces its mechanism is built from, each measured alone on this host
(probes/probe_mechanism.c and the IPC probes), and what is left unexplained:
the sandbox's own dispatch.

The pieces are a recipe per mechanism (`RECIPES`, a registry: a new
mechanism is one entry), each a signed multiple of a native probe's per-op
estimate.  Every figure is a linear combination sum(c_i * G_i) of
geometric means of run medians G_i (the engine's estimand); its interval is
the delta method over the terms' run-to-run variances with Welch-Satterthwaite
degrees of freedom, the interval `architectures.geomean_difference_ci` gives
a difference of two.  Terms are independent (different probes or campaigns);
a term that appears in both the crossing and the pieces (native getpid) is
merged before the variance is taken, so the unexplained rest's interval is not
double-counted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from scipy import stats as sps

from osbench_analysis import formatting, stats
from osbench_analysis.catalog import registry
from osbench_analysis.analysis.architectures import CROSSING_PROBE, CROSSING_PROBES, FILE_CROSSING_PROBE
from osbench_analysis.errors import OsbenchError


@dataclass(frozen=True)
class Piece:
    probe: str
    coefficient: float
    what: str                    # what this multiple of the probe stands for in the crossing
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Recipe:
    mechanism: str
    crossing_probe: str          # the probe whose environment-minus-native difference is the crossing
    pieces: tuple[Piece, ...]
    unexplained: str             # what the rest is, in words
    caveat: str = ""

    def terms(self) -> list[tuple[str, dict, float]]:
        return [(p.probe, p.params, p.coefficient) for p in self.pieces]


_GETPID_REPLACED = Piece(CROSSING_PROBE, -1.0, "minus the native system call the crossing is measured over")

#: How a crossing is made, per mechanism.  Natively measured pieces only; the rest is the sandbox's.
RECIPES: dict[str, Recipe] = {r.mechanism: r for r in [
    Recipe("systrap", CROSSING_PROBE, (
        Piece("seccomp_trap", 1.0, "seccomp trap + SIGSYS delivery to the stub's handler + sigreturn"),
        _GETPID_REPLACED,
        # the stub hands the call to the Sentry through shared memory and a futex, and waits for the reply
        Piece("service_shm", 1.0, "hand-off to another process through shared memory + futex and back",
              {"bytes": 0}),
        Piece("service_direct", -1.0, "minus the server's own getppid inside that hand-off", {"bytes": 0}),
    ), "the Sentry's dispatch and getpid in Go, and the stub's register save/restore",
        "the Sentry may spin instead of sleeping on the futex: then the hand-off costs less than measured here"),
    Recipe("ptrace", CROSSING_PROBE, (
        Piece("ptrace_sysemu_stop", 1.0, "one PTRACE_SYSEMU stop: tracee entry, tracer's waitpid + resume "
              "(two context switches)"),
        _GETPID_REPLACED,
    ), "the tracer's register reads and writes (PTRACE_GETREGS/SETREGS) and its own handling of the call"),
    Recipe("fuse-request", FILE_CROSSING_PROBE, (
        # docs/environments.md: a stat at the probes' depth is 5 requests (5 reads, 5 writes of /dev/fuse)
        Piece("pipe_pingpong", 5.0, "5 requests to the file server, each a process round trip (two context "
              "switches; the pipe's 4 system calls stand in for the kernel's queueing and the server's 2)"),
    ), "the FUSE kernel module's request handling and the server's lookups on its backing files",
        "with the kernel's attribute and entry caches on (fuse), fewer than 5 requests reach the server: "
        "the pieces then overstate the crossing"),
]}

#: The mechanism of each sandbox environment (environments/__init__.py names them).
ENVIRONMENT_MECHANISM = {
    "gvisor": "systrap", "gvisor-gofer": "systrap", "gvisor-ptrace": "ptrace", "uml": "ptrace",
    "fuse": "fuse-request", "fuse-nocache": "fuse-request",
}

TERM_COLUMNS = ["environment", "mechanism", "placement", "part", "probe", "variant", "coefficient",
                "estimate_ns", "ci_low_ns", "ci_high_ns", "campaign_id", "n_runs", "what"]
SUMMARY_COLUMNS = ["environment", "mechanism", "placement", "crossing_probe", "crossing_ns", "crossing_low_ns",
                   "crossing_high_ns", "pieces_ns", "pieces_low_ns", "pieces_high_ns", "unexplained_ns",
                   "unexplained_low_ns", "unexplained_high_ns", "adds_up", "verdict", "unexplained_is", "caveat",
                   "level"]


class MechanismError(OsbenchError, ValueError):
    """An environment or mechanism the decomposition does not know."""


@dataclass(frozen=True)
class Combination:
    value: float
    ci_low: float
    ci_high: float


def linear_combination_ci(terms: list[tuple[float, stats.RunData]], level: float = stats.DEFAULT_LEVEL
                          ) -> Combination:
    """sum(c * exp(mean log run median)) with a delta-method Welch interval;
    every term needs >= 2 runs (as `architectures.geomean_difference_ci`)."""
    value = var = denom = 0.0
    for c, data in terms:
        v = data.run_values("median")
        if v.size < 2:
            raise ValueError(f"a combination's interval needs >= 2 runs per term (a term has {v.size})")
        g = math.exp(v.mean())
        part = (c * g) ** 2 * v.var(ddof=1) / v.size
        value += c * g
        var += part
        denom += part ** 2 / (v.size - 1)
    df = var ** 2 / denom if denom > 0 else float(sum(d.n_runs for _, d in terms) - len(terms))
    half = float(sps.t.ppf(0.5 + level / 2, max(df, 1.0))) * math.sqrt(var)
    return Combination(value, value - half, value + half)


def _variant(probe: str, params: dict) -> str:
    p = registry.get_probe(probe)
    return registry.variant_label(p, registry.resolve_params(p, params))


def _condition(samples: pd.DataFrame, environment: str, probe: str, variant: str, placement: str,
               prefer_campaign: str = "") -> pd.DataFrame:
    """One condition's measured batches from one campaign: `prefer_campaign` if it has the condition,
    else the newest campaign that does (campaign ids start with their UTC start time).  A single-party
    probe is measured same_cpu only: it stands for every placement.  The file system is part of a file
    probe's variant ('fs=...'): it is ignored here, the environment decides it."""
    s = samples[(samples["environment"] == environment) & (samples["probe"] == probe)
                & ~samples["warmup"].astype(bool)]
    s = s[s["variant"].map(_without_fs) == variant]
    if not registry.PROBES[probe].two_party:
        placement = "same_cpu"
    s = s[s["placement"] == placement]
    if s.empty:
        return s
    ids = sorted(s["campaign_id"].unique())
    cid = prefer_campaign if prefer_campaign in ids else ids[-1]
    return s[s["campaign_id"] == cid]


def _without_fs(variant: str) -> str:
    return ",".join(p for p in str(variant or "").split(",") if p and not p.startswith("fs="))


def _round_of(campaign_id: str) -> str:
    """The UTC start shared by the campaigns of one round: '20261123T135922Z-vm-gvisor' -> '20261123T135922Z'."""
    return campaign_id.split("-", 1)[0]


def _native_campaign_of_round(samples: pd.DataFrame, baseline: str, campaign_id: str) -> str:
    ids = samples.loc[samples["environment"] == baseline, "campaign_id"].unique()
    return next((c for c in ids if _round_of(c) == _round_of(campaign_id)), "")


def decompose(samples: pd.DataFrame, *, baseline: str = "native", level: float = stats.DEFAULT_LEVEL,
              environments: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, terms) for each sandbox environment and placement of ``samples`` (one host's
    campaigns; the native pieces may come from a campaign of their own).  summary: the crossing, the
    sum of its pieces and the rest, each with its interval, and whether the pieces add up;
    terms: every piece with its own estimate (coefficient 1 each: the multiple is in `coefficient`)."""
    envs = environments or [e for e in dict.fromkeys(samples["environment"]) if e in ENVIRONMENT_MECHANISM]
    for e in envs:
        if e not in ENVIRONMENT_MECHANISM:
            raise MechanismError(f"no mechanism known for environment {e!r} (known: "
                                 f"{', '.join(ENVIRONMENT_MECHANISM)})")
    summary, term_rows = [], []
    for env in envs:
        recipe = RECIPES[ENVIRONMENT_MECHANISM[env]]
        crossing_variant = _variant(recipe.crossing_probe, {})
        env_s = samples[(samples["environment"] == env) & (samples["probe"] == recipe.crossing_probe)]
        if env_s.empty:   # said, not dropped: a reader sees which sandbox has no breakdown and why
            summary.append(_undecomposed(env, recipe, "", level, f"no crossing: {recipe.crossing_probe} "
                                         f"was not measured in {env}"))
        for placement in sorted(env_s["placement"].unique()):
            sub = _condition(samples, env, recipe.crossing_probe, crossing_variant, placement)
            if sub.empty:
                continue
            env_cid = sub["campaign_id"].iloc[0]
            base = _condition(samples, baseline, recipe.crossing_probe, crossing_variant, placement,
                              _native_campaign_of_round(samples, baseline, env_cid))
            if sub["run"].nunique() < 2 or base["run"].nunique() < 2:
                continue
            crossing = {(env_cid, recipe.crossing_probe): (1.0, sub),
                        (base["campaign_id"].iloc[0], recipe.crossing_probe): (-1.0, base)}
            pieces, missing = {}, []
            for piece in recipe.pieces:
                v = _variant(piece.probe, piece.params)
                # the crossing's own native campaign first: native getpid then cancels out of the rest
                part = _condition(samples, baseline, piece.probe, v, placement, base["campaign_id"].iloc[0])
                if part["run"].nunique() < 2:
                    missing.append(piece.probe + (f" ({v})" if v else ""))
                    continue
                key = (part["campaign_id"].iloc[0], piece.probe, v)
                pieces[key] = (piece.coefficient, part)
                one = linear_combination_ci([(1.0, stats.run_data(part))], level)
                term_rows.append({"environment": env, "mechanism": recipe.mechanism, "placement": placement,
                                  "part": "piece", "probe": piece.probe, "variant": v,
                                  "coefficient": piece.coefficient, "estimate_ns": one.value,
                                  "ci_low_ns": one.ci_low, "ci_high_ns": one.ci_high, "campaign_id": key[0],
                                  "n_runs": part["run"].nunique(), "what": piece.what})
            cx = linear_combination_ci([(c, stats.run_data(d)) for c, d in crossing.values()], level)
            row = {"environment": env, "mechanism": recipe.mechanism, "placement": placement,
                   "crossing_probe": recipe.crossing_probe, "crossing_ns": cx.value, "crossing_low_ns": cx.ci_low,
                   "crossing_high_ns": cx.ci_high, "unexplained_is": recipe.unexplained, "caveat": recipe.caveat,
                   "level": level}
            if missing:
                summary.append({**row, **_undecomposed(env, recipe, placement, level, "native pieces not "
                                                       f"measured on this host: {', '.join(missing)}", crossing=False)})
                continue
            ps = linear_combination_ci([(c, stats.run_data(d)) for c, d in pieces.values()], level)
            rest = _merged(crossing, pieces)
            un = linear_combination_ci([(c, stats.run_data(d)) for c, d in rest], level)
            adds_up = un.ci_low <= 0.0 <= un.ci_high
            row.update(pieces_ns=ps.value, pieces_low_ns=ps.ci_low, pieces_high_ns=ps.ci_high,
                       unexplained_ns=un.value, unexplained_low_ns=un.ci_low, unexplained_high_ns=un.ci_high,
                       adds_up=adds_up, verdict=_verdict(un, cx, adds_up, recipe))
            summary.append(row)
    return (pd.DataFrame(summary, columns=SUMMARY_COLUMNS).reset_index(drop=True),
            pd.DataFrame(term_rows, columns=TERM_COLUMNS))


def _undecomposed(env: str, recipe: Recipe, placement: str, level: float, why: str, crossing: bool = True) -> dict:
    """A summary row without a breakdown (NaN figures, adds_up None), saying why."""
    nan = float("nan")
    row = {"environment": env, "mechanism": recipe.mechanism, "placement": placement,
           "crossing_probe": recipe.crossing_probe, "pieces_ns": nan, "pieces_low_ns": nan, "pieces_high_ns": nan,
           "unexplained_ns": nan, "unexplained_low_ns": nan, "unexplained_high_ns": nan, "adds_up": None,
           "verdict": f"not decomposed: {why}", "unexplained_is": recipe.unexplained, "caveat": recipe.caveat,
           "level": level}
    if crossing:
        row.update(crossing_ns=nan, crossing_low_ns=nan, crossing_high_ns=nan)
    return row


def _merged(crossing: dict, pieces: dict) -> list[tuple[float, pd.DataFrame]]:
    """crossing - pieces as one list of terms, the same condition of the same campaign merged (native
    getpid is in both: -1 in the crossing, -1 in the pieces, so it cancels out of the rest)."""
    out: dict = {}
    for (cid, probe, *rest), (c, d) in crossing.items():
        key = (cid, probe, _variant(probe, {}), d["placement"].iloc[0])
        out[key] = (out.get(key, (0.0, d))[0] + c, d)
    for (cid, probe, v), (c, d) in pieces.items():
        key = (cid, probe, v, d["placement"].iloc[0])
        out[key] = (out.get(key, (0.0, d))[0] - c, d)
    return [(c, d) for c, d in out.values() if c != 0.0]


def _verdict(un: Combination, cx: Combination, adds_up: bool, recipe: Recipe) -> str:
    share = un.value / cx.value if cx.value else float("nan")
    rest = f"{formatting.time_plain(un.value)} [{formatting.time_plain(un.ci_low)}, " \
           f"{formatting.time_plain(un.ci_high)}]"
    if adds_up:
        return f"the pieces add up to the crossing within their intervals (rest {rest})"
    if un.value > 0:
        return (f"the pieces do not add up: {rest} ({share:.0%} of the crossing) is left unexplained: "
                f"{recipe.unexplained}")
    return (f"the pieces do not add up: they exceed the crossing by {formatting.time_plain(-un.value)} "
            f"[{formatting.time_plain(-un.ci_high)}, {formatting.time_plain(-un.ci_low)}]"
            + (f"; {recipe.caveat}" if recipe.caveat else ""))


def from_analysis(result, **kw) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`decompose` of an ``Analysis`` (its samples, every campaign selected), host by host, with a
    ``host`` column: the native pieces may be a campaign of their own beside the sandboxes' round."""
    kw.setdefault("baseline", result.settings.baseline)
    kw.setdefault("level", result.settings.level)
    parts = [(host, *decompose(g, **kw)) for host, g in result.samples.groupby("host", sort=False)]
    if not parts:
        return pd.DataFrame(columns=["host", *SUMMARY_COLUMNS]), pd.DataFrame(columns=["host", *TERM_COLUMNS])
    summary = pd.concat([sm.assign(host=h) for h, sm, _ in parts], ignore_index=True)
    terms = pd.concat([tm.assign(host=h) for h, _, tm in parts], ignore_index=True)
    return summary, terms


def mechanism_table(samples: pd.DataFrame, **kw) -> pd.DataFrame:
    """The summary of `decompose` alone: one row per sandbox environment and placement."""
    return decompose(samples, **kw)[0]


def mechanism_tex(summary: pd.DataFrame, terms: pd.DataFrame) -> str:
    """The decomposition as a LaTeX table: per environment the crossing, each piece (multiple x estimate),
    their sum and the rest, every figure with its interval, and whether the pieces add up."""
    from osbench_analysis.catalog.families import print_name

    def t(v, lo, hi):   # a rest can be negative: time_with_ci_tex gives it a minus sign
        return formatting.time_with_ci_tex(v, lo, hi) if math.isfinite(v) else "--"

    level = summary["level"].iloc[0] if len(summary) else stats.DEFAULT_LEVEL
    lines = [r"\begin{table}[t]\centering\small", r"\begin{tabular}{llll}", r"\toprule",
             r"environment (placement) & part & per crossing & \\ \midrule"]
    for r in summary.itertuples():
        env = f"{formatting.tex_escape(r.environment)} ({formatting.tex_escape(r.placement.replace('_', ' '))})"
        lines.append(f"{env} & crossing ({print_name(r.crossing_probe)}, minus native) & "
                     f"{t(r.crossing_ns, r.crossing_low_ns, r.crossing_high_ns)} & \\\\")
        mine = terms[(terms["environment"] == r.environment) & (terms["placement"] == r.placement)]
        for p in mine.itertuples():
            lines.append(f" & ${p.coefficient:+g}\\times$ {print_name(p.probe)} & "
                         f"{t(p.estimate_ns, p.ci_low_ns, p.ci_high_ns)} & \\\\")
        lines.append(f" & sum of the pieces & {t(r.pieces_ns, r.pieces_low_ns, r.pieces_high_ns)} & \\\\")
        mark = "adds up" if r.adds_up is True else ("does not add up" if r.adds_up is False else "not decomposed")
        lines.append(f" & unexplained (the sandbox's own) & "
                     f"{t(r.unexplained_ns, r.unexplained_low_ns, r.unexplained_high_ns)} & {mark} \\\\ \\midrule")
    lines[-1] = lines[-1].replace(r"\midrule", r"\bottomrule")
    lines += [r"\end{tabular}",
              r"\caption{One crossing taken apart: each sandbox's added cost of one system call (one stat on a "
              r"file server) beside the native pieces its mechanism is made of, each measured alone on the same "
              f"host; every figure with its {level:.0%} interval (delta method over run medians, "
              r"Welch degrees of freedom). The rest is what the sandbox itself adds.}".replace("%", r"\%"),
              r"\label{tab:mechanism}", r"\end{table}", ""]
    return "\n".join(lines)


def write_mechanism_table(samples: pd.DataFrame, out_dir: str | Path | None = None, **kw) -> Path:
    """Write `mechanism_tex` of ``samples`` to paper/generated/mechanism_table.tex (or out_dir)."""
    from osbench_analysis.paths import GENERATED_DIR

    summary, terms = decompose(samples, **kw)
    path = Path(out_dir or GENERATED_DIR) / "mechanism_table.tex"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(mechanism_tex(summary, terms))
    return path


APPLICATION_COLUMNS = ["host", "environment", "probe", "variant", "placement", "ratio", "ci_low", "ci_high",
                       "crossing_probe", "crossing_ratio", "crossing_ci_low", "crossing_ci_high", "estimate_ns",
                       "baseline_estimate_ns"]


def applications_table(environment_ratios: pd.DataFrame) -> pd.DataFrame:
    """The application workloads' slowdown per environment (``Analysis.environment_ratios`` rows of
    registry.APPLICATION_PROBES), each beside the same environment's crossing factor (its null system
    call's, else, for a file server, its stat's: architectures.CROSSING_PROBES): the micro factor next
    to what a user running the program feels."""
    r = environment_ratios
    if r is None or r.empty:
        return pd.DataFrame(columns=APPLICATION_COLUMNS)
    apps = r[r["probe"].isin(registry.APPLICATION_PROBES)].copy()
    micro = r[r["probe"].isin(CROSSING_PROBES) & (r["variant"].fillna("").map(_without_fs) == "")].copy()
    micro["_rank"] = micro["probe"].map(CROSSING_PROBES.index)
    micro = micro.sort_values("_rank").drop_duplicates(["host", "environment", "placement"])
    micro = micro.set_index(["host", "environment", "placement"])[["probe", "ratio", "ci_low", "ci_high"]]
    micro.columns = ["crossing_probe", "crossing_ratio", "crossing_ci_low", "crossing_ci_high"]
    apps = apps.join(micro, on=["host", "environment", "placement"])
    return apps[APPLICATION_COLUMNS].reset_index(drop=True)
