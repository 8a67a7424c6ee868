"""The ``budgeted`` rule (issue 49) on real MIPLIB-NL instances through the real sandbox, the
licence-free gurobipy layer and the harness's re-solve: a near-label model, a wrong model, forged
claims and over-budget programs, each graded as the rule says; and its decisions on records."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cpu_load import burning

from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.data import source_dir
from trex_eval.benchmarks.loading import Benchmark
from trex_eval.errors import ConfigError
from trex_eval.grading.objective.budgeted import UNPROVEN, BudgetedRule, is_unproven
from trex_eval.grading.registry import get_rule
from trex_eval.protocols.plan import judged, plan_for
from trex_eval.records import (
    ExecStatus,
    Execution,
    Grade,
    LinearModel,
    ObjectiveReference,
    Program,
    SolveRecord,
    SolveStatus,
    StructureReference,
    Verdict,
)
from trex_eval.sandbox import SandboxPool

FLUGPL = 1201500.0


@pytest.fixture(scope="module")
def bench(data_dir: Path) -> Benchmark:
    return load_benchmark("miplib-nl", data_dir=data_dir)


@pytest.fixture(scope="module")
def pool(bench: Benchmark) -> Iterator[SandboxPool]:
    with SandboxPool(workers=2, hidden=(str(bench.root),)) as started:
        yield started


def _solve_py(data_dir: Path, name: str) -> str:
    path = source_dir("optsuite/MIPLIB-NL", data_dir) / "dataset" / name / "solve.py"
    return path.read_text(encoding="utf-8")


def _graded(bench: Benchmark, pool: SandboxPool, name: str, code: str, rule: str) -> tuple[Execution, Grade]:
    """``code`` run as instance ``name``'s program on the layer, judged as a run judges it."""
    plan = plan_for(bench, rule=rule, gurobi="highs")
    problem = bench.get(name)
    program = Program(code=code, extractor="raw", reason="")
    execution = pool.run(plan.job(problem, program), limits=plan.limits_for(problem))
    return plan.judge(problem, execution, reference_model=_no_reference)


def _no_reference(_: StructureReference) -> LinearModel:
    raise AssertionError("objective benchmarks load no reference model")


def test_the_rule_names_its_budgets_and_refuses_bad_ones(bench: Benchmark) -> None:
    rule = get_rule("budgeted")
    assert rule.spec == "budgeted@1:cpu=600,verify=120" and "600 CPU s" in rule.description
    assert get_rule("budgeted@1:60,verify=30").spec == "budgeted@1:cpu=60,verify=30"
    assert plan_for(bench).rule.spec == "budgeted@1:cpu=600,verify=120"  # the benchmark's YAML
    assert plan_for(bench, rule="budgeted:60,verify=30").verification_budget_s == 30.0
    assert plan_for(bench, rule="strict").verification_budget_s is None  # verify's own default
    # Under a protocol's conventions the rule is wrapped, and its budgets still decide.
    wrapped = plan_for(bench, rule="budgeted:60,verify=30", protocol="default+after-solve")
    assert type(wrapped.rule).__name__ == "ConventionRule"
    assert (wrapped.program_budget_s, wrapped.verification_budget_s) == (60.0, 30.0)
    assert wrapped.budgeted_limits.cpu_s == 60.0
    for bad in ("budgeted:0", "budgeted:verify=-1", "budgeted:gap=1", "budgeted@2"):
        with pytest.raises(ConfigError):
            get_rule(bad)


def _solve(status: SolveStatus, objective: float | None, verification: str | None = None) -> SolveRecord:
    return SolveRecord(
        library="gurobipy",
        status=status,
        raw_status=status.value,
        objective=objective,
        verification=verification,
        verified_objective=objective if verification == "match" else None,
    )


REFERENCE = ObjectiveReference(value=FLUGPL, label="1201500.0")


