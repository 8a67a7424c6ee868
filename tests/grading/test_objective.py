"""The ``strict`` rule and its parameterised relatives, on Execution records built by hand.

Expected verdicts follow from the rule's formula ``|pred − ref| ≤ atol + rtol·|ref|`` worked out
by hand in each test; the published conventions (ORLM, SIRL) are checked against their own
formulas written out independently here.
"""

from __future__ import annotations

import itertools
import math

import pytest

from trex_eval.errors import ConfigError, GradingError
from trex_eval.grading import get_rule, grade_objective
from trex_eval.records import (
    ExecStatus,
    Execution,
    Grade,
    ObjectiveEvidence,
    ObjectiveReference,
    SolveRecord,
    SolveStatus,
    Verdict,
)


def solve(
    objective: float | None = 8.0,
    *,
    status: SolveStatus = SolveStatus.OPTIMAL,
    verification: str | None = "match",
    verified: float | None = None,
) -> SolveRecord:
    """A solve record as the harness stores it after its own re-solve agreed (``verification``
    "match" by default, the re-solve's objective ``verified``, by default the claimed optimum:
    these tests are about the tolerance; TestVerification covers the rest)."""
    if verified is None and verification == "match" and status is SolveStatus.OPTIMAL:
        verified = objective
    return SolveRecord(
        library="gurobipy",
        status=status,
        raw_status=status.value.upper(),
        objective=objective,
        verification=verification,
        verified_objective=verified,
    )


def run(*solves: SolveRecord, status: ExecStatus = ExecStatus.OK, **fields: object) -> Execution:
    return Execution.model_validate({"status": status, "solves": solves, **fields})


def optimum(value: float) -> ObjectiveReference:
    return ObjectiveReference(value=value, label=repr(value))


def no_optimum(status: SolveStatus) -> ObjectiveReference:
    return ObjectiveReference(status=status, value=None, label=status.value)


def evidence_of(grade: Grade) -> ObjectiveEvidence:
    assert isinstance(grade.evidence, ObjectiveEvidence), grade
    return grade.evidence


class TestStrictTolerance:
    def test_exact_answer(self) -> None:
        grade = grade_objective(run(solve(8.0)), optimum(8.0))
        assert grade.verdict is Verdict.CORRECT
        assert grade.rule == "strict@3"
        evidence = evidence_of(grade)
        assert (evidence.predicted, evidence.reference) == (8.0, 8.0)
        assert (evidence.rtol, evidence.atol, evidence.source, evidence.claimed) == (
            1e-4,
            1e-6,
            "verified",
            8.0,
        )

    @pytest.mark.parametrize(
        ("predicted", "verdict"),
        [
            # bound = 1e-6 + 1e-4 * 1000 = 0.100001
            (1000.1, Verdict.CORRECT),
            (999.9, Verdict.CORRECT),
            (1000.1001, Verdict.WRONG),
            (999.8999, Verdict.WRONG),
        ],
    )
    def test_relative_part_of_the_bound(self, predicted: float, verdict: Verdict) -> None:
        assert grade_objective(run(solve(predicted)), optimum(1000.0)).verdict is verdict

    @pytest.mark.parametrize(("predicted", "verdict"), [(9e-7, Verdict.CORRECT), (2e-6, Verdict.WRONG)])
    def test_zero_reference_uses_the_absolute_part(self, predicted: float, verdict: Verdict) -> None:
        grade = grade_objective(run(solve(predicted)), optimum(0.0))
        assert grade.verdict is verdict
        assert evidence_of(grade).rel_error is None

    def test_evidence_errors(self) -> None:
        grade = grade_objective(run(solve(101.0)), optimum(100.0))
        assert grade.verdict is Verdict.WRONG
        assert evidence_of(grade).abs_error == pytest.approx(1.0)
        assert evidence_of(grade).rel_error == pytest.approx(0.01)

    def test_overridden_tolerances(self) -> None:
        # 1.0001 vs 1: |Δ| 1e-4 passes the default bound (1.01e-4) but not rtol=1e-6.
        assert grade_objective(run(solve(1.0001)), optimum(1.0)).verdict is Verdict.CORRECT
        grade = grade_objective(run(solve(1.0001)), optimum(1.0), rule="strict:rtol=1e-6")
        assert grade.verdict is Verdict.WRONG
        assert grade.rule == "strict@3:rtol=1e-06"

    def test_sign_confusion_is_wrong_and_named(self) -> None:
        grade = grade_objective(run(solve(-8.0)), optimum(8.0))
        assert grade.verdict is Verdict.WRONG
        assert "minimise/maximise" in grade.reason

    def test_last_solve_decides(self) -> None:
        assert grade_objective(run(solve(5.0), solve(8.0)), optimum(8.0)).verdict is Verdict.CORRECT
        assert grade_objective(run(solve(8.0), solve(5.0)), optimum(8.0)).verdict is Verdict.WRONG

    @pytest.mark.parametrize(
        "status", [SolveStatus.TIME_LIMIT, SolveStatus.SUBOPTIMAL, SolveStatus.INFEASIBLE, SolveStatus.ERROR]
    )
    def test_solver_status_must_be_optimal(self, status: SolveStatus) -> None:
        grade = grade_objective(run(solve(8.0, status=status)), optimum(8.0))
        assert grade.verdict is Verdict.WRONG
        assert status.value in grade.reason

    @pytest.mark.parametrize("objective", [None, math.nan, math.inf])
    def test_optimal_without_finite_objective(self, objective: float | None) -> None:
        grade = grade_objective(run(solve(objective)), optimum(8.0))
        assert grade.verdict is Verdict.NOT_DETERMINABLE


