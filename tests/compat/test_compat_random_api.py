"""Property-based differential test: random gurobipy programs built through random API paths
(``random_api_programs.py``) end, solve and score the same under real gurobipy and under
gurobipy_highs.

Both run in this process (the programs are ours, so no sandbox is needed): each program is
executed twice, once with ``gp`` bound to real gurobipy and once to the layer, and the two
outcomes are compared — the exception that ended it (by class name), the status of ``m`` and its
``ObjVal`` under the project's objective rule. Infeasible and infeasible-or-unbounded count as
the same outcome (solvers legitimately differ between the two). Hypothesis is derandomised, so
CI runs the same programs every time, and shrinks a diverging program to a small one.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType
from typing import Any

import pytest
from compat_runner import objectives_match
from hypothesis import HealthCheck, assume, given, settings
from random_api_programs import HEADER, programs

import gurobipy_highs

pytestmark = pytest.mark.timeout(600)

INFEASIBLE = (3, 4)
OUTCOMES: dict[str, int] = {"optimal": 0, "infeasible": 0, "other": 0}


def _integral(model: Any) -> bool:
    """Whether a solved model's integer variables are integral (to Gurobi's IntFeasTol)."""
    if not hasattr(model, "ObjVal") or model.SolCount == 0:
        return True
    return all(abs(v.X - round(v.X)) <= 1e-5 for v in model.getVars() if v.VType in "IB")


def _level_values(model: Any) -> list[tuple[int, float]]:
    """A multi-objective model's blended objective per priority level (highest first), read
    through ``ObjNumber``/``ObjNVal``/``ObjNWeight``/``ObjNPriority`` as a program would."""
    levels: dict[int, float] = {}
    for index in range(model.NumObj):
        model.Params.ObjNumber = index
        levels[model.ObjNPriority] = levels.get(model.ObjNPriority, 0.0) + model.ObjNWeight * model.ObjNVal
    return sorted(levels.items(), reverse=True)


#: (exception class name, status, ObjVal, blended value per priority level, whether a MIP)
Outcome = tuple[str | None, int | None, float | None, list[tuple[int, float]], bool]


def _outcome(module: ModuleType, code: str) -> Outcome:
    namespace: dict[str, Any] = {"__name__": "__main__", "gp": module, "GRB": module.GRB}
    error = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            exec(compile(code, "program.py", "exec"), namespace)
        except Exception as exc:
            error = type(exc).__name__
    model = namespace.get("m")
    if model is None:
        return error, None, None, [], False
    status = int(model.Status)
    objval = float(model.ObjVal) if hasattr(model, "ObjVal") else None
    # Gurobi 13.0.3 presolve can return a fractional value for an integer variable (found by this
    # test: s == min_([x]) with x integer); such a reference is wrong, not the layer
    assume(_integral(model))
    levels = _level_values(model) if model.IsMultiObj and objval is not None else []
    mip = bool(model.IsMIP)
    model.dispose()
    return error, status, objval, levels, mip


@settings(
    max_examples=int(os.environ.get("TREX_COMPAT_EXAMPLES", "600")),
    derandomize=os.environ.get("TREX_COMPAT_SEED") is None,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(code=programs())
def test_random_api_programs_agree_with_gurobipy(real_gurobipy: ModuleType, code: str) -> None:
    program = HEADER + code
    reference = _outcome(real_gurobipy, program)
    layer = _outcome(gurobipy_highs, program)
    assert reference[0] is None, f"the program fails under gurobipy: {reference[0]}\n{program}"
    assert layer[0] is None, f"the layer raised {layer[0]}\n{program}"
    if reference[1] in INFEASIBLE:
        assert layer[1] in INFEASIBLE, (reference, layer, program)
        OUTCOMES["infeasible"] += 1
        return
    assert layer[1] == reference[1], (reference, layer, program)
    ref_obj, got_obj = reference[2], layer[2]
    assert (ref_obj is None) == (got_obj is None), (reference, layer, program)
    if reference[3]:
        # multiple objectives: ObjVal is objective 0 alone, which ties within a blend or a
        # level's allowed degradation leave open (Gurobi's pick depends on its path), so compare
        # what the model determines — each level's blend, within what a MIP level may degrade
        assert [p for p, _v in layer[3]] == [p for p, _v in reference[3]], (reference, layer, program)
        for (_p, want), (_q, got) in zip(reference[3], layer[3], strict=True):
            room = 2 * (1e-6 + 1e-4 * abs(want)) if reference[4] else 0.0
            assert abs(got - want) <= room or objectives_match(got, want), (reference, layer, program)
    elif ref_obj is not None and got_obj is not None:
        assert objectives_match(got_obj, ref_obj), (reference, layer, program)
    OUTCOMES["optimal" if reference[1] == 2 else "other"] += 1


def test_random_api_programs_mostly_reach_an_optimum() -> None:
    """The property above is only as strong as the programs it saw: most must solve."""
    seen = sum(OUTCOMES.values())
    if seen == 0:
        pytest.skip("the property test did not run (real gurobipy unavailable)")
    print(OUTCOMES)
    assert OUTCOMES["optimal"] >= seen // 3, OUTCOMES
