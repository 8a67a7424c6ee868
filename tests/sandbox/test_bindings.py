"""Module-level model bindings, for the trex-compat rule (reference-harness §4.1, golden fact G15).

The reference wrapper finds a model only under the names ``model`` or ``m``, and only when
``hasattr(obj, "ObjVal")`` holds, which in gurobipy 13 means the model was optimised to a solution.
"""

from __future__ import annotations

import pytest

from trex_eval.records import ExecStatus, SolveStatus
from trex_eval.sandbox import Job, SandboxPool

BUILD = """
import gurobipy as gp
from gurobipy import GRB
{name} = gp.Model()
x = {name}.addVar(ub=4, name="x")
{name}.setObjective(2 * x, GRB.MAXIMIZE)
"""


@pytest.mark.parametrize("name", ["model", "m", "mdl"])
def test_optimised_model_is_bound_under_any_name(pool: SandboxPool, name: str) -> None:
    execution = pool.run(Job(code=BUILD.format(name=name) + f"{name}.optimize()\n", gurobi="real"))

    (binding,) = [b for b in execution.bindings if b.name == name]
    assert (binding.library, binding.has_optimize, binding.has_objval) == ("gurobipy", True, True)
    assert binding.status is SolveStatus.OPTIMAL and binding.objective == 8.0


def test_model_never_optimised_has_no_objval(pool: SandboxPool) -> None:
    execution = pool.run(Job(code=BUILD.format(name="model"), gurobi="real"))

    assert execution.status is ExecStatus.NO_SOLVE
    (binding,) = execution.bindings
    assert binding.has_optimize and not binding.has_objval
    assert binding.status is SolveStatus.NOT_SOLVED


def test_model_inside_main_is_solved_but_not_bound(pool: SandboxPool) -> None:
    body = BUILD.format(name="model").replace("\n", "\n    ")
    code = f"def main():{body}\n    model.optimize()\n\nif __name__ == '__main__':\n    main()\n"
    execution = pool.run(Job(code=code, gurobi="real"))

    assert execution.status is ExecStatus.OK
    assert execution.solves[0].objective == 8.0
    assert execution.bindings == ()


def test_names_model_and_m_are_always_recorded(pool: SandboxPool) -> None:
    execution = pool.run(Job(code="model = 3\nm = 'text'\nother = 4\n", expect="any"))

    assert [(b.name, b.library, b.has_optimize, b.has_objval) for b in execution.bindings] == [
        ("model", "builtins.int", False, False),
        ("m", "builtins.str", False, False),
    ]


def test_sys_exit_is_recorded(pool: SandboxPool) -> None:
    code = BUILD.format(name="model") + "model.optimize()\nimport sys\nsys.exit(0)\n"
    execution = pool.run(Job(code=code, gurobi="real"))

    assert execution.status is ExecStatus.OK and execution.called_sys_exit
    assert execution.bindings[0].has_objval
