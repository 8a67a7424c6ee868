"""The grading conventions of a composed protocol, around the objective rule it grades by. Pure.

:class:`ConventionRule` wraps an objective rule with the options that change a verdict
(:class:`~.spec.Conventions`), each applied only where it holds and named in the reason of every
grade it decides:

* ``after-solve@1`` -- a program that raised (``runtime_error``) after at least one captured solve
  is graded on its last captured solve, as a peer's runner that swallows the exception and reads
  the model the program built. What is graded is the sandbox's capture of that solve and the
  harness's re-solve of it (the wrapped rule's own procedure), never anything the program
  printed. An exception before any solve, a time-out, a memory or output limit keep their verdicts.
* ``zero-band@1=B`` -- against an optimal reference of exactly 0, a ``wrong`` grade of an optimal
  solve whose harness value (:func:`~trex_eval.grading.objective.base.harness_objective`: the
  re-solve or certificate that matched the claim) has ``|value| <= B`` is ``correct``; a claim
  within the band without a harness value yet is ``unverified`` (so that the judge re-solves it:
  the band applies to the harness's value only).
* ``no-best-solution@1`` -- a reference labelled ``No Best Solution`` is matched by a program that
  finished, built a model of a hooked library (a module-level binding the sandbox read) and never
  solved it -- what a peer's runner prints ``No Best Solution`` for. A program that solved keeps
  the wrapped rule's verdict (an infeasible solve still matches by status).

The wrapped rule's ``spec`` is kept (runs resume and re-grade by it); the protocol's canonical
text, recorded in the manifest and every table header, names the conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from trex_eval.grading.objective.base import (
    FINISHED,
    BudgetingRule,
    ConvertingRule,
    ObjectiveRule,
    RuleBudgets,
    failure_detail,
    fmt,
    harness_objective,
    may_pass_when_verified,
)
from trex_eval.grading.objective.base import Conversion as Conversion
from trex_eval.protocols.conventions.spec import (
    AFTER_SOLVE,
    NO_BEST,
    NO_BEST_SOLUTION,
    ZERO_BAND,
    Conventions,
)
from trex_eval.records import (
    ExecStatus,
    Execution,
    Grade,
    GraderKind,
    ObjectiveEvidence,
    ObjectiveReference,
    SolveStatus,
    Verdict,
)


def after_solve_execution(execution: Execution) -> Execution | None:
    """``execution`` as graded under ``after-solve``: a ``runtime_error`` with a captured solve
    becomes ``ok`` (its solves, bindings and output as recorded); ``None`` where the option does
    not apply."""
    if execution.status is not ExecStatus.RUNTIME_ERROR or execution.last_solve is None:
        return None
    return execution.model_copy(update={"status": ExecStatus.OK})


@dataclass(frozen=True)
class ConventionRule:
    """``inner`` graded under ``conventions`` (see the module docstring). Identity (``name``,
    ``version``, ``spec``) is the inner rule's; ``description`` adds the conventions."""

    inner: ObjectiveRule
    conventions: Conventions
    kind: ClassVar[GraderKind] = GraderKind.OBJECTIVE

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def version(self) -> str:
        return self.inner.version

    @property
    def spec(self) -> str:
        return self.inner.spec

    @property
    def description(self) -> str:
        added = []
        if self.conventions.after_solve:
            added.append(f"{AFTER_SOLVE.name}@{AFTER_SOLVE.version}: a crash after a solve is graded on it")
        if self.conventions.zero_band is not None:
            added.append(
                f"{ZERO_BAND.name}@{ZERO_BAND.version}: |value| ≤ {self.conventions.zero_band:g} "
                "passes a zero label"
            )
        if self.conventions.no_best_solution:
            added.append(
                f"{NO_BEST.name}@{NO_BEST.version}: '{NO_BEST_SOLUTION}' matched by a model never solved"
            )
        return f"{self.inner.description}; conventions: {'; '.join(added)}"

    def budgets(self) -> RuleBudgets | None:
        """The inner rule's budgets, where it states them (see ``BudgetingRule``)."""
        return self.inner.budgets() if isinstance(self.inner, BudgetingRule) else None

    def conversions(self, code: str) -> tuple[Conversion, ...]:
        """The inner rule's conversion fallback, where it has one (see ``ConvertingRule``)."""
        return self.inner.conversions(code) if isinstance(self.inner, ConvertingRule) else ()

    def grade(self, execution: Execution, reference: ObjectiveReference, /) -> Grade:
        """The inner rule's grade of ``execution`` under the conventions.

        Raises:
            GradingError: the reference cannot be judged against (the inner rule's check).
        """
        graded, note = execution, ""
        if self.conventions.after_solve:
            crashed = after_solve_execution(execution)
            if crashed is not None:
                graded = crashed
                note = (
                    f"{AFTER_SOLVE.name}@{AFTER_SOLVE.version}: the program raised "
                    f"{failure_detail(execution)} after its last captured solve, graded on that solve; "
                )
        if self.conventions.no_best_solution and _never_solved_model(graded, reference):
            self.inner.grade(graded, reference)  # the inner rule's reference check still applies
            return Grade(
                verdict=Verdict.CORRECT,
                rule=self.spec,
                reason=(
                    f"{note}{NO_BEST.name}@{NO_BEST.version}: the label is '{NO_BEST_SOLUTION}' and the "
                    "program built a model it never solved (not verified: nothing was solved)"
                ),
            )
        grade = self.inner.grade(graded, reference)
        if self.conventions.zero_band is not None:
            grade = _banded(grade, graded, reference, self.conventions.zero_band)
        return grade.model_copy(update={"reason": note + grade.reason}) if note else grade


def _never_solved_model(execution: Execution, reference: ObjectiveReference) -> bool:
    return (
        reference.label.strip() == NO_BEST_SOLUTION
        and execution.status in FINISHED
        and not execution.solves
        and any(binding.status is not None for binding in execution.bindings)
    )


def _banded(grade: Grade, execution: Execution, reference: ObjectiveReference, band: float) -> Grade:
    """``grade`` with the zero band applied (see the module docstring)."""
    evidence = grade.evidence
    if (
        grade.verdict is not Verdict.WRONG
        or reference.status is not SolveStatus.OPTIMAL
        or reference.value != 0.0
        or not isinstance(evidence, ObjectiveEvidence)
        or evidence.predicted is None
        or evidence.predicted_status is not SolveStatus.OPTIMAL
    ):
        return grade
    named = f"{ZERO_BAND.name}@{ZERO_BAND.version}"
    solve = execution.last_solve
    harness = harness_objective(solve) if solve is not None else None
    if harness is not None:
        # The rule graded the harness's value (negated for a minimise-only solver's maximisation):
        # its magnitude is the harness's either way.
        if abs(harness) > band:
            return grade
        return grade.model_copy(
            update={
                "verdict": Verdict.CORRECT,
                "reason": f"{named}: the label is 0 and the harness's value {fmt(harness)} is within "
                f"±{band:g} (the rule alone: {grade.reason})",
            }
        )
    value = evidence.predicted
    if solve is None or solve.verification == "mismatch":
        return grade
    if not may_pass_when_verified(lambda v: abs(v) <= band, value, 0.0):
        return grade
    why = "no re-solve was run yet" if solve.verification is None else solve.verification
    return grade.model_copy(
        update={
            "verdict": Verdict.UNVERIFIED,
            "reason": f"{named}: the label is 0 and the claim {fmt(value)} is within ±{band:g}, "
            f"not verified by the harness: {why} (the rule alone: {grade.reason})",
        }
    )
