"""write_lp: exact round trips through parse_lp, and gurobipy reading the written text into the
same model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from gurobi_oracle import differences, gurobi_read
from lp_writer import write_lp

from trex_eval.errors import GradingError
from trex_eval.lp import parse_lp
from trex_eval.records import LinearModel


def _reference_models(data_dir: Path) -> list[tuple[str, LinearModel]]:
    paths = sorted((data_dir / "data").glob("bench4opt*/lp_code/*.lp"))
    assert len(paths) == 394 + 344
    return [(f"{path.parent.parent.name}/{path.name}", parse_lp(path.read_text())) for path in paths]


def test_round_trip_and_gurobipy_agree_on_every_reference_lp(data_dir: Path) -> None:
    round_trip_failures, gurobi_failures, quadratic = [], {}, []
    for name, model in _reference_models(data_dir):
        if model.n_quadratic_constraints:
            quadratic.append(name)
        text = write_lp(model)
        back = parse_lp(text)
        if back != model:
            round_trip_failures.append(name)
        expected = gurobi_read(text)
        found = ["gurobipy rejects the text"] if expected is None else differences(expected, back)
        if found:
            gurobi_failures[name] = found[:3]
    assert round_trip_failures == []
    assert gurobi_failures == {}
    # Quadratic constraints (held, so written): ORGEval 56, 57, 374, 375 (spec §1.3) and their
    # Feasible copies.
    assert len(quadratic) == 8


def _model(**changes: object) -> LinearModel:
    base = LinearModel(
        sense="min",
        var_names=("x", "y"),
        obj=(3.0, 2.0),
        lb=(0.0, 0.0),
        ub=(math.inf, math.inf),
        vtype=("C", "C"),
        row_names=("c1", "c2"),
        row_lower=(4.0, 6.0),
        row_upper=(math.inf, math.inf),
        a_row=(0, 0, 1, 1),
        a_col=(0, 1, 0, 1),
        a_val=(1.0, 1.0, 1.0, 3.0),
    )
    return base.model_copy(update=changes)


EDGE_MODELS = {
    "base": _model(),
    "maximise_with_constant_and_quadratic": _model(
        sense="max", objective_constant=-12.5, q_obj=((0, 0, 0.75), (0, 1, -3.0))
    ),
    "signed_zero_bounds_and_infinite_objective": _model(
        obj=(math.inf, -math.inf), lb=(-0.0, -math.inf), ub=(-0.0, 7.0)
    ),
    "types": _model(vtype=("B", "I"), lb=(0.0, -3.0), ub=(1.0, 8.0)),
    "semi_continuous_and_semi_integer": _model(vtype=("S", "N"), lb=(2.0, 1.0), ub=(9.0, 5.0)),
    "binary_fixed_to_zero_and_free_variable": _model(
        vtype=("B", "C"), lb=(0.0, -math.inf), ub=(0.0, math.inf)
    ),
    "le_eq_free_and_empty_rows": _model(
        row_names=("le", "eq", "free", "empty"),
        row_lower=(-math.inf, 2.5, -math.inf, 1.0),
        row_upper=(7.0, 2.5, math.inf, math.inf),
        a_row=(0, 1, 1, 2),
        a_col=(0, 0, 1, 1),
        a_val=(-1.5, 2.0, -1e-7, 4.0),
    ),
    "unnamed_and_spaced_names": _model(var_names=("", "y y"), row_names=("", "c:2")),
    "no_variables": LinearModel(
        sense="min",
        var_names=(),
        obj=(),
        lb=(),
        ub=(),
        vtype=(),
        row_names=(),
        row_lower=(),
        row_upper=(),
        a_row=(),
        a_col=(),
        a_val=(),
    ),
}


@pytest.mark.parametrize("model", list(EDGE_MODELS.values()), ids=list(EDGE_MODELS))
def test_constructed_models_come_back(model: LinearModel) -> None:
    text = write_lp(model)
    expected = gurobi_read(text)
    assert expected is not None, text
    assert differences(expected, parse_lp(text)) == []
    back = parse_lp(text)
    names = tuple(
        name.replace(" ", "_").replace(":", "_") or f"C{j}" for j, name in enumerate(model.var_names)
    )
    rows = tuple(
        name.replace(" ", "_").replace(":", "_") or f"R{i}" for i, name in enumerate(model.row_names)
    )
    assert back == model.model_copy(update={"var_names": names, "row_names": rows})


def test_range_row_is_written_in_gurobis_range_form() -> None:
    model = _model(row_lower=(4.0, -1.0), row_upper=(10.0, math.inf))
    text = write_lp(model)
    assert " c1: x + y + Rgc1 = 10" in text
    back = parse_lp(text)
    assert back.var_names == ("x", "y", "Rgc1")
    assert (back.lb[2], back.ub[2]) == (0.0, 6.0)
    assert (back.row_lower[0], back.row_upper[0]) == (10.0, 10.0)
    expected = gurobi_read(text)
    assert expected is not None and differences(expected, back) == []


def test_duplicate_names_collapse_as_through_gurobi() -> None:
    model = _model(var_names=("x", "x"))
    back = parse_lp(write_lp(model))
    assert back.var_names == ("x",)
    assert back.obj == (5.0,)
    assert list(zip(back.a_row, back.a_col, back.a_val, strict=True)) == [(0, 0, 2.0), (1, 0, 4.0)]


def test_parts_a_linear_model_only_counts_cannot_be_written() -> None:
    with pytest.raises(GradingError, match="only counted"):
        write_lp(_model(n_general_constraints=1))


def test_held_quadratic_sos_and_indicator_parts_are_written_as_gurobipy_reads_them() -> None:
    text = (
        "Maximize\n x + y + [ 2 x * y ] / 2\nSubject To\n c: x + y <= 4\n"
        " q: 3 x + [ x ^2 + 2 x * y ] <= 5\n i: b = 1 -> x + 2 y >= 1\n"
        "Binaries\n b\nSOS\n s1: S1 :: x:1 y:2\n s2: S2 :: x:1 y:2 z:3\nEnd\n"
    )
    model = parse_lp(text)
    assert (len(model.q_constraints), len(model.sos), len(model.indicators)) == (1, 2, 1)
    written = write_lp(model)
    back = parse_lp(written)
    assert back == model
    expected = gurobi_read(written)
    assert expected is not None and differences(expected, back) == []
