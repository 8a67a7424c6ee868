"""Attribute names: which ones exist, on which objects, and which this layer supports.

gurobipy resolves attribute names case-insensitively (``model.objval`` is ``ObjVal``). A name
that Gurobi has for the object but this layer does not support raises
``CompatNotImplementedError``; a name Gurobi does not have for the object raises the same
``AttributeError`` as real gurobipy.
"""

from __future__ import annotations

from ._facts import ATTR_OWNERS, GRB_ATTR

_CANONICAL: dict[str, str] = {value.lower(): value for value in GRB_ATTR.values()}

#: Variable attributes that are plain stored values (default when never set).
VAR_STORED: dict[str, object] = {
    "VarName": "",
    "LB": 0.0,
    "UB": float("inf"),
    "Obj": 0.0,
    "VType": "C",
    "Start": 1e101,
    "PStart": 1e101,
    "VarHintVal": 1e101,
    "VarHintPri": 0,
    "BranchPriority": 0,
    "Partition": 0,
    "VTag": "",
    "PoolIgnore": 0,
}
#: Variable attributes read from the last solution (``Xn``: solution ``SolutionNumber``, of which
#: only the best, number 0, is kept; ``ObjN``: the coefficient in objective ``ObjNumber``).
VAR_SOLUTION = frozenset({"X", "RC", "Xn", "ObjN"})

CONSTR_STORED: dict[str, object] = {
    "ConstrName": "",
    "Sense": "<",
    "RHS": 0.0,
    "Lazy": 0,
    "CTag": "",
    "DStart": 1e101,
}
CONSTR_SOLUTION = frozenset({"Pi", "Slack"})

QCONSTR_STORED: dict[str, object] = {"QCName": "", "QCSense": "<", "QCRHS": 0.0, "QCTag": ""}
QCONSTR_SOLUTION = frozenset({"QCPi", "QCSlack"})

GENCONSTR_STORED: dict[str, object] = {"GenConstrName": "", "GenConstrType": 0}

#: Per-object attributes read from the last ``computeIIS`` (0 or 1).
IIS_BY_KIND: dict[str, frozenset[str]] = {
    "Var": frozenset({"IISLB", "IISUB"}),
    "Constr": frozenset({"IISConstr"}),
}

#: Attribute changes that alter the model (and so discard a solution at the next update).
MODIFYING = frozenset(
    {"LB", "UB", "Obj", "VType", "Sense", "RHS", "QCSense", "QCRHS", "ModelSense", "ObjCon"}
)

#: Model attributes this layer computes.
MODEL_SUPPORTED = frozenset(
    {
        "NumVars",
        "NumConstrs",
        "NumQConstrs",
        "NumGenConstrs",
        "NumSOS",
        "NumIntVars",
        "NumBinVars",
        "NumNZs",
        "NumQNZs",
        "NumQCNZs",
        "NumObj",
        "NumScenarios",
        "ModelSense",
        "ObjCon",
        "ModelName",
        "IsMIP",
        "IsQP",
        "IsQCP",
        "IsMultiObj",
        "Status",
        "SolCount",
        "ObjVal",
        "ObjBound",
        "ObjBoundC",
        "MIPGap",
        "Runtime",
        "IterCount",
        "BarIterCount",
        "NodeCount",
        "PoolObjVal",
        "PoolObjBound",
        "ObjNVal",
        "ObjNPriority",
        "ObjNWeight",
        "ObjNName",
        "ObjNAbsTol",
        "ObjNRelTol",
        "ObjNCon",
        "IISMinimal",
    }
)
MODEL_WRITABLE = frozenset({"ModelSense", "ObjCon", "ModelName", "NumScenarios"})

#: The multi-scenario attributes (model, variable and constraint ones). HiGHS has no scenarios:
#: a model has none (``NumScenarios`` reads 0, setting it to 0 is accepted), and setting
#: ``NumScenarios`` above 0 or touching any of these raises ``NeedsGurobiError``.
SCENARIO_ATTRS = frozenset(
    {"ScenNLB", "ScenNUB", "ScenNObj", "ScenNRHS", "ScenNName", "ScenNObjVal", "ScenNObjBound", "ScenNX"}
)

STORED_BY_KIND: dict[str, dict[str, object]] = {
    "Var": VAR_STORED,
    "Constr": CONSTR_STORED,
    "QConstr": QCONSTR_STORED,
    "GenConstr": GENCONSTR_STORED,
    "SOS": {},
}
SOLUTION_BY_KIND: dict[str, frozenset[str]] = {
    "Var": VAR_SOLUTION,
    "Constr": CONSTR_SOLUTION,
    "QConstr": QCONSTR_SOLUTION,
    "GenConstr": frozenset(),
    "SOS": frozenset(),
}
READ_ONLY = frozenset({"GenConstrType"})


def canonical_attr(name: str) -> str | None:
    """Gurobi's spelling of attribute ``name``, or ``None`` if Gurobi has no such attribute."""
    return _CANONICAL.get(name.lower())


def owner_has(kind: str, canonical: str) -> bool:
    """Whether objects of ``kind`` (``Var``, ``Constr``, ...) have attribute ``canonical``."""
    return canonical in ATTR_OWNERS[kind]


def object_kind_of(canonical: str) -> str | None:
    """The object kind (``Var``, ``Constr``, ...) owning a per-object attribute, if any."""
    for kind, names in ATTR_OWNERS.items():
        if canonical in names:
            return kind
    return None
