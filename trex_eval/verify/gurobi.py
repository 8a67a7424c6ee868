"""The gurobipy re-solve, with the harness's own gurobipy: every model kind (linear, quadratic,
convex or not), where it is installed and licensed here."""

from __future__ import annotations

import importlib
import math
import threading
from typing import Any

import numpy as np

from ..records import LinearModel, SolveStatus
from .base import MIP_GAP, Deadline, Resolve, Unsolvable, row_sides
from .views import ModelView, empty_verdict, model_view

_GUROBI_STATUS = {
    2: SolveStatus.OPTIMAL,
    3: SolveStatus.INFEASIBLE,
    4: SolveStatus.INF_OR_UNBD,
    5: SolveStatus.UNBOUNDED,
    9: SolveStatus.TIME_LIMIT,
}
LIMITED_VARIABLES = 2000
LIMITED_CONSTRAINTS = 2000
LIMITED_QUADRATIC_VARIABLES = 200
"""What gurobipy's size-limited (pip) licence solves, as measured with 13.0.3: at most 2000
variables and 2000 linear constraints, and at most 200 variables in a model with quadratic
terms (one more of any gives error 10010). Under that licence a larger model is refused before
it is built (gurobipy would only refuse it at ``optimize``, after a build of its full size)."""
_gurobi_lock = threading.Lock()
_gurobi_usable: bool | None = None
_gurobi_limited = False
_gurobi_envs = threading.local()


def _gurobi_env(gp: Any) -> Any:
    """This thread's gurobipy environment, started once: starting one checks the licence (~0.5 ms,
    more than a small LP's solve), and an environment must not serve two threads at once."""
    env = getattr(_gurobi_envs, "env", None)
    if env is None:
        env = gp.Env(params={"OutputFlag": 0})
        _gurobi_envs.env = env
    return env


def gurobi_available() -> bool:
    """Whether gurobipy is installed and licensed in the harness process (checked once: import,
    an environment, one tiny solve, and one of :data:`LIMITED_VARIABLES` + 1 variables that a
    size-limited licence refuses)."""
    global _gurobi_usable, _gurobi_limited
    with _gurobi_lock:
        if _gurobi_usable is None:
            try:
                gp = importlib.import_module("gurobipy")
                with gp.Env(params={"OutputFlag": 0}) as env:
                    with gp.Model(env=env) as probe:
                        probe.addVar(lb=0.0, ub=1.0, obj=1.0)
                        probe.optimize()
                        _gurobi_usable = int(probe.Status) == 2
                    with gp.Model(env=env) as probe:
                        probe.addVars(LIMITED_VARIABLES + 1, ub=1.0)
                        try:
                            probe.optimize()
                        except gp.GurobiError as error:
                            _gurobi_limited = getattr(error, "errno", None) == 10010
            except Exception:
                _gurobi_usable = False
        return _gurobi_usable


def _licence_refusal(view: ModelView) -> str | None:
    """Why a size-limited licence would refuse ``view`` (see :data:`LIMITED_VARIABLES`), or None
    (also where the licence is not size-limited). O(rows), in NumPy."""
    if not _gurobi_limited:
        return None
    finite_low, finite_high = np.isfinite(view.row_lower), np.isfinite(view.row_upper)
    equal = finite_low & (view.row_lower == view.row_upper)
    constraints = int(np.where(equal, 1, finite_low.astype(np.int64) + finite_high).sum())
    variables = LIMITED_QUADRATIC_VARIABLES if view.quadratic else LIMITED_VARIABLES
    if view.n > variables or constraints > LIMITED_CONSTRAINTS:
        return (
            f"model too large for gurobipy's size-limited licence ({view.n:,} variables, "
            f"{constraints:,} linear constraints)"
        )
    return None


