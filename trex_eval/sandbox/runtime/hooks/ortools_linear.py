"""Hook for OR-Tools' linear solver wrapper (``pywraplp.Solver.Solve``).

The matrix comes from ``ExportModelToProto`` (one call, no per-coefficient round trips). Solver
threads are capped with ``SetNumThreads(1)`` where the backend supports it.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from types import ModuleType
from typing import Any

from .. import capture as c

MODULE = "ortools.linear_solver.pywraplp"
ORDER = 40
WARM = ("ortools.linear_solver.pywraplp",)
WARM_ORDER = 10
DISTRIBUTION = ("ortools",)
LIBRARY = "ortools.linear_solver"

_STATUS = {
    0: ("OPTIMAL", c.OPTIMAL),
    1: ("FEASIBLE", c.FEASIBLE),
    2: ("INFEASIBLE", c.INFEASIBLE),
    3: ("UNBOUNDED", c.UNBOUNDED),
    4: ("ABNORMAL", c.ERROR),
    5: ("MODEL_INVALID", c.ERROR),
    6: ("NOT_SOLVED", c.NOT_SOLVED),
}


def status_from_code(code: int) -> tuple[str, str]:
    name, status = _STATUS.get(int(code), (str(code), c.UNKNOWN))
    return status, name


def capture_matrix(solver: Any) -> dict[str, Any]:
    proto = sys.modules["ortools.linear_solver.linear_solver_pb2"].MPModelProto()
    solver.ExportModelToProto(proto)
    builder = c.LinearModelBuilder("max" if proto.maximize else "min", infinity=float("inf"))
    for var in proto.variable:
        builder.add_var(
            var.name,
            obj=var.objective_coefficient,
            lb=var.lower_bound,
            ub=var.upper_bound,
            vtype="I" if var.is_integer else "C",
        )
    for row in proto.constraint:
        builder.add_row(
            row.name,
            lower=row.lower_bound,
            upper=row.upper_bound,
            entries=list(zip(row.var_index, row.coefficient, strict=True)),
        )
    builder.objective_constant = float(proto.objective_offset)
    quadratic = proto.quadratic_objective
    builder.q_obj.extend(
        zip(quadratic.qvar1_index, quadratic.qvar2_index, quadratic.coefficient, strict=True)
    )
    for general in proto.general_constraint:
        kind = general.WhichOneof("general_constraint")
        if kind == "quadratic_constraint":
            builder.n_quadratic_constraints += 1
        elif kind == "sos_constraint":
            builder.n_sos += 1
        else:
            builder.n_general_constraints += 1
    return builder.build()


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    with contextlib.suppress(Exception):
        args[0].SetNumThreads(1)
    return None


def _report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    solver = args[0]
    status, raw = status_from_code(int(result))
    objective = None
    if status in (c.OPTIMAL, c.FEASIBLE):
        objective = c.finite_or_none(solver.Objective().Value())
    fields: dict[str, Any] = {
        "status": status,
        "raw_status": raw,
        "objective": objective,
        "sense": "max" if solver.Objective().maximization() else "min",
        "num_vars": int(solver.NumVariables()),
        "num_constraints": int(solver.NumConstraints()),
    }
    fields.update(c.capture_model(lambda: capture_matrix(solver)))
    return fields


def install(module: ModuleType) -> None:
    solver_class = module.Solver
    if c.is_hooked(solver_class.__dict__.get("Solve")):
        return
    # Imported here, in the warm worker, because a first import in each job costs ~20 ms.
    importlib.import_module("ortools.linear_solver.linear_solver_pb2")
    solver_class.Solve = c.wrap_solve(LIBRARY, solver_class.Solve, _prepare, _report)


def read_binding(obj: Any) -> dict[str, Any] | None:
    module = sys.modules.get(MODULE)
    if module is None or not isinstance(obj, module.Solver):
        return None
    return {"library": LIBRARY, "status": None, "raw_status": None, "objective": None}