class TestVerification:
    def test_mismatch_means_the_reported_objective_is_not_the_models(self) -> None:
        forged = solve(8.0, verification="mismatch", verified=11.0)
        grade = grade_objective(run(forged), optimum(8.0))
        assert grade.verdict is Verdict.WRONG
        assert "not the model's" in grade.reason and "11.0" in grade.reason

    def test_match_is_shown_in_the_reason(self) -> None:
        grade = grade_objective(run(solve(8.0, verification="match", verified=8.0)), optimum(8.0))
        assert grade.verdict is Verdict.CORRECT
        assert "HiGHS re-solve 8.0" in grade.reason

    @pytest.mark.parametrize(
        ("verification", "why"),
        [
            ("skipped: no matrix captured", "no matrix captured"),
            ("skipped: matrix too large", "matrix too large"),
            ("skipped: model has SOS or general constraints", "model has SOS or general constraints"),
            ("skipped: highs kTimeLimit", "highs kTimeLimit"),
            (None, "no re-solve was run"),
        ],
    )
    def test_a_passing_claim_without_a_match_is_unverified(self, verification: str | None, why: str) -> None:
        grade = grade_objective(run(solve(8.0, verification=verification)), optimum(8.0))
        assert grade.verdict is Verdict.UNVERIFIED
        assert not grade.passed
        assert f"not verified by the harness: {why}" in grade.reason

    def test_a_failing_claim_without_a_match_is_still_wrong(self) -> None:
        grade = grade_objective(run(solve(5.0, verification=None)), optimum(8.0))
        assert grade.verdict is Verdict.WRONG

    def test_status_claims_need_a_match_too(self) -> None:
        reference = no_optimum(SolveStatus.INFEASIBLE)
        unchecked = solve(None, status=SolveStatus.INFEASIBLE, verification="skipped: no matrix captured")
        assert grade_objective(run(unchecked), reference).verdict is Verdict.UNVERIFIED
        checked = solve(None, status=SolveStatus.INFEASIBLE)
        assert grade_objective(run(checked), reference).verdict is Verdict.CORRECT

    def test_an_option_counts_unverified_claims_for_other_conventions(self) -> None:
        execution = run(solve(8.0, verification="skipped: no matrix captured"))
        grade = grade_objective(execution, optimum(8.0), rule="rel:1e-4,unverified=true")
        assert grade.verdict is Verdict.CORRECT
        assert grade.rule == "rel@3:rtol=0.0001,unverified=true"
        assert "counted although unverified: no matrix captured" in grade.reason
        assert "claims the harness could not verify count as correct" in get_rule(grade.rule).description

    def test_strict_never_counts_unverified_claims(self) -> None:
        with pytest.raises(ConfigError, match="strict never counts"):
            get_rule("strict:unverified=true")

    def test_the_parents_solver_is_named(self) -> None:
        grade = grade_objective(
            run(solve(8.0).model_copy(update={"verified_objective": 8.0, "verified_by": "gurobipy"})),
            optimum(8.0),
        )
        assert grade.verdict is Verdict.CORRECT and "gurobipy re-solve 8.0" in grade.reason