def resolve_with_gurobi(model: LinearModel, *, time_limit_s: float = 10.0) -> Resolve:
    """Solve ``model`` (linear, quadratic, convex or not) with the harness's own gurobipy: one
    thread, relative MIP gap :data:`~.base.MIP_GAP`, ``time_limit_s`` seconds for building and
    solving together (:func:`solve_gurobi`).

    Raises:
        Unsolvable: gurobipy is missing or refuses the model (e.g. too large for its licence),
            the model is over a size cap (:mod:`.views`), or the time limit ran out before the
            solve (:class:`~.base.OutOfTime`).
    """
    deadline = Deadline(time_limit_s)
    return solve_gurobi(model_view(model, deadline), deadline)


def solve_gurobi(view: ModelView, deadline: Deadline) -> Resolve:
    """:func:`resolve_with_gurobi` on a view. The build is Python-level, term by term through
    gurobipy's own expressions (its matrix API wants SciPy, whose import, ~0.2 s with NumPy's test
    and f2py modules, would be paid by every run): O(columns + nonzeros + quadratic terms), which
    the size caps bound, with ``deadline`` checked after every row and part; the solver gets
    what is left of it."""
    if view.n == 0:
        return empty_verdict(view, "gurobipy")
    refusal = _licence_refusal(view)
    if refusal is not None:
        raise Unsolvable(refusal)
    try:
        gp = importlib.import_module("gurobipy")
        with gp.Model(env=_gurobi_env(gp)) as solver:
            return _build_and_solve(gp, solver, view, deadline)
    except Unsolvable:
        raise
    except Exception as error:
        if type(error).__name__ == "GurobiError" or isinstance(error, ImportError):
            raise Unsolvable(f"gurobipy refused the model ({error})"[:200]) from None
        raise


def _build_and_solve(gp: Any, solver: Any, view: ModelView, deadline: Deadline) -> Resolve:
    """Build ``view`` into the empty gurobipy model ``solver`` and solve it (see :func:`solve_gurobi`)."""
    solver.Params.Threads = 1
    solver.Params.MIPGap = MIP_GAP
    x = list(
        solver.addVars(
            view.n,
            lb=view.lower.tolist(),
            ub=view.upper.tolist(),
            obj=view.obj.tolist(),
            vtype=list(view.vtype),
        ).values()
    )
    starts, columns, values = view.starts.tolist(), view.columns.tolist(), view.values.tolist()
    for row in range(view.m):
        deadline.check("building the gurobipy model (linear rows)", "gurobipy")
        span = slice(starts[row], starts[row + 1])
        expression = gp.LinExpr(values[span], [x[j] for j in columns[span]])
        for sense, bound in row_sides(float(view.row_lower[row]), float(view.row_upper[row])):
            solver.addLConstr(expression, sense, bound)
    terms = view.hessian
    if len(terms):
        deadline.check("building the gurobipy model (quadratic objective)", "gurobipy")
        objective = gp.QuadExpr(gp.LinExpr(view.obj.tolist(), x))
        objective.addTerms(
            terms.q.tolist(), [x[i] for i in terms.i.tolist()], [x[j] for j in terms.j.tolist()]
        )
        solver.setObjective(objective)
    for q_row in view.q_rows:
        deadline.check("building the gurobipy model (quadratic rows)", "gurobipy")
        expression = gp.QuadExpr(gp.LinExpr(q_row.values.tolist(), [x[j] for j in q_row.columns.tolist()]))
        quadratic = q_row.quadratic
        if len(quadratic):
            expression.addTerms(
                quadratic.q.tolist(),
                [x[i] for i in quadratic.i.tolist()],
                [x[j] for j in quadratic.j.tolist()],
            )
        for sense, bound in (("<", q_row.upper), (">", q_row.lower)):
            if math.isfinite(bound):
                solver.addQConstr(expression, sense, bound)
    solver.ObjCon = view.constant
    solver.ModelSense = -1 if view.sense == "max" else 1
    if view.quadratic:
        solver.Params.NonConvex = 2
    solver.Params.TimeLimit = deadline.solver_limit("gurobipy")
    solver.optimize()
    code = int(solver.Status)
    status = _GUROBI_STATUS.get(code, SolveStatus.ERROR)
    objective_value = float(solver.ObjVal) if status is SolveStatus.OPTIMAL else None
    return Resolve(status, objective_value, f"status {code}", "gurobipy")
