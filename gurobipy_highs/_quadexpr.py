"""``QuadExpr``: a :class:`~._linexpr.LinExpr` part plus quadratic terms ``coeff * var1 *
var2``, kept unmerged as gurobipy 13 keeps them; products of higher degree are
``CompatNotImplementedError`` (gurobipy's ``NLExpr``).

Import it from :mod:`._expr` (see there why the expression classes are split this way).
"""

from __future__ import annotations

from collections.abc import Iterator

from ._expr import Var, _Expression, _iterable, _nonlinear, _solution_value, as_number
from ._linexpr import LinExpr


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
