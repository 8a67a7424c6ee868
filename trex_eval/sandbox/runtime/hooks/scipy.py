"""Hook for ``scipy.optimize.linprog`` and ``scipy.optimize.milp`` (always minimisation).

Both are module-level functions; the hook replaces the attributes of ``scipy.optimize``, which is
what ``from scipy.optimize import linprog`` reads. The matrix is rebuilt from the call's
arguments with scipy's documented defaults: ``linprog`` bounds ``(0, None)`` for every variable,
``None`` inside a bound meaning unbounded; ``milp`` bounds ``Bounds(0, inf)``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from .. import capture as c

MODULE = "scipy.optimize"
ORDER = 100
WARM = ("scipy.optimize",)
WARM_ORDER = 90
DISTRIBUTION = ("scipy",)
LINPROG = "scipy.linprog"
MILP = "scipy.milp"

_LINPROG_STATUS = {0: c.OPTIMAL, 1: c.INTERRUPTED, 2: c.INFEASIBLE, 3: c.UNBOUNDED, 4: c.NUMERIC}
_MILP_STATUS = {0: c.OPTIMAL, 1: c.TIME_LIMIT, 2: c.INFEASIBLE, 3: c.UNBOUNDED, 4: c.ERROR}
_VTYPE = {0: "C", 1: "I", 2: "S", 3: "N"}


def _sparse_rows(matrix: Any, columns: int) -> tuple[int, list[list[tuple[int, float]]]]:
    import numpy as np
    import scipy.sparse

    if matrix is None:
        return 0, []
    coo = scipy.sparse.coo_array(
        matrix if scipy.sparse.issparse(matrix) else np.atleast_2d(np.asarray(matrix, float))
    )
    if coo.shape[1] != columns:
        raise c.CaptureError(
            f"matrix not captured: constraint matrix has {coo.shape[1]} columns, c has {columns}"
        )
    rows: list[list[tuple[int, float]]] = [[] for _ in range(coo.shape[0])]
    for i, j, value in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True):
        rows[i].append((j, value))
    return coo.shape[0], rows


def _vector(values: Any, size: int, default: float) -> list[float]:
    import numpy as np

    if values is None:
        return [default] * size
    return [float(x) for x in np.broadcast_to(np.asarray(values, dtype=float), (size,))]


def _linprog_bounds(bounds: Any, size: int) -> tuple[list[float], list[float]]:
    import numpy as np

    if bounds is None or np.array_equal(bounds, []) or np.array_equal(bounds, [[]]):
        bounds = (0, np.inf)
    table = np.atleast_2d(np.array(bounds, dtype=float))
    if table.shape == (1, 2):
        table = np.broadcast_to(table, (size, 2))
    if table.shape != (size, 2):
        raise c.CaptureError(f"matrix not captured: bounds of shape {table.shape} for {size} variables")
    lower = [(-c.INF if np.isnan(x) else float(x)) for x in table[:, 0]]
    upper = [(c.INF if np.isnan(x) else float(x)) for x in table[:, 1]]
    return lower, upper


def capture_linprog(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    names = ("c", "A_ub", "b_ub", "A_eq", "b_eq", "bounds")
    given = {**dict(zip(names, args, strict=False)), **kwargs}
    costs = np.asarray(given["c"], dtype=float).ravel()
    size = costs.size
    builder = c.LinearModelBuilder("min", infinity=c.INF)
    lower, upper = _linprog_bounds(given.get("bounds", (0, None)), size)
    integrality = _vector(given.get("integrality"), size, 0.0)
    for j in range(size):
        builder.add_var(
            f"x{j}", obj=float(costs[j]), lb=lower[j], ub=upper[j], vtype=_VTYPE.get(int(integrality[j]), "C")
        )
    count, rows = _sparse_rows(given.get("A_ub"), size)
    rhs = _vector(given.get("b_ub"), count, 0.0)
    for i in range(count):
        builder.add_row(f"ub{i}", lower=-c.INF, upper=rhs[i], entries=rows[i])
    count, rows = _sparse_rows(given.get("A_eq"), size)
    rhs = _vector(given.get("b_eq"), count, 0.0)
    for i in range(count):
        builder.add_row(f"eq{i}", lower=rhs[i], upper=rhs[i], entries=rows[i])
    return builder.build()


def _milp_constraints(constraints: Any, linear_constraint: type) -> list[Any]:
    if constraints is None:
        return []
    if isinstance(constraints, linear_constraint):
        return [constraints]
    if (
        isinstance(constraints, tuple)
        and constraints
        and not isinstance(constraints[0], (linear_constraint, tuple))
    ):
        return [linear_constraint(*constraints)]
    return [item if isinstance(item, linear_constraint) else linear_constraint(*item) for item in constraints]


def capture_milp(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint

    costs = np.asarray(args[0] if args else kwargs["c"], dtype=float).ravel()
    size = costs.size
    builder = c.LinearModelBuilder("min", infinity=c.INF)
    bounds = kwargs.get("bounds")
    if bounds is None:
        bounds = Bounds(0, np.inf)
    elif not isinstance(bounds, Bounds):
        bounds = Bounds(*bounds)
    lower = _vector(bounds.lb, size, 0.0)
    upper = _vector(bounds.ub, size, c.INF)
    integrality = _vector(kwargs.get("integrality"), size, 0.0)
    for j in range(size):
        builder.add_var(
            f"x{j}", obj=float(costs[j]), lb=lower[j], ub=upper[j], vtype=_VTYPE.get(int(integrality[j]), "C")
        )
    for block, constraint in enumerate(_milp_constraints(kwargs.get("constraints"), LinearConstraint)):
        count, rows = _sparse_rows(constraint.A, size)
        row_lower = _vector(constraint.lb, count, -c.INF)
        row_upper = _vector(constraint.ub, count, c.INF)
        for i in range(count):
            builder.add_row(f"c{block}_{i}", lower=row_lower[i], upper=row_upper[i], entries=rows[i])
    return builder.build()


def _reporter(statuses: dict[int, str]) -> c.Report:
    def report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
        code = int(result.status)
        status = statuses.get(code, c.UNKNOWN)
        model = prepared.get("model")
        objective = (
            c.finite_or_none(getattr(result, "fun", None)) if status in (c.OPTIMAL, c.TIME_LIMIT) else None
        )
        fields: dict[str, Any] = {
            "status": status,
            "raw_status": f"{code}: {getattr(result, 'message', '')}"[:200],
            "objective": objective,
            "sense": "min",
            "num_vars": len(model["var_names"]) if model else None,
            "num_constraints": len(model["row_names"]) if model else None,
        }
        fields.update(prepared)
        return fields

    return report


def install(module: ModuleType) -> None:
    if c.is_hooked(module.linprog):
        return
    linprog = c.wrap_solve(
        LINPROG,
        module.linprog,
        lambda a, k: c.capture_model(lambda: capture_linprog(a, k)),
        _reporter(_LINPROG_STATUS),
    )
    c.replace_attribute(module, "linprog", linprog)
    if hasattr(module, "milp"):
        milp = c.wrap_solve(
            MILP,
            module.milp,
            lambda a, k: c.capture_model(lambda: capture_milp(a, k)),
            _reporter(_MILP_STATUS),
        )
        c.replace_attribute(module, "milp", milp)


def read_binding(obj: Any) -> dict[str, Any] | None:
    del obj
    return None
