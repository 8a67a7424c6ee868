"""A re-solve's budget is CPU seconds of a verifier process: the same model gets the same verdict
on a quiet machine and under 8 busy processes per core (load ~16), one just inside the budget is
solved and one just over it is refused, in both; and a Ctrl-C meant for the harness never reaches
the verifier's solvers.

The models are market-split MILPs (Cornuéjols & Dawande), whose branch-and-bound effort grows
steeply with size: measured here with HiGHS on one thread (as verifier processes run it) on a
quiet machine, (3 rows, 20 columns) ~0.5 CPU s and (4, 24, seed 2) ~6.8 CPU s. The budget of
2 CPU s (enforced within the kernel's whole seconds, so 2 to 3) keeps the first inside even when
contention stretches CPU time 1.5x, and the second over it by more than 2x.
"""

from __future__ import annotations

import random
import time

import pytest
from cpu_load import burning

from trex_eval.records import LinearModel, SolveStatus
from trex_eval.verify import OutOfTime, VerifierLanes
from trex_eval.verify.views import model_view

BUDGET_S = 2.0


def market_split(rows: int, columns: int, *, seed: int = 1) -> LinearModel:
    """min |slack| s.t. a x + s+ - s- = floor(sum(a) / 2), x binary: a MILP hard for its size."""
    rng = random.Random(seed)
    n = columns + 2 * rows
    a_row: list[int] = []
    a_col: list[int] = []
    a_val: list[float] = []
    rhs: list[float] = []
    for i in range(rows):
        weights = [rng.randint(0, 99) for _ in range(columns)]
        rhs.append(float(sum(weights) // 2))
        a_row += [i] * (columns + 2)
        a_col += [*range(columns), columns + 2 * i, columns + 2 * i + 1]
        a_val += [float(w) for w in weights] + [1.0, -1.0]
    return LinearModel(
        sense="min",
        var_names=tuple(f"x{k}" for k in range(n)),
        obj=(0.0,) * columns + (1.0,) * (2 * rows),
        lb=(0.0,) * n,
        ub=(1.0,) * columns + (float("inf"),) * (2 * rows),
        vtype=("B",) * columns + ("C",) * (2 * rows),
        row_names=tuple(f"r{i}" for i in range(rows)),
        row_lower=tuple(rhs),
        row_upper=tuple(rhs),
        a_row=tuple(a_row),
        a_col=tuple(a_col),
        a_val=tuple(a_val),
    )


INSIDE = model_view(market_split(3, 20))
OVER = model_view(market_split(4, 24, seed=2))


def _verdicts(lanes: VerifierLanes) -> tuple[str, str]:
    inside = lanes.resolve(INSIDE, prefer_gurobi=False, budget_s=BUDGET_S)
    assert inside.status is SolveStatus.OPTIMAL and inside.objective == pytest.approx(3.0)
    with pytest.raises(OutOfTime) as over:
        lanes.resolve(OVER, prefer_gurobi=False, budget_s=BUDGET_S)
    assert "2 CPU s" in str(over.value) and over.value.solver == "highs"
    return inside.status.value, type(over.value).__name__


def test_budget_verdicts_are_the_same_idle_and_under_load() -> None:
    lanes = VerifierLanes(size=1)
    try:
        quiet = _verdicts(lanes)
        started = time.monotonic()
        with burning(per_core=8):
            loaded = _verdicts(lanes)
        loaded_wall = time.monotonic() - started
        assert quiet == loaded
        assert lanes.replaced == 2  # each over-budget re-solve ended its process
        # The load was real: the same work took longer by the wall clock than any budget here.
        assert loaded_wall > BUDGET_S + 1
    finally:
        lanes.close()


def test_a_wall_clock_deadline_would_have_refused_the_loaded_re_solve() -> None:
    """The baseline this replaces: a wall-clock limit of the same size, under the same load,
    refuses the model that fits the CPU budget (the verdict then depends on the machine)."""
    from trex_eval.verify.highs import resolve_with_highs

    with burning(per_core=8):
        walled = resolve_with_highs(market_split(3, 20), time_limit_s=BUDGET_S)
    assert walled.status is SolveStatus.TIME_LIMIT
