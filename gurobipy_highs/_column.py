"""``Column``: the constraints a new variable enters, with its coefficient in each.

``Model.addVar(column=...)`` applies it when the variable is added at the next update: the
variable joins each listed constraint (a constraint listed twice gets the sum), which must be
in the model by then.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ._errors import GurobiError
from ._expr import as_number
from ._objects import ModelObject


def _many(value: object) -> list[object]:
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return list(value.values() if isinstance(value, dict) else value)
    return [value]


class Column:
    """``Column(coeffs=None, constrs=None)``: one coefficient and constraint, or lists of them."""

    __slots__ = ("_coeffs", "_constrs")

    def __init__(self, coeffs: object = None, constrs: object = None) -> None:
        self._coeffs: list[float] = []
        self._constrs: list[ModelObject] = []
        if isinstance(coeffs, Column):
            self._coeffs, self._constrs = list(coeffs._coeffs), list(coeffs._constrs)
        elif coeffs is not None or constrs is not None:
            self.addTerms(coeffs, constrs)

    def addTerms(self, coeffs: object, constrs: object) -> None:
        """Append ``coeffs[i]`` in ``constrs[i]`` (or one coefficient and one constraint)."""
        coeff_list, constr_list = _many(coeffs), _many(constrs)
        if len(coeff_list) != len(constr_list):
            raise GurobiError(10003, "Mismatched lengths for coefficients and constraints")
        for coeff, constr in zip(coeff_list, constr_list, strict=True):
            number = as_number(coeff)
            if number is None or not isinstance(constr, ModelObject) or constr._kind != "Constr":
                raise TypeError("Column terms are numbers and linear constraints (Constr)")
            self._coeffs.append(number)
            self._constrs.append(constr)

    def size(self) -> int:
        return len(self._coeffs)

    def getCoeff(self, i: int) -> float:
        return self._coeffs[i]

    def getConstr(self, i: int) -> ModelObject:
        return self._constrs[i]

    def remove(self, item: int | ModelObject) -> None:
        """Remove term number ``item``, or every term of constraint ``item``."""
        if isinstance(item, ModelObject):
            keep = [k for k, c in enumerate(self._constrs) if c is not item]
            self._coeffs = [self._coeffs[k] for k in keep]
            self._constrs = [self._constrs[k] for k in keep]
        else:
            del self._coeffs[item]
            del self._constrs[item]

    def clear(self) -> None:
        self._coeffs, self._constrs = [], []

    def copy(self) -> Column:
        return Column(self)

    def terms(self) -> Iterator[tuple[float, ModelObject]]:
        return zip(self._coeffs, self._constrs, strict=True)

    def __repr__(self) -> str:
        body = " ".join(f"({c!r} {k})" for c, k in self.terms())
        return f"<gurobi.Column: {body}>" if body else "<gurobi.Column: >"
