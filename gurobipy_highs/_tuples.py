"""``tupledict``, ``tuplelist`` and ``multidict``: gurobipy's indexed containers.

A *pattern* has one entry per key position: ``"*"`` matches anything, a list, tuple or set
matches any of its members, anything else must be equal. Keys must all be scalars or all be
tuples of one length (else ``ValueError``, as gurobipy says it). A pattern longer than the keys
raises ``IndexError``; a shorter, non-empty one is padded with ``"*"`` and warns
(``DeprecationWarning``), exactly as gurobipy 13 does; an empty pattern matches everything.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from ._expr import LinExpr, QuadExpr, as_number, quicksum

_MEMBERSHIP = (list, tuple, set, frozenset)


def _key_parts(key: object) -> tuple[object, ...]:
    return key if isinstance(key, tuple) else (key,)


def _arity(keys: Iterable[object]) -> int | None:
    """The common length of ``keys`` (0 for scalar keys, ``None`` when there are none); the
    ``ValueError`` gurobipy raises when scalars and tuples, or tuples of several lengths, mix."""
    arity: int | None = None
    for key in keys:
        width = len(key) if isinstance(key, tuple) else 0
        if arity is None:
            arity = width
        elif width != arity:
            if width == 0 or arity == 0:
                raise ValueError("Cannot mix scalar and tuple values in a tuplelist")
            raise ValueError("All tuples in a tuplelist must be the same length")
    return arity


def _full_pattern(
    keys: Iterable[object], pattern: tuple[object, ...], stacklevel: int
) -> tuple[object, ...] | None:
    """``pattern`` checked against the keys' arity and padded with ``'*'``; ``None`` when every
    key matches (empty pattern, or no keys at all). ``stacklevel`` points the warning at the
    program's call."""
    arity = _arity(keys)
    if not pattern or arity is None:
        return None
    width = max(arity, 1)
    described = "scalar keys" if arity == 0 else f"{arity}-tuple keys"
    if len(pattern) > width:
        raise IndexError(f"Too many indices for tuplelist with {described}")
    if len(pattern) < width:
        warnings.warn(
            f"Too few indices for tuplelist with {described}", DeprecationWarning, stacklevel=stacklevel
        )
        pattern = pattern + ("*",) * (width - len(pattern))
    return pattern


def _matches(key: object, pattern: tuple[object, ...]) -> bool:
    for part, want in zip(_key_parts(key), pattern, strict=True):
        if isinstance(want, str) and want == "*":
            continue
        if isinstance(want, _MEMBERSHIP):
            if part not in want:
                return False
        elif part != want:
            return False
    return True


class tupledict(dict[Any, Any]):
    """A dict (usually of Vars or Constrs) with pattern-based ``select``, ``sum`` and ``prod``."""

    def _matching(self, pattern: tuple[object, ...]) -> Iterator[tuple[Any, Any]]:
        # the warning's frames: _full_pattern <- _matching <- select/sum/prod <- the program
        full = _full_pattern(self.keys(), pattern, stacklevel=4)
        if full is None:
            return iter(self.items())
        return ((key, value) for key, value in self.items() if _matches(key, full))

    def select(self, *pattern: object) -> list[Any]:
        """Values whose key matches ``pattern``, in insertion order."""
        return [value for _key, value in self._matching(pattern)]

    def sum(self, *pattern: object) -> LinExpr | QuadExpr:
        """Sum of the values whose key matches ``pattern``, as an expression (empty -> 0.0)."""
        return quicksum(value for _key, value in self._matching(pattern))

    def prod(self, coeff: object, *pattern: object) -> LinExpr | QuadExpr:
        """``sum(coeff[k] * self[k])`` over the matching keys that ``coeff`` has.

        ``coeff`` is a dict (keys it lacks are skipped) or, without a pattern, a list indexed
        by the key itself (keys that do not index it are skipped), as in gurobipy; anything
        else is gurobipy's ``TypeError``."""
        if not isinstance(coeff, dict) and not (isinstance(coeff, list) and not pattern):
            raise TypeError("tupledict.prod requires a dictionary")
        terms = []
        for key, value in self._matching(pattern):
            if isinstance(coeff, dict):
                if key not in coeff:
                    continue
                factor_value = coeff[key]
            else:
                try:
                    factor_value = coeff[key]
                except (IndexError, TypeError):
                    continue
            factor = as_number(factor_value)
            terms.append(value * factor if factor is not None else factor_value * value)
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
    """A list of tuples (or of scalars) with pattern-based ``select``."""

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__(items)
        _arity(self)

    def select(self, *pattern: object) -> tuplelist:
        """Members matching ``pattern``, as a new ``tuplelist``."""
        full = _full_pattern(self, pattern, stacklevel=3)
        if full is None:
            return tuplelist(self)
        return tuplelist(item for item in self if _matches(item, full))

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
