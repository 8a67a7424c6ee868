"""Inline SVG charts for the HTML report, generated here (no JavaScript library, no network). Pure.

Every chart is one ``<svg class="chart chart-KIND">`` element with a ``<title>``, sized in CSS
pixels by its ``viewBox`` and scaled down by CSS to its container. Text is escaped; functions
return :class:`markupsafe.Markup` so templates insert it as is. Kinds and their element classes:

* ``chart-bars``: horizontal bars (``rect.bar``) of scores in [0, 1] on a 0–100 % axis, each
  with a confidence whisker (``g.ci``);
* ``chart-delta``: horizontal bars of signed differences around a zero line (``rect.bar.up`` /
  ``rect.bar.down``) with whiskers, on a symmetric percentage-point axis;
* ``chart-stack``: 100 % stacked bars (``rect.segment``, ``data-outcome`` = the class) of
  outcome counts with a legend.

Score and delta charts are compact (two fit side by side on a laptop screen); the stacked chart
spans the page and leaves more room for its labels. A row label (a run id, a benchmark) is never
cut: one longer than the label column is wrapped onto several lines (``tspan``), preferably after
a ``-``, ``_``, ``.``, ``/`` or space, and its row grows to hold them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from trex_eval.report.outcomes import Outcome

ROW_HEIGHT = 26
BAR_HEIGHT = 16
TOP = 30
BOTTOM = 26
LEGEND_ROW = 18
LINE_HEIGHT = 14
"""Px between two lines of one wrapped row label."""
CHAR_WIDTH = 7.0
"""Width in px allowed for one character of 12 px sans-serif text (labels are wrapped to fit; a
generous figure, so that wide letters in a line of them stay inside the label column)."""
_BREAK_AFTER = "-_./ ·"

OUTCOME_COLOURS = {
    Outcome.CORRECT: "#2e7d32",
    Outcome.UNVERIFIED: "#9ccc65",
    Outcome.WRONG: "#c62828",
    Outcome.INFEASIBLE: "#ef6c00",
    Outcome.UNDECIDED: "#78909c",
    Outcome.NO_SOLVE: "#f9a825",
    Outcome.NO_CODE: "#8e24aa",
    Outcome.SYNTAX: "#3949ab",
    Outcome.RUNTIME: "#1e88e5",
    Outcome.LIMIT: "#00897b",
    Outcome.SOLVER_ERROR: "#6d4c41",
    Outcome.ENVIRONMENT: "#9e9d24",
    Outcome.API_ERROR: "#37474f",
    Outcome.MISSING: "#bdbdbd",
    Outcome.OTHER: "#5d4037",
}
"""Fill colour of each outcome class in stacked charts and report badges."""

_Placer = Callable[[float], float]


@dataclass(frozen=True)
class _Layout:
    """Column widths in px: row labels, the plot, and the value printed after each bar."""

    label: int
    plot: int
    value: int

    @property
    def width(self) -> int:
        return self.label + self.plot + self.value

    @property
    def label_chars(self) -> int:
        return int((self.label - 10) / CHAR_WIDTH)


_COMPACT = _Layout(label=190, plot=330, value=100)
_WIDE = _Layout(label=290, plot=460, value=90)


@dataclass(frozen=True)
class _Row:
    """One row of a chart: its top edge and height in px, and its label's lines."""

    top: float
    height: float
    lines: tuple[str, ...]

    @property
    def mid(self) -> float:
        return self.top + self.height / 2

    @property
    def bar_top(self) -> float:
        return self.mid - BAR_HEIGHT / 2


def _rows(layout: _Layout, labels: Sequence[str]) -> list[_Row]:
    """The rows of ``labels`` from :data:`TOP` down, each as tall as its wrapped label needs."""
    rows, top = [], float(TOP)
    for label in labels:
        lines = wrap_label(label, layout.label_chars)
        height = ROW_HEIGHT + LINE_HEIGHT * (len(lines) - 1)
        rows.append(_Row(top, height, lines))
        top += height
    return rows


def wrap_label(label: str, limit: int) -> tuple[str, ...]:
    """``label`` as lines of at most ``limit`` characters (``limit`` >= 1) whose concatenation is
    ``label``: each line ends after the last break character (``-_./ ·``) that fits, else is cut
    at ``limit``."""
    lines = []
    rest = label
    while len(rest) > limit:
        cut = max((i + 1 for i, ch in enumerate(rest[:limit]) if ch in _BREAK_AFTER), default=limit)
        lines.append(rest[:cut])
        rest = rest[cut:]
    return (*lines, rest)


