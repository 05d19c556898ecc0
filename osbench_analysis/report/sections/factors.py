"""The factors the architectures comparison rests on: each environment over native Linux as measured here
(the rows of the central figure and of Table tab:factors), the published microkernel/hybrid-over-monolithic
factors, and where our intervals lie against them; and SectionInputs, what every section is written from."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from osbench_analysis.catalog.families import probe_family
from osbench_analysis.formatting import sig3, tex_escape
from osbench_analysis.report.sections.common import FILE_SERVER, MAIN_PLACEMENT, _default_variant, _uses_files


def measured_factors(result) -> pd.DataFrame:
    """Each environment over the baseline per probe at the main placement and
    default parameters, with the primitive and family: the rows of the central
    figure and of the architectures table."""
    from osbench_analysis.report.reference_compare import environment_ratios

    env = environment_ratios(result)
    if env.empty:
        return env.assign(family=pd.Series(dtype=str))
    env = env[env["placement"] == MAIN_PLACEMENT]
    env = env[[_default_variant(p, v) for p, v in zip(env["probe"], env["variant"])]]
    host = result.hosts[0]
    env = env[env["host"] == host]
    # a user-space file server only serves file operations: its other rows are native Linux again
    env = env[[arch != FILE_SERVER or _uses_files(p) for arch, p in zip(env["arch_class"], env["probe"])]]
    order = {"user-space-kernel": 0, "hosted-kernel": 1, FILE_SERVER: 2}
    env = env.assign(family=[probe_family(p) for p in env["probe"]],
                     _o=[order.get(a, 3) for a in env["arch_class"]]).sort_values(["_o", "environment"], kind="stable")
    return env.drop(columns="_o").reset_index(drop=True)


def published_factors(reference_root=None) -> pd.DataFrame:
    """Published microkernel/hybrid-over-monolithic factors per primitive, with the study's citation key
    (reference_compare.published_factors: one row per fair pair a study names x metric)."""
    from osbench_analysis.report.reference_compare import published_factors as factors

    return factors(root=reference_root)


@dataclass
class SectionInputs:
    """What the sections are written from: the analysis and the published factors."""
    result: object
    measured: pd.DataFrame
    published: pd.DataFrame
    sources: dict
    reference_root: object = None     # data/reference or a test's copy: what the interposition paragraph reads

    @classmethod
    def build(cls, result, reference_root=None) -> "SectionInputs":
        from osbench_analysis.reference import studies as reference

        return cls(result, measured_factors(result), published_factors(reference_root),
                   reference.load_sources(reference_root), reference_root)


#: A published factor carries no interval; we read it as a range widened by this relative tolerance either way
#: (the studies' own 'about N' reading, rule 'about' of the claims file).
PUBLISHED_TOLERANCE = 0.2


def _published_summary(published: pd.DataFrame, primitive: str) -> str:
    """The published factors of a primitive as ranges by kind: 'hybrid 0.91--2.05 (2); microkernel 7.58--8.63 (3)'."""
    p = published[published["primitive"] == primitive]
    if p.empty:
        return "--"
    parts = []
    for kind, g in p.groupby("subject_arch", sort=True):
        f = g["slowdown_factor"]
        rng = sig3(f.iloc[0]) if len(g) == 1 else f"{sig3(f.min())}--{sig3(f.max())}"
        mark = r"$^\dagger$" if _caveated(g).any() else ""     # not a factor of the design (design_caveats_tex)
        parts.append(f"{tex_escape(kind)} {rng}{mark}")
    return "; ".join(parts)


def _caveated(published: pd.DataFrame) -> pd.Series:
    """Which published factors the study itself puts down to a feature one system lacks, not to its design."""
    if "design_caveat" not in published:
        return pd.Series(False, index=published.index)
    return published["design_caveat"].fillna("").astype(str) != ""


def design_caveats_tex(published: pd.DataFrame, primitives) -> str:
    r"""'$^\dagger$ Process Creation, \citet{miao}: MINIX 3 copies ...' for the caveated factors of these
    primitives: what the dagger in a published range means ('' when none)."""
    p = published[published["primitive"].isin(list(primitives))]
    p = p[_caveated(p)].drop_duplicates(["source_id", "metric_id"])
    return " ".join(f"$^\\dagger$ {tex_escape(r.metric_as_published)}, \\citet{{{r.bibkey}}}: "
                    f"{tex_escape(r.design_caveat)}" for r in p.itertuples())


def _published_sources(published: pd.DataFrame, primitives) -> str:
    """'hybrid: \\citet{a}; microkernel: \\citet{b}' for the published factors of these primitives."""
    p = published[published["primitive"].isin(list(primitives))]
    return "; ".join(f"{tex_escape(kind)}, \\citet{{{','.join(dict.fromkeys(g['bibkey']))}}}"
                     for kind, g in p.groupby("subject_arch", sort=True))


def agreement(measured: pd.DataFrame, published: pd.DataFrame, tolerance: float = PUBLISHED_TOLERANCE) -> pd.DataFrame:
    """Per environment, primitive and kind of published system (hybrid, microkernel): where our interval lies
    against the published range widened by `tolerance` either way ('above', 'overlaps', 'below').  A factor the
    study puts down to a missing feature (its design_caveat: MINIX 3's fork without copy-on-write) is left out."""
    rows = []
    published = published[~_caveated(published)]      # a missing feature's factor says nothing of the design
    for (env, prim), m in measured.groupby(["environment", "primitive"], sort=False):
        for kind, p in published[published["primitive"] == prim].groupby("subject_arch", sort=True):
            lo_p = float(p["slowdown_factor"].min()) * (1 - tolerance)
            hi_p = float(p["slowdown_factor"].max()) * (1 + tolerance)
            lo, hi = float(m["ratio_low"].min()), float(m["ratio_high"].max())
            where = "above" if lo > hi_p else ("below" if hi < lo_p else "overlaps")
            rows.append({"environment": env, "primitive": prim, "kind": kind,
                         "probe": str(m["probe"].iloc[0]) if "probe" in m else prim, "published_low": lo_p,
                         "published_high": hi_p, "measured_low": lo, "measured_high": hi, "ours_is": where})
    return pd.DataFrame(rows, columns=["environment", "primitive", "kind", "probe", "published_low", "published_high",
                                       "measured_low", "measured_high", "ours_is"])


#: At most this many exceptions to a majority are named (more are only counted).
_NAMED_EXCEPTIONS = 3


def _agreement_sentence(ag: pd.DataFrame) -> str:
    """Where our intervals lie against the widened published ranges, counted over every environment's
    primitives, per kind: 'above the hybrid range for 27 of 30 (all but stat under FUSE, ...) and above the
    microkernel range for 7 of 13 (below it for 5) of the environments\'' (the caller's sentence goes on
    ' primitives, and overlaps it for the rest')."""
    from osbench_analysis.catalog.families import print_name
    from osbench_analysis.plots.architectures import env_short

    parts = []
    for kind, g in ag.groupby("kind", sort=True):
        c = g["ours_is"].value_counts()
        above, below = int(c.get("above", 0)), int(c.get("below", 0))
        notes = []
        others = g[g["ours_is"] != "above"]
        if above > len(g) / 2 and 0 < len(others) <= _NAMED_EXCEPTIONS:
            notes.append("all but " + ", ".join(f"{print_name(r.probe)} under {tex_escape(env_short(r.environment))}"
                                                for r in others.itertuples()))
        if below:
            notes.append(f"below it for {below}")
        parts.append(f"above the {tex_escape(kind)} range for {above} of {len(g)}"
                     + (f" ({'; '.join(notes)})" if notes else ""))
    return " and ".join(parts) + " of the environments'"
