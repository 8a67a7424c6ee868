"""Real Bench4Opt reference programs run in the sandbox with their instance data as ``data.json``.

Expected values are the benchmark's own ``optimal_value`` (golden fact G5: BENCH4OPT_2 = 531.1536797183472,
BENCH4OPT_4 = 2557441.83620435); G13: with ``model.optimize()`` appended the reference code reaches
it, without it the program never solves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trex_eval.records import ExecStatus, SolveStatus
from trex_eval.sandbox import Job, SandboxPool
from trex_eval.verify import verify_last_solve

GOLDEN = {"BENCH4OPT_2": 531.1536797183472, "BENCH4OPT_4": 2557441.83620435}


def _row(data_dir: Path, item: str) -> dict[str, object]:
    with open(data_dir / "data" / "bench4opt_feasible" / "test.jsonl") as rows:
        return next(row for line in rows if (row := json.loads(line))["id"] == item)


def _job(data_dir: Path, item: str, *, optimize: bool) -> Job:
    row = _row(data_dir, item)
    instance = (data_dir / "data" / "bench4opt_feasible" / str(row["data_path"])).read_text()
    code = str(row["reference_code"]) + ("\nmodel.optimize()\n" if optimize else "")
    return Job(code=code, files={"data.json": instance}, gurobi="real")


@pytest.mark.parametrize("item", sorted(GOLDEN))
def test_reference_code_with_optimize_reaches_the_golden_optimum(
    pool: SandboxPool, data_dir: Path, item: str
) -> None:
    execution = verify_last_solve(pool.run(_job(data_dir, item, optimize=True)))  # as grading does

    assert execution.status is ExecStatus.OK, execution.detail
    solve = execution.solves[-1]
    assert solve.status is SolveStatus.OPTIMAL
    assert solve.objective == pytest.approx(GOLDEN[item], rel=1e-6)
    assert solve.verification == "match"
    model_binding = next(binding for binding in execution.bindings if binding.name == "model")
    assert model_binding.has_optimize and model_binding.has_objval


def test_reference_code_without_optimize_never_solves(pool: SandboxPool, data_dir: Path) -> None:
    execution = pool.run(_job(data_dir, "BENCH4OPT_2", optimize=False))

    assert execution.status is ExecStatus.NO_SOLVE
    model_binding = next(binding for binding in execution.bindings if binding.name == "model")
    assert model_binding.has_optimize and not model_binding.has_objval
