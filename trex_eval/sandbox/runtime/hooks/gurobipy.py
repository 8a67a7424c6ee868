"""Hook for gurobipy (the real library and the licence-free gurobipy_highs layer alike).

Wraps ``Model.optimize`` (forces ``Threads=1``, records status, objective and the matrix read
after the solve) and ``Model.write`` (records the path). ``Model.__init__`` is wrapped only to
notice licence failures a program might catch and hide. The matrix is read through the public
API subset gurobipy_highs implements too: ``getVars``, ``getConstrs``, ``getRow``,
``getObjective``, variable/constraint attributes (one ``Model.getAttr(name, objects)`` query per
attribute, not one read per object: a third less capture time on the B4O models) and model
counts; quadratic constraints (``getQConstrs``, ``getQCRow``) are read only when the model has
some.
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType
from typing import Any, NamedTuple

from .. import capture as c

MODULE = "gurobipy"
ORDER = 10
WARM = ("gurobipy",)
WARM_ORDER = 30
DISTRIBUTION = ("gurobipy",)
LIBRARY = "gurobipy"
LICENCE_ERRNOS = (10009, 10010)
"""GurobiError codes for "no/expired licence" and "model too large for the size-limited licence"."""

_STATUS = {
    1: ("LOADED", c.NOT_SOLVED),
    2: ("OPTIMAL", c.OPTIMAL),
    3: ("INFEASIBLE", c.INFEASIBLE),
    4: ("INF_OR_UNBD", c.INF_OR_UNBD),
    5: ("UNBOUNDED", c.UNBOUNDED),
    6: ("CUTOFF", c.NOT_SOLVED),
    7: ("ITERATION_LIMIT", c.INTERRUPTED),
    8: ("NODE_LIMIT", c.INTERRUPTED),
    9: ("TIME_LIMIT", c.TIME_LIMIT),
    10: ("SOLUTION_LIMIT", c.INTERRUPTED),
    11: ("INTERRUPTED", c.INTERRUPTED),
    12: ("NUMERIC", c.NUMERIC),
    13: ("SUBOPTIMAL", c.SUBOPTIMAL),
    14: ("INPROGRESS", c.UNKNOWN),
    15: ("USER_OBJ_LIMIT", c.INTERRUPTED),
    16: ("WORK_LIMIT", c.TIME_LIMIT),
    17: ("MEM_LIMIT", c.INTERRUPTED),
    18: ("LOCALLY_OPTIMAL", c.FEASIBLE),
    19: ("LOCALLY_INFEASIBLE", c.UNKNOWN),
}
_HAS_SOLUTION = (c.OPTIMAL, c.SUBOPTIMAL, c.TIME_LIMIT, c.INTERRUPTED, c.FEASIBLE)
GRB_INFINITY = 1e100


def status_of(model: Any) -> tuple[str, str]:
    """(normalised status, raw status name) of a gurobipy model."""
    code = int(model.Status)
    name, status = _STATUS.get(code, (str(code), c.UNKNOWN))
    return status, name


def objective_of(model: Any, status: str) -> float | None:
    if status not in _HAS_SOLUTION:
        return None
    try:
        return c.finite_or_none(model.ObjVal)
    except Exception:
        return None


def _attribute(model: Any, name: str, objects: list[Any]) -> list[Any]:
    """``name`` of each of ``objects``: one ``getAttr`` query where the model has it, else one
    attribute read per object (a gurobipy-compatible module without ``getAttr``)."""
    if hasattr(model, "getAttr"):
        return list(model.getAttr(name, objects))
    return [getattr(each, name) for each in objects]


class _Captured(NamedTuple):
    """The job's last capture, for a solve of the same model unchanged (:func:`capture_matrix`)."""

    model: Any
    """Held, so that no other model takes its identity while it is remembered."""
    fingerprint: int
    var_names: list[Any]
    row_names: list[Any]
    builder: c.LinearModelBuilder


_LAST: list[_Captured] = []


def capture_matrix(model: Any) -> dict[str, Any]:
    """The model in matrix form, read through the public API subset (see module docstring).

    A solve of the model captured last, unchanged (the real gurobipy's ``Fingerprint``, a hash of
    everything that can influence the optimisation, and every variable and constraint name as
    before), reuses that matrix and reads only the solution: a program that optimizes the same
    model twice (the audit appends a ``model.optimize()`` to every reference program) pays one
    capture. The licence-free layer has no fingerprint: its models are read every time."""
    variables, constrs = list(model.getVars()), list(model.getConstrs())
    var_names, row_names = _attribute(model, "VarName", variables), _attribute(model, "ConstrName", constrs)
    fingerprint = _fingerprint(model)
    last = _LAST[0] if _LAST else None
    if (
        last is not None
        and fingerprint is not None
        and last.model is model
        and last.fingerprint == fingerprint
        and last.var_names == var_names
        and last.row_names == row_names
    ):
        builder = last.builder
        builder.primal, builder.row_duals = [], []
        _attach_solution(model, builder, variables, constrs)
        return builder.build()
    builder = _read_matrix(model, variables, constrs, var_names, row_names)
    _LAST[:] = [] if fingerprint is None else [_Captured(model, fingerprint, var_names, row_names, builder)]
    return builder.build()


def _fingerprint(model: Any) -> int | None:
    """The real gurobipy's ``Model.Fingerprint``, or None (the layer, or no fingerprint to read)."""
    if getattr(sys.modules.get(type(model).__module__.partition(".")[0]), "GUROBIPY_HIGHS", None) is not None:
        return None
    try:
        return int(model.Fingerprint)
    except Exception:
        return None


