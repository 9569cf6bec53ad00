"""The report as data: sections of tables, figures, notes and code blocks, rendered to HTML or Markdown.

Building the content once and rendering it twice keeps the HTML and Markdown reports identical in
substance (same tables, same figures, same notes).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd


@dataclass
class Table:
    """A table; cells are formatted by column (``formats``) or by type (floats with 2 decimals)."""

    frame: pd.DataFrame
    caption: str = ""
    formats: dict[str, str] = field(default_factory=dict)
    """Column -> ``str.format`` spec such as ``{:.1f}`` or ``{:.0%}``."""
    index: bool = False
    """Show the frame's index as the first column."""
    highlight_max: list[str] = field(default_factory=list)
    """Numeric columns whose largest value is shown in bold."""

    def header(self) -> list[str]:
        names = [str(c) for c in self.frame.columns]
        return [str(self.frame.index.name or "")] + names if self.index else names

    def rows(self) -> list[list[tuple[str, bool, bool]]]:
        """Cells as ``(text, is_numeric, is_emphasised)``."""
        frame = self.frame.reset_index() if self.index else self.frame
        present = [c for c in self.highlight_max if c in frame.columns]
        maxima = {c: pd.to_numeric(frame[c], errors="coerce").max() for c in present}
        out = []
        for _, row in frame.iterrows():
            cells = []
            for column, value in row.items():
                numeric = isinstance(value, numbers.Number) and not isinstance(value, bool | np.bool_)
                emphasised = column in maxima and numeric and value == maxima[column]
                cells.append((format_cell(value, self.formats.get(str(column))), numeric, bool(emphasised)))
            out.append(cells)
        return out


@dataclass
class Figure:
    """A rendered figure: PNG bytes plus the text a reader without images needs."""

    key: str
    """File stem (``figures/<key>.png``) and HTML id."""
    png: bytes
    alt: str
    caption: str = ""
    width_px: int | None = None
    """Display width in CSS pixels (None: the image's own width)."""


@dataclass
class Note:
    text: str
    kind: Literal["info", "warning"] = "info"


@dataclass
class Code:
    """Preformatted text (the run configuration), collapsed in HTML."""

    text: str
    caption: str = ""


@dataclass
class Bullets:
    """A short list of findings."""

    items: list[str]


Block = Table | Figure | Note | Code | Bullets


@dataclass
class Section:
    id: str
    title: str
    intro: str = ""
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Report:
    title: str
    subtitle: str
    cards: list[tuple[str, str]]
    """Headline numbers shown at the top: ``(label, value)``."""
    sections: list[Section]


def format_cell(value: object, spec: str | None = None) -> str:
    """Text of one cell: missing values as an en dash, floats with 2 decimals unless ``spec`` says."""
    if value is None or value is pd.NA or (isinstance(value, float | np.floating) and math.isnan(value)):
        return "–"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if spec:
        try:
            return spec.format(value)
        except (ValueError, TypeError):
            return str(value)
    if isinstance(value, float | np.floating):
        return f"{value:.2f}"
    return str(value)


def with_interval(value: float, low: float, high: float, digits: int = 2) -> str:
    """``89.08 [87.90, 90.21]`` (the point estimate alone when the interval is missing)."""
    point = format_cell(value, f"{{:.{digits}f}}")
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (low, high)):
        return point
    return f"{point} [{low:.{digits}f}, {high:.{digits}f}]"
