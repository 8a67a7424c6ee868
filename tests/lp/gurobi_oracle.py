"""gurobipy as the independent oracle for the LP/MPS readers: what ``gurobipy.read()`` builds
from a file, converted field by field into a :class:`LinearModel`, and an exact comparison
that also tells ``-0.0`` from ``0.0``."""

from __future__ import annotations

import math
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from trex_eval.lp import row_bounds
from trex_eval.records import IndicatorConstraint, LinearModel, QuadraticConstraint, SOSConstraint

gp = pytest.importorskip("gurobipy")


@cache
def gurobi_env() -> Any:
    """One quiet, started gurobipy environment for the whole session (skips without a licence)."""
    env = gp.Env(empty=True)
    env.setParam("OutputFlag", 0)
    try:
        env.start()
    except gp.GurobiError as error:  # pragma: no cover - depends on the licence date
        pytest.skip(f"gurobipy cannot start (licence?): {error}")
    return env


def gurobi_read(text: str, *, suffix: str = ".lp") -> LinearModel | None:
    """The model gurobipy reads from ``text`` (``None`` when gurobipy rejects the file)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"model{suffix}"
        path.write_text(text)
        try:
            model = gp.read(str(path), gurobi_env())
        except gp.GurobiError:
            return None
    return to_linear_model(model)


def to_linear_model(model: Any) -> LinearModel:
    """Convert a gurobipy model into the record, reading only gurobipy's own attributes."""
    variables = model.getVars()
    constraints = model.getConstrs()
    lower, upper = [], []
    for constraint in constraints:
        low, high = row_bounds(constraint.Sense, constraint.RHS)
        lower.append(low)
        upper.append(high)
    matrix = model.getA().tocsr()
    matrix.sort_indices()
    a_row, a_col, a_val = [], [], []
    for i in range(matrix.shape[0]):
        for k in range(matrix.indptr[i], matrix.indptr[i + 1]):
            a_row.append(i)
            a_col.append(int(matrix.indices[k]))
            a_val.append(float(matrix.data[k]))
    q = model.getQ().tocoo()
    quadratic: dict[tuple[int, int], float] = {}
    for i, j, value in zip(q.row.tolist(), q.col.tolist(), q.data.tolist(), strict=True):
        key = (min(i, j), max(i, j))
        quadratic[key] = quadratic.get(key, 0.0) + value
    return LinearModel(
        sense="max" if model.ModelSense == -1 else "min",
        objective_constant=model.ObjCon,
        var_names=tuple(v.VarName for v in variables),
        obj=tuple(v.Obj for v in variables),
        lb=tuple(v.LB for v in variables),
        ub=tuple(v.UB for v in variables),
        vtype=tuple(v.VType for v in variables),
        row_names=tuple(c.ConstrName for c in constraints),
        row_lower=tuple(lower),
        row_upper=tuple(upper),
        a_row=tuple(a_row),
        a_col=tuple(a_col),
        a_val=tuple(a_val),
        q_obj=tuple((i, j, quadratic[i, j]) for i, j in sorted(quadratic) if quadratic[i, j] != 0.0),
        n_quadratic_constraints=model.NumQConstrs,
        n_general_constraints=model.NumGenConstrs,
        n_sos=model.NumSOS,
        q_constraints=tuple(_quadratic_constraint(model, qc) for qc in model.getQConstrs()),
        sos=tuple(_sos(model, sos) for sos in model.getSOSs()),
        indicators=tuple(
            _indicator(model, gc)
            for gc in model.getGenConstrs()
            if gc.GenConstrType == gp.GRB.GENCONSTR_INDICATOR
        ),
    )


def _linear_terms(expr: Any) -> tuple[tuple[int, float], ...]:
    totals: dict[int, float] = {}
    for k in range(expr.size()):
        index = expr.getVar(k).index
        totals[index] = totals.get(index, 0.0) + expr.getCoeff(k)
    return tuple((j, totals[j]) for j in sorted(totals) if totals[j] != 0.0)


def _quadratic_constraint(model: Any, constraint: Any) -> QuadraticConstraint:
    expr = model.getQCRow(constraint)
    totals: dict[tuple[int, int], float] = {}
    for k in range(expr.size()):
        i, j = expr.getVar1(k).index, expr.getVar2(k).index
        key = (min(i, j), max(i, j))
        totals[key] = totals.get(key, 0.0) + expr.getCoeff(k)
    lower, upper = row_bounds(constraint.QCSense, constraint.QCRHS)
    return QuadraticConstraint(
        lower=lower,
        upper=upper,
        linear=_linear_terms(expr.getLinExpr()),
        quadratic=tuple((i, j, totals[i, j]) for i, j in sorted(totals) if totals[i, j] != 0.0),
    )


def _sos(model: Any, sos: Any) -> SOSConstraint:
    kind, members, weights = model.getSOS(sos)
    return SOSConstraint(
        type=kind, members=tuple((v.index, float(w)) for v, w in zip(members, weights, strict=True))
    )


def _indicator(model: Any, constraint: Any) -> IndicatorConstraint:
    binary, value, expr, sense, rhs = model.getGenConstrIndicator(constraint)
    lower, upper = row_bounds(sense, rhs)
    return IndicatorConstraint(
        binary=binary.index, value=int(value), lower=lower, upper=upper, linear=_linear_terms(expr)
    )


def _same_float(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def differences(expected: LinearModel, actual: LinearModel) -> list[str]:
    """Fields that differ, with the first differing position; floats compared bit-for-bit
    (``-0.0`` is not ``0.0``)."""
    found = []
    for field in LinearModel.model_fields:
        left, right = getattr(expected, field), getattr(actual, field)
        if isinstance(left, float):
            left, right = (left,), (right,)
        if not isinstance(left, tuple):
            if left != right:
                found.append(f"{field}: {left!r} != {right!r}")
            continue
        if len(left) != len(right):
            found.append(f"{field}: length {len(left)} != {len(right)}")
            continue
        for k, (a, b) in enumerate(zip(left, right, strict=True)):
            same = _same_float(a, b) if isinstance(a, float) else a == b
            if isinstance(a, tuple):
                same = a[:2] == b[:2] and _same_float(a[2], b[2])
            if not same:
                found.append(f"{field}[{k}]: {a!r} != {b!r}")
                break
    return found