class TestExecutionOutcomes:
    @pytest.mark.parametrize(
        "status", [s for s in ExecStatus if s not in (ExecStatus.OK, ExecStatus.NO_SOLVE)], ids=str
    )
    def test_failed_execution_names_the_failure_even_after_a_solve(self, status: ExecStatus) -> None:
        detail = "Traceback\nValueError: bad"
        execution = run(solve(8.0), status=status, error_type="ValueError", detail=detail)
        grade = grade_objective(execution, optimum(8.0))
        assert grade.verdict.value == status.value
        assert "ValueError: bad" in grade.reason

    @pytest.mark.parametrize("status", [ExecStatus.OK, ExecStatus.NO_SOLVE])
    def test_no_solve(self, status: ExecStatus) -> None:
        grade = grade_objective(run(status=status), optimum(8.0))
        assert grade.verdict is Verdict.NO_SOLVE
        assert grade.evidence is None

    def test_printed_objective_is_ignored_by_default(self) -> None:
        grade = grade_objective(run(status=ExecStatus.NO_SOLVE, printed_objective=8.0), optimum(8.0))
        assert grade.verdict is Verdict.NO_SOLVE
        assert "printed 8.0" in grade.reason

    def test_printed_fallback_when_enabled(self) -> None:
        execution = run(status=ExecStatus.NO_SOLVE, printed_objective=8.0)
        grade = grade_objective(execution, optimum(8.0), rule="strict:printed=true")
        # A printed number is the program's word alone: it can pass only a rule that trusts it.
        assert grade.verdict is Verdict.UNVERIFIED
        assert "the value was printed" in grade.reason
        assert grade.rule == "strict@3:printed=true"
        trusting = grade_objective(execution, optimum(8.0), rule="abs:1e-6,printed=true,unverified=true")
        assert trusting.verdict is Verdict.CORRECT
        assert (evidence_of(grade).source, evidence_of(grade).predicted_status) == ("printed", None)

    def test_printed_fallback_never_overrides_a_hooked_solve(self) -> None:
        execution = run(solve(5.0), printed_objective=8.0)
        assert grade_objective(execution, optimum(8.0), rule="strict:printed=1").verdict is Verdict.WRONG


class TestReferencesWithoutOptimum:
    @pytest.mark.parametrize(
        ("reference", "solved", "verdict"),
        [
            (SolveStatus.INFEASIBLE, SolveStatus.INFEASIBLE, Verdict.CORRECT),
            (SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, Verdict.WRONG),
            (SolveStatus.INFEASIBLE, SolveStatus.OPTIMAL, Verdict.WRONG),
            (SolveStatus.INFEASIBLE, SolveStatus.INF_OR_UNBD, Verdict.NOT_DETERMINABLE),
            (SolveStatus.UNBOUNDED, SolveStatus.UNBOUNDED, Verdict.CORRECT),
            (SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD, Verdict.NOT_DETERMINABLE),
            (SolveStatus.UNBOUNDED, SolveStatus.TIME_LIMIT, Verdict.WRONG),
            (SolveStatus.INF_OR_UNBD, SolveStatus.INFEASIBLE, Verdict.CORRECT),
            (SolveStatus.INF_OR_UNBD, SolveStatus.UNBOUNDED, Verdict.CORRECT),
            (SolveStatus.INF_OR_UNBD, SolveStatus.INF_OR_UNBD, Verdict.CORRECT),
            (SolveStatus.INF_OR_UNBD, SolveStatus.OPTIMAL, Verdict.WRONG),
        ],
    )
    def test_status_matching(self, reference: SolveStatus, solved: SolveStatus, verdict: Verdict) -> None:
        objective = 8.0 if solved is SolveStatus.OPTIMAL else None
        grade = grade_objective(run(solve(objective, status=solved)), no_optimum(reference))
        assert grade.verdict is verdict
        evidence = evidence_of(grade)
        assert (evidence.reference_status, evidence.predicted_status) == (reference, solved)

    def test_printed_number_never_matches_a_status(self) -> None:
        execution = run(status=ExecStatus.NO_SOLVE, printed_objective=0.0)
        grade = grade_objective(execution, no_optimum(SolveStatus.INFEASIBLE), rule="strict:printed=true")
        assert grade.verdict is Verdict.WRONG


