"""Variables and expressions: ``Var``, ``LinExpr``, ``QuadExpr``, ``TempConstr``, ``GenExpr``.

Arithmetic follows gurobipy 13: expressions keep their terms unmerged and in creation order
(duplicates are merged only when a constraint or objective enters the model), ``+=`` mutates in
place, ``Var * Var`` is a ``QuadExpr``, and comparisons build a ``TempConstr`` whose truth value
is an error. Operations that real gurobipy turns into a nonlinear ``NLExpr`` (``x / y``,
``x ** 3``, cubic products) raise :class:`CompatNotImplementedError`.

This module holds ``Var``, the comparison classes and ``quicksum``, and is where every other
module takes all five classes from; ``LinExpr`` lives in :mod:`._linexpr` and ``QuadExpr`` in
:mod:`._quadexpr`. The five refer to one another (``Var + Var`` is a ``LinExpr``, ``LinExpr *
LinExpr`` a ``QuadExpr``, ...), so the two expression modules are imported at the end of this
one, once the names they build on exist.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._attributes import AttributeAccess
from ._errors import CompatNotImplementedError, GurobiError

if TYPE_CHECKING:
    from ._model import Model

_NOT_IN_MODEL = -1
_REMOVED = -2


def as_number(value: object) -> float | None:
    """``value`` as a float if it is a plain number (int, float, numpy scalar, ...), else None.

    numpy arrays with more than one element are the matrix API of gurobipy, which the layer
    does not implement: they raise :class:`CompatNotImplementedError`.
    """
    if type(value) is float:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, (_Relational, TempConstr, GenExpr, str, bytes)):
        return None
    if getattr(type(value), "__float__", None) is None:
        return None
    if getattr(value, "ndim", 0):
        raise CompatNotImplementedError("the matrix API (numpy arrays combined with Var/LinExpr)")
    return float(value)  # type: ignore[arg-type]


def _nonlinear(what: str) -> CompatNotImplementedError:
    return CompatNotImplementedError(f"nonlinear expressions (gurobipy.NLExpr: {what})")


# --------------------------------------------------------------------------- comparisons


class _Relational:
    """What ``Var``, ``LinExpr`` and ``QuadExpr`` share: ``<=``, ``>=`` and ``==`` build a
    :class:`TempConstr`; ``!=`` is gurobipy's error."""

    __slots__ = ()

    def __le__(self, other: object) -> TempConstr:
        return TempConstr._compare(self, "<", other)

    def __ge__(self, other: object) -> TempConstr:
        return TempConstr._compare(self, ">", other)

    def __eq__(self, other: object) -> TempConstr:  # type: ignore[override]
        return TempConstr._compare(self, "=", other)

    def __ne__(self, other: object) -> bool:
        raise GurobiError(0, "Inequality constraints not supported")


