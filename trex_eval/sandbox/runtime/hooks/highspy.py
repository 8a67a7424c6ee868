"""Hook for highspy: ``Highs.run`` and ``Highs.solve`` (``minimize``/``maximize`` call ``solve``).

The matrix is ``getLp()`` read before the solve; HiGHS's Hessian (objective ``c'x + 1/2 x'Qx``,
lower triangle stored) is converted to the harness's ``q * x_i * x_j`` terms. HiGHS runs on one
thread.
"""

from __future__ import annotations

import contextlib
import sys
from types import ModuleType
from typing import Any

from .. import capture as c

MODULE = "highspy"
ORDER = 90
WARM = ("highspy",)
WARM_ORDER = 60
DISTRIBUTION = ("highspy",)
LIBRARY = "highspy"

_STATUS = {
    "kOptimal": c.OPTIMAL,
    "kInfeasible": c.INFEASIBLE,
    "kUnbounded": c.UNBOUNDED,
    "kUnboundedOrInfeasible": c.INF_OR_UNBD,
    "kTimeLimit": c.TIME_LIMIT,
    "kIterationLimit": c.INTERRUPTED,
    "kSolutionLimit": c.INTERRUPTED,
    "kInterrupt": c.INTERRUPTED,
    "kHighsInterrupt": c.INTERRUPTED,
    "kObjectiveBound": c.INTERRUPTED,
    "kObjectiveTarget": c.INTERRUPTED,
    "kMemoryLimit": c.INTERRUPTED,
    "kNotset": c.NOT_SOLVED,
    "kModelEmpty": c.OPTIMAL,
    "kLoadError": c.ERROR,
    "kModelError": c.ERROR,
    "kPresolveError": c.ERROR,
    "kSolveError": c.ERROR,
    "kPostsolveError": c.ERROR,
    "kUnknown": c.UNKNOWN,
}
_VTYPE = {0: "C", 1: "I", 2: "S", 3: "N"}


def _name(value: Any) -> str:
    return str(getattr(value, "name", value))


def status_of(highs: Any) -> tuple[str, str]:
    raw = _name(highs.getModelStatus())
    return _STATUS.get(raw, c.UNKNOWN), raw


def objective_of(highs: Any, status: str) -> float | None:
    if status not in (c.OPTIMAL, c.TIME_LIMIT, c.INTERRUPTED):
        return None
    info = highs.getInfo()
    if status != c.OPTIMAL and int(info.primal_solution_status) != 2:
        return None
    return c.finite_or_none(info.objective_function_value)


def capture_matrix(highs: Any) -> dict[str, Any]:
    model = highs.getModel()
    lp = model.lp_
    sense = "max" if int(lp.sense_) == -1 else "min"
    builder = c.LinearModelBuilder(sense, infinity=float("inf"))
    columns, rows = int(lp.num_col_), int(lp.num_row_)
    col_names = list(lp.col_names_) or [f"c{j}" for j in range(columns)]
    row_names = list(lp.row_names_) or [f"r{i}" for i in range(rows)]
    integrality = [int(kind) for kind in lp.integrality_] or [0] * columns
    for j in range(columns):
        builder.add_var(
            col_names[j],
            obj=lp.col_cost_[j],
            lb=lp.col_lower_[j],
            ub=lp.col_upper_[j],
            vtype=_VTYPE.get(integrality[j], "C"),
        )
    matrix = lp.a_matrix_
    starts, indices, values = list(matrix.start_), list(matrix.index_), list(matrix.value_)
    per_row: list[list[tuple[int, float]]] = [[] for _ in range(rows)]
    if "Rowwise" in _name(matrix.format_):
        for i in range(rows):
            per_row[i] = [(indices[k], float(values[k])) for k in range(starts[i], starts[i + 1])]
    else:
        for j in range(columns):
            for k in range(starts[j], starts[j + 1]):
                per_row[indices[k]].append((j, float(values[k])))
    for i in range(rows):
        builder.add_row(row_names[i], lower=lp.row_lower_[i], upper=lp.row_upper_[i], entries=per_row[i])
    builder.objective_constant = float(lp.offset_)
    hessian = model.hessian_
    if int(hessian.dim_) > 0:
        h_start, h_index, h_value = list(hessian.start_), list(hessian.index_), list(hessian.value_)
        for j in range(int(hessian.dim_)):
            for k in range(h_start[j], h_start[j + 1]):
                i = h_index[k]
                builder.q_obj.append((i, j, float(h_value[k]) / 2.0 if i == j else float(h_value[k])))
    return builder.build()


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    highs = args[0]
    with contextlib.suppress(Exception):
        highs.setOptionValue("threads", 1)
    return c.capture_model(lambda: capture_matrix(highs))


def _report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    highs = args[0]
    status, raw = status_of(highs)
    model = prepared.get("model")
    fields: dict[str, Any] = {
        "status": status,
        "raw_status": raw,
        "objective": objective_of(highs, status),
        "sense": model["sense"] if model else None,
        "num_vars": int(highs.getNumCol()),
        "num_constraints": int(highs.getNumRow()),
    }
    fields.update(prepared)
    return fields


def install(module: ModuleType) -> None:
    highs_class = module.Highs
    if c.is_hooked(highs_class.__dict__.get("run")):
        return
    for name in ("run", "solve"):
        if hasattr(highs_class, name):
            setattr(highs_class, name, c.wrap_solve(LIBRARY, getattr(highs_class, name), _prepare, _report))


def read_binding(obj: Any) -> dict[str, Any] | None:
    module = sys.modules.get(MODULE)
    if module is None or not isinstance(obj, module.Highs):
        return None
    status, raw = status_of(obj)
    return {"library": LIBRARY, "status": status, "raw_status": raw, "objective": objective_of(obj, status)}
