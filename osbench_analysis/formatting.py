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


def interval_plain(lo: float, hi: float, like: float) -> str:
    """'[5.80, 6.90] µs', in the unit of ``like`` (the estimate), so a row reads in one unit."""
    scale, unit = time_unit(like)
    return f"[{sig3_rounded(lo / scale)}, {sig3_rounded(hi / scale)}] {_PLAIN_UNITS.get(unit, unit)}"


#: Columns of the readable estimate table that, when every row says the same, become one line
#: above the table (its caption, formatting.show) instead of a column repeating it on every row.
_SAME_ON_EVERY_ROW = {"confidence": "{} intervals", "quoted": "quoted: {}",
                      "interval over": "each interval {}", "campaigns": "{} campaigns per row"}


def readable_estimates(est, *, campaign_id: bool | None = None, compact: bool = True):
    """The estimate table as a reader reads it: one row per condition, the quoted
    time and its interval in one unit per row (ns, µs or ms, three significant
    digits), what is quoted and with which interval method, runs, flagged share,
    and the warning in full.  ``campaign_id``: show the column (default: when an
    environment has more than one campaign, so their rows can be told apart).
    ``compact``: a column that says the same on every row (the confidence, what is
    quoted, one campaign per row) is said once, in the table's caption
    (``attrs["caption"]``, which formatting.show displays), and an empty variant or
    warning column is left out, so the table fits a screen."""
    import pandas as pd

    if campaign_id is None:
        campaign_id = "campaign_id" in est and bool((est.groupby("environment")["campaign_id"].nunique() > 1).any())
    keys = ["environment", *(["campaign_id"] if campaign_id else []),
            *(["host"] if "host" in est and est["host"].nunique() > 1 else []), "probe", "variant", "placement"]
    out = est[keys].copy()
    out["time"] = [time_plain(v) for v in est["estimate_ns"]]
    out["interval"] = [interval_plain(lo, hi, v) for v, lo, hi in
                       zip(est["estimate_ns"], est["ci_low_ns"], est["ci_high_ns"])]
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
    if compact and "campaigns" in out and "interval over" in out:
        # one column says what an interval is over: 'within one campaign', 'over 2 campaigns'
        out["interval over"] = [o if n == 1 or pd.isna(n) else f"over {n} campaigns"
                                for o, n in zip(out["interval over"], out["campaigns"])]
        out = out.drop(columns=["campaigns"])
    if compact and "campaign_id" in out:
        # a pooled row names its campaigns by their times ('pooled: 20261126T113057Z + 20261126T123020Z'):
        # host and environment are in their own columns, and the full ids made the column 74 characters wide
        out["campaign_id"] = [_short_pooled(c) for c in out["campaign_id"].astype(str)]
    if compact and len(out) > 1:
        said = [(c, str(out[c].iloc[0])) for c in _SAME_ON_EVERY_ROW if c in out and out[c].nunique() == 1]
        empty = [c for c in ("variant", "warning") if c in out and not (out[c].astype(str) != "").any()]
        out = out.drop(columns=[c for c, _ in said] + empty)
        said = [(c, v) for c, v in said if (c, v) != ("campaigns", "1")]   # "within one campaign" says it
        if said:
            out.attrs["caption"] = "Every row: " + ", ".join(_SAME_ON_EVERY_ROW[c].format(v) for c, v in said) + "."
    return out


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


def show(table):
    """A table for the notebook: no index, numbers read as formatting says (units,
    three significant digits), text left-aligned and never cut short (pandas cuts
    cells at 50 characters), long text wrapping in its own column; the caption
    of a compact table (``table.attrs["caption"]``) above it."""
    fmt = {c: f for c in table.columns if (f := _cell_format(str(c), table[c].dtype)) is not None}
    text = [c for c in _TEXT_COLUMNS if c in table.columns]
    width = f"{30 if len(text) <= 1 else max(18, 48 // len(text))}em"   # several sentence columns share a screen
    styled = (table.style.hide(axis="index").format(na_rep="").format(fmt)   # a pooled row's runs: blank, not <NA>
              .set_properties(**{"text-align": "left", "white-space": "nowrap"})
              .set_properties(subset=text, **{"white-space": "normal", "width": width, "min-width": width})
              # headers over their column's left edge, as the cells are (pandas right-aligns them)
              .set_table_styles([{"selector": "th", "props": "text-align: left;"}], overwrite=False))
    if table.attrs.get("caption"):
        styled = styled.set_caption(table.attrs["caption"]).set_table_styles(
            [{"selector": "caption", "props": "caption-side: top; text-align: left; padding-bottom: 0.4em;"}],
            overwrite=False)
    return styled
