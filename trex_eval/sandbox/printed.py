"""Objective value printed by a program: the documented fallback when no hooked solve was seen.

Only lines that *label* a number as the objective count, and the last such line wins:

* the reference wrapper's JSON, ``"optimal_value": <number>``;
* ``<label> [is|=|:] <number>`` where the label is one of "optimal value", "optimal objective
  (value)", "objective (function) value", "objective", "obj value", "optimal cost/profit"
  (case-insensitive; a ``$`` before the number and thousands separators are accepted).

The value is unverified: it is whatever the program chose to print. Pure: no I/O.
"""

from __future__ import annotations

import math
import re

_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?"
_JSON = re.compile(r'"optimal_value"\s*:\s*(' + _NUMBER + r")")
_LABELLED = re.compile(
    r"(?i)\b(?:optimal\s+(?:objective\s+)?(?:value|cost|profit)|optimal\s+objective|"
    r"objective\s+(?:function\s+)?value|obj(?:ective)?\s*val(?:ue)?|objective)"
    r"\s*(?:is|=|:)\s*\$?\s*(" + _NUMBER + r")"
)


def _to_float(text: str) -> float | None:
    cleaned = text.replace(",", "")
    if not re.search(r"\d", cleaned):
        return None
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def printed_objective(stdout: str) -> float | None:
    """The last labelled objective value in ``stdout``, or None (see module docstring)."""
    found: float | None = None
    for line in stdout.splitlines():
        for pattern in (_JSON, _LABELLED):
            for match in pattern.finditer(line):
                value = _to_float(match.group(1))
                if value is not None:
                    found = value
    return found
