"""Structural comparison of two LP/MPS files, both read by real gurobipy (test helper).

Stronger than an equivalence verdict: names, bounds, types, objective (linear, quadratic,
constant, sense) and every row must agree. Numbers are compared exactly unless ``rel_tol`` is
given.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import Any


def model_structure(gp: ModuleType, path: Path) -> dict[str, Any]:
    """Everything gurobipy reads from ``path``, keyed by variable and constraint names."""
    env = gp.Env(empty=True)
    env.setParam("OutputFlag", 0)
    env.start()
    model = gp.read(str(path), env)
    try:
        objective = model.getObjective()
        linear = objective.getLinExpr() if isinstance(objective, gp.QuadExpr) else objective
        quad: dict[tuple[str, str], float] = {}
        if isinstance(objective, gp.QuadExpr):
            for k in range(objective.size()):
                pair = sorted((objective.getVar1(k).VarName, objective.getVar2(k).VarName))
                key = (pair[0], pair[1])
                quad[key] = quad.get(key, 0.0) + objective.getCoeff(k)
        rows = {}
        for constr in model.getConstrs():
            row = model.getRow(constr)
            terms = {row.getVar(k).VarName: row.getCoeff(k) for k in range(row.size())}
            rows[constr.ConstrName] = (constr.Sense, constr.RHS, terms)
        qrows = {}
        for qconstr in model.getQConstrs():
            qrow = model.getQCRow(qconstr)
            lin = qrow.getLinExpr()
            qrows[qconstr.QCName] = (
                qconstr.QCSense,
                qconstr.QCRHS,
                {lin.getVar(k).VarName: lin.getCoeff(k) for k in range(lin.size())},
                {
                    (qrow.getVar1(k).VarName, qrow.getVar2(k).VarName): qrow.getCoeff(k)
                    for k in range(qrow.size())
                },
            )
        return {
            "sense": model.ModelSense,
            "objcon": linear.getConstant(),
            "vars": {v.VarName: (v.LB, v.UB, v.Obj, v.VType) for v in model.getVars()},
            "rows": rows,
            "qrows": qrows,
            "quad_objective": quad,
            "counts": (model.NumVars, model.NumConstrs, model.NumQConstrs, model.NumGenConstrs, model.NumSOS),
        }
    finally:
        model.dispose()
        env.dispose()


def _same(a: Any, b: Any, rel_tol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isinf(a) or math.isinf(b):
            return a == b
        return a == b or abs(a - b) <= rel_tol * max(abs(a), abs(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], rel_tol) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y, rel_tol) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def structure_differences(left: dict[str, Any], right: dict[str, Any], *, rel_tol: float = 0.0) -> list[str]:
    """Names of the parts that differ (empty when the structures agree)."""
    return [key for key in left if not _same(left[key], right.get(key), rel_tol)]
