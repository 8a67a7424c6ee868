"""The multi-objective half of ``Model`` (a mixin): ``setObjectiveN``, ``getObjective(index)``
and the ``ObjN*``/``NumObj``/``IsMultiObj`` attributes. How such a model is solved is in
:mod:`._multiobj`."""

from __future__ import annotations

from ._errors import GurobiError
from ._expr import LinExpr, Var
from ._multiobj import MultiObjectives, ObjectiveN, linear_objective
from ._state import ModelState, float_prop, number, require_member

#: Model attributes answered here (read through ``ObjNumber`` where they are per objective).
MULTI_ATTRS = frozenset(
    {
        "NumObj",
        "IsMultiObj",
        "ObjNVal",
        "ObjNPriority",
        "ObjNWeight",
        "ObjNName",
        "ObjNAbsTol",
        "ObjNRelTol",
        "ObjNCon",
    }
)


class MultiObjectiveMethods:
    """Needs the model state in ``self._gpc``."""

    _gpc: ModelState

    def setObjectiveN(
        self,
        expr: object,
        index: object,
        priority: object = 0,
        weight: object = 1.0,
        abstol: object = 1e-6,
        reltol: object = 0.0,
        name: object = "",
    ) -> None:
        """Set objective ``index`` (linear only, as in gurobipy) with its priority, weight and
        degradation tolerances; applied at the next update, after any ``setObjective``."""
        linear = linear_objective(expr)
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise GurobiError(10003, f"Invalid objective index {index!r}")
        spec = ObjectiveN(
            terms=None,
            constant=linear._constant,
            priority=int(number(priority, "priority")),
            weight=number(weight, "weight"),
            abstol=number(abstol, "abstol"),
            reltol=number(reltol, "reltol"),
            name="" if name is None else str(name),
        )

        def commit() -> bool:
            state = self._gpc
            for var in linear._vars:
                require_member(self, var)
            if state.multi is None:
                state.multi = MultiObjectives()
            if index == 0:
                for var in state.vars:
                    var._props["Obj"] = 0.0
                for coeff, var in zip(linear._coeffs, linear._vars, strict=True):
                    var._props["Obj"] = float_prop(var, "Obj") + coeff
                state.obj_constant = linear._constant
                state.q_obj = []
            else:
                spec.terms = list(zip(linear._vars, linear._coeffs, strict=True))
            state.multi.objectives[index] = spec
            return True

        self._gpc.pending_late.append(commit)

    def _objective_n(self, index: int) -> LinExpr:
        return objective_n(self._gpc, index)


def objective_n(state: ModelState, index: int) -> LinExpr:
    """Objective ``index`` >= 1 as a LinExpr (objective 0 is ``getObjective()``)."""
    multi = state.multi
    if multi is None or index >= multi.count:
        raise GurobiError(10006, "Index out of range")
    spec = multi.get(index)
    terms = [(var, coeff) for var, coeff in spec.terms or [] if var._index >= 0]
    return LinExpr._raw([c for _v, c in terms], [v for v, _c in terms], spec.constant)


def multi_attr(state: ModelState, canonical: str) -> object:
    multi = state.multi
    if canonical == "NumObj":
        return multi.count if multi is not None else 1
    if canonical == "IsMultiObj":
        return int(multi is not None)
    number_param = state.params.get("ObjNumber")
    assert isinstance(number_param, int)
    count = multi.count if multi is not None else 1
    if number_param >= count:
        raise AttributeError(f"Unable to retrieve attribute '{canonical}'")
    spec = (multi or MultiObjectives()).get(number_param)
    if canonical == "ObjNVal":
        outcome = state.outcome
        if outcome is None or outcome.x is None:
            raise AttributeError(f"Unable to retrieve attribute '{canonical}'")
        if outcome.objn is not None:
            return outcome.objn[number_param]
        assert outcome.objval is not None
        return outcome.objval
    if canonical == "ObjNCon":
        return state.obj_constant if number_param == 0 else spec.constant
    values: dict[str, object] = {
        "ObjNPriority": spec.priority,
        "ObjNWeight": spec.weight,
        "ObjNName": spec.name,
        "ObjNAbsTol": spec.abstol,
        "ObjNRelTol": spec.reltol,
    }
    return values[canonical]


def var_objn(state: ModelState, var: Var) -> float:
    """``Var.ObjN``: the variable's coefficient in objective ``ObjNumber``."""
    index = state.params.get("ObjNumber")
    assert isinstance(index, int)
    if index == 0:
        return float_prop(var, "Obj")
    expr = objective_n(state, index)
    return sum(c for c, v in zip(expr._coeffs, expr._vars, strict=True) if v is var)
