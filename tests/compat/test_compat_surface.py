"""The layer's tables of gurobipy facts (constants, parameters, class names) match real gurobipy."""

from __future__ import annotations

from types import ModuleType

from trex_eval.sandbox.runtime.compat import gurobipy as compat
from trex_eval.sandbox.runtime.compat.gurobipy import _facts


def _public(obj: object) -> dict[str, object]:
    return {name: getattr(obj, name) for name in dir(obj) if not name.startswith("_")}


def test_grb_constants_have_the_real_values(real_gurobipy: ModuleType) -> None:
    real = real_gurobipy.GRB
    scalars = {k: v for k, v in _public(real).items() if isinstance(v, (int, float, str))}
    assert {k: getattr(compat.GRB, k) for k in scalars} == scalars
    for group in ("Status", "Attr", "Param", "Callback", "Error"):
        assert _public(getattr(compat.GRB, group)) == _public(getattr(real, group)), group


def test_parameter_table_matches_real_gurobipy(real_gurobipy: ModuleType) -> None:
    model = real_gurobipy.Model()
    try:
        for name, (kind, low, high, default) in _facts.PARAMS.items():
            real_name, real_kind, _value, real_low, real_high, real_default = model.getParamInfo(name)
            assert (real_name, real_kind, real_low, real_high, real_default) == (
                name,
                kind,
                low,
                high,
                default,
            )
        assert len(_facts.PARAMS) == len(_public(real_gurobipy.GRB.Param))
    finally:
        model.dispose()


def test_class_and_module_names_match_real_gurobipy(real_gurobipy: ModuleType) -> None:
    skip = set(dir(dict)) | set(dir(list))
    for cls, names in _facts.CLASS_NAMES.items():
        inherited = skip if cls in ("tupledict", "tuplelist") else set()
        real = {n for n in dir(getattr(real_gurobipy, cls)) if not n.startswith("_") and n not in inherited}
        assert names == real, cls
    assert {n for n in dir(real_gurobipy) if not n.startswith("_")} == _facts.MODULE_NAMES
    assert real_gurobipy.gurobi.version() == compat.gurobi.version() == _facts.API_VERSION


def test_every_implemented_name_exists_in_real_gurobipy() -> None:
    """The layer adds nothing to the public gurobipy surface except its own markers."""
    own = {
        "TREX_COMPAT",
        "NEEDS_GUROBI_ERRNO",
        "NEEDS_GUROBI_EVENTS",
        "NeedsGurobiError",
        "CompatNotImplementedError",
    }
    assert set(compat.__all__) - own <= _facts.MODULE_NAMES
    for cls in ("Model", "Var", "Constr", "LinExpr", "QuadExpr", "Env", "tupledict", "tuplelist"):
        mine = {n for n in vars(getattr(compat, cls)) if not n.startswith("_")}
        # Params is a dynamic attribute of real gurobipy (absent from its dir())
        assert mine <= _facts.CLASS_NAMES[cls] | {"Params", "params"}, (cls, mine - _facts.CLASS_NAMES[cls])
