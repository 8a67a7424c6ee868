"""Model-owned constraint objects: ``Constr``, ``QConstr``, ``SOS`` and ``GenConstr``.

Like :class:`~._expr.Var`, each reads and writes its attributes through its model, which
applies gurobipy's case-insensitive names and lazy-update rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._attributes import AttributeAccess

if TYPE_CHECKING:
    from ._expr import Var
    from ._model import Model

NOT_IN_MODEL = -1
REMOVED = -2


class ModelObject(AttributeAccess):
    """Common part of the constraint classes: owning model, position and attribute values."""

    __slots__ = ("__dict__", "_future", "_index", "_model", "_props")
    _model: Model
    _index: int
    _future: int
    _props: dict[str, object]
    _kind = "ModelObject"
    _name_attr = ""

    def __init__(self, model: Model, props: dict[str, object]) -> None:
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_index", NOT_IN_MODEL)
        object.__setattr__(self, "_future", model._future_index(self._kind))
        object.__setattr__(self, "_props", props)

    @property
    def index(self) -> int:
        """Position among the model's objects of this kind (while awaiting an update: the
        position it will get); -2 once removed."""
        return self._future if self._index == NOT_IN_MODEL else self._index

    def sameAs(self, other: object) -> bool:
        return other is self

    def __repr__(self) -> str:
        if self._index < 0:
            return f"<gurobi.{self._kind} *Awaiting Model Update*>"
        return f"<gurobi.{self._kind} {self._props.get(self._name_attr, self._index)}>"

    __str__ = __repr__


class Constr(ModelObject):
    """A linear constraint ``row sense RHS``; the row is stored merged and in column order."""

    __slots__ = ("_coeffs", "_vars")
    _vars: list[Var]
    _coeffs: list[float]
    _kind = "Constr"
    _name_attr = "ConstrName"

    def __init__(self, model: Model, props: dict[str, object]) -> None:
        super().__init__(model, props)
        object.__setattr__(self, "_vars", [])
        object.__setattr__(self, "_coeffs", [])

    def _set_row(self, variables: list[Var], coeffs: list[float]) -> None:
        object.__setattr__(self, "_vars", variables)
        object.__setattr__(self, "_coeffs", coeffs)


class QConstr(ModelObject):
    """A quadratic constraint: merged linear part plus merged ``(var_i, var_j, coeff)`` terms."""

    __slots__ = ("_lin_coeffs", "_lin_vars", "_quad")
    _lin_vars: list[Var]
    _lin_coeffs: list[float]
    _quad: list[tuple[Var, Var, float]]
    _kind = "QConstr"
    _name_attr = "QCName"

    def __init__(self, model: Model, props: dict[str, object]) -> None:
        super().__init__(model, props)
        object.__setattr__(self, "_lin_vars", [])
        object.__setattr__(self, "_lin_coeffs", [])
        object.__setattr__(self, "_quad", [])

    def _set_terms(self, lin: tuple[list[Var], list[float]], quad: list[tuple[Var, Var, float]]) -> None:
        object.__setattr__(self, "_lin_vars", lin[0])
        object.__setattr__(self, "_lin_coeffs", lin[1])
        object.__setattr__(self, "_quad", quad)


class SOS(ModelObject):
    """A special ordered set of type 1 or 2 with its members and weights."""

    __slots__ = ("_members", "_type", "_weights")
    _members: list[Var]
    _type: int
    _weights: list[float]
    _kind = "SOS"

    def __init__(self, model: Model, sos_type: int, members: list[Var], weights: list[float]) -> None:
        super().__init__(model, {})
        object.__setattr__(self, "_type", sos_type)
        object.__setattr__(self, "_members", members)
        object.__setattr__(self, "_weights", weights)

    def __repr__(self) -> str:
        if self._index < 0:
            return "<gurobi.SOS *Awaiting Model Update*>"
        return f"<gurobi.SOS {self._index}>"


class GenConstr(ModelObject):
    """A general constraint (max, min, abs, and, or, norm, indicator, pwl).

    ``_data`` holds the type-specific operands: ``resvar``/``vars``/``constant`` for the
    function types, ``binvar``/``binval``/``vars``/``coeffs``/``sense``/``rhs`` for an indicator,
    ``xvar``/``yvar``/``xpts``/``ypts`` for a piecewise-linear constraint.
    """

    __slots__ = ("_data",)
    _data: dict[str, object]
    _kind = "GenConstr"

    def __init__(self, model: Model, props: dict[str, object], data: dict[str, object]) -> None:
        super().__init__(model, props)
        object.__setattr__(self, "_data", data)

    def __repr__(self) -> str:
        if self._index < 0:
            return "<gurobi.GenConstr *Awaiting Model Update*>"
        return f"<gurobi.GenConstr {self._index}>"