class _Expression(_Relational):
    """``LinExpr``/``QuadExpr`` on top: ``<`` and ``>`` raise ``NotImplementedError`` and they
    are unhashable, as in gurobipy (a ``Var`` keeps its hash and Python's own ``TypeError``)."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        raise NotImplementedError

    def __gt__(self, other: object) -> bool:
        raise NotImplementedError

    __hash__ = None  # type: ignore[assignment]


# --------------------------------------------------------------------------- Var


class Var(_Relational, AttributeAccess):
    """A decision variable of a :class:`Model`.

    Attributes (``X``, ``LB``, ``VarName``, ...) are read and written through the model, with
    gurobipy's rules: names are case-insensitive, writes take effect at the next
    ``Model.update()`` (or ``optimize``/``write``), and reading any attribute of a variable that
    is still awaiting that update raises ``AttributeError``.
    """

    __slots__ = ("__dict__", "__weakref__", "_future", "_index", "_model", "_props", "_serial", "_solution")
    __array_ufunc__ = None  # numpy scalars defer to the reflected operators below

    _model: Model
    _index: int
    _future: int
    _props: dict[str, object]
    _serial: int
    _solution: float | None

    _next_serial = 0

    def __init__(self, model: Model, props: dict[str, object], future_index: int = -1) -> None:
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_index", _NOT_IN_MODEL)
        object.__setattr__(self, "_future", future_index)
        object.__setattr__(self, "_props", props)
        object.__setattr__(self, "_solution", None)
        object.__setattr__(self, "_serial", Var._next_serial)
        Var._next_serial += 1

    @property
    def index(self) -> int:
        """Column position in the model (while awaiting an update: the position it will get);
        -2 once removed."""
        return self._future if self._index == _NOT_IN_MODEL else self._index

    def sameAs(self, other: object) -> bool:
        """True when ``other`` is this very variable."""
        return other is self

    def _label(self) -> str:
        if self._index < 0:
            return repr(self)
        return str(self._props["VarName"])

    def __repr__(self) -> str:
        if self._index == _REMOVED:
            return "<gurobi.Var *Removed*>"
        if self._index < 0:
            return "<gurobi.Var *Awaiting Model Update*>"
        if self._solution is not None:
            return f"<gurobi.Var {self._props['VarName']} (value {self._solution!r})>"
        return f"<gurobi.Var {self._props['VarName']}>"

    __str__ = __repr__

    def __hash__(self) -> int:
        if self._index == _NOT_IN_MODEL:
            raise GurobiError(0, "Variable has not yet been added to the model")
        return self._serial

    # arithmetic --------------------------------------------------------------
    def _lin(self) -> LinExpr:
        return LinExpr._raw([1.0], [self], 0.0)

    def __add__(self, other: object) -> LinExpr | QuadExpr:
        return self._lin().__iadd__(other)

    def __radd__(self, other: object) -> LinExpr | QuadExpr:
        return self._lin().__iadd__(other)

    def __sub__(self, other: object) -> LinExpr | QuadExpr:
        return self._lin().__isub__(other)

    def __rsub__(self, other: object) -> LinExpr | QuadExpr:
        return LinExpr._raw([-1.0], [self], 0.0).__iadd__(other)

    def __mul__(self, other: object) -> LinExpr | QuadExpr:
        return self._lin().__mul__(other)

    def __rmul__(self, other: object) -> LinExpr | QuadExpr:
        return self._lin().__mul__(other)

    def __truediv__(self, other: object) -> LinExpr:
        return self._lin().__truediv__(other)

    def __rtruediv__(self, other: object) -> LinExpr:
        raise _nonlinear("constant / Var")

    def __pow__(self, exponent: object) -> Var | LinExpr | QuadExpr | float:
        power = as_number(exponent)
        if power == 1.0:
            return self
        if power == 0.0:
            return 1.0
        if power == 2.0:
            return QuadExpr._raw(LinExpr(), [1.0], [self], [self])
        raise _nonlinear(f"Var ** {exponent!r}")

    def __neg__(self) -> LinExpr:
        return LinExpr._raw([-1.0], [self], 0.0)


# --------------------------------------------------------------------------- general expressions


class GenExpr:
    """``max_``/``min_``/``abs_``/``and_``/``or_``/``norm`` term; only valid as ``var == genexpr``."""

    __slots__ = ("args", "constant", "kind")

    def __init__(self, kind: str, args: tuple[Var, ...], constant: float | None) -> None:
        self.kind = kind
        self.args = args
        self.constant = constant

    def __repr__(self) -> str:
        return f"<gurobi.GenExpr{self.kind.capitalize()}: {list(self.args)!r}, constant={self.constant!r}>"


# --------------------------------------------------------------------------- TempConstr


class TempConstr:
    """An unplaced constraint produced by ``<=``, ``>=``, ``==`` or ``>>``.

    ``kind`` is ``"linear"``/``"quadratic"`` (``lhs sense rhs``), ``"range"`` (``expr == [lb, ub]``),
    ``"indicator"`` (``(binvar == value) >> constr``) or ``"general"`` (``var == genexpr``).
    Its truth value is an error, exactly as in gurobipy (this is what catches ``lb <= e <= ub``).
    """

    __slots__ = ("kind", "lhs", "rhs", "sense")

    def __init__(self, kind: str, lhs: object, sense: str, rhs: object) -> None:
        self.kind = kind
        self.lhs = lhs
        self.sense = sense
        self.rhs = rhs

    @staticmethod
    def _compare(lhs: _Relational, sense: str, rhs: object) -> TempConstr:
        if isinstance(rhs, GenExpr):
            if sense != "=" or not isinstance(lhs, Var):
                raise GurobiError(10003, "General expressions can only be used as 'var == genexpr'")
            return TempConstr("general", lhs, sense, rhs)
        if isinstance(rhs, list) and sense == "=":
            bounds = [as_number(b) for b in rhs]
            if len(bounds) != 2 or bounds[0] is None or bounds[1] is None:
                raise GurobiError(10003, "Range constraint needs [lb, ub]")
            return TempConstr("range", lhs, sense, (bounds[0], bounds[1]))
        if as_number(rhs) is None and not isinstance(rhs, (Var, LinExpr, QuadExpr)):
            return NotImplemented  # type: ignore[no-any-return]
        quadratic = isinstance(lhs, QuadExpr) or isinstance(rhs, QuadExpr)
        return TempConstr("quadratic" if quadratic else "linear", lhs, sense, rhs)

    def __bool__(self) -> bool:
        raise GurobiError(0, 'Constraint has no bool value (are you trying "lb <= expr <= ub"?)')

    def __rshift__(self, other: object) -> TempConstr:
        if not isinstance(other, TempConstr) or other.kind != "linear":
            raise GurobiError(10003, "Indicator constraint must imply a linear constraint")
        binvar, value = self._indicator_condition()
        return TempConstr("indicator", (binvar, value), "", other)

    def _indicator_condition(self) -> tuple[Var, bool]:
        lhs, rhs = self.lhs, as_number(self.rhs)
        if isinstance(lhs, LinExpr) and lhs.size() == 1 and lhs._constant == 0.0 and lhs._coeffs[0] == 1.0:
            lhs = lhs._vars[0]
        if self.sense != "=" or not isinstance(lhs, Var) or rhs not in (0.0, 1.0):
            raise GurobiError(10003, "Indicator condition must be 'binvar == 0' or 'binvar == 1'")
        return lhs, rhs == 1.0

    def __repr__(self) -> str:
        symbol = {"<": "<=", ">": ">=", "=": "=="}.get(self.sense, self.sense)
        return f"<gurobi.TempConstr: {_text(self.lhs, side='lhs')} {symbol} {_text(self.rhs, side='rhs')}>"


def _text(value: object, *, side: str) -> str:
    if isinstance(value, (LinExpr, QuadExpr)):
        return value._body()
    if isinstance(value, Var):
        return value._label() if side == "lhs" else repr(value)
    return str(value)


# --------------------------------------------------------------------------- helpers


def quicksum(data: Iterable[object]) -> LinExpr | QuadExpr:
    """Sum of ``data`` (numbers, Vars, LinExprs, QuadExprs) as a new expression; empty -> ``0.0``.

    A ``tupledict`` sums its values, with gurobipy's ``DeprecationWarning`` (a plain dict, as in
    gurobipy, iterates its keys): MIPLIB-NL's ex9 and ex10 write ``quicksum(b)`` for ``b.sum()``."""
    from ._tuples import tupledict  # imported here: _tuples builds on this module

    if isinstance(data, tupledict):
        warnings.warn(
            "Calling quicksum on a tupledict is deprecated, use .sum() instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        data = list(data.values())
    expr: LinExpr | QuadExpr = LinExpr()
    for item in data:
        result = expr.__iadd__(item)
        # a matrix expression (0-d MVar, ...) takes over through its reflected operator
        expr = expr + item if result is NotImplemented else result
    return expr


def _iterable(value: object) -> Iterable[object]:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return value
    return [value]


def _solution_value(var: Var) -> float:
    if var._solution is None:
        raise AttributeError("Unable to retrieve attribute 'x'")
    return var._solution


# LinExpr and QuadExpr subclass _Expression and use Var, all defined above; Var's arithmetic and
# TempConstr use them in turn (at call time only). Imported here, last, so that the two modules
# find those names when they load: nothing else imports _linexpr or _quadexpr directly, so this
# module always loads first.
from ._linexpr import LinExpr  # noqa: E402
from ._quadexpr import QuadExpr  # noqa: E402

# what the rest of the package imports from here (LinExpr and QuadExpr are re-exported)
__all__ = ["GenExpr", "LinExpr", "QuadExpr", "TempConstr", "Var", "as_number", "quicksum"]
