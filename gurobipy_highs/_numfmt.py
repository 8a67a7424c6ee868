"""Gurobi's way of printing a number in LP and MPS files.

Measured on gurobipy 13.0.3 (tens of thousands of values, every decade from 1e-12 to 1e21):

1. the 6-significant-digit form (C ``%.6g``) is used whenever it is within
   ``max(1e-10, 1e-15 * |v|)`` of the value — so tiny values are rounded to 6 digits;
2. otherwise ``|v| >= 1e6`` or ``|v| < 1e-3`` print in exponent form with 17 significant
   digits, trailing zeros of the mantissa removed;
3. otherwise ``|v| < 0.1`` prints as ``%.15g`` and the rest (``0.1 <= |v| < 1e6``) as ``%.16g``.

The MPS writer is exact instead: ``%.15g`` when it reads back as the same double, else
``%.16e`` with its trailing zeros.
"""

from __future__ import annotations

import math

_ABS_TOL = 1e-10
_REL_TOL = 1e-15


def _short_form(value: float) -> str | None:
    short = f"{value:.6g}"
    if abs(float(short) - value) <= max(_ABS_TOL, _REL_TOL * abs(value)):
        return short
    return None


def gurobi_mps_number(value: float) -> str:
    """``value`` as Gurobi's MPS writer prints it: exact, as ``%.15g`` when that reads back as
    the same double, else ``%.16e`` (zeros kept)."""
    if value == 0.0:
        return "0"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    short = f"{value:.15g}"
    return short if float(short) == value else f"{value:.16e}"


def gurobi_number(value: float) -> str:
    """``value`` as Gurobi's LP/MPS writer prints it (``inf``/``-inf`` for infinities)."""
    if value == 0.0:
        return "0"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    short = _short_form(value)
    if short is not None:
        return short
    magnitude = abs(value)
    if magnitude >= 1e6 or magnitude < 1e-3:
        mantissa, exponent = f"{value:.16e}".split("e")
        return mantissa.rstrip("0").rstrip(".") + "e" + exponent
    if magnitude < 0.1:
        return f"{value:.15g}"
    return f"{value:.16g}"
