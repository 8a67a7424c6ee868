"""Hook for coptpy (COPT): ``Model.solve`` and ``Model.solveLP``; writes are recorded.

COPT reports its size-limit ("no licence") failure as ``CoptError`` with retcode 4 and a
message starting ``(LICENSE)``; the harness treats that as a licence error.
"""

from __future__ import annotations

import contextlib
import sys
from types import ModuleType
from typing import Any

from .. import capture as c

MODULE = "coptpy"
ORDER = 20
WARM = ("coptpy",)
WARM_ORDER = 40
DISTRIBUTION = ("coptpy",)
LIBRARY = "coptpy"
COPT_INFINITY = 1e30

_STATUS = {
    0: ("UNSTARTED", c.NOT_SOLVED),
    1: ("OPTIMAL", c.OPTIMAL),
    2: ("INFEASIBLE", c.INFEASIBLE),
    3: ("UNBOUNDED", c.UNBOUNDED),
    4: ("INF_OR_UNB", c.INF_OR_UNBD),
    5: ("NUMERICAL", c.NUMERIC),
    6: ("NODELIMIT", c.INTERRUPTED),
    7: ("IMPRECISE", c.SUBOPTIMAL),
    8: ("TIMEOUT", c.TIME_LIMIT),
    9: ("UNFINISHED", c.ERROR),
    10: ("INTERRUPTED", c.INTERRUPTED),
    11: ("ITERLIMIT", c.INTERRUPTED),
    # COPT 8's non-convex solver: a local optimum is a solution, not a proof of optimality.
    20: ("LOCAL_OPTIMAL", c.FEASIBLE),
    21: ("LOCAL_INFEASIBLE", c.UNKNOWN),
}
_HAS_SOLUTION = (c.OPTIMAL, c.SUBOPTIMAL, c.TIME_LIMIT, c.INTERRUPTED, c.FEASIBLE)


def status_of(model: Any) -> tuple[str, str]:
    code = int(model.status)
    name, status = _STATUS.get(code, (str(code), c.UNKNOWN))
    return status, name


def objective_of(model: Any, status: str) -> float | None:
    if status not in _HAS_SOLUTION:
        return None
    try:
        return c.finite_or_none(model.objval)
    except Exception:
        return None


def _count(model: Any, attribute: str) -> int:
    try:
        return int(model.getAttr(attribute))
    except Exception:
        return 0


def capture_matrix(model: Any) -> dict[str, Any]:
    builder = c.LinearModelBuilder("max" if int(model.ObjSense) == -1 else "min", infinity=COPT_INFINITY)
    for var in model.getVars():
        builder.add_var(var.getName(), obj=var.Obj, lb=var.LB, ub=var.UB, vtype=str(var.vtype))
    for constr in model.getConstrs():
        row = model.getRow(constr)
        entries = [(int(row.getVar(i).getIdx()), float(row.getCoeff(i))) for i in range(row.size)]
        builder.add_row(constr.getName(), lower=constr.LB, upper=constr.UB, entries=entries)
    builder.objective_constant = float(model.ObjConst)
    objective = model.getObjective()
    if hasattr(objective, "getVar1"):
        for i in range(objective.size):
            builder.q_obj.append(
                (
                    int(objective.getVar1(i).getIdx()),
                    int(objective.getVar2(i).getIdx()),
                    float(objective.getCoeff(i)),
                )
            )
    builder.n_quadratic_constraints = _count(model, "QConstrs")
    builder.n_sos = _count(model, "Soss")
    builder.n_general_constraints = _count(model, "Indicators") + _count(model, "Cones")
    return builder.build()


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    with contextlib.suppress(Exception):
        args[0].setParam("Threads", 1)
    return None


def _report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    model = args[0]
    status, raw = status_of(model)
    fields: dict[str, Any] = {
        "status": status,
        "raw_status": raw,
        "objective": objective_of(model, status),
        "sense": "max" if int(model.ObjSense) == -1 else "min",
        "num_vars": _count(model, "Cols"),
        "num_constraints": _count(model, "Rows"),
    }
    fields.update(c.capture_model(lambda: capture_matrix(model)))
    return fields


def install(module: ModuleType) -> None:
    model_class = module.Model
    if c.is_hooked(model_class.__dict__.get("solve")):
        return
    for name in ("solve", "solveLP"):
        if hasattr(model_class, name):
            setattr(model_class, name, c.wrap_solve(LIBRARY, getattr(model_class, name), _prepare, _report))
    for name in ("write", "writeLp", "writeMps"):
        if hasattr(model_class, name):
            setattr(model_class, name, c.record_write(LIBRARY, getattr(model_class, name)))


def read_binding(obj: Any) -> dict[str, Any] | None:
    module = sys.modules.get(MODULE)
    if module is None or not isinstance(obj, module.Model):
        return None
    status, raw = status_of(obj)
    return {"library": LIBRARY, "status": status, "raw_status": raw, "objective": objective_of(obj, status)}
