"""Number formatting shared by every view of a report (terminal, HTML, plots) and by the CLI.

One rule per kind of number, so that the terminal and the page print the same figure the same way:
SI prefixes for energies, times and bytes (``fmt_si``, ``fmt_bytes``), thousands separators for counts
(``fmt_count``), ratios with an ``x`` (``fmt_ratio``), and ``-`` for a figure that does not exist. A ratio
whose denominator is zero is ``Ratio(None, reason)``: printed as ``-`` with the reason beside it, never
divided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DASH = "-"


@dataclass(frozen=True)
class Ratio:
    """A ratio, or why there is none (a zero or missing denominator)."""

    value: float | None
    reason: str = ""

    @classmethod
    def of(cls, top: float | None, bottom: float | None, what: str = "the denominator") -> Ratio:
        """top / bottom, or None with the reason: ``what`` is 0 (or missing)."""
        if top is None or bottom is None:
            return cls(None, f"{what} is not known")
        if bottom == 0:
            return cls(None, "nothing to compare: both are 0" if top == 0 else f"{what} is 0")
        return cls(top / bottom)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "reason": self.reason} if self.value is None else {"value": self.value}

    def __str__(self) -> str:
        return fmt_ratio(self.value) if self.value is not None else f"{DASH} ({self.reason})"


def fmt_si(value: float | None, unit: str, digits: int = 4) -> str:
    """12.3 uJ, 4.5 ms, 1.2 MB ... (None -> '-')."""
    if value is None:
        return DASH
    if value == 0:
        return f"0 {unit}"
    for factor, prefix in (
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1, ""),
        (1e-3, "m"),
        (1e-6, "u"),
        (1e-9, "n"),
        (1e-12, "p"),
    ):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value / 1e-15:.{digits}g} f{unit}"


def fmt_bytes(n: float | None) -> str:
    """596 B, 1.2 kB, 3.68 MB (decimal prefixes, as the profiles' memory sizes)."""
    if n is None:
        return DASH
    return f"{int(n):,} B" if abs(n) < 1e3 else fmt_si(float(n), "B")


def fmt_ratio(x: float | None) -> str:
    """78,465x / 2.5x / 0.123x ('-' for None)."""
    if x is None:
        return DASH
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def fmt_count(v: float | None) -> str:
    """A count per inference: 1,234 (whole or large) or 0.5625 (a fraction of one)."""
    if v is None:
        return DASH
    return f"{v:,.0f}" if float(v).is_integer() or abs(v) >= 1000 else f"{v:.4g}"


def fmt_pct(v: float | None) -> str:
    return DASH if v is None else f"{v:.2%}"


def fmt_accuracy(v: float | None, samples: int | None = None) -> str:
    """0.9583, or 0.9583 (360 samples)."""
    if v is None:
        return DASH
    return f"{v:.4f}" if samples is None else f"{v:.4f} ({plural(samples, 'sample')})"


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 sample', '24 samples' (``many`` for an irregular plural)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def fmt_cell(v: Any) -> str:
    """A table cell from a raw value: floats to 4 significant digits, ints with separators."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def short_name(name: str) -> str:
    """Layer names short enough for a terminal column: stem = patch_embed, bI.a / bI.m = block I attention / MLP."""
    return name.replace("patch_embed.", "stem.").replace("block.", "b").replace(".attn.", ".a.").replace(".mlp.", ".m.")
