"""Hook for OR-Tools MathOpt (``mathopt.solve``), when the installed OR-Tools ships it.

``solve`` is a module-level function: the hook rebinds it in ``mathopt`` and in the module that
defines it. It runs when ``mathopt`` is first imported, so ``from ... import solve`` in a program
already gets the hooked function. The matrix is ``Model.export_model()``, read before the solve.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from .. import capture as c

MODULE = "ortools.math_opt.python.mathopt"
ORDER = 60
WARM = ()
DISTRIBUTION = ("ortools",)
LIBRARY = "ortools.math_opt"

_REASON = {
    "OPTIMAL": c.OPTIMAL,
    "INFEASIBLE": c.INFEASIBLE,
    "UNBOUNDED": c.UNBOUNDED,
    "INFEASIBLE_OR_UNBOUNDED": c.INF_OR_UNBD,
    "IMPRECISE": c.NUMERIC,
    "FEASIBLE": c.FEASIBLE,
    "NO_SOLUTION_FOUND": c.INTERRUPTED,
    "NUMERICAL_ERROR": c.NUMERIC,
    "OTHER_ERROR": c.ERROR,
}


def capture_matrix(model: Any) -> dict[str, Any]:
    proto = model.export_model()
    objective = proto.objective
    builder = c.LinearModelBuilder("max" if objective.maximize else "min", infinity=float("inf"))
    variables = proto.variables
    column = {var_id: i for i, var_id in enumerate(variables.ids)}
    costs = dict(zip(objective.linear_coefficients.ids, objective.linear_coefficients.values, strict=True))
    names = list(variables.names) or [""] * len(variables.ids)
    integers = list(variables.integers) or [False] * len(variables.ids)
    for i, var_id in enumerate(variables.ids):
        builder.add_var(
            names[i] or f"x{var_id}",
            obj=costs.get(var_id, 0.0),
            lb=variables.lower_bounds[i],
            ub=variables.upper_bounds[i],
            vtype="I" if integers[i] else "C",
        )
    rows = proto.linear_constraints
    row_index = {row_id: i for i, row_id in enumerate(rows.ids)}
    row_entries: list[list[tuple[int, float]]] = [[] for _ in rows.ids]
    matrix = proto.linear_constraint_matrix
    for row_id, col_id, value in zip(matrix.row_ids, matrix.column_ids, matrix.coefficients, strict=True):
        row_entries[row_index[row_id]].append((column[col_id], float(value)))
    row_names = list(rows.names) or [""] * len(rows.ids)
    for i, row_id in enumerate(rows.ids):
        builder.add_row(
            row_names[i] or f"c{row_id}",
            lower=rows.lower_bounds[i],
            upper=rows.upper_bounds[i],
            entries=row_entries[i],
        )
    builder.objective_constant = float(objective.offset)
    quadratic = objective.quadratic_coefficients
    builder.q_obj.extend(
        (column[i], column[j], float(q))
        for i, j, q in zip(quadratic.row_ids, quadratic.column_ids, quadratic.coefficients, strict=True)
    )
    builder.n_quadratic_constraints = len(proto.quadratic_constraints)
    builder.n_sos = len(proto.sos1_constraints) + len(proto.sos2_constraints)
    builder.n_general_constraints = len(proto.indicator_constraints) + len(
        proto.second_order_cone_constraints
    )
    return builder.build()


def _model_argument(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[0] if args else kwargs.get("opt_model", kwargs.get("model"))


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    model = _model_argument(args, kwargs)
    return c.capture_model(lambda: capture_matrix(model))


def _report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    reason = result.termination.reason
    raw = getattr(reason, "name", str(reason))
    status = _REASON.get(raw, c.UNKNOWN)
    if status == c.INTERRUPTED and "TIME" in str(getattr(result.termination, "limit", "")):
        status = c.TIME_LIMIT
    objective = None
    if status in (c.OPTIMAL, c.FEASIBLE):
        objective = c.finite_or_none(result.objective_value())
    model = prepared.get("model")
    fields: dict[str, Any] = {
        "status": status,
        "raw_status": raw,
        "objective": objective,
        "sense": model["sense"] if model else None,
        "num_vars": len(model["var_names"]) if model else None,
        "num_constraints": len(model["row_names"]) if model else None,
    }
    fields.update(prepared)
    return fields


def install(module: ModuleType) -> None:
    if c.is_hooked(module.solve):
        return
    hooked = c.wrap_solve(LIBRARY, module.solve, _prepare, _report)
    c.replace_attribute(module, "solve", hooked)
    solve_module = sys.modules.get("ortools.math_opt.python.solve")
    if solve_module is not None:
        c.replace_attribute(solve_module, "solve", hooked)


def read_binding(obj: Any) -> dict[str, Any] | None:
    module = sys.modules.get(MODULE)
    if module is None or not isinstance(obj, module.Model):
        return None
    return {"library": LIBRARY, "status": None, "raw_status": None, "objective": None}
