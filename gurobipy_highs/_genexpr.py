"""The general-constraint helpers ``max_``, ``min_``, ``abs_``, ``and_``, ``or_`` and ``norm``:
each builds a :class:`~._expr.GenExpr` for ``var == helper(...)``.

Operands are variables (and, for ``max_``/``min_``, numbers, which fold into the constant),
given one by one or in any iterables (lists, tuples, generators, ``dict``/``tupledict`` values,
``tuplelist``), as gurobipy accepts them. Anything else is an error — an operand is never
dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from ._errors import GurobiError
from ._expr import GenExpr, Var, as_number


def _genexpr(kind: str, values: Sequence[object], constant: object) -> GenExpr:
    variables: list[Var] = []
    constants: list[float] = []
    for value in _flatten(values):
        number = as_number(value)
        if isinstance(value, Var):
            variables.append(value)
        elif number is not None:
            constants.append(number)
        else:
            raise GurobiError(10003, f"Invalid argument to {kind}_: {type(value).__name__}")
    base = as_number(constant) if constant is not None else None
    if constants:
        pick = max if kind == "max" else min
        base = pick(constants + ([base] if base is not None else []))
    return GenExpr(kind, tuple(variables), base)


def max_(*args: object, constant: object = None) -> GenExpr:
    """``var == max_(x, y, ..., constant=c)`` general constraint term."""
    return _genexpr("max", args, constant)


def min_(*args: object, constant: object = None) -> GenExpr:
    """``var == min_(x, y, ..., constant=c)`` general constraint term."""
    return _genexpr("min", args, constant)


def abs_(argvar: Var) -> GenExpr:
    """``var == abs_(x)`` general constraint term."""
    return GenExpr("abs", (argvar,), None)


def and_(*args: object) -> GenExpr:
    """``var == and_(b1, b2, ...)`` general constraint term (Vars, or iterables of them)."""
    return GenExpr("and", _only_vars("and_", args), None)


def or_(*args: object) -> GenExpr:
    """``var == or_(b1, b2, ...)`` general constraint term (Vars, or iterables of them)."""
    return GenExpr("or", _only_vars("or_", args), None)


def norm(vars: object, which: float) -> GenExpr:
    """``var == norm(vars, which)`` general constraint term (``which`` is 0, 1, 2 or inf)."""
    return GenExpr("norm", _only_vars("norm", [vars]), float(which))


def _only_vars(helper: str, values: Iterable[object]) -> tuple[Var, ...]:
    found = tuple(_flatten(values))
    if not all(isinstance(v, Var) for v in found):  # an operand is never silently dropped
        raise GurobiError(10003, f"Invalid argument to {helper}: only variables are allowed")
    return tuple(v for v in found if isinstance(v, Var))


def _flatten(values: Iterable[object]) -> Iterator[object]:
    """Operands from Vars, numbers and any iterables of them (dicts give their values)."""
    for value in values:
        if isinstance(value, dict) or (isinstance(value, Iterable) and not isinstance(value, (str, bytes))):
            yield from _flatten(value.values() if isinstance(value, dict) else value)
        else:
            yield value
