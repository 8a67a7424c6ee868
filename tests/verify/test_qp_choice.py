"""Which solver re-solves a gurobipy claim of a QP (issue 44): HiGHS for a convex continuous QP
(milliseconds, against gurobipy's ~0.35 s on BENCH4OPT_364/365), gurobipy still for the rest."""

from __future__ import annotations

import math

import pytest

from trex_eval.records import LinearModel, SolveStatus
from trex_eval.verify import gurobi_available, resolve

INF = math.inf


def _qp(*, convex: bool, integer: bool = False) -> LinearModel:
    """min x² + y² - 4x - 6y (convex; with -y² instead, not) s.t. x + y <= 2, 0 <= x, y <= 3:
    convex optimum -8.5 at (0.5, 1.5)."""
    return LinearModel.model_validate(
        {
            "sense": "min",
            "var_names": ("x", "y"),
            "obj": (-4.0, -6.0),
            "lb": (0.0, 0.0),
            "ub": (3.0, 3.0),
            "vtype": ("I", "C") if integer else ("C", "C"),
            "row_names": ("r",),
            "row_lower": (-INF,),
            "row_upper": (2.0,),
            "a_row": (0, 0),
            "a_col": (0, 1),
            "a_val": (1.0, 1.0),
            "q_obj": ((0, 0, 1.0), (1, 1, 1.0 if convex else -1.0)),
        }
    )


def test_a_convex_continuous_qp_goes_to_highs_even_for_gurobipy() -> None:
    result = resolve(_qp(convex=True), prefer_gurobi=True)

    assert result.solver == "highs"
    assert result.status is SolveStatus.OPTIMAL and result.objective == pytest.approx(-8.5, abs=1e-6)


@pytest.mark.parametrize(
    "model", [_qp(convex=False), _qp(convex=True, integer=True)], ids=["non-convex", "MIQP"]
)
def test_other_quadratic_models_keep_gurobipy(model: LinearModel) -> None:
    if not gurobi_available():
        pytest.skip("needs a licensed gurobipy in the verifier processes")
    assert resolve(model, prefer_gurobi=True).solver == "gurobipy"
