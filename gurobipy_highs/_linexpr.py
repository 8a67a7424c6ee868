"""``LinExpr``: a linear expression with its terms kept unmerged, as gurobipy 13 keeps them,
and ``_product``, the expansion of ``LinExpr * LinExpr`` (a ``QuadExpr`` when both have terms).

Import it from :mod:`._expr` (see there why the expression classes are split this way).
"""

from __future__ import annotations

from collections.abc import Iterator

from ._errors import GurobiError
from ._expr import Var, _Expression, _iterable, _nonlinear, _solution_value, as_number


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


# QuadExpr builds on LinExpr (defined above): imported last for the same reason as in _expr.
from ._quadexpr import QuadExpr  # noqa: E402
