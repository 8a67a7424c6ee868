"""The SCIP re-solve through pyscipopt: MIQPs, quadratic constraints and non-convex models (to
global optimality), and whatever HiGHS cannot take."""

from __future__ import annotations

import importlib
import importlib.util
import math
import operator
from typing import Any

from ..records import LinearModel, SolveStatus
from .base import BUILD_STEP, Deadline, Resolve, Unsolvable, row_sides
from .views import ModelView, Terms, empty_verdict, model_view

SCIP_MAX_QUADRATIC_TERMS = 20_000
"""Quadratic terms (objective and rows) of the largest model given to SCIP. SCIP 10's presolve of
a quadratic expression runs past its time limit by about 0.1 ms a term (measured over 1,000
columns with a 1 s limit: 12,500 terms 1.0 s, 50,000 terms 4.0 s; with a 10 s limit 100,000
terms took 14.5 s), so more would let one re-solve outlast its limit by seconds. A dense
covariance over 140 assets is 20,000 terms; a larger model is left to gurobipy where licensed,
else skipped."""

_SCIP_STATUS = {
    "optimal": SolveStatus.OPTIMAL,
    "infeasible": SolveStatus.INFEASIBLE,
    "unbounded": SolveStatus.UNBOUNDED,
    "inforunbd": SolveStatus.INF_OR_UNBD,
    "timelimit": SolveStatus.TIME_LIMIT,
}
_SCIP_SIDES = {"=": operator.eq, "<": operator.le, ">": operator.ge}


def scip_available() -> bool:
    """Whether pyscipopt (SCIP) is installed in the harness process."""
    return importlib.util.find_spec("pyscipopt") is not None


def resolve_with_scip(model: LinearModel, *, time_limit_s: float = 10.0) -> Resolve:
    """Solve ``model`` (MIQP, QCP, non-convex quadratic; linear too) to global optimality with
    SCIP, ``time_limit_s`` seconds for building and solving together (:func:`solve_scip`).

    Raises:
        Unsolvable: pyscipopt is missing, the model has semi-continuous variables or more than
            :data:`SCIP_MAX_QUADRATIC_TERMS` quadratic terms, it is over a size cap
            (:mod:`.views`), or the time limit ran out before the solve
            (:class:`~.base.OutOfTime`).
    """
    deadline = Deadline(time_limit_s)
    return solve_scip(model_view(model, deadline), deadline)


def solve_scip(view: ModelView, deadline: Deadline) -> Resolve:
    """:func:`resolve_with_scip` on a view. A quadratic objective's quadratic part becomes an
    epigraph variable (SCIP's objective is linear). The build is Python-level (pyscipopt
    expressions, ~2 µs a term): O(columns + nonzeros + quadratic terms), which the size caps
    bound, in steps of at most :data:`~.base.BUILD_STEP` entries with ``deadline`` checked
    between them; the solver gets what is left of it."""
    if not scip_available():
        raise Unsolvable("needs pyscipopt (pip install 'trex-eval[solvers]')")
    if "S" in view.vtype or "N" in view.vtype:
        raise Unsolvable("semi-continuous variables in a model only SCIP could solve")
    terms = len(view.hessian) + sum(len(row.quadratic) for row in view.q_rows)
    if terms > SCIP_MAX_QUADRATIC_TERMS:
        raise Unsolvable(
            f"{terms:,} quadratic terms, more than SCIP is given (SCIP_MAX_QUADRATIC_TERMS = "
            f"{SCIP_MAX_QUADRATIC_TERMS:,})"
        )
    if view.n == 0:
        return empty_verdict(view, "scip")
    scip = importlib.import_module("pyscipopt")
    solver = scip.Model()
    solver.hideOutput()
    quadratic = view.hessian
    x: list[Any] = []
    bounds = zip(view.lower.tolist(), view.upper.tolist(), view.vtype, view.obj.tolist(), strict=True)
    for index, (low, high, kind, cost) in enumerate(bounds):
        if index % BUILD_STEP == 0:
            deadline.check("building the scip model (columns)", "scip")
        x.append(
            solver.addVar(
                lb=None if math.isinf(low) else low,
                ub=None if math.isinf(high) else high,
                vtype=kind,
                obj=cost,
            )
        )
    starts, columns, values = view.starts.tolist(), view.columns.tolist(), view.values.tolist()
    for row in range(view.m):
        span = slice(starts[row], starts[row + 1])
        expression = _linear(scip, x, columns[span], values[span], deadline, "linear rows")
        _add_range(solver, expression, float(view.row_lower[row]), float(view.row_upper[row]))
    for q_row in view.q_rows:
        expression = _linear(
            scip, x, q_row.columns.tolist(), q_row.values.tolist(), deadline, "quadratic rows"
        )
        expression += _quadratic(scip, x, q_row.quadratic, deadline, "quadratic rows")
        _add_range(solver, expression, q_row.lower, q_row.upper)
    minimise = view.sense == "min"
    if len(quadratic):
        # The linear part stays on the variables: the nonlinear row then holds only the columns
        # the quadratic terms use (one term over 14,000 columns is a one-term row, not 14,001).
        epigraph = solver.addVar(lb=None, ub=None, obj=1.0)
        objective = _quadratic(scip, x, quadratic, deadline, "objective")
        solver.addCons(epigraph >= objective if minimise else epigraph <= objective)
    if minimise:
        solver.setMinimize()
    else:
        solver.setMaximize()
    solver.setParam("limits/time", deadline.solver_limit("scip"))
    solver.optimize()
    raw = str(solver.getStatus())
    status = _SCIP_STATUS.get(raw, SolveStatus.ERROR)
    objective_value = float(solver.getObjVal()) + view.constant if status is SolveStatus.OPTIMAL else None
    return Resolve(status, objective_value, raw, "scip")


def _linear(
    scip: Any, x: list[Any], columns: list[int], values: list[float], deadline: Deadline, part: str
) -> Any:
    """``sum(values[k] * x[columns[k]])``, built in place a step at a time (pyscipopt's ``+=``
    merges into the left expression), the deadline checked before each step."""
    expression = scip.Expr()
    for start in range(0, max(len(columns), 1), BUILD_STEP):
        deadline.check(f"building the scip model ({part})", "scip")
        step = zip(columns[start : start + BUILD_STEP], values[start : start + BUILD_STEP], strict=True)
        expression += scip.quicksum(value * x[j] for j, value in step if value)
    return expression


def _quadratic(scip: Any, x: list[Any], terms: Terms, deadline: Deadline, part: str) -> Any:
    """``sum(q * x_i * x_j)``, like :func:`_linear`."""
    expression = scip.Expr()
    first, second, weights = terms.i.tolist(), terms.j.tolist(), terms.q.tolist()
    for start in range(0, len(weights), BUILD_STEP):
        deadline.check(f"building the scip model ({part})", "scip")
        end = start + BUILD_STEP
        step = zip(first[start:end], second[start:end], weights[start:end], strict=True)
        expression += scip.quicksum(q * x[i] * x[j] for i, j, q in step)
    return expression


def _add_range(solver: Any, expression: Any, low: float, high: float) -> None:
    for sense, value in row_sides(low, high):
        solver.addCons(_SCIP_SIDES[sense](expression, value))
