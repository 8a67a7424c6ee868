"""Workers warm the libraries their programs use; warming keeps OR-Tools ahead of PuLP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from trex_eval.records import ExecStatus, SolveStatus
from trex_eval.sandbox import Job, SandboxPool

PULP = """
import pulp
problem = pulp.LpProblem("p", pulp.LpMaximize)
x = pulp.LpVariable("x", 0, 3)
problem += x
problem.solve(pulp.PULP_CBC_CMD(msg=0))
"""

MATHOPT = """
from ortools.math_opt.python import mathopt
model = mathopt.Model(name="m")
x = model.add_variable(lb=0, name="x")
y = model.add_variable(lb=0, name="y")
model.add_linear_constraint(6 * x + 4 * y <= 24)
model.add_linear_constraint(x + 2 * y <= 6)
model.maximize(5 * x + 4 * y)
result = mathopt.solve(model, mathopt.SolverType.GLOP)
"""


@pytest.fixture(scope="module")
def one_worker() -> Iterator[SandboxPool]:
    with SandboxPool(workers=1) as started:
        yield started


def test_mathopt_still_solves_after_the_worker_warmed_pulp(one_worker: SandboxPool) -> None:
    """PuLP imported before OR-Tools' native library makes MathOpt crash (SIGSEGV): a worker that
    warms PuLP for its programs must have OR-Tools loaded first."""
    for _ in range(4):
        assert one_worker.run(Job(code=PULP)).status is ExecStatus.OK
    execution = one_worker.run(Job(code=MATHOPT))
    assert execution.status is ExecStatus.OK, (execution.status, execution.detail, execution.stderr_tail)
    solve = execution.last_solve
    assert (
        solve is not None and solve.status is SolveStatus.OPTIMAL and solve.objective == pytest.approx(21.0)
    )


def test_a_library_is_warmed_after_two_programs_used_it(one_worker: SandboxPool) -> None:
    """The first two programs import CVXPY themselves; the zygote imports it after the second
    one's files are gone and before it forks the third job, so every later job starts with it.
    (The zygote warmed while the next job ran once: an import that read a package's folder while
    that job's /tmp was being mounted found it empty, and every later job of the worker failed
    with ``No module named 'gurobipy._batch'``.)"""
    code = "import sys\nprint('already imported:', 'cvxpy' in sys.modules)\nimport cvxpy\n"
    seen = [one_worker.run(Job(code=code, expect="any")).stdout_tail.strip() for _ in range(4)]
    assert seen == [*(["already imported: False"] * 2), *(["already imported: True"] * 2)]


def test_a_job_that_could_not_be_set_up_leaves_the_worker_serving() -> None:
    """A job whose files cannot be written fails before it is run: with a warm due after it, the
    worker once read the job forked ahead where it expected the zygote's warm answer, stopped,
    and the next, innocent job came back killed."""
    code = "import sys\nprint('warm:', 'highspy' in sys.modules)\nimport highspy\n"
    with SandboxPool(workers=1) as pool:
        assert pool.run(Job(code=code, expect="any")).status is ExecStatus.OK
        with pytest.raises(Exception, match="File exists"):
            pool.run(Job(code=code, expect="any", files={"a": "x", "a/b": "y"}))
        after = [pool.run(Job(code=code, expect="any")) for _ in range(2)]
    assert [e.status for e in after] == [ExecStatus.OK, ExecStatus.OK], [e.detail for e in after]
    # The job that failed to start never ran its program, and does not count towards warming.
    assert [e.stdout_tail.strip() for e in after] == ["warm: False", "warm: True"]


def test_pyomo_is_warmed_in_a_worker_that_warmed_cvxpy() -> None:
    """Pyomo's solver plugins need ``packaging`` (undeclared): once the worker had warmed CVXPY,
    its import of ``pyomo.environ`` stopped there, and no Pyomo job of that worker started warm."""
    code = "import sys\nprint('warm:', 'pyomo.environ' in sys.modules)\nimport pyomo.environ\n"
    with SandboxPool(workers=1) as pool:
        for _ in range(2):
            assert pool.run(Job(code="import cvxpy\n", expect="any")).status is ExecStatus.OK
        seen = [pool.run(Job(code=code, expect="any")) for _ in range(3)]
    assert all(e.status is ExecStatus.OK for e in seen), [e.detail for e in seen]
    assert [e.stdout_tail.strip() for e in seen] == ["warm: False", "warm: False", "warm: True"]


GUROBI_PARAM = """
import gurobipy as gp
model = gp.Model()
print("MIPGap seen:", model.Params.MIPGap)
gp.setParam("MIPGap", 0.25)
x = model.addVar(ub=3, obj=-1)
model.optimize()
"""


def test_a_gurobipy_worker_keeps_no_job_state_in_its_prepared_environment(one_worker: SandboxPool) -> None:
    """A worker that warmed real gurobipy creates its default environment before forking
    (hooks/gurobipy.prewarm): a parameter one job sets on it never reaches the next job, and
    solves still work and report."""
    runs = [one_worker.run(Job(code=GUROBI_PARAM, gurobi="real")) for _ in range(4)]
    for execution in runs:
        assert execution.status is ExecStatus.OK, (execution.status, execution.detail, execution.stderr_tail)
        solve = execution.last_solve
        assert solve is not None and solve.status is SolveStatus.OPTIMAL
        assert solve.objective == pytest.approx(-3)
        assert "MIPGap seen: 0.0001" in execution.stdout_tail
