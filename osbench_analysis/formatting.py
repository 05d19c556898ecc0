"""Numbers and names as a reader sees them: three significant digits, a
readable time unit, TeX escaping and TeX macro names.  Analysis, plots and
the paper writer all format through here, so analysis never imports the
paper writer."""
from __future__ import annotations

import re

import numpy as np

_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_DIGITS = {"0": "Zero", "1": "One", "2": "Two", "3": "Three", "4": "Four", "5": "Five", "6": "Six",
           "7": "Seven", "8": "Eight", "9": "Nine"}
_UNITS = ((1e6, "ms"), (1e3, r"\textmu s"), (1.0, "ns"))


def tex_escape(text: str) -> str:
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in str(text))


def macro_name(*parts: str) -> str:
    """'osb' + CamelCase of the parts, letters only (TeX macro names cannot hold digits)."""
    words = re.split(r"[^A-Za-z0-9]+", " ".join(str(p) for p in parts))
    name = "".join(w[:1].upper() + w[1:] for w in words if w)
    return "osb" + "".join(_DIGITS.get(ch, ch) for ch in name)


def sig3(x: float) -> str:
    """Three significant digits without an exponent: 1150, 72.7, 6.30, 0.164."""
    if not np.isfinite(x):
        return "n/a"
    digits = max(0, 2 - int(np.floor(np.log10(abs(x))))) if x else 0
    return f"{x:.{digits}f}"


def time_unit(ns: float) -> tuple[float, str]:
    """The scale and unit that make `ns` readable: (1e3, µs) for 6300 ns."""
    return next(((scale, unit) for scale, unit in _UNITS if abs(ns) >= scale), _UNITS[-1])


def format_time_ns(ns: float) -> tuple[str, str]:
    """A readable magnitude and its unit: ('195', 'ns'), ('6.17', 'µs'), ('1.12', 'ms')."""
    scale, unit = time_unit(ns)
    return sig3(ns / scale), unit


def sig(x: float, digits: int = 3) -> str:
    """`digits` significant digits without an exponent (sig3 for three)."""
    if not np.isfinite(x):
        return "n/a"
    d = max(0, digits - 1 - int(np.floor(np.log10(abs(x))))) if x else 0
    return f"{x:.{d}f}"


def ci_parts(value: float, lo: float, hi: float) -> tuple[str, str, str]:
    """The paper's one rule for an estimate and its interval: every number to three significant digits, one
    more digit for all three at a time (up to three more) while a bound prints as the estimate:
    '402 [40.6, 764]', '1.004 [1.001, 1.008]', never '1.00 [1.00, 1.01]'."""
    for digits in range(3, 7):
        parts = sig(value, digits), sig(lo, digits), sig(hi, digits)
        if parts[1] != parts[0] != parts[2] or value in (lo, hi) or not np.isfinite(value):
            break
    return parts


def with_ci(value: float, lo: float, hi: float) -> str:
    """'24.0 [21.2, 26.8]': the estimate with its interval by ci_parts' rule."""
    v, lo_s, hi_s = ci_parts(value, lo, hi)
    return f"{v} [{lo_s}, {hi_s}]"


def time_with_ci_tex(value: float, lo: float, hi: float) -> str:
    """'6.30 [5.80, 6.90] \\textmu s': the estimate and its interval in one unit (digits: with_ci); a
    negative bound or value (a difference, a rest) with a TeX minus sign, never a hyphen."""
    scale, unit = time_unit(value)
    return f"{with_ci(value / scale, lo / scale, hi / scale)} {unit}".replace("-", "$-$")


def ratio_with_ci(ratio: float, lo: float, hi: float) -> str:
    return with_ci(ratio, lo, hi)


def percent_tex(fraction: float) -> str:
    """0.95 -> '95\\%', 0.999 -> '99.9\\%' (one decimal at most, TeX-escaped)."""
    s = f"{100 * fraction:.1f}".rstrip("0").rstrip(".")
    return s + r"\%"