@pytest.mark.parametrize("status", [SolveStatus.TIME_LIMIT, SolveStatus.SUBOPTIMAL, SolveStatus.INTERRUPTED])
def test_a_feasible_point_not_proven_optimal_is_never_correct(status: SolveStatus) -> None:
    """Even one at the label, and even with a re-solve that 'matched': it was not proven."""
    rule = BudgetedRule()
    grade = rule.grade(
        Execution(status=ExecStatus.OK, solves=(_solve(status, FLUGPL, "match"),), cpu_s=5.0), REFERENCE
    )
    assert grade.verdict is Verdict.WRONG and is_unproven(grade) and grade.reason.startswith(UNPROVEN)
    assert f"ended {status.value} at 1201500.0" in grade.reason and "program 600 CPU s" in grade.reason
    assert grade.rule == "budgeted@1:cpu=600,verify=120"
    # strict calls a proven optimum that matched correct; the rule too.
    proven = Execution(
        status=ExecStatus.OK, solves=(_solve(SolveStatus.OPTIMAL, FLUGPL, "match"),), cpu_s=5.0
    )
    assert rule.grade(proven, REFERENCE).verdict is Verdict.CORRECT
    # A program over the CPU budget is timeout however right its answer (CPU, not wall: load-free).
    over = proven.model_copy(update={"cpu_s": 601.0, "wall_s": 30.0})
    late = rule.grade(over, REFERENCE)
    assert late.verdict is Verdict.TIMEOUT and "601.0 CPU s used of 600" in late.reason


def test_reference_program_near_label_is_correct_and_a_wrong_model_is_wrong(
    bench: Benchmark, pool: SandboxPool, data_dir: Path
) -> None:
    code = _solve_py(data_dir, "flugpl")
    execution, grade = _graded(bench, pool, "flugpl", code, "budgeted:60,verify=30")
    assert grade.verdict is Verdict.CORRECT, grade.reason
    assert execution.last_solve is not None and execution.last_solve.verification == "match"
    # Overtime paid double: another model, another optimum (the flugpl optimum uses overtime).
    wrong = code.replace(
        "params['overtime_cost'] * overtime_hours[p]", "2 * params['overtime_cost'] * overtime_hours[p]"
    )
    assert wrong != code
    _, grade = _graded(bench, pool, "flugpl", wrong, "budgeted:60,verify=30")
    assert grade.verdict is Verdict.WRONG and "1201500" in grade.reason, grade.reason


FORGE_PRINT = "print('Optimal total cost: 1201500.0')\nprint(1201500.0)\n"
FORGE_MODEL = """
import gurobipy as gp
m = gp.Model()
x = m.addVar(lb=0, ub=10, vtype=gp.GRB.INTEGER)
m.setObjective(x, gp.GRB.MINIMIZE)
m.optimize()
print("Optimal total cost: 1,201,500.00")
"""


def test_forged_claims_gain_nothing(bench: Benchmark, pool: SandboxPool) -> None:
    _, printed = _graded(bench, pool, "flugpl", FORGE_PRINT, "budgeted:60,verify=30")
    assert printed.verdict is Verdict.NO_SOLVE
    _, other = _graded(bench, pool, "flugpl", FORGE_MODEL, "budgeted:60,verify=30")
    assert other.verdict is Verdict.WRONG and "1201500" in other.reason, other.reason


BURN = """
import time
end = time.process_time() + 3.0
while time.process_time() < end:
    pass
"""


