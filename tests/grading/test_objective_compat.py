"""The ``trex-compat`` rule on Execution records built from the reference wrapper's documented
behaviour (reference-harness §4.1, §5.1): model discovery by name, status 2 only, 1e-6 absolute."""

from __future__ import annotations

import pytest

from trex_eval.grading import grade_objective
from trex_eval.protocols.trex_compat.objective import discover_model
from trex_eval.records import (
    ExecStatus,
    Execution,
    ModelBinding,
    ObjectiveEvidence,
    ObjectiveReference,
    SolveRecord,
    SolveStatus,
    Verdict,
)

RULE = "trex-compat"


def binding(
    name: str = "model",
    objective: float | None = 8.0,
    *,
    status: SolveStatus = SolveStatus.OPTIMAL,
    raw_status: str = "2",
    has_objval: bool = True,
) -> ModelBinding:
    return ModelBinding(
        name=name,
        library="gurobipy",
        has_optimize=True,
        has_objval=has_objval,
        status=status,
        raw_status=raw_status,
        objective=objective if has_objval else None,
    )


def run(*bindings: ModelBinding, status: ExecStatus = ExecStatus.OK, **fields: object) -> Execution:
    solves = [
        SolveRecord(
            library="gurobipy",
            status=b.status or SolveStatus.UNKNOWN,
            raw_status="2",
            objective=b.objective,
            # The default rule grades the harness's re-solve; compat ignores it.
            verification="match",
            verified_objective=b.objective,
        )
        for b in bindings
        if b.has_objval
    ]
    return Execution.model_validate({"status": status, "bindings": bindings, "solves": solves, **fields})


def optimum(value: float) -> ObjectiveReference:
    return ObjectiveReference(value=value, label=repr(value))


class TestDiscovery:
    def test_model_then_m(self) -> None:
        assert discover_model((binding("m", 1.0), binding("model", 2.0))) == binding("model", 2.0)
        assert discover_model((binding("m", 1.0),)) == binding("m", 1.0)

    def test_unoptimised_model_is_skipped_for_an_optimised_m(self) -> None:
        found = discover_model((binding("model", has_objval=False), binding("m", 3.0)))
        assert found is not None and found.name == "m"

    def test_other_names_are_never_found(self) -> None:
        assert discover_model((binding("mdl"), binding("opt_model"))) is None

    def test_object_without_optimize_is_not_a_model(self) -> None:
        pulp_problem = ModelBinding(name="model", library="pulp", has_optimize=False, has_objval=False)
        assert discover_model((pulp_problem,)) is None


class TestVerdicts:
    def test_absolute_tolerance_only(self) -> None:
        grade = grade_objective(run(binding(objective=8.0000009)), optimum(8.0), rule=RULE)
        assert grade.verdict is Verdict.CORRECT
        assert grade.rule == "trex-compat@1"
        evidence = grade.evidence
        assert isinstance(evidence, ObjectiveEvidence)
        assert (evidence.source, evidence.atol, evidence.rtol) == ("binding:model", 1e-6, 0.0)

    def test_large_objectives_fail_on_float_resolution(self) -> None:
        # Feasible 138/139: |v| ≈ 9.35e9, where adjacent doubles are 1.9e-6 apart (§1.4).
        reference = 9346843718.0
        predicted = reference + 2 * (2.0**-19)  # two ulps at 2^33
        execution = run(binding(objective=predicted))
        assert grade_objective(execution, optimum(reference), rule=RULE).verdict is Verdict.WRONG
        assert grade_objective(execution, optimum(reference)).verdict is Verdict.CORRECT

    def test_rounded_reference_fails_an_exact_answer(self) -> None:
        grade = grade_objective(run(binding(objective=128000 / 3)), optimum(42666.666), rule=RULE)
        assert grade.verdict is Verdict.WRONG
        assert grade.reason.startswith("OPTIMAL")

    def test_tolerance_override(self) -> None:
        grade = grade_objective(run(binding(objective=8.0005)), optimum(8.0), rule="trex-compat:1e-3")
        assert grade.verdict is Verdict.CORRECT
        assert grade.rule == "trex-compat@1:atol=0.001"

    def test_model_not_found_for_other_names(self) -> None:
        grade = grade_objective(run(binding("mdl")), optimum(8.0), rule=RULE)
        assert grade.verdict is Verdict.WRONG
        assert grade.reason.startswith("MODEL_NOT_FOUND")

    def test_model_not_found_without_optimize(self) -> None:
        execution = run(binding(has_objval=False), status=ExecStatus.NO_SOLVE)
        grade = grade_objective(execution, optimum(8.0), rule=RULE)
        assert grade.verdict is Verdict.NO_SOLVE
        assert grade.reason.startswith("MODEL_NOT_FOUND")

    @pytest.mark.parametrize(
        ("status", "name"),
        [
            (SolveStatus.INFEASIBLE, "INFEASIBLE"),
            (SolveStatus.UNBOUNDED, "UNBOUNDED"),
            (SolveStatus.INF_OR_UNBD, "INF_OR_UNBD"),
            (SolveStatus.TIME_LIMIT, "UNKNOWN"),
            (SolveStatus.SUBOPTIMAL, "UNKNOWN"),
        ],
    )
    def test_non_optimal_status_gives_no_value(self, status: SolveStatus, name: str) -> None:
        grade = grade_objective(run(binding(objective=8.0, status=status)), optimum(8.0), rule=RULE)
        assert grade.verdict is Verdict.WRONG
        assert grade.reason.startswith(name)

    def test_sys_exit_loses_the_result(self) -> None:
        execution = run(binding(), called_sys_exit=True, stdout_tail="Optimal objective 8\n")
        grade = grade_objective(execution, optimum(8.0), rule=RULE)
        assert grade.verdict is Verdict.WRONG
        assert grade.reason.startswith("Could not parse output")
        assert grade_objective(execution, optimum(8.0)).verdict is Verdict.CORRECT

    def test_sys_exit_without_output(self) -> None:
        execution = run(binding(), called_sys_exit=True)
        grade = grade_objective(execution, optimum(8.0), rule=RULE)
        assert grade.reason == "Code execution failed: No output"

    def test_exception_after_solving_is_an_error(self) -> None:
        execution = run(
            binding(), status=ExecStatus.RUNTIME_ERROR, error_type="KeyError", detail="KeyError: 'x'"
        )
        grade = grade_objective(execution, optimum(8.0), rule=RULE)
        assert grade.verdict is Verdict.RUNTIME_ERROR
        assert grade.reason == "ERROR: KeyError: 'x'"

    def test_timeout(self) -> None:
        grade = grade_objective(run(status=ExecStatus.TIMEOUT, wall_s=360.0), optimum(8.0), rule=RULE)
        assert grade.verdict is Verdict.TIMEOUT
        assert grade.reason == "Code execution timeout (360s)"

    def test_environment_failures_keep_their_verdict(self) -> None:
        execution = run(status=ExecStatus.LICENCE_ERROR, detail="License expired 2026-11-23")
        grade = grade_objective(execution, optimum(8.0), rule=RULE)
        assert grade.verdict is Verdict.LICENCE_ERROR
        assert grade.verdict.is_environment_failure

    def test_reference_without_optimum_is_never_matched(self) -> None:
        reference = ObjectiveReference(status=SolveStatus.INFEASIBLE, value=None, label="infeasible")
        execution = run(binding(status=SolveStatus.INFEASIBLE, objective=None))
        grade = grade_objective(execution, reference, rule=RULE)
        assert grade.verdict is Verdict.WRONG
