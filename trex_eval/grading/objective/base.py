"""What every objective rule shares: the :class:`ObjectiveRule` protocol, the reference check and
the verdicts of programs that failed before producing an answer. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from trex_eval.errors import GradingError
from trex_eval.grading.spec import RuleIdentity, rule_spec
from trex_eval.records import (
    ExecStatus,
    Execution,
    Grade,
    ObjectiveReference,
    SolveRecord,
    SolveStatus,
    Verdict,
)

__all__ = [
    "FINISHED",
    "NO_FINITE_OPTIMUM",
    "Conversion",
    "ConvertingRule",
    "ObjectiveRule",
    "check_reference",
    "failure_detail",
    "failure_verdict",
    "fmt",
    "rule_spec",
    "unverified_reason",
]

NO_FINITE_OPTIMUM = frozenset({SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD})
"""Reference statuses that carry no value and are matched by solver status alone."""

FINISHED = frozenset({ExecStatus.OK, ExecStatus.NO_SOLVE})
"""Execution statuses after which a rule looks for an answer; every other status is a failure verdict."""


@runtime_checkable
class ObjectiveRule(RuleIdentity, Protocol):
    """A named, versioned way of judging an objective answer.

    ``spec`` is the canonical ``name@version[:params]`` text (parameters shown only where they
    differ from the rule's defaults); it is what :attr:`Grade.rule` records and what
    :func:`trex_eval.grading.registry.get_rule` accepts back. ``description`` is one line that
    reports print next to every number graded by the rule. ``grade`` never raises for a bad
    program; it raises :class:`~trex_eval.errors.GradingError` only for a reference it cannot
    judge against.
    """

    def grade(self, execution: Execution, reference: ObjectiveReference, /) -> Grade: ...


@dataclass(frozen=True)
class Conversion:
    """A rewritten program a rule's fallback runs when the program as written does not pass:
    ``name`` says what was rewritten (reported in the grade's reason), ``code`` is the program."""

    name: str
    code: str


@runtime_checkable
class ConvertingRule(Protocol):
    """An objective rule with a conversion fallback (OptMATH's, ``optmath:fallback=true``): when a
    program's grade does not pass, the run executes each of :meth:`conversions` in order and the
    first one whose grade passes (or would, unverified) stands, its reason naming the conversion.
    The run does the executing (:meth:`trex_eval.protocols.plan.EvaluationPlan.fallback`); the
    rule only rewrites text. Pure."""

    def conversions(self, code: str) -> tuple[Conversion, ...]:
        """The rewritten programs to try for ``code``, in order (empty: no fallback)."""
        ...


def check_reference(reference: ObjectiveReference) -> None:
    """Reject references no rule can judge against.

    Raises:
        GradingError: an ``optimal`` reference without a finite value, or a reference status
            other than optimal / infeasible / unbounded / inf_or_unbd.
    """
    if reference.status is SolveStatus.OPTIMAL:
        if reference.value is None or not math.isfinite(reference.value):
            raise GradingError(
                f"optimal reference without a finite value (label {reference.label!r})",
                hint="fix the benchmark data or its YAML field mapping",
            )
    elif reference.status not in NO_FINITE_OPTIMUM:
        raise GradingError(
            f"reference status {reference.status.value!r} cannot be graded against",
            hint="a reference must be optimal (with a value), infeasible, unbounded or inf_or_unbd",
        )


def failure_verdict(status: ExecStatus) -> Verdict:
    """The verdict naming a failed execution stage (``runtime_error`` -> ``runtime_error``, ...).

    Raises:
        GradingError: ``status`` is ``ok``, which is not a failure.
    """
    if status is ExecStatus.OK:
        raise GradingError("execution status 'ok' is not a failure")
    return Verdict(status.value)


def failure_detail(execution: Execution) -> str:
    """One line saying how the program failed: exception type and the last line of the detail,
    or the status name when the sandbox recorded neither."""
    lines = execution.detail.strip().splitlines()
    message = lines[-1].strip() if lines else ""
    if execution.error_type and not message.startswith(execution.error_type):
        message = f"{execution.error_type}: {message}" if message else execution.error_type
    return message or execution.status.value


def unverified_reason(solve: SolveRecord) -> str | None:
    """Why ``solve``'s claim is not verified, or ``None`` when the harness's re-solve matched it."""
    if solve.verification == "match":
        return None
    if solve.verification is None:
        return "no re-solve was run"
    return solve.verification.removeprefix("skipped: ")


def fmt(value: float | None) -> str:
    """A number as reasons print it: the shortest text that reads back to the same float."""
    return "none" if value is None else repr(float(value))