class TestBadReferences:
    def test_optimal_reference_without_value(self) -> None:
        with pytest.raises(GradingError, match="without a finite value"):
            grade_objective(run(solve()), ObjectiveReference(value=None, label=""))

    def test_reference_with_a_status_that_cannot_be_graded(self) -> None:
        reference = ObjectiveReference(status=SolveStatus.TIME_LIMIT, value=None, label="")
        with pytest.raises(GradingError, match="time_limit"):
            grade_objective(run(solve()), reference)


class TestParameterisedRules:
    @pytest.mark.parametrize(
        ("predicted", "reference", "verdict"),
        [(100.05, 100.0, Verdict.CORRECT), (100.2, 100.0, Verdict.WRONG), (1e-12, 0.0, Verdict.WRONG)],
    )
    def test_rel(self, predicted: float, reference: float, verdict: Verdict) -> None:
        # rel:1e-3 accepts |Δ| ≤ 0.001·|ref| and nothing else: a zero reference needs exactly 0.
        assert grade_objective(run(solve(predicted)), optimum(reference), rule="rel:1e-3").verdict is verdict

    @pytest.mark.parametrize(("predicted", "verdict"), [(10.4, Verdict.CORRECT), (10.6, Verdict.WRONG)])
    def test_abs(self, predicted: float, verdict: Verdict) -> None:
        assert grade_objective(run(solve(predicted)), optimum(10.0), rule="abs:0.5").verdict is verdict

    @pytest.mark.parametrize(("predicted", "verdict"), [(3.1449, Verdict.CORRECT), (3.146, Verdict.WRONG)])
    def test_round(self, predicted: float, verdict: Verdict) -> None:
        # round(3.14159, 2) = 3.14; round(3.1449, 2) = 3.14; round(3.146, 2) = 3.15.
        grade = grade_objective(run(solve(predicted)), optimum(3.14159), rule="round:2")
        assert grade.verdict is verdict
        assert grade.rule == "round@3:digits=2"

    @staticmethod
    def orlm_published(predicted: float, reference: float) -> bool:
        """ORLM's eval/execute.py rule: both rounded to integers, 5% relative (gt 0: |pred| ≤ 0.05)."""
        p, g = round(predicted), round(reference)
        return abs(p) <= 0.05 if g == 0 else abs((p - g) / g) <= 0.05

    @staticmethod
    def sirl_published(predicted: float, reference: float) -> bool:
        """SIRL's check_result rule: |pred − gt| / (|gt| + 1) ≤ 1e-6."""
        return abs(predicted - reference) / (abs(reference) + 1) <= 1e-6

    def test_orlm_agrees_with_the_published_formula(self) -> None:
        references = [0.0, 0.4, 1.0, 19.6, 20.0, 100.0, 2333.33, -50.0]
        offsets = [-0.6, -0.49, 0.0, 0.3, 0.51, 0.94, 1.0, 1.06, 2.0, 6.0, 150.0]
        for reference, offset in itertools.product(references, offsets):
            predicted = reference + offset
            expected = Verdict.CORRECT if self.orlm_published(predicted, reference) else Verdict.WRONG
            grade = grade_objective(run(solve(predicted)), optimum(reference), rule="orlm")
            assert grade.verdict is expected, (predicted, reference)

    def test_sirl_agrees_with_the_published_formula(self) -> None:
        references = [0.0, 1.0, 8.0, 42666.666, -3.5e7, 9.3e9]
        factors = [0.0, 0.3, 0.9, 1.1, 3.0, 1e3]
        for reference, factor in itertools.product(references, factors):
            # Offsets are multiples of the SIRL bound 1e-6·(|ref| + 1), away from the boundary.
            predicted = reference + factor * 1e-6 * (abs(reference) + 1)
            expected = Verdict.CORRECT if self.sirl_published(predicted, reference) else Verdict.WRONG
            grade = grade_objective(run(solve(predicted)), optimum(reference), rule="sirl")
            assert grade.verdict is expected, (predicted, reference)

    def test_rule_object_and_spec_grade_alike(self) -> None:
        execution, reference = run(solve(8.0004)), optimum(8.0)
        assert grade_objective(execution, reference, rule=get_rule("abs:1e-3")) == grade_objective(
            execution, reference, rule="abs:1e-3"
        )
