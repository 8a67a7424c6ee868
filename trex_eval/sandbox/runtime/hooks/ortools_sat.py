"""Hook for OR-Tools CP-SAT (``CpSolver.solve``; the deprecated ``Solve`` calls it).

CP-SAT models are integer programs: the linear part (variables with an interval domain, linear
constraints with an interval domain and no enforcement literal, a linear objective) becomes the
matrix form; every other constraint (``all_different``, holes in a domain, enforcement literals,
...) is counted as a general constraint, which makes the harness skip its re-solve.
CP-SAT stores the objective as ``scaling_factor * (coeffs . x + offset)``; the matrix form holds
the objective as the program stated it. Search workers are capped at one.
"""

from __future__ import annotations

import contextlib
import sys
from types import ModuleType
from typing import Any

from .. import capture as c

MODULE = "ortools.sat.python.cp_model"
ORDER = 50
WARM = ("ortools.sat.python.cp_model",)
WARM_ORDER = 20
DISTRIBUTION = ("ortools",)
LIBRARY = "ortools.sat"
_INT64_MAX = 2**63 - 1

_STATUS = {
    0: ("UNKNOWN", c.UNKNOWN),
    1: ("MODEL_INVALID", c.ERROR),
    2: ("FEASIBLE", c.FEASIBLE),
    3: ("INFEASIBLE", c.INFEASIBLE),
    4: ("OPTIMAL", c.OPTIMAL),
}


def _bound(value: int) -> float:
    if value >= _INT64_MAX:
        return c.INF
    if value <= -_INT64_MAX:
        return -c.INF
    return float(value)


def _has(message: Any, name: str) -> bool:
    """Field presence on both proto flavours: protobuf (``HasField``) and OR-Tools >= 9.12's
    native wrappers (``has_<name>()``)."""
    if hasattr(message, "HasField"):
        return bool(message.HasField(name))
    return bool(getattr(message, f"has_{name}")())


def _proto(model: Any) -> Any:
    proto = getattr(model, "proto", None)
    if proto is None or callable(proto):
        proto = model.Proto()
    return proto


def capture_matrix(model: Any) -> dict[str, Any]:
    proto = _proto(model)
    general = 0
    if _has(proto, "floating_point_objective"):
        objective = proto.floating_point_objective
        sense = "max" if objective.maximize else "min"
        scale, offset = 1.0, float(objective.offset)
    else:
        objective = proto.objective
        factor = float(objective.scaling_factor) or 1.0
        sense = "max" if factor < 0 else "min"
        scale, offset = factor, float(objective.offset) * factor
    builder = c.LinearModelBuilder(sense, infinity=float("inf"))
    costs = dict.fromkeys(range(len(proto.variables)), 0.0)
    for var, coef in zip(objective.vars, objective.coeffs, strict=True):
        # A negative reference means "not x" (1 - x) for Boolean variables.
        if var < 0:
            costs[-var - 1] -= scale * coef
            offset += scale * coef
        else:
            costs[var] += scale * coef
    builder.objective_constant = offset
    for index, var in enumerate(proto.variables):
        domain = list(var.domain)
        if len(domain) > 2:
            general += 1
        builder.add_var(
            var.name or f"v{index}", obj=costs[index], lb=_bound(domain[0]), ub=_bound(domain[-1]), vtype="I"
        )
    for index, constraint in enumerate(proto.constraints):
        if not _has(constraint, "linear") or len(constraint.enforcement_literal):
            general += 1
            continue
        linear = constraint.linear
        domain = list(linear.domain)
        if len(domain) > 2 or any(var < 0 for var in linear.vars):
            general += 1
            continue
        builder.add_row(
            constraint.name or f"c{index}",
            lower=_bound(domain[0]),
            upper=_bound(domain[-1]),
            entries=list(zip(linear.vars, (float(x) for x in linear.coeffs), strict=True)),
        )
    builder.n_general_constraints = general
    return builder.build()


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    solver = args[0]
    with contextlib.suppress(Exception):
        solver.parameters.num_workers = 1
    model = args[1] if len(args) > 1 else kwargs.get("model")
    return c.capture_model(lambda: capture_matrix(model))


def _report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    solver = args[0]
    name, status = _STATUS.get(int(result), (str(result), c.UNKNOWN))
    objective = None
    if status in (c.OPTIMAL, c.FEASIBLE):
        value = solver.objective_value
        objective = c.finite_or_none(value() if callable(value) else value)
    model = prepared.get("model") if isinstance(prepared, dict) else None
    fields: dict[str, Any] = {
        "status": status,
        "raw_status": name,
        "objective": objective,
        "sense": model["sense"] if model else None,
        "num_vars": len(model["var_names"]) if model else None,
        "num_constraints": len(model["row_names"]) + model["n_general_constraints"] if model else None,
    }
    fields.update(prepared)
    return fields


def install(module: ModuleType) -> None:
    solver_class = module.CpSolver
    if c.is_hooked(solver_class.__dict__.get("solve")):
        return
    solver_class.solve = c.wrap_solve(LIBRARY, solver_class.solve, _prepare, _report)


def read_binding(obj: Any) -> dict[str, Any] | None:
    module = sys.modules.get(MODULE)
    if module is None or not isinstance(obj, (module.CpModel, module.CpSolver)):
        return None
    return {"library": LIBRARY, "status": None, "raw_status": None, "objective": None}