_RATES = ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s"))


def rate_with_ci_tex(nbytes: float, ns: float, lo_ns: float, hi_ns: float) -> str:
    """A bandwidth from the time one operation of `nbytes` takes: '4.10 [3.90, 4.32] GB/s' (decimal units;
    the slow end of the time interval is the low end of the rate's)."""
    rate, lo, hi = (nbytes / (t * 1e-9) for t in (ns, hi_ns, lo_ns))
    scale, unit = next(((k, u) for k, u in _RATES if rate >= k), _RATES[-1])
    return f"{with_ci(rate / scale, lo / scale, hi / scale)} {unit}"


def bytes_tex(n: int) -> str:
    """8388608 -> '8~MiB', 65536 -> '64~KiB', 256 -> '256~B'."""
    for k, u in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= k and n % k == 0:
            return f"{n // k}~{u}"
    return f"{n}~B"


# ------------------------------------------------------------- tables on screen

_PLAIN_UNITS = {r"\textmu s": "µs"}


def time_plain(ns: float) -> str:
    """'6.17 µs': three significant digits in the unit that suits this value."""
    value, unit = format_time_ns(ns)
    return f"{value} {_PLAIN_UNITS.get(unit, unit)}"


def sig3_rounded(x: float) -> str:
    """sig3 of x rounded to three significant digits first, so a table never shows a fourth
    digit: 1302 -> '1300', 0.99996 -> '1.00' (sig3 gives '1302' and '1.000')."""
    return sig3(float(f"{x:.3g}")) if np.isfinite(x) else sig3(x)


def with_ci_plain(value: float, lo: float, hi: float) -> str:
    """'4.29 [4.29, 4.29]': an estimate and its interval (or range) on screen, each to three significant
    digits, never more (with_ci, the paper's rule, adds digits while a bound prints as the estimate: the
    notebook's Mach table read '4.29210 [4.29113, 4.29212]')."""
    return f"{sig3_rounded(value)} [{sig3_rounded(lo)}, {sig3_rounded(hi)}]"


def times_plain(factor: float) -> str:
    """'6.93x', '0.700x', '1150x': a factor to three significant digits ('.3g' printed 0.7x beside 0.461x)."""
    return f"{sig3_rounded(factor)}x"


def interval_plain(lo: float, hi: float, like: float) -> str:
    """'[5.80, 6.90] µs', in the unit of ``like`` (the estimate), so a row reads in one unit."""
    scale, unit = time_unit(like)
    return f"[{sig3_rounded(lo / scale)}, {sig3_rounded(hi / scale)}] {_PLAIN_UNITS.get(unit, unit)}"


#: Columns of the readable estimate table that, when every row says the same, become one line
#: above the table (its caption, formatting.show) instead of a column repeating it on every row.
_SAME_ON_EVERY_ROW = {"confidence": "{} intervals", "quoted": "quoted: {}",
                      "interval over": "each interval {}", "campaigns": "{} campaigns per row"}

#: The estimate table's warnings as short codes, by the words a warning begins with (stats/heterogeneity.py,
#: stats/quote.py, stats/quality.py), each with the line the table's legend says; a warning of any other kind
#: gets a numbered code (w1, w2, ...).  The full texts: Analysis.table(full=True)["warning"].
WARNING_CODES = (
    (r"runs are not alike", "minority",
     "a minority of runs is slower (or faster) than the others, and more runs are needed to include it"),
    (r"only \d+ run", "few-runs", "too few runs: run-to-run variance poorly estimated"),
    (r"the \d+ runs differ beyond batch noise", "low-level",
     "the typical run's interval [min, max] has less than the asked confidence (too few runs)"),
    (r"multimodal", "modes", "the batches fall into two or more modes"),
    (r"unstable", "unstable", "large batch-to-batch spread"),
    (r"the slowest batch", "outlier", "one batch far slower than the median"),
    (r"runs differ systematically", "runs-differ", "run medians vary beyond batch noise"),
    (r"batches as short as", "short", "batches too short to time well"),
    (r"\d+% of batches flagged", "flagged", "many batches flagged for interference"),
    (r"drift", "drift", "per-op time drifts from the first batch to the last"),
)

