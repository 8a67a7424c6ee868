"""Hook for PySCIPOpt: ``Model.optimize`` / ``optimizeNogil``.

``pyscipopt.Model`` is an immutable extension type, so the hook cannot patch it in place: it
replaces the ``Model`` name in ``pyscipopt`` and ``pyscipopt.scip`` with a subclass whose solve
methods are wrapped (``isinstance`` against the original class still holds). The matrix is read
before the solve, while SCIP is still in its problem stage; SCIP's infinity is 1e20.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from .. import capture as c

MODULE = "pyscipopt"
ORDER = 80
WARM = ("pyscipopt",)
WARM_ORDER = 70
DISTRIBUTION = ("PySCIPOpt",)
LIBRARY = "pyscipopt"

_STATUS = {
    "optimal": c.OPTIMAL,
    "infeasible": c.INFEASIBLE,
    "unbounded": c.UNBOUNDED,
    "inforunbd": c.INF_OR_UNBD,
    "timelimit": c.TIME_LIMIT,
    "nodelimit": c.INTERRUPTED,
    "totalnodelimit": c.INTERRUPTED,
    "stallnodelimit": c.INTERRUPTED,
    "gaplimit": c.SUBOPTIMAL,
    "sollimit": c.INTERRUPTED,
    "bestsollimit": c.INTERRUPTED,
    "restartlimit": c.INTERRUPTED,
    "primallimit": c.INTERRUPTED,
    "duallimit": c.INTERRUPTED,
    "memlimit": c.INTERRUPTED,
    "userinterrupt": c.INTERRUPTED,
    "terminate": c.INTERRUPTED,
    "unknown": c.UNKNOWN,
}
_base_model: type | None = None
"""The original ``pyscipopt.Model`` class, once hooked."""
_VTYPE = {"CONTINUOUS": "C", "INTEGER": "I", "BINARY": "B", "IMPLINT": "C"}


def status_of(model: Any) -> tuple[str, str]:
    raw = str(model.getStatus())
    return _STATUS.get(raw, c.UNKNOWN), raw


def objective_of(model: Any, status: str) -> float | None:
    if status in (c.INFEASIBLE, c.UNBOUNDED, c.INF_OR_UNBD) or int(model.getNSols()) == 0:
        return None
    return c.finite_or_none(model.getObjVal())


def capture_matrix(model: Any) -> dict[str, Any]:
    infinity = float(model.infinity())
    builder = c.LinearModelBuilder(
        "max" if str(model.getObjectiveSense()) == "maximize" else "min", infinity=infinity
    )
    variables = list(model.getVars())
    for var in variables:
        builder.add_var(
            var.name,
            obj=var.getObj(),
            lb=var.getLbOriginal(),
            ub=var.getUbOriginal(),
            vtype=_VTYPE.get(str(var.vtype()), "C"),
        )
    position = {name: i for i, name in enumerate(builder.var_names)}
    if len(position) != len(variables):
        raise c.CaptureError("matrix not captured: duplicate variable names")
    for constraint in model.getConss():
        handler = str(constraint.getConshdlrName())
        if not constraint.isLinear():
            if handler in ("quadratic", "nonlinear"):
                builder.n_quadratic_constraints += 1
            elif handler.startswith("SOS"):
                builder.n_sos += 1
            else:
                builder.n_general_constraints += 1
            continue
        entries = [(position[name], float(value)) for name, value in model.getValsLinear(constraint).items()]
        builder.add_row(
            constraint.name, lower=model.getLhs(constraint), upper=model.getRhs(constraint), entries=entries
        )
    builder.objective_constant = float(model.getObjoffset())
    return builder.build()


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    model = args[0]
    return c.capture_model(lambda: capture_matrix(model))


def _report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    model_object = args[0]
    status, raw = status_of(model_object)
    model = prepared.get("model")
    fields: dict[str, Any] = {
        "status": status,
        "raw_status": raw,
        "objective": objective_of(model_object, status),
        "sense": model["sense"] if model else None,
        "num_vars": len(model["var_names"]) if model else None,
        "num_constraints": (
            len(model["row_names"])
            + model["n_quadratic_constraints"]
            + model["n_sos"]
            + model["n_general_constraints"]
        )
        if model
        else None,
    }
    fields.update(prepared)
    return fields


def install(module: ModuleType) -> None:
    global _base_model
    base = module.Model
    if getattr(base, "__trex_hooked__", False):
        return
    _base_model = base
    namespace: dict[str, Any] = {
        "__doc__": base.__doc__,
        "__module__": base.__module__,
        "__trex_hooked__": True,
    }
    for name in ("optimize", "optimizeNogil"):
        if hasattr(base, name):
            namespace[name] = c.wrap_solve(LIBRARY, getattr(base, name), _prepare, _report)
    hooked = type("Model", (base,), namespace)
    c.replace_attribute(module, "Model", hooked)
    scip = sys.modules.get("pyscipopt.scip")
    if scip is not None and getattr(scip, "Model", None) is base:
        c.replace_attribute(scip, "Model", hooked)


def read_binding(obj: Any) -> dict[str, Any] | None:
    if _base_model is None or not isinstance(obj, _base_model):
        return None
    status, raw = status_of(obj)
    return {"library": LIBRARY, "status": status, "raw_status": raw, "objective": objective_of(obj, status)}