def test_over_budget_programs_and_re_solves(bench: Benchmark, pool: SandboxPool, data_dir: Path) -> None:
    flugpl = _solve_py(data_dir, "flugpl")
    # The right answer after more CPU seconds than the rule grants: timeout, the budget named.
    stopped_at, late = _graded(bench, pool, "flugpl", flugpl + BURN, "budgeted:2,verify=30")
    assert late.verdict is Verdict.TIMEOUT and "CPU s used of 2" in late.reason, late.reason
    # The sandbox took its CPU limit from the rule: stopped at the budget, not run on to 3.5 s.
    assert stopped_at.cpu_s is not None and stopped_at.cpu_s < 3.0
    # A solve stopped by its own time limit: never correct, its point and the label given.
    pigeon = _solve_py(data_dir, "pigeon-08")
    maximised = pigeon.replace("-gp.quicksum(", "gp.quicksum(").replace(
        "for i in self.items), GRB.MINIMIZE", "for i in self.items), GRB.MAXIMIZE"
    )
    assert maximised != pigeon
    limited = maximised.replace(
        "self.model.optimize()", "self.model.Params.TimeLimit = 0.2\n        self.model.optimize()"
    )
    assert limited != maximised
    _, stopped = _graded(bench, pool, "pigeon-08", limited, "budgeted:60,verify=30")
    assert stopped.verdict is Verdict.WRONG and is_unproven(stopped), stopped.reason
    # A proven optimum whose re-solve cannot finish within the rule's re-solve budget: unverified.
    execution, unverified = _graded(bench, pool, "pigeon-08", maximised, "budgeted:60,verify=0.001")
    assert execution.last_solve is not None and execution.last_solve.status is SolveStatus.OPTIMAL
    assert unverified.verdict is Verdict.UNVERIFIED, unverified.reason
    assert "re-solve 0.001 CPU s" in unverified.reason


def test_judged_hands_verify_the_rules_budget() -> None:
    """Without a re-solve to run, judged returns the first grade: the budget is only passed on."""
    rule = BudgetedRule(verify_cpu_s=7.0)
    done = Execution(status=ExecStatus.OK, solves=(_solve(SolveStatus.OPTIMAL, FLUGPL, "match"),), cpu_s=1.0)
    _, grade = judged(lambda e: rule.grade(e, REFERENCE), done, budget_s=rule.budgets().verify_cpu_s)
    assert grade.verdict is Verdict.CORRECT


def test_the_held_out_check_holds_with_8_burners_per_core(
    bench: Benchmark, pool: SandboxPool, data_dir: Path
) -> None:
    """The programs above, each graded as the rule says on a machine saturated by other work:
    budgets in CPU seconds give a loaded machine the quiet one's verdicts."""
    flugpl, pigeon = _solve_py(data_dir, "flugpl"), _solve_py(data_dir, "pigeon-08")
    maximised = pigeon.replace("-gp.quicksum(", "gp.quicksum(").replace(
        "for i in self.items), GRB.MINIMIZE", "for i in self.items), GRB.MAXIMIZE"
    )
    limited = maximised.replace(
        "self.model.optimize()", "self.model.Params.TimeLimit = 0.2\n        self.model.optimize()"
    )
    wrong = flugpl.replace(
        "params['overtime_cost'] * overtime_hours[p]", "2 * params['overtime_cost'] * overtime_hours[p]"
    )
    cases = {
        "near label": ("flugpl", flugpl, "budgeted:60,verify=30", Verdict.CORRECT),
        "wrong model": ("flugpl", wrong, "budgeted:60,verify=30", Verdict.WRONG),
        "forged print": ("flugpl", FORGE_PRINT, "budgeted:60,verify=30", Verdict.NO_SOLVE),
        "forged model": ("flugpl", FORGE_MODEL, "budgeted:60,verify=30", Verdict.WRONG),
        "over budget": ("flugpl", flugpl + BURN, "budgeted:2,verify=30", Verdict.TIMEOUT),
        "unproven": ("pigeon-08", limited, "budgeted:60,verify=30", Verdict.WRONG),
        "re-solve over budget": ("pigeon-08", maximised, "budgeted:60,verify=0.001", Verdict.UNVERIFIED),
    }
    with burning(per_core=8):
        graded = {
            what: _graded(bench, pool, name, code, rule)[1] for what, (name, code, rule, _) in cases.items()
        }
    for what, (_, _, _, verdict) in cases.items():
        assert graded[what].verdict is verdict, (what, graded[what].reason)
    assert is_unproven(graded["unproven"]) and "re-solve 0.001 CPU s" in graded["re-solve over budget"].reason
