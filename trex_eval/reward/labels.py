"""What a reward may say about the label: that the rollout matches it or not, under which rule,
never the label itself.

A reward's record travels to the trainer (``/v1/score``, ``/get_reward``, a TRL column, verl's
extra info) and into the reward logs (``serve --log``, the epoch run directories of ``serve
--out``), where a prompt pipeline, a logged completions table or a curious policy could read it.
The grade a rule writes quotes the reference ("... vs reference 531.15 ..."), and a diagnosis
names the reference's rows, coefficients and value. :func:`label_free` rewrites a graded rollout
so that it carries only the verdict against the reference and facts of the program's own (its
solve status, its own objective, how it failed), unless the scorer's settings ask for the
reference (``ScorerSettings.show_reference``, ``serve --show-reference``: evaluation logs).

Kept: the verdict, the rule, the program's own objective and status, the reference's solve status
in stored objective evidence (a status, not a value; the run-directory readers classify outcomes
by it) and a diagnosis of how the program failed before its model met the reference (no code, an
exception, a limit, no solve, an infeasible or unbounded model). Withheld: the reference value,
the errors measured from it, every structure check's text, and a diagnosis that relates the
program's model to the reference (an edit, a scale, a rounding, a near miss, the reference's rows):
with the program's own value beside it, each of those gives the label away. Pure.
"""

from __future__ import annotations

import re

from trex_eval.grading.objective.base import failure_detail, fmt
from trex_eval.records import (
    Diagnosis,
    DiagnosisCategory,
    Evidence,
    Execution,
    Grade,
    ObjectiveEvidence,
    StructureCheck,
    StructureEvidence,
    Verdict,
)

Category = DiagnosisCategory

WITHHELD = (
    "withheld: this diagnosis relates the program's model to the reference "
    "(the scorer's show_reference setting, `trex-eval serve --show-reference`, keeps it)"
)
"""The detail of a diagnosis whose finding would give the label away."""

LABEL_FREE_CATEGORIES = frozenset(
    {
        Category.NO_CODE,
        Category.TRUNCATED,
        Category.SYNTAX,
        Category.MISSING_LIBRARY,
        Category.API_MISUSE,
        Category.DATA_ACCESS,
        Category.RUNTIME_OTHER,
        Category.TIMEOUT,
        Category.MEMORY,
        Category.NO_SOLVE,
        Category.NO_OBJECTIVE_PRINTED,
        Category.INFEASIBLE_MODEL,
        Category.UNBOUNDED_MODEL,
    }
)
"""Diagnoses decided from the completion and the execution alone (or by the program's model having
no optimum at all): they say how the program failed, not where the reference lies."""

LABEL_FREE_EVIDENCE = frozenset(
    {
        "judged_value",
        "generated_rows",
        "generated_columns",
        "generated_integer",
        "resolves",
        "seconds",
        "search_complete",
    }
)
"""Diagnosis evidence of the program's own (its value, its model's sizes) or of the search's cost;
every other key (``reference``, ``edited_value``, ``relative_error``, ``scale_exponent``,
``decimals``, ``reference_*``, row counts measured against the reference) is withheld."""

_CONVERTED = re.compile(r"conversion fallback \(([^()]*)\): .*; as written: ([a-z_]+) \(", re.DOTALL)
"""A grade passed by a rule's conversion fallback (:meth:`~trex_eval.protocols.plan.EvaluationPlan.
fallback`): the rewrite's name and the verdict of the program as written, both label-free."""

_COMPARED = {
    Verdict.CORRECT: "matches the reference",
    Verdict.WRONG: "differs from the reference",
    Verdict.UNVERIFIED: (
        "would match the reference on the program's claim, which the harness could not re-derive "
        "from the captured model"
    ),
    Verdict.NOT_DETERMINABLE: "could not be compared with the reference",
}


def label_free(grade: Grade, execution: Execution) -> Grade:
    """``grade`` as a reward may carry it (see the module docstring): the reason rebuilt by
    :func:`label_free_reason`, the evidence and the diagnosis stripped of what the reference
    decided. The verdict and the rule are unchanged."""
    reason = label_free_reason(grade, execution)
    return Grade(
        verdict=grade.verdict,
        rule=grade.rule,
        reason=reason,
        evidence=None if grade.evidence is None else _evidence(grade.evidence),
        diagnosis=None
        if grade.diagnosis is None
        else _diagnosis(grade.diagnosis, original=grade.reason, reason=reason),
    )


def label_free_reason(grade: Grade, execution: Execution) -> str:
    """A reason naming no reference value: "matches the reference under strict@3; the program's
    last solve ended optimal", "differs from the reference under strict@3; the program's last solve
    ended optimal, graded value 12.0 (verified)" (a failing value is the program's own; a passing
    one, the label's twin, is left out), or, for a program that failed before a comparison, its
    verdict under the rule and how it failed (the program's own exception line)."""
    phrase = _COMPARED.get(grade.verdict)
    if phrase is None:
        text = f"{grade.verdict.value} under {grade.rule}"
        return f"{text}: {failure_detail(execution)}" if execution.detail or execution.error_type else text
    converted = _CONVERTED.match(grade.reason)
    facts = []
    solve = None if converted else execution.last_solve  # the execution is the program as written
    if solve is not None:
        facts.append(f"the program's last solve ended {solve.status.value}")
        if solve.verification == "mismatch":
            facts.append(
                f"its claimed objective {fmt(solve.objective)} is not its model's (the harness's "
                f"re-solve gives {fmt(solve.verified_objective)})"
            )
    evidence = grade.evidence
    # A passing value is the label to within the rule's tolerance: a pass says so without it.
    passing = grade.verdict in (Verdict.CORRECT, Verdict.UNVERIFIED)
    if isinstance(evidence, ObjectiveEvidence) and evidence.predicted is not None and not passing:
        facts.append(f"graded value {fmt(evidence.predicted)} ({evidence.source})")
    lead = f"{phrase} under {grade.rule}"
    text = "; ".join([lead, ", ".join(facts)]) if facts else lead
    if converted:
        return f"conversion fallback ({converted[1]}): {text}; as written: {converted[2]}"
    return text


def _evidence(evidence: Evidence) -> Evidence:
    if isinstance(evidence, ObjectiveEvidence):
        return evidence.model_copy(update={"reference": None, "abs_error": None, "rel_error": None})
    checks = tuple(StructureCheck(name=check.name, passed=check.passed) for check in evidence.checks)
    return StructureEvidence(checks=checks, generated_from=evidence.generated_from)


def _diagnosis(diagnosis: Diagnosis, *, original: str, reason: str) -> Diagnosis:
    evidence = {key: value for key, value in diagnosis.evidence.items() if key in LABEL_FREE_EVIDENCE}
    if diagnosis.category not in LABEL_FREE_CATEGORIES:
        return Diagnosis(category=Category.UNEXPLAINED, detail=WITHHELD, evidence=evidence)
    # A failure's diagnosis falls back on the grade's reason for its detail, which may quote the
    # reference: the label-free reason stands in for it.
    detail = reason if diagnosis.detail == original else diagnosis.detail
    return Diagnosis(category=diagnosis.category, detail=detail, evidence=evidence)