@dataclass(frozen=True)
class Bar:
    """One bar: ``value`` with its interval ``[low, high]`` (``None`` draws no whisker), as a
    fraction (score charts print it as %, delta charts as percentage points); ``note`` is added
    to the bar's tooltip."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Stack:
    """One stacked bar: counts per outcome class (zero counts are skipped)."""

    label: str
    counts: dict[Outcome, int]


def score_chart(title: str, bars: Sequence[Bar], *, chart_id: str) -> Markup:
    """Scores in [0, 1] as horizontal bars on a 0–100 % axis with CI whiskers and value labels."""
    layout = _COMPACT
    rows = _rows(layout, [bar.label for bar in bars])
    height = _bottom(rows) + BOTTOM

    def place(value: float) -> float:
        return _x(layout, value, 0.0, 1.0)

    parts = [_open("chart-bars", chart_id, title, layout, height)]
    parts += _axis([0.0, 0.25, 0.5, 0.75, 1.0], place, [f"{tick}%" for tick in (0, 25, 50, 75, 100)], height)
    for row, bar in zip(rows, bars, strict=True):
        tooltip = f"{bar.label}: {bar.value * 100:.2f}%{_interval_text(bar, ' %')}{_note(bar)}"
        parts.append(_label(layout, bar.label, row))
        parts.append(_bar("bar", layout.label, place(bar.value), row, "#4e79a7", tooltip))
        parts += _whisker(bar, row, place)
        parts.append(_value(layout, f"{bar.value * 100:.2f}%", row))
    parts.append("</svg>")
    return Markup("".join(parts))


def delta_chart(title: str, bars: Sequence[Bar], *, chart_id: str) -> Markup:
    """Signed differences (fractions, printed as percentage points) around a zero line, with
    whiskers; the axis is symmetric and rounded up to 1, 2 or 5 × 10^k points (at least 1)."""
    layout = _COMPACT
    extent = _nice_extent(
        max((abs(v) for bar in bars for v in (bar.value, bar.low, bar.high) if v is not None), default=0.0)
    )
    rows = _rows(layout, [bar.label for bar in bars])
    height = _bottom(rows) + BOTTOM

    def place(value: float) -> float:
        return _x(layout, value, -extent, extent)

    ticks = [-extent, -extent / 2, 0.0, extent / 2, extent]
    parts = [_open("chart-delta", chart_id, title, layout, height)]
    parts += _axis(ticks, place, [f"{tick * 100:+g} pp" for tick in ticks], height)
    zero = place(0.0)
    parts.append(
        f'<line class="zero" x1="{zero:.1f}" x2="{zero:.1f}" y1="{TOP - 4}" y2="{height - BOTTOM}" />'
    )
    for row, bar in zip(rows, bars, strict=True):
        up = bar.value >= 0
        tooltip = f"{bar.label}: {bar.value * 100:+.2f} pp{_interval_text(bar, ' pp')}{_note(bar)}"
        parts.append(_label(layout, bar.label, row))
        parts.append(
            _bar(
                "bar up" if up else "bar down",
                zero,
                place(bar.value),
                row,
                "#2e7d32" if up else "#c62828",
                tooltip,
            )
        )
        parts += _whisker(bar, row, place)
        parts.append(_value(layout, f"{bar.value * 100:+.2f} pp", row))
    parts.append("</svg>")
    return Markup("".join(parts))


def stack_chart(title: str, stacks: Sequence[Stack], *, chart_id: str) -> Markup:
    """Outcome shares as 100 % stacked bars, one per ``Stack``, with a legend of the classes shown."""
    layout = _WIDE
    shown = [outcome for outcome in Outcome if any(stack.counts.get(outcome, 0) for stack in stacks)]
    legend = _legend_positions(layout, [outcome.label for outcome in shown])
    legend_rows = 1 + max((row for _, row in legend), default=0)
    rows = _rows(layout, [stack.label for stack in stacks])
    legend_top = _bottom(rows) + 8
    height = legend_top + LEGEND_ROW * legend_rows
    parts = [_open("chart-stack", chart_id, title, layout, height)]
    for row, stack in zip(rows, stacks, strict=True):
        parts.append(_label(layout, stack.label, row))
        total = sum(stack.counts.values())
        x = float(layout.label)
        for outcome in shown:
            count = stack.counts.get(outcome, 0)
            if not count:
                continue
            width = layout.plot * count / total
            tooltip = f"{stack.label} — {outcome.label}: {count} of {total} ({count / total:.1%})"
            parts.append(
                f'<rect class="segment" data-outcome="{outcome.value}" x="{x:.2f}" '
                f'y="{row.bar_top:.1f}" width="{width:.2f}" height="{BAR_HEIGHT}" '
                f'fill="{OUTCOME_COLOURS[outcome]}"><title>{escape(tooltip)}</title></rect>'
            )
            x += width
        parts.append(_value(layout, f"n={total}", row))
    for outcome, (offset, line) in zip(shown, legend, strict=True):
        lx = layout.label + offset
        ly = legend_top + LEGEND_ROW * line
        parts.append(
            f'<g class="legend"><rect x="{lx:.1f}" y="{ly:.0f}" width="11" height="11" '
            f'fill="{OUTCOME_COLOURS[outcome]}" /><text x="{lx + 15:.1f}" y="{ly + 10:.0f}">'
            f"{escape(outcome.label)}</text></g>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


# --------------------------------------------------------------------------- geometry


def _bottom(rows: Sequence[_Row]) -> float:
    return rows[-1].top + rows[-1].height if rows else float(TOP)


def _x(layout: _Layout, value: float, low: float, high: float) -> float:
    clamped = min(max(value, low), high)
    return layout.label + layout.plot * (clamped - low) / (high - low)


def _nice_extent(value: float) -> float:
    """Smallest 1, 2 or 5 × 10^k percentage points (as a fraction) at least ``value``; ≥ 1 pp."""
    points = max(value * 100, 1.0)
    exponent = math.floor(math.log10(points))
    for step in (1.0, 2.0, 5.0):
        if step * 10.0**exponent >= points - 1e-9:
            return step * 10.0**exponent / 100.0
    return 10.0 ** (exponent + 1) / 100.0


def _legend_positions(layout: _Layout, labels: Sequence[str]) -> list[tuple[float, int]]:
    """(x offset from the plot's left edge, row) of each legend entry, flowing left to right and
    wrapping at the chart's right edge."""
    positions = []
    offset, row = 0.0, 0
    available = layout.plot + layout.value
    for label in labels:
        width = 15 + CHAR_WIDTH * len(label) + 14
        if offset and offset + width > available:
            offset, row = 0.0, row + 1
        positions.append((offset, row))
        offset += width
    return positions


# --------------------------------------------------------------------------- elements


def _open(kind: str, chart_id: str, title: str, layout: _Layout, height: float) -> str:
    return (
        f'<svg class="chart {kind}" id="{escape(chart_id)}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {layout.width} {height:.0f}" width="{layout.width}" height="{height:.0f}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
        f'<text class="chart-title" x="0" y="16">{escape(title)}</text>'
    )


def _axis(ticks: Sequence[float], place: _Placer, labels: Sequence[str], height: float) -> list[str]:
    parts = []
    for tick, text in zip(ticks, labels, strict=True):
        x = place(tick)
        parts.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 4}" y2="{height - BOTTOM}" />')
        parts.append(f'<text class="tick" x="{x:.1f}" y="{height - BOTTOM + 16:.0f}">{escape(text)}</text>')
    return parts


