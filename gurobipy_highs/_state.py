"""What a ``Model`` holds, and the pure helpers that canonicalise its contents.

:class:`ModelState` is the whole state of one model (kept in a single attribute of the
``Model``, so that programs can store their own data on the model under other underscore
names). The helpers here turn user input into gurobipy's canonical form: checked names and
senses, bounds as Gurobi stores them, terms merged per variable, and the :class:`Snapshot` the
solver and the file writers read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import _grb as G
from ._errors import GurobiError, invalid_argument
from ._expr import LinExpr, QuadExpr, Var, as_number
from ._highs_solve import SolveOutcome
from ._multiobj import MultiObjectives
from ._objects import SOS, Constr, GenConstr, ModelObject, QConstr
from ._params import ParamSet
from ._snapshot import GeneralRow, LinearRow, QuadRow, Snapshot, SOSSet

if TYPE_CHECKING:
    from ._callback import CallbackContext
    from ._iis import Iis

MAX_NAME = 255
#: Variable bounds of this magnitude or more are infinite (as Gurobi stores them).
INFINITE_BOUND = 1e20
#: Tolerance with which new integer variables get their bounds rounded inwards.
INTEGER_ROUNDING = 1e-5
VTYPES = frozenset("CBISN")
_SENSES = {"<": "<", "<=": "<", ">": ">", ">=": ">", "=": "=", "==": "="}


class ModelState:
    """Everything one Model holds; ``pending`` are the queued changes ``update()`` applies
    (``pending_late`` after them: Gurobi applies ``setObjectiveN`` after ``setObjective``)."""

    def __init__(self, name: str, params: ParamSet) -> None:
        self.name = name
        self.params = params
        self.vars: list[Var] = []
        self.constrs: list[Constr] = []
        self.qconstrs: list[QConstr] = []
        self.sos: list[SOS] = []
        self.genconstrs: list[GenConstr] = []
        self.sense = G.MINIMIZE
        self.obj_constant = 0.0
        self.q_obj: list[tuple[Var, Var, float]] = []
        self.pending_vars: list[Var] = []
        self.pending_counts: dict[str, int] = {}
        self.pending: list[Callable[[], bool]] = []
        self.pending_late: list[Callable[[], bool]] = []
        #: The objectives of ``setObjectiveN`` (``None`` until it is first called).
        self.multi: MultiObjectives | None = None
        #: What a running callback may read (``None`` outside callbacks).
        self.callback: CallbackContext | None = None
        self.status = G.LOADED
        self.outcome: SolveOutcome | None = None
        #: The IIS of the last ``computeIIS`` (``None`` until then, and again once the model
        #: changes or is reset; a solve of the unchanged model keeps it, as in gurobipy).
        self.iis: Iis | None = None
        #: Seconds the last ``optimize`` took to prove the model, as it stands, infeasible, and
        #: the tolerances it used (None: not solved since the last change, not infeasible, or
        #: solved under a callback).
        self.infeasibility_proof: tuple[float, tuple[object, ...]] | None = None
        self.disposed = False


def sense_code(value: object) -> str:
    """Gurobi's one-character sense for ``<``/``<=``/``>``/``>=``/``=``/``==``; ``GurobiError``
    (INVALID_ARGUMENT) for anything else."""
    sense = _SENSES.get(str(value))
    if sense is None:
        raise invalid_argument(f"Invalid constraint sense '{value}'")
    return sense


def check_name(name: object) -> str:
    """``name`` as text (``None`` -> ``""``); ``GurobiError`` beyond Gurobi's 255 characters."""
    text = "" if name is None else str(name)
    if len(text) > MAX_NAME:
        raise invalid_argument(f"Name too long (maximum name length is {MAX_NAME} characters)")
    return text


def to_linear(value: object) -> LinExpr:
    """``value`` (number, Var or LinExpr) as a LinExpr; other types are rejected."""
    if isinstance(value, LinExpr):
        return value
    if isinstance(value, Var):
        return value._lin()
    number = as_number(value)
    if number is not None:
        return LinExpr(number)
    raise GurobiError(10003, "Unable to convert argument to an expression")


def to_quadratic(value: object) -> QuadExpr:
    """``value`` (number, Var, LinExpr or QuadExpr) as a QuadExpr."""
    if isinstance(value, QuadExpr):
        return value
    return QuadExpr._from_linear(to_linear(value))


def float_prop(obj: Var | ModelObject, key: str) -> float:
    """A numeric stored attribute of ``obj`` (``LB``, ``RHS``, ...)."""
    value = obj._props[key]
    assert isinstance(value, (int, float))
    return float(value)


def number(value: object, what: str) -> float:
    """``value`` as a float; ``GurobiError`` naming ``what`` when it is not a number."""
    converted = as_number(value)
    if converted is None:
        raise GurobiError(10003, f"Invalid value for {what}: {value!r}")
    return converted


def optional_number(value: object) -> float | None:
    """``None`` stays ``None``; anything else must be a number."""
    return None if value is None else number(value, "constant")


def bound(value: object) -> float:
    """A variable bound as Gurobi stores it: magnitudes of 1e20 and more are infinite."""
    converted = number(value, "bound")
    if converted >= INFINITE_BOUND:
        return math.inf
    if converted <= -INFINITE_BOUND:
        return -math.inf
    return converted


