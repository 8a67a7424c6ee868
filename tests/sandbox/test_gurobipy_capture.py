"""The gurobipy hook's matrix capture (``runtime/hooks/gurobipy.py``), called in this process on
models of the real gurobipy and of the licence-free layer: both must give the same matrix, read
through batched attribute queries (``Model.getAttr(name, objects)``), including names, infinite
bounds, variable types, every row sense and the LP's primal and dual values."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import pytest

from trex_eval.sandbox.runtime.hooks import gurobipy as hook


def _modules() -> list[ModuleType]:
    import gurobipy_highs

    found: list[ModuleType] = [gurobipy_highs]
    try:
        import gurobipy

        gurobipy.Model().dispose()  # a licence that does not start skips the real library
    except Exception:
        return found
    return [gurobipy, *found]


def _model(gp: Any, *, integer: bool) -> Any:
    """max 3x + 2y + z  s.t.  x + y + z <= 4 (cap), x + 3y >= 1 (floor), x - y = 0.5 (tie),
    z >= -2 (unnamed);  0 <= x <= 3, y >= 0 (integer or not), z free."""
    model = gp.Model()
    model.Params.OutputFlag = 0
    x = model.addVar(ub=3.0, name="x")
    y = model.addVar(name="y", vtype=gp.GRB.INTEGER if integer else gp.GRB.CONTINUOUS)
    z = model.addVar(lb=-gp.GRB.INFINITY, name="z")
    model.addConstr(x + y + z <= 4, name="cap")
    model.addConstr(x + 3 * y >= 1, name="floor")
    model.addConstr(x - y == 0.5, name="tie")
    model.addConstr(z >= -2)
    model.setObjective(3 * x + 2 * y + z, gp.GRB.MAXIMIZE)
    model.optimize()
    return model


@pytest.mark.parametrize("gp", _modules(), ids=lambda module: module.__name__)
@pytest.mark.parametrize("integer", [False, True], ids=["lp", "milp"])
def test_the_capture_reads_every_column_and_row_attribute(gp: ModuleType, integer: bool) -> None:
    model = _model(gp, integer=integer)
    captured = hook.capture_matrix(model)
    assert captured["sense"] == "max"
    assert captured["var_names"] == ["x", "y", "z"]
    assert captured["obj"] == [3.0, 2.0, 1.0]
    assert captured["lb"][0] == 0.0 and captured["lb"][1] == 0.0 and captured["lb"][2] == -math.inf
    assert captured["ub"] == [3.0, math.inf, math.inf]
    assert captured["vtype"] == ["C", "I" if integer else "C", "C"]
    assert captured["row_names"][:3] == ["cap", "floor", "tie"] and len(captured["row_names"]) == 4
    assert captured["row_lower"] == [-math.inf, 1.0, 0.5, -2.0]
    assert captured["row_upper"] == [4.0, math.inf, 0.5, math.inf]
    rows = sorted(zip(captured["a_row"], captured["a_col"], captured["a_val"], strict=True))
    assert rows == [
        (0, 0, 1.0),
        (0, 1, 1.0),
        (0, 2, 1.0),
        (1, 0, 1.0),
        (1, 1, 3.0),
        (2, 0, 1.0),
        (2, 1, -1.0),
        (3, 2, 1.0),
    ]
    if integer:
        assert "primal" not in captured  # a MILP's values prove nothing: no certificate
    else:
        # x = 3, y = 2.5, z = -1.5: the primal point and one dual per row, for the certificate.
        assert captured["primal"] == pytest.approx([3.0, 2.5, -1.5])
        assert len(captured["row_duals"]) == 4


def test_a_model_whose_batched_query_lies_about_its_length_is_not_captured() -> None:
    """The program's model may answer anything; a column list that does not match its variables
    leaves the model out (the harness then has nothing to verify) instead of a shifted matrix."""
    import gurobipy_highs as gp

    class Lying(gp.Model):
        def getAttr(self, attrname: str, objs: object = None) -> object:
            found = super().getAttr(attrname, objs)
            return found[:-1] if attrname == "LB" and isinstance(found, list) else found

    model = Lying()
    model.Params.OutputFlag = 0
    x, y = model.addVar(name="x"), model.addVar(name="y")
    model.addConstr(x + y <= 1)
    model.setObjective(x + y)
    model.ModelSense = -1  # maximise
    model.optimize()
    reported = hook._report(None, (model,), {}, None)
    assert reported["model"] is None and "matrix capture failed" in reported["note"]


@pytest.mark.parametrize("gp", _modules(), ids=lambda module: module.__name__)
def test_a_model_solved_again_unchanged_is_read_once_and_any_change_reads_it_again(gp: ModuleType) -> None:
    real = getattr(gp, "GUROBIPY_HIGHS", None) is None
    model = _model(gp, integer=False)
    first = hook.capture_matrix(model)
    read = hook._LAST[0].builder if real else None
    model.optimize()  # nothing changed: the audit's appended optimize
    again = hook.capture_matrix(model)
    assert again == first
    # Only the real library has a fingerprint; the layer's models are read every time.
    assert bool(hook._LAST) is real and (not real or hook._LAST[0].builder is read)

    x, y, z = model.getVars()
    cap = model.getConstrs()[0]
    for change, check in (
        (
            lambda: model.chgCoeff(cap, z, 2.0),
            lambda found: (0, 2, 2.0) in zip(*_entries(found), strict=False),
        ),
        (lambda: setattr(x, "UB", 2.5), lambda found: found["ub"][0] == 2.5),
        (lambda: setattr(y, "VarName", "renamed"), lambda found: found["var_names"][1] == "renamed"),
        (lambda: setattr(cap, "ConstrName", "ceiling"), lambda found: found["row_names"][0] == "ceiling"),
    ):
        change()
        model.optimize()
        found = hook.capture_matrix(model)
        assert check(found), found
        assert not real or hook._LAST[0].builder is not read
        read = hook._LAST[0].builder if real else None
        assert found["primal"] == pytest.approx(model.getAttr("X", model.getVars()))

    other = _model(gp, integer=False)  # the same numbers in another model object: read anew
    assert hook.capture_matrix(other)["var_names"] == ["x", "y", "z"]
    assert not real or hook._LAST[0].model is other


def _entries(captured: dict[str, Any]) -> tuple[list[int], list[int], list[float]]:
    return captured["a_row"], captured["a_col"], captured["a_val"]
