"""Numeric keys and row orientation shared by the structure rules that compare two models on
one numeric scale (``orgeval-fixed``, ``orgeval-exact``). Pure.

A float becomes a signed integer key: ``0`` for zero, ``±(k + 1)`` for the ``k``-th cluster of
magnitudes, ``±INFINITE_KEY`` for infinities. Clusters are built once from every magnitude in
both models: sorted, consecutive values within ``max(1e-12, 1e-9 * v)`` share a cluster, so the
keys of the two models agree without boundary effects and order like the values.
"""

from __future__ import annotations

import bisect
import math

RELATIVE_TOLERANCE = 1e-9
"""Magnitudes within this relative distance of their sorted neighbour share a numeric key."""
ZERO_TOLERANCE = 1e-12
"""Magnitudes at or below this are zero; also the absolute floor of the merging distance."""
INFINITE_KEY = 1 << 40
"""The key of ``+inf`` (``-INFINITE_KEY`` for ``-inf``); above every finite key."""


class NumericKeys:
    """Signed integer keys for floats, shared by both models (module docstring)."""

    def __init__(self, magnitudes: list[float]) -> None:
        finite = sorted({m for m in magnitudes if ZERO_TOLERANCE < m < math.inf})
        self._starts: list[float] = []
        self._cluster_of: dict[float, int] = {}
        previous = -math.inf
        for value in finite:
            if value - previous > max(ZERO_TOLERANCE, RELATIVE_TOLERANCE * value):
                self._starts.append(value)
            self._cluster_of[value] = len(self._starts)
            previous = value

    def __call__(self, value: float) -> int:
        magnitude = abs(value)
        if magnitude <= ZERO_TOLERANCE:
            return 0
        if magnitude == math.inf:
            key = INFINITE_KEY
        else:
            cluster = self._cluster_of.get(magnitude)
            key = cluster if cluster is not None else bisect.bisect_right(self._starts, magnitude)
        return key if value > 0 else -key


def orientation(lower: int, upper: int) -> tuple[int, int, int]:
    """Orientation of a row ``lower <= a.x <= upper`` given its side keys: ``+1`` keep, ``-1``
    negate (a ``<=`` row becomes ``>=``; an equality or range whose side keys have a negative
    midpoint is flipped), ``0`` open (both sides finite with a zero midpoint: ``a.x = 0``,
    ``-5 <= a.x <= 5``, where both orientations are the same row). Returns the orientation and
    the oriented side keys."""
    if upper == INFINITE_KEY:
        return 1, lower, upper
    if lower == -INFINITE_KEY:
        return -1, -upper, INFINITE_KEY
    midpoint = lower + upper
    if midpoint > 0:
        return 1, lower, upper
    if midpoint < 0:
        return -1, -upper, -lower
    return 0, lower, upper