def _label(layout: _Layout, label: str, row: _Row) -> str:
    # The lines are centred on the row's middle, like the bar beside them.
    x = layout.label - 8
    first = row.mid + 4 - LINE_HEIGHT * (len(row.lines) - 1) / 2
    spans = "".join(
        f'<tspan x="{x}" y="{first + LINE_HEIGHT * index:.1f}">{escape(line)}</tspan>'
        for index, line in enumerate(row.lines)
    )
    return f'<text class="label"><title>{escape(label)}</title>{spans}</text>'


def _bar(css: str, start: float, end: float, row: _Row, colour: str, tooltip: str) -> str:
    left, width = min(start, end), max(abs(end - start), 0.5)
    return (
        f'<rect class="{css}" x="{left:.1f}" y="{row.bar_top:.1f}" width="{width:.1f}" '
        f'height="{BAR_HEIGHT}" fill="{colour}" fill-opacity="0.85"><title>{escape(tooltip)}</title></rect>'
    )


def _value(layout: _Layout, text: str, row: _Row) -> str:
    x = layout.label + layout.plot + 8
    return f'<text class="value" x="{x}" y="{row.mid + 4:.1f}">{escape(text)}</text>'


def _whisker(bar: Bar, row: _Row, place: _Placer) -> list[str]:
    if bar.low is None or bar.high is None:
        return []
    x1, x2 = place(bar.low), place(bar.high)
    mid = row.mid
    cap = BAR_HEIGHT / 2 - 2
    return [
        f'<g class="ci"><line x1="{x1:.1f}" x2="{x2:.1f}" y1="{mid:.1f}" y2="{mid:.1f}" />'
        f'<line x1="{x1:.1f}" x2="{x1:.1f}" y1="{mid - cap:.1f}" y2="{mid + cap:.1f}" />'
        f'<line x1="{x2:.1f}" x2="{x2:.1f}" y1="{mid - cap:.1f}" y2="{mid + cap:.1f}" /></g>'
    ]


def _interval_text(bar: Bar, unit: str) -> str:
    if bar.low is None or bar.high is None:
        return ""
    return f" [{bar.low * 100:.2f}, {bar.high * 100:.2f}]{unit}"


def _note(bar: Bar) -> str:
    return f" — {bar.note}" if bar.note else ""