def _read_matrix(
    model: Any, variables: list[Any], constrs: list[Any], var_names: list[Any], row_names: list[Any]
) -> c.LinearModelBuilder:
    """:func:`capture_matrix`'s full read."""
    builder = c.LinearModelBuilder("max" if int(model.ModelSense) == -1 else "min", infinity=GRB_INFINITY)
    by_identity = c.identity_index(variables)
    by_name: dict[str, int] | None = None
    # One attribute query per attribute, not one per variable and attribute (a C call each).
    columns = zip(
        var_names, *(_attribute(model, name, variables) for name in ("Obj", "LB", "UB", "VType")), strict=True
    )
    for name, obj, lb, ub, vtype in columns:
        builder.add_var(name, obj=obj, lb=lb, ub=ub, vtype=str(vtype))

    def position(var: Any) -> int:
        nonlocal by_name
        found = by_identity.get(id(var))
        if found is not None:
            return found
        if by_name is None:
            by_name = {name: i for i, name in enumerate(builder.var_names)}
            if len(by_name) != len(builder.var_names):
                raise c.CaptureError("matrix not captured: duplicate variable names")
        return by_name[var.VarName]

    rows = zip(
        constrs, row_names, *(_attribute(model, name, constrs) for name in ("Sense", "RHS")), strict=True
    )
    for constr, name, sense, rhs in rows:
        row = model.getRow(constr)
        entries = [(position(row.getVar(i)), row.getCoeff(i)) for i in range(row.size())]
        builder.add_sense_row(name, sense=str(sense), rhs=float(rhs), entries=entries)
    builder.objective_constant = float(model.ObjCon)
    objective = model.getObjective()
    if hasattr(objective, "getVar1"):
        for i in range(objective.size()):
            builder.q_obj.append(
                (position(objective.getVar1(i)), position(objective.getVar2(i)), float(objective.getCoeff(i)))
            )
    for qconstr in model.getQConstrs() if int(model.NumQConstrs) else ():
        expr = model.getQCRow(qconstr)
        linear = expr.getLinExpr()
        builder.add_quadratic_row(
            sense=str(qconstr.QCSense),
            rhs=float(qconstr.QCRHS),
            linear=[(position(linear.getVar(i)), linear.getCoeff(i)) for i in range(linear.size())],
            quadratic=[
                (position(expr.getVar1(i)), position(expr.getVar2(i)), float(expr.getCoeff(i)))
                for i in range(expr.size())
            ],
        )
    # Counted after reading them: a count above the list read tells the harness some are missing.
    builder.n_quadratic_constraints = int(model.NumQConstrs)
    builder.n_general_constraints = int(model.NumGenConstrs)
    builder.n_sos = int(model.NumSOS)
    _attach_solution(model, builder, variables, constrs)
    return builder


def _attach_solution(
    model: Any, builder: c.LinearModelBuilder, variables: list[Any], constrs: list[Any]
) -> None:
    """The optimal LP's ``X`` and ``Pi`` (both gurobipy and the gurobipy_highs layer expose
    them), for the harness's certificate; a failure to read them only leaves them out."""
    try:
        if int(model.Status) == 2 and builder.continuous_linear():
            builder.attach_solution(model.getAttr("X", variables), model.getAttr("Pi", constrs))
    except Exception:
        return


def _prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    model = args[0]
    try:
        if int(model.Params.Threads) != 1:
            model.Params.Threads = 1
    except Exception:
        pass
    return None


def _report(prepared: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    model = args[0]
    status, raw = status_of(model)
    fields: dict[str, Any] = {
        "status": status,
        "raw_status": raw,
        "objective": objective_of(model, status),
        "sense": "max" if int(model.ModelSense) == -1 else "min",
        "num_vars": int(model.NumVars),
        "num_constraints": int(model.NumConstrs),
    }
    fields.update(c.capture_model(lambda: capture_matrix(model)))
    return fields


def _is_licence_error(error: BaseException) -> bool:
    return type(error).__name__ == "GurobiError" and getattr(error, "errno", None) in LICENCE_ERRNOS


def _watch_licence(original: Any) -> Any:
    @functools.wraps(original)
    def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except Exception as error:
            if _is_licence_error(error):
                c.RECORDER.solve_error(LIBRARY, error)
            raise

    return watched


def install(module: ModuleType) -> None:
    model_class = module.Model
    if c.is_hooked(model_class.__dict__.get("optimize")):
        return
    model_class.optimize = c.wrap_solve(LIBRARY, model_class.optimize, _prepare, _report)
    model_class.write = c.record_write(LIBRARY, model_class.write)
    model_class.__init__ = _watch_licence(model_class.__init__)


def prewarm(module: ModuleType) -> None:
    """Create the real gurobipy's default environment in the worker, before any fork.

    Every job's first ``Model()`` would otherwise start one (reading and checking the licence,
    ~2 ms of CPU per forked job). The environment holds no thread and no descriptor, and each job
    gets its own copy of it with the fork (parameters one job sets never reach another). The
    licence-free layer has nothing to prepare; a licence failure here leaves the environment to
    the jobs, which report it as before.
    """
    if getattr(module, "GUROBIPY_HIGHS", None) is not None:
        return
    module.Model().dispose()


def read_binding(obj: Any) -> dict[str, Any] | None:
    """Status and objective of a gurobipy model object, or None if ``obj`` is not one."""
    module = sys.modules.get(MODULE)
    if module is None or not isinstance(obj, module.Model):
        return None
    try:
        status, raw = status_of(obj)
    except Exception as error:
        return {"library": LIBRARY, "status": None, "raw_status": f"error: {error}"[:200], "objective": None}
    return {"library": LIBRARY, "status": status, "raw_status": raw, "objective": objective_of(obj, status)}
