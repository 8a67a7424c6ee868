"""Hook for PuLP: ``LpProblem.solve`` (whatever solver it dispatches to).

The matrix is read after the solve (PuLP restores the objective it may have patched). PuLP
keeps rows as ``expression + constant <sense> 0``, so the right-hand side is ``-constant``.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from .. import capture as c

MODULE = "pulp"
ORDER = 30
WARM = ("pulp",)
WARM_ORDER = 50
WARM_FIRST = ("ortools.linear_solver.pywraplp",)
"""Imported before PuLP is warmed: with PuLP (and the solver libraries it loads) imported before
OR-Tools' native library, OR-Tools MathOpt solves crash with SIGSEGV."""
DISTRIBUTION = ("pulp",)
LIBRARY = "pulp"

_STATUS = {1: c.OPTIMAL, 0: c.NOT_SOLVED, -1: c.INFEASIBLE, -2: c.UNBOUNDED, -3: c.UNKNOWN}
_VTYPE = {"Continuous": "C", "Integer": "I", "Binary": "B"}


def status_of(problem: Any) -> tuple[str, str]:
    code = int(problem.status)
    raw = {1: "Optimal", 0: "Not Solved", -1: "Infeasible", -2: "Unbounded", -3: "Undefined"}.get(
        code, str(code)
    )
    status = _STATUS.get(code, c.UNKNOWN)
    solution = getattr(problem, "sol_status", None)
    if status == c.OPTIMAL and solution == 2:
        # A solution was found but not proven optimal (e.g. a time limit).
        status, raw = c.FEASIBLE, "Optimal/Solution Found"
    return status, raw


def objective_of(problem: Any, status: str) -> float | None:
    if status not in (c.OPTIMAL, c.FEASIBLE) or problem.objective is None:
        return None
    try:
        return c.finite_or_none(problem.objective.value())
    except Exception:
        return None


def _constraints(problem: Any) -> list[Any]:
    table = getattr(problem, "_constraints", None)
    if not isinstance(table, dict):
        table = problem.constraints
    return list(table.values())


def capture_matrix(problem: Any) -> dict[str, Any]:
    builder = c.LinearModelBuilder("max" if int(problem.sense) == -1 else "min")
    variables = list(problem.variables())
    position = c.identity_index(variables)
    objective = problem.objective
    costs = {id(var): float(coef) for var, coef in objective.items()} if objective is not None else {}
    for var in variables:
        builder.add_var(
            var.name,
            obj=costs.get(id(var), 0.0),
            lb=var.lowBound,
            ub=var.upBound,
            vtype=_VTYPE.get(str(var.cat), "C"),
        )
    constraints = _constraints(problem)
    for constraint in constraints:
        entries = [(position[id(var)], float(coef)) for var, coef in constraint.items()]
        rhs = -float(constraint.constant)
        sense = {-1: "<=", 0: "=", 1: ">="}[int(constraint.sense)]
        builder.add_sense_row(constraint.name or "", sense=sense, rhs=rhs, entries=entries)
    if objective is not None:
        builder.objective_constant = float(objective.constant)
    _attach_solution(problem, builder, variables, constraints)
    return builder.build()


def _attach_solution(
    problem: Any, builder: c.LinearModelBuilder, variables: list[Any], rows: list[Any]
) -> None:
    """An optimal LP's ``varValue`` and ``pi`` (solvers that report no duals leave ``pi`` None:
    nothing is kept), for the harness's certificate; a failure only leaves them out."""
    try:
        if int(problem.status) == 1 and builder.continuous_linear():
            builder.attach_solution([var.varValue for var in variables], [row.pi for row in rows])
    except Exception:
        return


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return None


def _report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    problem = args[0]
    status, raw = status_of(problem)
    fields: dict[str, Any] = {
        "status": status,
        "raw_status": raw,
        "objective": objective_of(problem, status),
        "sense": "max" if int(problem.sense) == -1 else "min",
        "num_vars": len(problem.variables()),
        "num_constraints": len(_constraints(problem)),
    }
    fields.update(c.capture_model(lambda: capture_matrix(problem)))
    return fields


def install(module: ModuleType) -> None:
    problem_class = module.LpProblem
    if c.is_hooked(problem_class.__dict__.get("solve")):
        return
    problem_class.solve = c.wrap_solve(LIBRARY, problem_class.solve, _prepare, _report)


def read_binding(obj: Any) -> dict[str, Any] | None:
    module = sys.modules.get(MODULE)
    if module is None or not isinstance(obj, module.LpProblem):
        return None
    status, raw = status_of(obj)
    return {"library": LIBRARY, "status": status, "raw_status": raw, "objective": objective_of(obj, status)}
