"""Issue 28: the graded value is the harness's. Objective rules compare the harness's re-solve of
the captured model with the reference, never the program's claim, which only has to agree with
that re-solve within verification's tolerance; that tolerance never widens a rule's.

Every claim/re-solve pair below that is stored as ``"match"`` is one that the real agreement
test (:func:`trex_eval.verify.objectives_agree`) accepts, checked in each test, so the
records are ones the harness can write.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from trex_eval import verify
from trex_eval.grading import get_rule, grade_objective
from trex_eval.grading.objective.base import AGREEMENT_ATOL, AGREEMENT_RTOL, may_pass_when_verified
from trex_eval.grading.objective.tolerance import ToleranceRule
from trex_eval.records import (
    ExecStatus,
    Execution,
    Grade,
    ModelBinding,
    ObjectiveEvidence,
    ObjectiveReference,
    SolveRecord,
    SolveStatus,
    Verdict,
)

FORGED, OPTIMUM = 5050.0, 5050.9
"""The reported attack: an integer model whose optimum is 5050.9, its read-out patched to 5050.0."""


def claim(
    claimed: float,
    *,
    verified: float | None = None,
    verification: str | None = "match",
    library: str = "pulp",
    integral: bool = True,
) -> Execution:
    """A finished program whose last solve claims the optimum ``claimed``; its re-solve gave
    ``verified`` (asserted to agree with the claim, as "match" means, when it is one)."""
    if verification == "match":
        assert verified is not None and verify.objectives_agree(claimed, verified, integral=integral)
    solve = SolveRecord(
        library=library,
        status=SolveStatus.OPTIMAL,
        raw_status="Optimal",
        objective=claimed,
        verification=verification,
        verified_objective=verified,
        verified_by="highs" if verification in ("match", "mismatch") else None,
    )
    return Execution(status=ExecStatus.OK, solves=(solve,))


def optimum(value: float, label: str | None = None) -> ObjectiveReference:
    return ObjectiveReference(value=value, label=label or repr(value))


def evidence_of(grade: Grade) -> ObjectiveEvidence:
    assert isinstance(grade.evidence, ObjectiveEvidence), grade
    return grade.evidence


def test_verifications_agreement_tolerance_is_the_one_grading_assumes() -> None:
    # Grading may not import the sandbox; its copy must be verify's loosest tolerance.
    assert (AGREEMENT_RTOL, AGREEMENT_ATOL) == (verify.MIP_RTOL, verify.ATOL)
    assert verify.LP_RTOL <= AGREEMENT_RTOL


class TestTheAttack:
    def test_a_patched_read_out_within_verifications_tolerance_is_wrong_under_strict(self) -> None:
        # |5050.0 − 5050.9| = 0.9 ≤ 1e-6 + 2e-4·5050.9 ≈ 1.01: verification calls it a match, but
        # strict's own bound is 1e-6 + 1e-4·5050 ≈ 0.505 and the harness's value misses it.
        grade = grade_objective(claim(FORGED, verified=OPTIMUM), optimum(FORGED))
        assert grade.verdict is Verdict.WRONG
        assert grade.rule == "strict@3"
        assert (
            "the program's claim 5050.0 was close to the harness's value 5050.9 (within verification's "
            "agreement tolerance), but 5050.9 is what is graded"
        ) in grade.reason
        assert grade.reason.startswith("HiGHS re-solve 5050.9 vs reference 5050.0: |Δ| 0.9 > 0.505")
        evidence = evidence_of(grade)
        assert (evidence.predicted, evidence.claimed, evidence.verified_objective) == (
            OPTIMUM,
            FORGED,
            OPTIMUM,
        )
        assert evidence.source == "verified"
        assert evidence.abs_error == pytest.approx(0.9)

    def test_the_same_program_against_its_true_optimum_is_correct(self) -> None:
        grade = grade_objective(claim(FORGED, verified=OPTIMUM), optimum(OPTIMUM))
        assert grade.verdict is Verdict.CORRECT
        assert "the program claimed 5050.0, within verification's agreement tolerance of it" in grade.reason

    @pytest.mark.parametrize(
        ("spec", "reference", "claimed", "verified"),
        [
            # For each family: the claim passes the rule, its re-solve (which agrees with it) does not.
            ("strict", 100.0, 100.0, 100.015),
            ("rel:1e-4", 100.0, 100.0, 100.015),
            ("abs:0.01", 100.0, 100.0, 100.015),
            ("round:2", 100.0, 100.0, 100.015),
            ("sirl", 100.0, 100.0, 100.015),
            ("mamo", 100.0, 100.0, 100.015),
            ("orthought", 100.0, 100.0, 100.015),
            # round + 5 %: 105000.4 rounds to 105000 (5.0 %), its re-solve 105010 to 5.01 %.
            ("orlm", 100000.0, 105000.4, 105010.0),
            ("optmath", 100000.0, 105000.4, 105010.0),
        ],
    )
    def test_no_tolerance_family_is_widened_by_verification(
        self, spec: str, reference: float, claimed: float, verified: float
    ) -> None:
        rule = get_rule(spec)
        assert isinstance(rule, ToleranceRule) and rule.version == "3"
        reference_value = optimum(reference)
        # The claim alone would pass, and its re-solve alone would not: the rule is between them.
        assert rule.tolerance.compare(claimed, reference).passed
        assert not rule.tolerance.compare(verified, reference).passed
        grade = grade_objective(claim(claimed, verified=verified), reference_value, rule=rule)
        assert grade.verdict is Verdict.WRONG, grade.reason
        assert f"but {verified!r} is what is graded" in grade.reason
        assert evidence_of(grade).predicted == verified and evidence_of(grade).claimed == claimed


class TestHonestClaims:
    def test_a_claim_equal_to_its_re_solve_is_correct(self) -> None:
        grade = grade_objective(claim(OPTIMUM, verified=OPTIMUM), optimum(OPTIMUM))
        assert grade.verdict is Verdict.CORRECT
        assert (
            grade.reason
            == "HiGHS re-solve 5050.9 vs reference 5050.9: |Δ| 0 ≤ 0.505; the program claimed the same"
        )
        evidence = evidence_of(grade)
        assert evidence.predicted == evidence.claimed == evidence.verified_objective == OPTIMUM

    def test_a_claim_off_by_verifications_tolerance_passes_on_its_re_solve(self) -> None:
        # The claim alone misses strict (0.6 > 0.505); its re-solve is the reference: correct, and
        # the evidence keeps both numbers.
        grade = grade_objective(claim(5051.5, verified=OPTIMUM), optimum(OPTIMUM))
        assert grade.verdict is Verdict.CORRECT
        assert "the program claimed 5051.5" in grade.reason
        evidence = evidence_of(grade)
        assert (evidence.predicted, evidence.claimed, evidence.abs_error) == (OPTIMUM, 5051.5, 0.0)

    def test_a_claim_inside_both_tolerances_is_correct_with_both_numbers_shown(self) -> None:
        grade = grade_objective(claim(5050.7, verified=OPTIMUM), optimum(5050.8))
        assert grade.verdict is Verdict.CORRECT
        assert (
            "HiGHS re-solve 5050.9 vs reference 5050.8" in grade.reason and "claimed 5050.7" in grade.reason
        )
        assert (evidence_of(grade).predicted, evidence_of(grade).claimed) == (OPTIMUM, 5050.7)

    def test_a_mismatch_stays_wrong_and_names_both_numbers(self) -> None:
        grade = grade_objective(claim(FORGED, verified=5100.0, verification="mismatch"), optimum(FORGED))
        assert grade.verdict is Verdict.WRONG
        assert "claimed objective 5050.0 is not the model's" in grade.reason
        assert "HiGHS re-solve of the captured model gives 5100.0" in grade.reason

    def test_a_match_without_a_re_solved_value_is_not_a_harness_value(self) -> None:
        # The harness never writes this for an optimal claim; a record that says so proves nothing.
        solve = SolveRecord(
            library="pulp",
            status=SolveStatus.OPTIMAL,
            raw_status="Optimal",
            objective=8.0,
            verification="match",
        )
        grade = grade_objective(Execution(status=ExecStatus.OK, solves=(solve,)), optimum(8.0))
        assert grade.verdict is Verdict.UNVERIFIED
        assert "recorded no objective" in grade.reason


class TestWithoutAHarnessValue:
    def test_the_trusting_families_grade_the_claim_and_say_so(self) -> None:
        execution = claim(FORGED, verification="skipped: no matrix captured")
        grade = grade_objective(execution, optimum(FORGED), rule="rel:1e-4,unverified=true")
        assert grade.verdict is Verdict.CORRECT
        assert (
            "counted although unverified: no matrix captured (the claim is graded: the harness has no "
            "value of its own)"
        ) in grade.reason
        evidence = evidence_of(grade)
        assert (evidence.predicted, evidence.claimed, evidence.source) == (FORGED, FORGED, "hook")
        assert grade_objective(execution, optimum(FORGED)).verdict is Verdict.UNVERIFIED

    def test_the_trusting_families_grade_the_harness_value_where_there_is_one(self) -> None:
        grade = grade_objective(
            claim(FORGED, verified=OPTIMUM), optimum(FORGED), rule="rel:1e-4,unverified=true"
        )
        assert grade.verdict is Verdict.WRONG
        assert "but 5050.9 is what is graded" in grade.reason

    def test_a_near_miss_not_yet_re_solved_waits_for_the_re_solve(self) -> None:
        # 5051.5 misses strict's 0.505 around 5050.9, but a re-solve agreeing with it (within
        # ~1.01) could be the reference: unverified, so that the grading step re-solves it.
        pending = grade_objective(claim(5051.5, verification=None), optimum(OPTIMUM))
        assert pending.verdict is Verdict.UNVERIFIED
        assert "the harness's value decides" in pending.reason
        # Far off, skipped, or under a rule that trusts claims: the claim's miss is final.
        assert grade_objective(claim(5060.0, verification=None), optimum(OPTIMUM)).verdict is Verdict.WRONG
        skipped = claim(5051.5, verification="skipped: highs kTimeLimit")
        assert grade_objective(skipped, optimum(OPTIMUM)).verdict is Verdict.WRONG
        trusting = grade_objective(
            claim(5051.5, verification=None), optimum(OPTIMUM), rule="rel:1e-4,unverified=true"
        )
        assert trusting.verdict is Verdict.WRONG

    @pytest.mark.parametrize(
        "spec", ["strict", "rel:1e-3", "abs:0.5", "round:1", "orlm", "sirl", "optmath", "mamo", "orthought"]
    )
    def test_a_miss_waits_for_the_re_solve_exactly_when_one_could_pass(self, spec: str) -> None:
        # Claims around each edge of the rule's acceptance interval (found by bisection), a
        # fraction of verification's reach apart: one that a matching re-solve could turn is
        # unverified (never wrong), one out of reach is wrong.
        rule = get_rule(spec)
        assert isinstance(rule, ToleranceRule)
        near = far = 0
        for reference, side in itertools.product((0.0, 1.0, 37.5, 5050.9, -2.5e6), (-1.0, 1.0)):
            accepts = _acceptance(rule, reference)
            inside, outside = 0.0, 1.0 + abs(reference)
            for _ in range(80):
                middle = (inside + outside) / 2
                inside, outside = (
                    (middle, outside) if accepts(reference + side * middle) else (inside, middle)
                )
            step = _reach(reference + side * outside) / 8
            for j in range(-12, 25):
                claimed = reference + side * (outside + j * step)
                if accepts(claimed):
                    continue
                grade = grade_objective(claim(claimed, verification=None), optimum(reference), rule=rule)
                if _reaches(accepts, claimed, reference, fraction=0.99):
                    near += 1
                    assert grade.verdict is Verdict.UNVERIFIED, (spec, reference, claimed, grade.reason)
                elif not _reaches(accepts, claimed, reference, fraction=1.01):  # room for the bound's slack
                    far += 1
                    assert grade.verdict is Verdict.WRONG, (spec, reference, claimed, grade.reason)
        assert near and far

    def test_the_window_reaches_as_far_as_verification_does(self) -> None:
        def accepts_only_ten(value: float) -> bool:
            return value == 10.0

        assert may_pass_when_verified(accepts_only_ten, 10.0 + 1e-6 + 2e-4 * 10.0, 10.0)
        assert not may_pass_when_verified(accepts_only_ten, 10.1, 10.0)


def _acceptance(rule: ToleranceRule, reference: float) -> Callable[[float], bool]:
    """Whether ``rule`` accepts a value against ``reference`` (written as ``repr`` writes it)."""
    return lambda value: rule.tolerance.compare(value, reference, label=repr(reference)).passed


def _reach(claimed: float) -> float:
    """How far verification lets a re-solve lie from ``claimed`` (about: the bound is on the re-solve)."""
    return AGREEMENT_ATOL + AGREEMENT_RTOL * max(1.0, abs(claimed))


def _reaches(accepts: Callable[[float], bool], claimed: float, reference: float, *, fraction: float) -> bool:
    """Whether a value within ``fraction`` of verification's reach of ``claimed`` is accepted."""
    low, high = claimed - fraction * _reach(claimed), claimed + fraction * _reach(claimed)
    return accepts(low) or accepts(high) or (low <= reference <= high and accepts(reference))