#: what is quoted, in a word (the caption's legend says the rest)
_QUOTED_SHORT = {"typical run": "typical", "mean over runs": "mean", "mean over campaigns": "pooled"}


def warning_codes(warnings) -> tuple[list[str], dict[str, str]]:
    """Each row's warnings ('; '-joined texts) as short codes ('minority, few-runs'), and the legend:
    code -> what it means, for the codes used."""
    codes, legend, other = [], {}, {}
    for text in warnings:
        row = []
        for part in (p.strip() for p in str(text or "").split(";")):
            if not part:
                continue
            hit = next(((c, m) for pat, c, m in WARNING_CODES if re.match(pat, part)), None)
            if hit is None:
                kind = part.split(":")[0][:60]
                hit = other.setdefault(kind, (f"w{len(other) + 1}", kind))
            legend[hit[0]] = hit[1]
            row.append(hit[0])
        codes.append(", ".join(dict.fromkeys(row)))
    return codes, legend


def short_campaign(campaign_id: str) -> str:
    """A campaign's label in a table whose environment and host have columns of their own: its UTC start
    to the minute ('20261126T113057Z-vm-native' -> '11-26 11:30'); a pooled row's: 'pooled (3)'."""
    cid = str(campaign_id)
    if cid.startswith("pooled:"):
        return f"pooled ({len(cid[len('pooled:'):].split(','))})"
    m = re.match(r"\d{4}(\d\d)(\d\d)T(\d\d)(\d\d)\d\dZ", cid)
    return f"{m[1]}-{m[2]} {m[3]}:{m[4]}" if m else short_label(cid)


def short_label(text: str, width: int = 16) -> str:
    """A label cut to ``width`` characters with an ellipsis (hosts, names): a table column stays narrow."""
    text = str(text)
    return text if len(text) <= width else text[:width - 1] + "…"


#: the compact table's first columns, in this order: what is measured, the estimate, its interval
_FIRST = ["probe", "variant", "placement", "time", "interval"]


