"""Hook for CVXPY: ``Problem.solve``.

CVXPY has no matrix of its own; for a problem it can hand to HiGHS, the matrix form is CVXPY's
canonical LP/MILP (``get_problem_data``): the program's variables stacked into one vector plus
any auxiliary variables of the reformulation, equality rows then ``<=`` rows (bounds included).
Its optimum equals the program's objective, which is what the harness's re-solve checks. Problems with cones
(SOC, PSD, exponential, power) are counted as general constraints, not expanded.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from .. import capture as c

MODULE = "cvxpy"
ORDER = 110
WARM = ("cvxpy",)
WARM_ORDER = 100
DISTRIBUTION = ("cvxpy",)
LIBRARY = "cvxpy"

_STATUS = {
    "optimal": c.OPTIMAL,
    "optimal_inaccurate": c.SUBOPTIMAL,
    "infeasible": c.INFEASIBLE,
    "infeasible_inaccurate": c.INFEASIBLE,
    "unbounded": c.UNBOUNDED,
    "unbounded_inaccurate": c.UNBOUNDED,
    "infeasible_or_unbounded": c.INF_OR_UNBD,
    "user_limit": c.INTERRUPTED,
    "solver_error": c.ERROR,
}


def _sense(problem: Any) -> str:
    return "max" if type(problem.objective).__name__ == "Maximize" else "min"


def capture_matrix(problem: Any) -> dict[str, Any]:
    import numpy as np
    import scipy.sparse

    installed = sys.modules[MODULE].installed_solvers()
    solver = next((name for name in ("HIGHS", "SCIPY") if name in installed), None)
    if solver is None:
        raise c.CaptureError("matrix not captured: CVXPY has neither HIGHS nor SCIPY installed")
    try:
        data, _, _ = problem.get_problem_data(solver)
    except Exception as error:
        raise c.CaptureError(
            f"matrix not captured: CVXPY cannot reduce the problem to an LP ({error})"
        ) from None
    costs, constant, matrix, rhs = data["param_prob"].apply_parameters()
    costs = np.asarray(costs, dtype=float).ravel()
    # CVXPY minimises the negated objective of a maximisation; undo that.
    sign = -1.0 if _sense(problem) == "max" else 1.0
    builder = c.LinearModelBuilder(_sense(problem), infinity=float("inf"))
    size = costs.size
    integers = set(np.asarray(data.get("int_vars_idx", []), dtype=int).tolist())
    binaries = set(np.asarray(data.get("bool_vars_idx", []), dtype=int).tolist())
    lower = data.get("lower_bounds")
    upper = data.get("upper_bounds")
    for j in range(size):
        kind = "B" if j in binaries else "I" if j in integers else "C"
        builder.add_var(
            f"v{j}",
            obj=sign * float(costs[j]),
            lb=-c.INF if lower is None else float(lower[j]),
            ub=c.INF if upper is None else float(upper[j]),
            vtype=kind,
        )
    builder.objective_constant = sign * float(constant)
    dims = data["dims"]
    coo = scipy.sparse.coo_array(matrix)
    rows: dict[int, list[tuple[int, float]]] = {}
    for i, j, value in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True):
        # The cone program reads ``A x + b`` in the cone (= 0 or >= 0), i.e. ``-A x = b`` / ``-A x <= b``.
        rows.setdefault(i, []).append((j, -value))
    rhs = np.asarray(rhs, dtype=float).ravel()
    zero, nonneg = int(dims.zero), int(dims.nonneg)
    for i in range(zero):
        builder.add_row(f"eq{i}", lower=rhs[i], upper=rhs[i], entries=rows.get(i, []))
    for i in range(zero, zero + nonneg):
        builder.add_row(f"ineq{i - zero}", lower=-c.INF, upper=rhs[i], entries=rows.get(i, []))
    builder.n_general_constraints = (
        len(getattr(dims, "soc", ()))
        + len(getattr(dims, "psd", ()))
        + int(getattr(dims, "exp", 0) or 0)
        + len(getattr(dims, "p3d", ()))
    )
    quadratic = data.get("P")
    if quadratic is not None and quadratic.nnz:
        q = quadratic.tocoo()
        builder.q_obj.extend(
            (i, j, sign * v / 2.0)
            for i, j, v in zip(q.row.tolist(), q.col.tolist(), q.data.tolist(), strict=True)
        )
    return builder.build()


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return None


def _report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    problem = args[0]
    raw = str(problem.status)
    status = _STATUS.get(raw, c.UNKNOWN)
    objective = c.finite_or_none(problem.value) if status in (c.OPTIMAL, c.SUBOPTIMAL) else None
    fields: dict[str, Any] = {
        "status": status,
        "raw_status": raw,
        "objective": objective,
        "sense": _sense(problem),
        "num_vars": int(sum(var.size for var in problem.variables())),
        "num_constraints": len(problem.constraints),
    }
    fields.update(c.capture_model(lambda: capture_matrix(problem)))
    return fields


def install(module: ModuleType) -> None:
    problem_class = module.Problem
    if c.is_hooked(problem_class.__dict__.get("solve")):
        return
    problem_class.solve = c.wrap_solve(LIBRARY, problem_class.solve, _prepare, _report)


def read_binding(obj: Any) -> dict[str, Any] | None:
    module = sys.modules.get(MODULE)
    if module is None or not isinstance(obj, module.Problem):
        return None
    status = _STATUS.get(str(obj.status), c.UNKNOWN) if obj.status else None
    objective = c.finite_or_none(obj.value) if status in (c.OPTIMAL, c.SUBOPTIMAL) else None
    return {"library": LIBRARY, "status": status, "raw_status": obj.status, "objective": objective}
