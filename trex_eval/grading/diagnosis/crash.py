"""``crashed_after_solve``: a program that solved correctly, then raised. Pure but for the
re-solve the caller hands it (:mod:`.search` asks first, before the failures of
:mod:`.failures`: the exception is not what went wrong with the answer)."""

from __future__ import annotations

from collections.abc import Callable

from trex_eval.errors import TrexError
from trex_eval.fairness import DeadlinePassed
from trex_eval.grading.diagnosis.values import accepts
from trex_eval.grading.objective.base import ObjectiveRule
from trex_eval.records import (
    Completion,
    Diagnosis,
    DiagnosisCategory,
    Execution,
    Grade,
    LinearModel,
    ObjectiveReference,
    SolveStatus,
    Verdict,
    finite_or_none,
)

Resolver = Callable[[LinearModel], "tuple[SolveStatus, float | None]"]
"""Re-solves a captured model within the diagnosis's budget (``search._Solver``); an exception
other than a harness failure means no value (the budget is spent, the model is refused)."""

RAISED = frozenset({Verdict.RUNTIME_ERROR, Verdict.SOLVER_ERROR})
"""The verdicts of a program that raised."""


def crashed_after_solve(
    execution: Execution,
    *,
    completion: Completion | None,
    grade: Grade,
    reference: object,
    rule: ObjectiveRule,
    resolve: Resolver,
) -> Diagnosis | None:
    """``crashed_after_solve`` for a program that raised (``grade``) after a last solve that
    ended optimal, where the harness's value of that solve is accepted by ``rule`` against
    ``reference``: the verified objective of a re-solve that matched the claim, else a re-solve
    of the captured model now (never the program's own number). ``None`` otherwise: another
    verdict, a completion cut off by the token limit (the cut explains what failed), no optimum to
    reach, no captured model, no value, a value not accepted. The value is graded as solved, or
    as the benchmark's stated sense signs it (a printed ``-res.fun`` is not read here).

    Raises:
        TrexError, DeadlinePassed: from ``resolve`` (a harness failure; nobody waits).
    """
    last = execution.last_solve
    if (
        last is None
        or grade.verdict not in RAISED
        or last.status is not SolveStatus.OPTIMAL
        or (completion is not None and completion.finish_reason == "length")
        or not isinstance(reference, ObjectiveReference)
        or reference.status is not SolveStatus.OPTIMAL
    ):
        return None
    value = finite_or_none(last.verified_objective) if last.verification == "match" else None
    resolves = 0
    if value is None:
        if last.model is None:
            return None
        resolves = 1
        try:
            status, value = resolve(last.model)
        except (DeadlinePassed, TrexError):
            raise
        except Exception:  # out of the diagnosis's budget, or a model the solver refuses: no value
            return None
        if status is not SolveStatus.OPTIMAL or value is None:
            return None
    if not accepts(rule, reference, SolveStatus.OPTIMAL, value):
        return None
    lines = (execution.detail or "").strip().splitlines()
    error = lines[-1].strip() if lines else execution.error_type or execution.status.value
    return Diagnosis(
        category=DiagnosisCategory.CRASHED_AFTER_SOLVE,
        detail=(
            f"the last {last.library} solve was optimal and the harness's value {value!r} meets the "
            f"reference; then the program raised {error} (it would pass without the crash)"
        ),
        evidence={
            "judged_value": value,
            "reference": float(reference.value or 0.0),
            "resolves": float(resolves),
        },
    )
