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
    """'6.30 [5.80, 6.90] \\textmu s': the estimate and its interval in one unit (digits: with_ci)."""
    scale, unit = time_unit(value)
    return f"{with_ci(value / scale, lo / scale, hi / scale)} {unit}"


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