def creation_bounds(vtype: str, lb: float, ub: float) -> tuple[float, float]:
    """Bounds of a new integer-type variable as gurobipy stores them: rounded inwards (with
    tolerance 1e-5) unless fixed, and clipped to [0, 1] for binaries. Later attribute writes
    are stored as given, exactly as in gurobipy."""
    if vtype == "C" or vtype == "S" or lb == ub:
        return lb, ub
    if math.isfinite(lb):
        shifted = lb - INTEGER_ROUNDING
        lb = float(math.ceil(shifted))
        if lb == 0.0 and shifted < 0.0:
            lb = -0.0  # C's ceil keeps the sign: gurobipy reports -0.0 here
    if math.isfinite(ub):
        ub = float(math.floor(ub + INTEGER_ROUNDING))
    if vtype == "B":
        lb, ub = (lb if lb > 0.0 else 0.0), min(ub, 1.0)
    return lb, ub


def require_member(owner: object, obj: Var | ModelObject) -> None:
    """``GurobiError`` unless ``obj`` belongs to model ``owner`` and is past its update."""
    if obj._model is not owner:
        raise GurobiError(10003, "Variable not in model" if isinstance(obj, Var) else "Object not in model")
    if obj._index < 0:
        raise GurobiError(10003, f"{type(obj).__name__} has not yet been added to the model")


def merged_terms(
    owner: object, coeffs: Sequence[float], variables: Sequence[Var]
) -> tuple[list[Var], list[float]]:
    """Terms merged per variable, zeros dropped, in column order."""
    merged: dict[int, list[Any]] = {}
    for coeff, var in zip(coeffs, variables, strict=True):
        entry = merged.get(var._serial)
        if entry is None:
            require_member(owner, var)
            merged[var._serial] = [var, coeff]
        else:
            entry[1] += coeff
    pairs = sorted((entry for entry in merged.values() if entry[1] != 0.0), key=lambda e: e[0]._index)
    return [p[0] for p in pairs], [float(p[1]) for p in pairs]


def merged_quad(owner: object, expr: QuadExpr, *, objective: bool) -> list[tuple[Var, Var, float]]:
    """Quadratic terms merged per unordered pair (lower column first), zeros dropped.

    Order as gurobipy stores them: a constraint's terms sorted by column pair; the
    objective's sorted by their lower column only, otherwise in order of first appearance.
    """
    merged: dict[tuple[int, int], list[Any]] = {}
    for coeff, a, b in zip(expr._qcoeffs, expr._qvars1, expr._qvars2, strict=True):
        require_member(owner, a)
        require_member(owner, b)
        first, second = (a, b) if a._index <= b._index else (b, a)
        key = (first._index, second._index)
        entry = merged.get(key)
        if entry is None:
            merged[key] = [first, second, coeff]
        else:
            entry[2] += coeff
    keys = sorted(merged, key=lambda k: k[0]) if objective else sorted(merged)
    return [(merged[k][0], merged[k][1], float(merged[k][2])) for k in keys if merged[k][2] != 0.0]


def build_snapshot(state: ModelState) -> Snapshot:
    """The :class:`Snapshot` of a model's current (updated) contents."""
    rows = tuple(
        LinearRow(
            name=str(c._props["ConstrName"]),
            sense=str(c._props["Sense"]),
            rhs=float_prop(c, "RHS"),
            cols=tuple(v._index for v in c._vars),
            vals=tuple(c._coeffs),
        )
        for c in state.constrs
    )
    qrows = tuple(
        QuadRow(
            name=str(q._props["QCName"]) or f"qc{q._index}",
            sense=str(q._props["QCSense"]),
            rhs=float_prop(q, "QCRHS"),
            cols=tuple(v._index for v in q._lin_vars),
            vals=tuple(q._lin_coeffs),
            quad=tuple((a._index, b._index, c) for a, b, c in q._quad),
        )
        for q in state.qconstrs
    )
    sos = tuple(SOSSet(s._type, tuple(v._index for v in s._members), tuple(s._weights)) for s in state.sos)
    return Snapshot(
        name=state.name,
        sense=state.sense,
        obj_constant=state.obj_constant,
        var_names=tuple(str(v._props["VarName"]) for v in state.vars),
        lb=tuple(float_prop(v, "LB") for v in state.vars),
        ub=tuple(float_prop(v, "UB") for v in state.vars),
        obj=tuple(float_prop(v, "Obj") for v in state.vars),
        vtype=tuple(str(v._props["VType"]) for v in state.vars),
        rows=rows,
        q_obj=tuple((a._index, b._index, q) for a, b, q in state.q_obj),
        qrows=qrows,
        sos=sos,
        general=tuple(_general_row(g) for g in state.genconstrs),
    )


def _general_row(general: GenConstr) -> GeneralRow:
    """A general constraint with its variables as column indices (indicator rows merged)."""
    data = dict(general._data)
    kind = str(data.pop("kind"))
    out: dict[str, object] = {}
    for key, value in data.items():
        if isinstance(value, Var):
            out[key] = value._index
        elif key == "vars":
            assert isinstance(value, tuple)
            if kind == "indicator":
                coeffs = data["coeffs"]
                assert isinstance(coeffs, tuple)
                merged_vars, merged_coeffs = merged_terms(general._model, list(coeffs), list(value))
                out["cols"] = tuple(v._index for v in merged_vars)
                out["vals"] = tuple(merged_coeffs)
            else:
                out["cols"] = tuple(v._index for v in value)
        elif key != "coeffs":
            out[key] = value
    if kind == "norm":
        out["which"] = out.pop("constant")
    return GeneralRow(name=str(general._props["GenConstrName"]), kind=kind, data=out)