def readable_estimates(est, *, campaign_id: bool | None = None, compact: bool = True):
    """The estimate table as a reader reads it: one row per condition, what is measured
    (probe, variant, placement), the quoted time and its interval in one unit per row (ns,
    µs or ms, three significant digits), then where (environment, host, campaign), what is
    quoted, runs, flagged share, and the warnings.  ``campaign_id``: show the campaign
    (default: when an environment has more than one campaign, so their rows can be told
    apart).  ``compact`` (the default, sized for a 1,200 px notebook column): a column that
    says the same on every row is said once, in the table's caption (``attrs["caption"]``,
    which formatting.show displays), an empty variant or warning column is left out, a
    campaign reads as its start ('11-26 11:30') and a pooled row as 'pooled (3)', a host is
    cut to 16 characters, what is quoted is one word and each warning a short code, both
    explained in the legend (``attrs["legend"]``).  ``compact=False``: every column in full,
    warnings as sentences.  Columns this function does not know pass through, after its own."""
    import pandas as pd

    if campaign_id is None:
        campaign_id = "campaign_id" in est and bool((est.groupby("environment")["campaign_id"].nunique() > 1).any())
    where = ["environment", *(["host"] if "host" in est and est["host"].nunique() > 1 else []),
             *(["campaign_id"] if campaign_id else [])]
    out = est[["probe", "variant", "placement"]].copy()
    out["time"] = [time_plain(v) for v in est["estimate_ns"]]
    out["interval"] = [interval_plain(lo, hi, v) for v, lo, hi in
                       zip(est["estimate_ns"], est["ci_low_ns"], est["ci_high_ns"])]
    for c in where:
        out[c] = est[c]
    conf = est["confidence"] if "confidence" in est else est.get("level", pd.Series(float("nan"), est.index))
    out["confidence"] = [f"{100 * c:.3g}%" if np.isfinite(c) else "n/a" for c in conf]
    if "quoted" in est:
        out["quoted"] = [f"{q} ({m})" for q, m in zip(est["quoted"], est["ci_method"])]
    out["runs"] = est["n_runs"].astype("Int64")   # pooled rows: runs are per campaign
    if "flagged_fraction" in est:
        out["flagged"] = [f"{100 * f:.0f}%" if np.isfinite(f) else "" for f in est["flagged_fraction"]]
    if "n_campaigns" in est:
        out["campaigns"] = est["n_campaigns"].astype("Int64")
    if "interval_over" in est:   # within one campaign, or over N campaigns (the pooled rows)
        out["interval over"] = est["interval_over"].fillna("").astype(str)
    if "warning" in est:
        out["warning"] = est["warning"].fillna("").astype(str)
    out = out.reset_index(drop=True)
    if not compact:
        return out
    # what is measured first, each quantity's environments together, the pooled rows (if any) after the rest
    pooled_row = out["campaign_id"].astype(str).str.startswith("pooled:") if "campaign_id" in out else False
    out = (out.assign(_pooled=pooled_row).sort_values(["_pooled", "probe", "placement"], kind="stable")
           .drop(columns="_pooled").reset_index(drop=True))
    legend = {}
    if "campaigns" in out and "interval over" in out:
        # one column says what an interval is over: 'within one campaign', 'over 2 campaigns'
        out["interval over"] = [o if n == 1 or pd.isna(n) else f"over {n} campaigns"
                                for o, n in zip(out["interval over"], out["campaigns"])]
        out = out.drop(columns=["campaigns"])
    if "campaign_id" in out:
        pooled = out["campaign_id"].astype(str).str.startswith("pooled:")
        out["campaign_id"] = [short_campaign(c) for c in out["campaign_id"]]
        if pooled.any() and "interval over" in out:   # a pooled row says it: the column is left out
            out = out.drop(columns=["interval over"])
    if "host" in out:
        out["host"] = [short_label(h) for h in out["host"]]
    if "variant" in out:   # a space after each comma: formatting.show lets the column wrap there
        out["variant"] = out["variant"].fillna("").astype(str).str.replace(",", ", ", regex=False)
    said = [(c, str(out[c].iloc[0])) for c in _SAME_ON_EVERY_ROW if c in out and out[c].nunique() == 1] \
        if len(out) > 1 else []
    empty = [c for c in ("variant", "warning") if c in out and not (out[c].astype(str) != "").any()]
    out = out.drop(columns=[c for c, _ in said] + empty)
    if "quoted" in out:
        for q in dict.fromkeys(out["quoted"]):
            what, _, method = q.partition(" (")
            legend.setdefault(_QUOTED_SHORT.get(what, what), f"{what} ({method}" + (
                ", its campaign 'pooled (n)': over n campaigns of one host" if what == "mean over campaigns" else ""))
        out["quoted"] = [_QUOTED_SHORT.get(q.partition(" (")[0], q.partition(" (")[0]) for q in out["quoted"]]
    if "warning" in out:
        out["warning"], codes = warning_codes(out["warning"])
        legend.update(codes)
    said = [(c, v) for c, v in said if (c, v) != ("campaigns", "1")]   # "within one campaign" says it
    if said:
        out.attrs["caption"] = "Every row: " + ", ".join(_SAME_ON_EVERY_ROW[c].format(v) for c, v in said) + "."
    if legend:
        out.attrs["legend"] = legend
    return out