class TestOrlmCompat:
    @staticmethod
    def coptpy(answer: float, *, verified: float | None, verification: str | None = "match") -> Execution:
        """A coptpy `model` at COPT's OPTIMAL with objective ``answer``, last solved, re-solved."""
        if verification == "match":
            assert verified is not None and verify.objectives_agree(answer, verified, integral=True)
        binding = ModelBinding(
            name="model",
            library="coptpy",
            has_optimize=False,
            has_objval=False,
            status=SolveStatus.OPTIMAL,
            raw_status="1",
            objective=answer,
        )
        solve = SolveRecord(
            library="coptpy",
            status=SolveStatus.OPTIMAL,
            raw_status="1",
            objective=answer,
            verification=verification,
            verified_objective=verified,
            verified_by="highs" if verified is not None else None,
        )
        return Execution(status=ExecStatus.OK, solves=(solve,), bindings=(binding,))

    def test_the_harness_value_is_rounded_and_compared(self) -> None:
        label = optimum(100000.0, "100000")
        grade = grade_objective(self.coptpy(105000.4, verified=105010.0), label, rule="orlm-compat")
        assert grade.rule == "orlm-compat@2"
        assert grade.verdict is Verdict.WRONG
        assert "graded: the harness's HiGHS re-solve 105010.0 vs label 100000.0: no match" in grade.reason
        assert "but 105010.0 is what is graded" in grade.reason
        evidence = evidence_of(grade)
        assert (evidence.predicted, evidence.claimed, evidence.source) == (105010.0, 105000.4, "verified")

    def test_an_honest_answer_is_correct(self) -> None:
        grade = grade_objective(
            self.coptpy(1160.0, verified=1160.0), optimum(1160.0, "1160"), rule="orlm-compat"
        )
        assert grade.verdict is Verdict.CORRECT
        assert grade.reason.endswith("re-solve agrees with the answer")

    def test_unverified_true_grades_the_answer_only_without_a_harness_value(self) -> None:
        label = optimum(100000.0, "100000")
        skipped = self.coptpy(105000.4, verified=None, verification="skipped: no matrix captured")
        trusting = grade_objective(skipped, label, rule="orlm-compat:unverified=true")
        assert trusting.verdict is Verdict.CORRECT and "the answer is graded" in trusting.reason
        assert grade_objective(skipped, label, rule="orlm-compat").verdict is Verdict.UNVERIFIED
        verified = self.coptpy(105000.4, verified=105010.0)
        assert grade_objective(verified, label, rule="orlm-compat:unverified=true").verdict is Verdict.WRONG

    def test_a_near_miss_not_yet_re_solved_waits_for_the_re_solve(self) -> None:
        label = optimum(100000.0, "100000")
        pending = grade_objective(
            self.coptpy(105010.0, verified=None, verification=None), label, rule="orlm-compat"
        )
        assert pending.verdict is Verdict.UNVERIFIED and "the harness's value decides" in pending.reason
        far = grade_objective(
            self.coptpy(106000.0, verified=None, verification=None), label, rule="orlm-compat"
        )
        assert far.verdict is Verdict.WRONG


def test_evidence_stored_before_the_claim_was_kept_apart_still_loads() -> None:
    # A line of a run graded under strict@1: no `claimed`, `predicted` the claim.
    stored = {
        "verdict": "correct",
        "rule": "strict@1",
        "reason": "531.1536797183472 vs reference 531.1536797183472: |Δ| 0 ≤ 0.0531; gurobipy re-solve "
        "531.1536797183472",
        "evidence": {
            "kind": "objective",
            "predicted": 531.1536797183472,
            "predicted_status": "optimal",
            "reference": 531.1536797183472,
            "reference_status": "optimal",
            "abs_error": 0.0,
            "rel_error": 0.0,
            "atol": 1e-06,
            "rtol": 0.0001,
            "digits": None,
            "verified_objective": 531.1536797183472,
            "source": "hook",
        },
    }
    grade = Grade.model_validate(stored)
    assert evidence_of(grade).claimed is None and evidence_of(grade).source == "hook"
    assert grade.passed
