"""Variables and expressions: ``Var``, ``LinExpr``, ``QuadExpr``, ``TempConstr``, ``GenExpr``.

Arithmetic follows gurobipy 13: expressions keep their terms unmerged and in creation order
(duplicates are merged only when a constraint or objective enters the model), ``+=`` mutates in
place, ``Var * Var`` is a ``QuadExpr``, and comparisons build a ``TempConstr`` whose truth value
is an error. Operations that real gurobipy turns into a nonlinear ``NLExpr`` (``x / y``,
``x ** 3``, cubic products) raise :class:`CompatNotImplementedError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Union

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
    if isinstance(value, (Var, LinExpr, QuadExpr, TempConstr, GenExpr, str, bytes)):
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


# --------------------------------------------------------------------------- LinExpr


Operand = Union[Var, "LinExpr", "QuadExpr", float, int]


class LinExpr(_Expression):
    """A linear expression ``constant + sum(coeff_i * var_i)``; terms are kept unmerged.

    Constructors (as in gurobipy): ``LinExpr()``, ``LinExpr(constant)``, ``LinExpr(var)``,
    ``LinExpr(expr)`` (a copy), ``LinExpr(coeff, var)``, ``LinExpr(coeffs, vars)`` and
    ``LinExpr([(coeff, var), ...])``.
    """

    __slots__ = ("_coeffs", "_constant", "_vars")
    __array_ufunc__ = None

    def __init__(self, arg1: object = 0.0, arg2: object = None) -> None:
        self._coeffs: list[float] = []
        self._vars: list[Var] = []
        self._constant = 0.0
        if arg2 is not None:
            self.addTerms(arg1, arg2)
            return
        number = as_number(arg1)
        if number is not None:
            self._constant = number
        elif isinstance(arg1, Var):
            self._coeffs.append(1.0)
            self._vars.append(arg1)
        elif isinstance(arg1, LinExpr):
            self._coeffs = list(arg1._coeffs)
            self._vars = list(arg1._vars)
            self._constant = arg1._constant
        elif isinstance(arg1, (list, tuple)):
            for pair in arg1:
                coeff, var = pair
                self.addTerms(coeff, var)
        else:
            raise TypeError(f"cannot build a LinExpr from {type(arg1).__name__}")

    @classmethod
    def _raw(cls, coeffs: list[float], variables: list[Var], constant: float) -> LinExpr:
        expr = cls.__new__(cls)
        expr._coeffs = coeffs
        expr._vars = variables
        expr._constant = constant
        return expr

    # inspection ----------------------------------------------------------------
    def size(self) -> int:
        """Number of terms (duplicates counted separately)."""
        return len(self._vars)

    def getVar(self, i: int) -> Var:
        """Variable of term ``i``; ``IndexError`` when out of range."""
        return self._vars[i]

    def getCoeff(self, i: int) -> float:
        """Coefficient of term ``i``; ``IndexError`` when out of range."""
        return self._coeffs[i]

    def getConstant(self) -> float:
        return self._constant

    def linTerms(self) -> Iterator[tuple[float, Var]]:
        """The terms as ``(coeff, var)`` pairs."""
        return zip(self._coeffs, self._vars, strict=True)

    def getValue(self) -> float:
        """Value at the current solution; ``AttributeError`` when no solution is available."""
        total = self._constant
        for coeff, var in zip(self._coeffs, self._vars, strict=True):
            total += coeff * _solution_value(var)
        return total

    # mutation --------------------------------------------------------------------
    def addTerms(self, coeffs: object, variables: object) -> None:
        """Append ``coeffs[i] * vars[i]`` (or one ``coeff * var`` when given scalars)."""
        if isinstance(variables, Var):
            number = as_number(coeffs)
            if number is None:
                raise TypeError("coefficient must be a number")
            self._coeffs.append(number)
            self._vars.append(variables)
            return
        var_list = list(_iterable(variables))
        coeff_list = list(_iterable(coeffs))
        if len(var_list) != len(coeff_list):
            raise GurobiError(10003, "Mismatched lengths for coefficients and variables")
        for coeff, var in zip(coeff_list, var_list, strict=True):
            number = as_number(coeff)
            if number is None or not isinstance(var, Var):
                raise TypeError("addTerms expects numbers and Var objects")
            self._coeffs.append(number)
            self._vars.append(var)

    def addConstant(self, c: object) -> None:
        number = as_number(c)
        if number is None:
            raise TypeError("constant must be a number")
        self._constant += number

    def add(self, expr: object, mult: object = 1.0) -> None:
        """Add ``mult * expr`` in place (``expr``: number, Var or LinExpr)."""
        factor = as_number(mult)
        if factor is None:
            raise TypeError("multiplier must be a number")
        number = as_number(expr)
        if number is not None:
            self._constant += factor * number
        elif isinstance(expr, Var):
            self._coeffs.append(factor)
            self._vars.append(expr)
        elif isinstance(expr, LinExpr):
            self._coeffs.extend(c * factor for c in expr._coeffs)
            self._vars.extend(expr._vars)
            self._constant += factor * expr._constant
        else:
            raise TypeError(f"cannot add {type(expr).__name__} to a LinExpr")

    def remove(self, item: int | Var) -> None:
        """Remove term number ``item``, or every term of variable ``item``."""
        if isinstance(item, Var):
            keep = [k for k, var in enumerate(self._vars) if var is not item]
            self._coeffs = [self._coeffs[k] for k in keep]
            self._vars = [self._vars[k] for k in keep]
        else:
            del self._coeffs[item]
            del self._vars[item]

    def clear(self) -> None:
        self._coeffs = []
        self._vars = []
        self._constant = 0.0

    def copy(self) -> LinExpr:
        return LinExpr._raw(list(self._coeffs), list(self._vars), self._constant)

    # arithmetic --------------------------------------------------------------------
    def __iadd__(self, other: object) -> LinExpr | QuadExpr:
        number = as_number(other)
        if number is not None:
            self._constant += number
        elif isinstance(other, Var):
            self._coeffs.append(1.0)
            self._vars.append(other)
        elif isinstance(other, LinExpr):
            self._coeffs.extend(other._coeffs)
            self._vars.extend(other._vars)
            self._constant += other._constant
        elif isinstance(other, QuadExpr):
            return QuadExpr._from_linear(self).__iadd__(other)
        else:
            return NotImplemented
        return self

    def __isub__(self, other: object) -> LinExpr | QuadExpr:
        number = as_number(other)
        if number is not None:
            self._constant -= number
        elif isinstance(other, Var):
            self._coeffs.append(-1.0)
            self._vars.append(other)
        elif isinstance(other, LinExpr):
            self._coeffs.extend(-c for c in other._coeffs)
            self._vars.extend(other._vars)
            self._constant -= other._constant
        elif isinstance(other, QuadExpr):
            return QuadExpr._from_linear(self).__isub__(other)
        else:
            return NotImplemented
        return self

    def __add__(self, other: object) -> LinExpr | QuadExpr:
        return self.copy().__iadd__(other)

    def __radd__(self, other: object) -> LinExpr | QuadExpr:
        return self.copy().__iadd__(other)

    def __sub__(self, other: object) -> LinExpr | QuadExpr:
        return self.copy().__isub__(other)

    def __rsub__(self, other: object) -> LinExpr | QuadExpr:
        return (-self).__iadd__(other)

    def __mul__(self, other: object) -> LinExpr | QuadExpr:
        number = as_number(other)
        if number is not None:
            return LinExpr._raw([c * number for c in self._coeffs], list(self._vars), self._constant * number)
        if isinstance(other, Var):
            other = other._lin()
        if isinstance(other, LinExpr):
            return _product(self, other)
        if isinstance(other, QuadExpr):
            raise _nonlinear("LinExpr * QuadExpr")
        return NotImplemented

    def __rmul__(self, other: object) -> LinExpr | QuadExpr:
        return self.__mul__(other)

    def __imul__(self, other: object) -> LinExpr | QuadExpr:
        number = as_number(other)
        if number is None:
            return self.__mul__(other)
        self._coeffs = [c * number for c in self._coeffs]
        self._constant *= number
        return self

    def __truediv__(self, other: object) -> LinExpr:
        number = as_number(other)
        if number is None:
            if isinstance(other, (Var, LinExpr, QuadExpr)):
                raise _nonlinear("division by an expression")
            return NotImplemented
        if number == 0.0:
            raise ZeroDivisionError("float division by zero")
        return LinExpr._raw([c / number for c in self._coeffs], list(self._vars), self._constant / number)

    def __itruediv__(self, other: object) -> LinExpr:
        return self.__truediv__(other)

    def __rtruediv__(self, other: object) -> LinExpr:
        raise _nonlinear("division by an expression")

    def __pow__(self, exponent: object) -> LinExpr | QuadExpr | float:
        power = as_number(exponent)
        if power == 1.0:
            return self.copy()
        if power == 0.0:
            return 1.0
        if power == 2.0:
            return _product(self, self)
        raise _nonlinear(f"LinExpr ** {exponent!r}")

    def __neg__(self) -> LinExpr:
        return LinExpr._raw([-c for c in self._coeffs], list(self._vars), -self._constant)

    def _body(self) -> str:
        parts: list[str] = []
        if self._constant != 0.0 or not self._vars:
            parts.append(repr(self._constant))
        for coeff, var in zip(self._coeffs, self._vars, strict=True):
            parts.append(var._label() if coeff == 1.0 else f"{coeff!r} {var._label()}")
        return " + ".join(parts)

    def __repr__(self) -> str:
        return f"<gurobi.LinExpr: {self._body()}>"

    def __str__(self) -> str:
        return self._body()


def _product(left: LinExpr, right: LinExpr) -> LinExpr | QuadExpr:
    """``left * right`` expanded term by term (constants produce linear terms)."""
    linear = LinExpr._raw(
        [left._constant * c for c in right._coeffs] + [c * right._constant for c in left._coeffs],
        list(right._vars) + list(left._vars),
        left._constant * right._constant,
    )
    if left._constant == 0.0:
        linear._coeffs = linear._coeffs[len(right._coeffs) :]
        linear._vars = linear._vars[len(right._vars) :]
    if right._constant == 0.0:
        cut = len(linear._coeffs) - len(left._coeffs)
        linear._coeffs = linear._coeffs[:cut]
        linear._vars = linear._vars[:cut]
    qcoeffs: list[float] = []
    qvars1: list[Var] = []
    qvars2: list[Var] = []
    for c1, v1 in zip(left._coeffs, left._vars, strict=True):
        for c2, v2 in zip(right._coeffs, right._vars, strict=True):
            qcoeffs.append(c1 * c2)
            qvars1.append(v1)
            qvars2.append(v2)
    if not qcoeffs:
        return linear
    return QuadExpr._raw(linear, qcoeffs, qvars1, qvars2)


# --------------------------------------------------------------------------- QuadExpr


class QuadExpr(_Expression):
    """A quadratic expression: a :class:`LinExpr` part plus terms ``coeff * var1 * var2``."""

    __slots__ = ("_linear", "_qcoeffs", "_qvars1", "_qvars2")
    __array_ufunc__ = None

    def __init__(self, expr: object = None) -> None:
        self._linear = LinExpr()
        self._qcoeffs: list[float] = []
        self._qvars1: list[Var] = []
        self._qvars2: list[Var] = []
        if expr is not None:
            result = self.__iadd__(expr)
            if result is NotImplemented:
                raise TypeError(f"cannot build a QuadExpr from {type(expr).__name__}")

    @classmethod
    def _raw(cls, linear: LinExpr, qcoeffs: list[float], qvars1: list[Var], qvars2: list[Var]) -> QuadExpr:
        expr = cls.__new__(cls)
        expr._linear = linear
        expr._qcoeffs = qcoeffs
        expr._qvars1 = qvars1
        expr._qvars2 = qvars2
        return expr

    @classmethod
    def _from_linear(cls, linear: LinExpr) -> QuadExpr:
        return cls._raw(linear.copy(), [], [], [])

    # inspection ------------------------------------------------------------------------
    def size(self) -> int:
        """Number of quadratic terms."""
        return len(self._qcoeffs)

    def getVar1(self, i: int) -> Var:
        return self._qvars1[i]

    def getVar2(self, i: int) -> Var:
        return self._qvars2[i]

    def getCoeff(self, i: int) -> float:
        return self._qcoeffs[i]

    def getLinExpr(self) -> LinExpr:
        """The linear part (constant included), as a copy."""
        return self._linear.copy()

    def linTerms(self) -> Iterator[tuple[float, Var]]:
        return self._linear.linTerms()

    def quadTerms(self) -> Iterator[tuple[float, Var, Var]]:
        return zip(self._qcoeffs, self._qvars1, self._qvars2, strict=True)

    def getValue(self) -> float:
        total = self._linear.getValue()
        for coeff, v1, v2 in zip(self._qcoeffs, self._qvars1, self._qvars2, strict=True):
            total += coeff * _solution_value(v1) * _solution_value(v2)
        return total

    # mutation ------------------------------------------------------------------------
    def addTerms(self, coeffs: object, vars: object, vars2: object = None) -> None:
        """Append linear terms (``vars2`` omitted) or quadratic terms ``coeffs[i]*vars[i]*vars2[i]``."""
        if vars2 is None:
            self._linear.addTerms(coeffs, vars)
            return
        if isinstance(vars, Var) and isinstance(vars2, Var):
            number = as_number(coeffs)
            if number is None:
                raise TypeError("coefficient must be a number")
            self._append_quad(number, vars, vars2)
            return
        for coeff, v1, v2 in zip(_iterable(coeffs), _iterable(vars), _iterable(vars2), strict=True):
            number = as_number(coeff)
            if number is None or not isinstance(v1, Var) or not isinstance(v2, Var):
                raise TypeError("addTerms expects numbers and Var objects")
            self._append_quad(number, v1, v2)

    def _append_quad(self, coeff: float, v1: Var, v2: Var) -> None:
        self._qcoeffs.append(coeff)
        self._qvars1.append(v1)
        self._qvars2.append(v2)

    def addConstant(self, c: object) -> None:
        self._linear.addConstant(c)

    def add(self, expr: object, mult: object = 1.0) -> None:
        factor = as_number(mult)
        if factor is None:
            raise TypeError("multiplier must be a number")
        if isinstance(expr, QuadExpr):
            self._linear.add(expr._linear, factor)
            self._qcoeffs.extend(c * factor for c in expr._qcoeffs)
            self._qvars1.extend(expr._qvars1)
            self._qvars2.extend(expr._qvars2)
        else:
            self._linear.add(expr, factor)

    def remove(self, item: int | Var) -> None:
        """Remove quadratic term number ``item``, or every term (linear or quadratic) of a Var."""
        if isinstance(item, Var):
            self._linear.remove(item)
            keep = [
                k
                for k in range(len(self._qcoeffs))
                if self._qvars1[k] is not item and self._qvars2[k] is not item
            ]
            self._qcoeffs = [self._qcoeffs[k] for k in keep]
            self._qvars1 = [self._qvars1[k] for k in keep]
            self._qvars2 = [self._qvars2[k] for k in keep]
        else:
            del self._qcoeffs[item]
            del self._qvars1[item]
            del self._qvars2[item]

    def clear(self) -> None:
        self._linear.clear()
        self._qcoeffs, self._qvars1, self._qvars2 = [], [], []

    def copy(self) -> QuadExpr:
        return QuadExpr._raw(self._linear.copy(), list(self._qcoeffs), list(self._qvars1), list(self._qvars2))

    # arithmetic --------------------------------------------------------------------
    def __iadd__(self, other: object) -> QuadExpr:
        if isinstance(other, QuadExpr):
            self._linear.__iadd__(other._linear)
            self._qcoeffs.extend(other._qcoeffs)
            self._qvars1.extend(other._qvars1)
            self._qvars2.extend(other._qvars2)
            return self
        if as_number(other) is not None or isinstance(other, (Var, LinExpr)):
            self._linear.__iadd__(other)
            return self
        return NotImplemented

    def __isub__(self, other: object) -> QuadExpr:
        if isinstance(other, QuadExpr):
            return self.__iadd__(-other)
        if as_number(other) is not None or isinstance(other, (Var, LinExpr)):
            self._linear.__isub__(other)
            return self
        return NotImplemented

    def __add__(self, other: object) -> QuadExpr:
        return self.copy().__iadd__(other)

    def __radd__(self, other: object) -> QuadExpr:
        return self.copy().__iadd__(other)

    def __sub__(self, other: object) -> QuadExpr:
        return self.copy().__isub__(other)

    def __rsub__(self, other: object) -> QuadExpr:
        return (-self).__iadd__(other)

    def __mul__(self, other: object) -> QuadExpr:
        number = as_number(other)
        if number is not None:
            scaled = self._linear * number
            assert isinstance(scaled, LinExpr)
            return QuadExpr._raw(
                scaled, [c * number for c in self._qcoeffs], list(self._qvars1), list(self._qvars2)
            )
        if isinstance(other, (Var, LinExpr, QuadExpr)):
            raise _nonlinear("QuadExpr * expression")
        return NotImplemented

    def __rmul__(self, other: object) -> QuadExpr:
        return self.__mul__(other)

    def __imul__(self, other: object) -> QuadExpr:
        return self.__mul__(other)

    def __truediv__(self, other: object) -> QuadExpr:
        number = as_number(other)
        if number is None:
            if isinstance(other, (Var, LinExpr, QuadExpr)):
                raise _nonlinear("division by an expression")
            return NotImplemented
        if number == 0.0:
            raise ZeroDivisionError("float division by zero")
        return self.__mul__(1.0 / number)

    def __rtruediv__(self, other: object) -> QuadExpr:
        raise _nonlinear("division by an expression")

    def __pow__(self, exponent: object) -> QuadExpr | float:
        power = as_number(exponent)
        if power == 1.0:
            return self.copy()
        if power == 0.0:
            return 1.0
        raise _nonlinear(f"QuadExpr ** {exponent!r}")

    def __neg__(self) -> QuadExpr:
        return self.__mul__(-1.0)

    def _body(self) -> str:
        text = self._linear._body()
        if self._qcoeffs:
            quad: list[str] = []
            for coeff, v1, v2 in zip(self._qcoeffs, self._qvars1, self._qvars2, strict=True):
                product = f"{v1._label()} ^ 2" if v1 is v2 else f"{v1._label()} * {v2._label()}"
                quad.append(product if coeff == 1.0 else f"{coeff!r} {product}")
            text += " + [ " + " + ".join(quad) + " ]"
        return text

    def __repr__(self) -> str:
        return f"<gurobi.QuadExpr: {self._body()}>"

    def __str__(self) -> str:
        return self._body()


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
    """Sum of ``data`` (numbers, Vars, LinExprs, QuadExprs) as a new expression; empty -> ``0.0``."""
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