def legend_text(legend: dict | None) -> str:
    """A table's legend (code -> meaning) as one line under its caption: 'typical = typical run (runs-os); ...'."""
    return "; ".join(f"{code} = {meaning}" for code, meaning in (legend or {}).items()) + "." if legend else ""


def campaign_stamp(campaign_id: str) -> str:
    """The UTC start a campaign id begins with (store.new_campaign_id: '20261126T113057Z-vm-native' ->
    '20261126T113057Z'); an id that does not begin with one is its own name."""
    m = re.match(r"\d{8}T\d{6}Z", str(campaign_id))
    return m.group(0) if m else str(campaign_id)


def _short_pooled(campaign_id: str) -> str:
    if not campaign_id.startswith("pooled:"):
        return campaign_id
    return "pooled: " + " + ".join(campaign_stamp(i) for i in campaign_id[len("pooled:"):].split(","))


def _cell_format(column: str, dtype):
    """How a numeric column reads: times with their unit, p-values in two digits,
    fractions and ratios in three significant digits; None: as pandas shows it
    (text, flags, counts)."""
    import pandas as pd

    if not pd.api.types.is_float_dtype(dtype):
        return None
    if column.endswith("_ns"):
        return lambda v: time_plain(v) if np.isfinite(v) else "n/a"
    if column in ("p_value", "p"):
        return lambda v: f"{v:.2g}" if np.isfinite(v) else "n/a"
    return lambda v: sig3_rounded(v) if np.isfinite(v) else ""


#: Columns of sentences: they wrap, in a column wide enough to read (a table cell ignores
#: min-width, so a wide table squeezed them to a word per line).
_TEXT_COLUMNS = ("warning", "reason", "sentence", "warnings", "note", "message",
                 # the published studies' tables (reference_comparisons.ipynb)
                 "caption_as_published", "what", "action", "statement", "quote", "reading", "readings_summary",
                 "detail", "how the work differs")


#: the longest cell, in characters, of a text column that is not given a sentence's width
_SHORT_TEXT = 40

#: Label columns that wrap (at the spaces readable_estimates puts after commas) rather than widen the table
_NARROW_WRAP = ("variant",)
_NARROW_WIDTH = "14em"


def show(table):
    """A table for the notebook: no index, numbers read as formatting says (units,
    three significant digits), text left-aligned and never cut short (pandas cuts
    cells at 50 characters), long text wrapping in its own column; the caption
    of a compact table (``table.attrs["caption"]``) above it."""
    fmt = {c: f for c in table.columns if (f := _cell_format(str(c), table[c].dtype)) is not None}
    # a column of sentences gets its reading width; one of short codes (the compact table's warnings) does not
    text = [c for c in _TEXT_COLUMNS if c in table.columns
            and max((len(str(v)) for v in table[c]), default=0) > _SHORT_TEXT]
    narrow = [c for c in _NARROW_WRAP if c in table.columns]
    width = f"{30 if len(text) <= 1 else max(18, 48 // len(text))}em"   # several sentence columns share a screen
    styled = (table.style.hide(axis="index").format(na_rep="").format(fmt)   # a pooled row's runs: blank, not <NA>
              .set_properties(**{"text-align": "left", "white-space": "nowrap"})
              .set_properties(subset=text, **{"white-space": "normal", "width": width, "min-width": width})
              .set_properties(subset=narrow, **{"white-space": "normal", "max-width": _NARROW_WIDTH})
              # headers over their column's left edge, as the cells are (pandas right-aligns them)
              .set_table_styles([{"selector": "th", "props": "text-align: left;"}], overwrite=False))
    caption = " ".join(filter(None, [table.attrs.get("caption"), legend_text(table.attrs.get("legend"))]))
    if caption:
        styled = styled.set_caption(caption).set_table_styles(
            [{"selector": "caption", "props": "caption-side: top; text-align: left; padding-bottom: 0.4em;"}],
            overwrite=False)
    return styled
