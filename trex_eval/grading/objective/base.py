"""What every objective rule shares: the :class:`ObjectiveRule` protocol, the reference check,
the verdicts of programs that failed before producing an answer, and the harness's value of a
claim (:func:`harness_objective`: what a rule grades) with verification's agreement tolerance
(:func:`may_pass_when_verified`: which misses a re-solve could still turn). Pure."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from trex_eval.errors import GradingError
from trex_eval.grading.spec import RuleIdentity, rule_spec
from trex_eval.linear_model import CERTIFICATE
from trex_eval.records import (
    ExecStatus,
    Execution,
    Grade,
    ObjectiveReference,
    SolveRecord,
    SolveStatus,
    Verdict,
    finite_or_none,
)

__all__ = [
    "AGREEMENT_ATOL",
    "AGREEMENT_RTOL",
    "FINISHED",
    "NO_FINITE_OPTIMUM",
    "BudgetingRule",
    "Conversion",
    "ConvertingRule",
    "ObjectiveRule",
    "RuleBudgets",
    "check_reference",
    "failure_detail",
    "failure_verdict",
    "fmt",
    "harness_objective",
    "harness_path",
    "may_pass_when_verified",
    "resolver_name",
    "rule_spec",
    "unverified_reason",
    "verified_source",
]

NO_FINITE_OPTIMUM = frozenset({SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD})
"""Reference statuses that carry no value and are matched by solver status alone."""

FINISHED = frozenset({ExecStatus.OK, ExecStatus.NO_SOLVE})
"""Execution statuses after which a rule looks for an answer; every other status is a failure verdict."""

AGREEMENT_RTOL = 2e-4
AGREEMENT_ATOL = 1e-6
"""The loosest agreement tolerance of verification (:mod:`trex_eval.verify`, ``MIP_RTOL``
and ``ATOL``: models with integer or quadratic parts; LPs agree within ``rtol`` 1e-6): a claim
"matches" its re-solve when ``|claimed − verified| ≤ ATOL + RTOL·max(1, |verified|)``. Repeated
here because grading may not import the sandbox (layers); ``tests/grading`` pins them to
verify's. Rules never widen their own tolerance by it: it only says how far the harness's value
may lie from a claim it calls a match."""


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


@dataclass(frozen=True)
class RuleBudgets:
    """The CPU seconds a rule gives each program (``program_cpu_s``) and the harness's re-solve
    of its claim (``verify_cpu_s``)."""

    program_cpu_s: float
    verify_cpu_s: float


@runtime_checkable
class BudgetingRule(Protocol):
    """An objective rule that states budgets (``budgeted``): the plan stops a program at its
    budget (:attr:`trex_eval.protocols.plan.EvaluationPlan.budgeted_limits`) and hands the
    re-solve its own. A rule that wraps another (a protocol's conventions) declares the inner
    rule's; :meth:`budgets` is None where it has none to declare."""

    def budgets(self) -> RuleBudgets | None:
        """This rule's budgets, or None (the limits and verify's default decide)."""
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


def harness_objective(solve: SolveRecord) -> float | None:
    """The objective the harness re-derived for ``solve``: the finite value of its own re-solve
    of the captured model when that re-solve matched the claim (``verification == "match"``),
    else ``None``. This, not the program's claim, is what an objective rule compares with the
    reference; the claim only has to agree with it (which is what "match" means)."""
    if solve.verification != "match":
        return None
    return finite_or_none(solve.verified_objective)


def resolver_name(solve: SolveRecord) -> str:
    """The parent's solver of ``solve``'s re-solve as reasons name it (``HiGHS`` when unrecorded)."""
    return {"gurobipy": "gurobipy", "scip": "SCIP"}.get(solve.verified_by or "", "HiGHS")


def harness_path(solve: SolveRecord) -> str:
    """How the harness derived ``solve``'s value, as reasons name it: ``"gurobipy re-solve"``
    (the solver's name, :func:`resolver_name`) or ``"optimality certificate"``."""
    if solve.verified_by == CERTIFICATE:
        return "optimality certificate"
    return f"{resolver_name(solve)} re-solve"


def verified_source(solve: SolveRecord) -> str:
    """``ObjectiveEvidence.source`` of a graded harness value: ``"certified"`` when an LP's
    optimality certificate matched the claim, else ``"verified"`` (a re-solve)."""
    return "certified" if solve.verified_by == CERTIFICATE else "verified"


def may_pass_when_verified(accepts: Callable[[float], bool], claimed: float, reference: float) -> bool:
    """Whether a re-solve that matches ``claimed`` could give a value ``accepts`` passes: some
    ``v`` with ``|claimed − v|`` within the agreement tolerance (:data:`AGREEMENT_RTOL`, bounded
    from above) is accepted.

    ``accepts`` must accept an interval of values that holds ``reference`` (or nothing), as every
    tolerance test does (``|round(v) − round(ref)|`` against a bound is one, rounding being
    monotone): the interval then meets the claim's window exactly when ``reference`` lies in the
    window or the window's end nearest to it is accepted. Errs towards ``True`` (a needless
    re-solve), never towards ``False``.
    """
    # |claimed − v| ≤ a + r·max(1, |v|) with |v| ≤ |claimed| + |claimed − v| bounds the distance:
    radius = (AGREEMENT_ATOL + AGREEMENT_RTOL * max(1.0, abs(claimed))) / (1.0 - AGREEMENT_RTOL)
    if abs(claimed - reference) <= radius:
        return accepts(reference)
    return accepts(claimed - radius if claimed > reference else claimed + radius)


def fmt(value: float | None) -> str:
    """A number as reasons print it: the shortest text that reads back to the same float."""
    return "none" if value is None else repr(float(value))
