"""Hook for Pyomo: every solver made by ``SolverFactory`` gets its ``solve`` wrapped.

Pyomo's solver classes are many (shell, direct, persistent, APPSI, contrib), so the hook wraps the
factory instead and replaces ``solve`` on each instance it returns. The matrix is built from the
active components with Pyomo's own ``generate_standard_repn``; nonlinear or quadratic constraint
bodies are counted, not expanded. Solves that Pyomo delegates to a hooked library (gurobipy via
``gurobi_direct``, highspy via ``appsi_highs``) are recorded once, as Pyomo solves.
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any

from .. import capture as c

MODULE = "pyomo.opt.base.solvers"
ORDER = 70
WARM = ("pyomo.environ",)
WARM_ORDER = 80
DISTRIBUTION = ("pyomo",)
LIBRARY = "pyomo"

_STATUS = {
    "optimal": c.OPTIMAL,
    "globallyOptimal": c.OPTIMAL,
    "locallyOptimal": c.FEASIBLE,
    "feasible": c.FEASIBLE,
    "infeasible": c.INFEASIBLE,
    "unbounded": c.UNBOUNDED,
    "infeasibleOrUnbounded": c.INF_OR_UNBD,
    "maxTimeLimit": c.TIME_LIMIT,
    "maxIterations": c.INTERRUPTED,
    "maxEvaluations": c.INTERRUPTED,
    "minFunctionValue": c.INTERRUPTED,
    "minStepLength": c.INTERRUPTED,
    "noSolution": c.INTERRUPTED,
    # A MIP stopped at a relaxation point: no integer solution to report.
    "intermediateNonInteger": c.UNKNOWN,
    "userInterrupt": c.INTERRUPTED,
    "resourceInterrupt": c.INTERRUPTED,
    "licensingProblems": c.ERROR,
    "solverFailure": c.ERROR,
    "internalSolverError": c.ERROR,
    "error": c.ERROR,
    "invalidProblem": c.ERROR,
    "unknown": c.UNKNOWN,
    "other": c.UNKNOWN,
}


def _active_objective(model: Any) -> Any:
    from pyomo.core import Objective

    objectives = list(model.component_data_objects(Objective, active=True, descend_into=True))
    if len(objectives) != 1:
        raise c.CaptureError(f"matrix not captured: {len(objectives)} active objectives")
    return objectives[0]


def capture_matrix(model: Any) -> dict[str, Any]:
    from pyomo.core import Constraint, Var, value
    from pyomo.repn import generate_standard_repn

    objective = _active_objective(model)
    builder = c.LinearModelBuilder("max" if int(objective.sense) == -1 else "min", infinity=float("inf"))
    variables = list(model.component_data_objects(Var, descend_into=True))
    position = c.identity_index(variables)
    repn = generate_standard_repn(objective.expr, quadratic=True)
    if repn.nonlinear_expr is not None:
        raise c.CaptureError("matrix not captured: nonlinear objective")
    costs = {id(var): float(coef) for var, coef in zip(repn.linear_vars, repn.linear_coefs, strict=True)}
    for var in variables:
        kind = "B" if var.is_binary() else "I" if var.is_integer() else "C"
        lower, upper = (var.value, var.value) if var.fixed else (var.lb, var.ub)
        builder.add_var(var.name, obj=costs.get(id(var), 0.0), lb=lower, ub=upper, vtype=kind)
    builder.objective_constant = float(value(repn.constant))
    for (first, second), coef in zip(repn.quadratic_vars, repn.quadratic_coefs, strict=True):
        builder.q_obj.append((position[id(first)], position[id(second)], float(coef)))
    for constraint in model.component_data_objects(Constraint, active=True, descend_into=True):
        body = generate_standard_repn(constraint.body, quadratic=True)
        if body.nonlinear_expr is not None:
            builder.n_general_constraints += 1
            continue
        if body.quadratic_vars:
            builder.n_quadratic_constraints += 1
            continue
        shift = float(value(body.constant))
        lower = None if constraint.lower is None else float(value(constraint.lower)) - shift
        upper = None if constraint.upper is None else float(value(constraint.upper)) - shift
        entries = [
            (position[id(var)], float(coef))
            for var, coef in zip(body.linear_vars, body.linear_coefs, strict=True)
        ]
        builder.add_row(constraint.name, lower=lower, upper=upper, entries=entries)
    return builder.build()


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    model = args[0] if args else kwargs.get("model")
    return c.capture_model(lambda: capture_matrix(model))


def _report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    from pyomo.core import value

    raw = str(result.solver.termination_condition)
    status = _STATUS.get(raw, c.UNKNOWN)
    objective = None
    if status in (c.OPTIMAL, c.FEASIBLE):
        model = args[0] if args else kwargs.get("model")
        objective = c.finite_or_none(value(_active_objective(model), exception=False))
    captured = prepared.get("model")
    fields: dict[str, Any] = {
        "status": status,
        "raw_status": raw,
        "objective": objective,
        "sense": captured["sense"] if captured else None,
        "num_vars": len(captured["var_names"]) if captured else None,
        "num_constraints": len(captured["row_names"]) if captured else None,
    }
    fields.update(prepared)
    return fields


def _hook_solver(solver: Any) -> None:
    solve = getattr(solver, "solve", None)
    if solve is None or c.is_hooked(solve):
        return
    try:
        solver.solve = c.wrap_solve(LIBRARY, solve, _prepare, _report)
    except (AttributeError, TypeError):
        c.RECORDER.note(f"pyomo solver {type(solver).__name__} could not be hooked")


def install(module: ModuleType) -> None:
    factory_class = module.SolverFactoryClass
    original = factory_class.__call__
    if c.is_hooked(original):
        return

    @functools.wraps(original)
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        solver = original(self, *args, **kwargs)
        _hook_solver(solver)
        return solver

    create.__trex_hooked__ = True  # type: ignore[attr-defined]
    factory_class.__call__ = create


def read_binding(obj: Any) -> dict[str, Any] | None:
    blocks = sys.modules.get("pyomo.core.base.block")
    if blocks is None or not isinstance(
        obj, blocks.BlockData if hasattr(blocks, "BlockData") else blocks.Block
    ):
        return None
    return {"library": LIBRARY, "status": None, "raw_status": None, "objective": None}
