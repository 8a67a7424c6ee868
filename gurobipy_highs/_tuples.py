"""``tupledict``, ``tuplelist`` and ``multidict``: gurobipy's indexed containers.

A *pattern* has one entry per key position: ``"*"`` matches anything, a list (or set) matches
any of its members, anything else must be equal. A pattern whose length differs from a key's
never matches it; an empty pattern matches everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ._expr import LinExpr, QuadExpr, as_number, quicksum


def _key_parts(key: object) -> tuple[object, ...]:
    return key if isinstance(key, tuple) else (key,)


def _matches(key: object, pattern: tuple[object, ...]) -> bool:
    if not pattern:
        return True
    parts = _key_parts(key)
    if len(parts) != len(pattern):
        return False
    for part, want in zip(parts, pattern, strict=True):
        if isinstance(want, str) and want == "*":
            continue
        if isinstance(want, (list, set, frozenset)):
            if part not in want:
                return False
        elif part != want:
            return False
    return True


class tupledict(dict[Any, Any]):
    """A dict (usually of Vars or Constrs) with pattern-based ``select``, ``sum`` and ``prod``."""

    def select(self, *pattern: object) -> list[Any]:
        """Values whose key matches ``pattern``, in insertion order."""
        return [value for key, value in self.items() if _matches(key, pattern)]

    def sum(self, *pattern: object) -> LinExpr | QuadExpr:
        """Sum of the values whose key matches ``pattern``, as an expression (empty -> 0.0)."""
        return quicksum(value for key, value in self.items() if _matches(key, pattern))

    def prod(self, coeff: dict[Any, Any], *pattern: object) -> LinExpr | QuadExpr:
        """``sum(coeff[k] * self[k])`` over matching keys present in ``coeff``."""
        terms = []
        for key, value in self.items():
            if key in coeff and _matches(key, pattern):
                factor = as_number(coeff[key])
                terms.append(value * factor if factor is not None else value * coeff[key])
        return quicksum(terms)

    def clean(self) -> None:
        """Drop the select index (kept for API compatibility; this implementation has none)."""

    def iterkeys(self) -> Iterator[Any]:
        return iter(self.keys())

    def itervalues(self) -> Iterator[Any]:
        return iter(self.values())

    def iteritems(self) -> Iterator[tuple[Any, Any]]:
        return iter(self.items())


class tuplelist(list[Any]):
    """A list of tuples with pattern-based ``select``."""

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__(items)

    def select(self, *pattern: object) -> tuplelist:
        """Members matching ``pattern``, as a new ``tuplelist``."""
        return tuplelist(item for item in self if _matches(item, pattern))

    def clean(self) -> None:
        """Drop the select index (kept for API compatibility; this implementation has none)."""

    def __repr__(self) -> str:
        if not self or not all(isinstance(item, tuple) for item in self):
            return super().__repr__()
        widths = {len(item) for item in self}
        each = f"{widths.pop()} values each" if len(widths) == 1 else "varying sizes"
        lines = [f"<gurobi.tuplelist ({len(self)} tuples, {each}):"]
        lines.extend(" ( " + " , ".join(str(part) for part in item) + " )" for item in self)
        return "\n".join(lines) + "\n>"


def multidict(data: dict[Any, Any]) -> list[Any]:
    """Split ``{key: [v1, v2, ...]}`` into ``[tuplelist(keys), tupledict(key -> v1), ...]``.

    Scalar values give one dict. All value lists must have the same length.
    """
    keys = tuplelist(data.keys())
    columns: list[tupledict] = []
    for key, values in data.items():
        row = list(values) if isinstance(values, (list, tuple)) else [values]
        if not columns:
            columns = [tupledict() for _ in row]
        if len(row) != len(columns):
            raise ValueError("multidict: every key needs the same number of values")
        for column, value in zip(columns, row, strict=True):
            column[key] = value
    return [keys, *columns]
