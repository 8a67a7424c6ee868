"""Rows as Gurobi holds them (sense and right-hand side) versus rows as a
:class:`~trex_eval.records.LinearModel` holds them (``row_lower <= a.x <= row_upper``)."""

from __future__ import annotations

import math
from typing import Literal

Sense = Literal["<", ">", "="]
"""Gurobi's constraint senses: ``<`` is ``<=``, ``>`` is ``>=``."""


def row_bounds(sense: Sense, rhs: float) -> tuple[float, float]:
    """``(row_lower, row_upper)`` of a row ``a.x <sense> rhs``."""
    if sense == "<":
        return -math.inf, rhs
    if sense == ">":
        return rhs, math.inf
    return rhs, rhs


def row_sense(lower: float, upper: float) -> tuple[Sense, float] | None:
    """The ``(sense, rhs)`` Gurobi would hold for a row with these bounds, or ``None`` for a
    range (both sides finite and different), which Gurobi holds as an equality plus a variable.

    One-sided rows come back exactly (``(-inf, rhs)`` is ``<``, ``(rhs, +inf)`` is ``>``, even for
    infinite ``rhs``). A row with no finite side is ``>= -inf``, which is how a free row written by
    Gurobi (``>= -1e+100``) reads back; ``<= +inf`` in an LP file reads as the same bounds, so
    that spelling is the one case that does not come back.
    """
    if lower == -math.inf and upper == math.inf:
        return ">", -math.inf
    if lower == -math.inf:
        return "<", upper
    if upper == math.inf:
        return ">", lower
    if lower == upper:
        return "=", lower
    return None
