"""The entry point: :func:`diagnose` one graded sample. Pure but for the clock and the re-solves
of edited models, which go through the solver the caller hands it (the harness's own re-solve,
:func:`trex_eval.sandbox.verify.resolve`, in a run; grading may not import the sandbox).

Order of the checks, cheapest and most specific first; the first that holds decides:

1. failures before a model exists (:mod:`.failures`);
2. a model whose value is wrong, or whose status is infeasible/unbounded against a reference
   with an optimum: the harness's value of the captured model (its verified objective, else a
   re-solve within the budget); the value times a power of ten accepted by the rule
   (``objective_scaled``); then each single edit of :func:`.edits.candidate_edits` re-solved in
   turn (sense, integrality, bounds, then row drops), the first whose value the rule accepts
   naming the category, with the value rounded to the label's decimals (``rounding``) and a near
   miss (``near_miss``) checked before the row drops; then the status
   (``infeasible_model``/``unbounded_model``); else ``unexplained``.

Bounds: all re-solves of one sample share :attr:`DiagnosisBudget.time_s`; a model over
:attr:`DiagnosisBudget.max_columns` columns is not edited; at most
:attr:`DiagnosisBudget.max_dropped_rows` rows are dropped one at a time. A search stopped by the
budget or the cap is ``unexplained``, its detail saying why — unless a check that needs no
re-solve (rounding, near miss) held, which then stands with ``evidence["search_complete"] = 0``.
Never changes a verdict: the caller stores the diagnosis on the grade as it is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from trex_eval.grading.diagnosis.edits import candidate_edits
from trex_eval.grading.diagnosis.failures import NOT_DIAGNOSED, failure_diagnosis
from trex_eval.grading.diagnosis.values import accepts, near_miss, rounds_to_label, scaled
from trex_eval.grading.objective.base import ObjectiveRule
from trex_eval.records import (
    Completion,
    Diagnosis,
    DiagnosisCategory,
    Execution,
    Grade,
    LinearModel,
    ObjectiveReference,
    Problem,
    SolveRecord,
    SolveStatus,
    finite_or_none,
)

Category = DiagnosisCategory


class Solved(Protocol):
    """What a re-solve returns (:class:`trex_eval.sandbox.verify.Resolve` is one)."""

    @property
    def status(self) -> SolveStatus: ...

    @property
    def objective(self) -> float | None: ...


ModelSolver = Callable[[LinearModel, float], Solved]
"""Re-solves a model within the given seconds. Contract: returns ``TIME_LIMIT`` when the time ran
out and ``ERROR`` for a model it cannot solve; an exception is read as ``ERROR``."""


@dataclass(frozen=True)
class DiagnosisBudget:
    """Bounds of one sample's diagnosis: ``time_s`` seconds for all its re-solves together,
    edits only on models of at most ``max_columns`` columns, at most ``max_dropped_rows`` rows
    dropped one at a time."""

    time_s: float = 2.0
    max_columns: int = 2000
    max_dropped_rows: int = 500


class _OutOfBudget(Exception):
    pass


class _Solver:
    """The caller's solver against one sample's budget: counts re-solves, raises
    :class:`_OutOfBudget` once the time is spent or a re-solve stopped at its limit."""

    def __init__(self, solve: ModelSolver, budget: DiagnosisBudget) -> None:
        self.solve, self.started, self.budget = solve, time.monotonic(), budget
        self.count = 0

    def spent(self) -> float:
        return time.monotonic() - self.started

    def __call__(self, model: LinearModel) -> tuple[SolveStatus, float | None]:
        left = self.budget.time_s - self.spent()
        if left <= 0.0:
            raise _OutOfBudget
        self.count += 1
        try:
            result = self.solve(model, left)
        except Exception:  # a model the solver refuses is no explanation; the search goes on
            return SolveStatus.ERROR, None
        if result.status is SolveStatus.TIME_LIMIT:
            raise _OutOfBudget
        return result.status, finite_or_none(result.objective)


def diagnose(
    problem: Problem,
    completion: Completion | None,
    execution: Execution,
    grade: Grade,
    *,
    rule: object,
    solve: ModelSolver,
    budget: DiagnosisBudget | None = None,
) -> Diagnosis | None:
    """Why ``grade`` did not pass (see the module docstring), or ``None`` for a grade that passed
    or would pass (``unverified``) and for failures of the environment or the model request
    (:data:`.failures.NOT_DIAGNOSED`). ``rule`` is the sample's rule: the edits are judged by it
    (an objective rule; for any other the model checks are ``unexplained``). Never raises for
    what the program did."""
    if grade.verdict in NOT_DIAGNOSED:
        return None
    found = failure_diagnosis(completion, execution, grade)
    if found is not None:
        return found
    reference = problem.reference
    last = execution.last_solve
    if last is None:
        return Diagnosis(category=Category.NO_SOLVE, detail=grade.reason)
    if not isinstance(reference, ObjectiveReference) or not isinstance(rule, ObjectiveRule):
        return Diagnosis(category=Category.UNEXPLAINED, detail="model checks need an objective rule")
    if reference.status is not SolveStatus.OPTIMAL or reference.value is None:
        return Diagnosis(category=Category.UNEXPLAINED, detail="the reference has no optimum to reach")
    return _model_diagnosis(last, reference, rule, _Solver(solve, budget or DiagnosisBudget()))


_TIMED_OUT = frozenset({SolveStatus.TIME_LIMIT, SolveStatus.INTERRUPTED})
_NO_OPTIMUM = frozenset({SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD})


def _model_diagnosis(
    last: SolveRecord, reference: ObjectiveReference, rule: ObjectiveRule, solver: _Solver
) -> Diagnosis:
    """The diagnosis of a last solve that was judged wrong (or not determinable) against an optimum."""
    if last.status in _TIMED_OUT:
        return Diagnosis(category=Category.TIMEOUT, detail=f"the last solve ended {last.status.value}")
    if last.status is SolveStatus.OPTIMAL and finite_or_none(last.objective) is None:
        return Diagnosis(
            category=Category.NO_OBJECTIVE_PRINTED, detail="the last solve has no finite objective"
        )
    if last.status not in _NO_OPTIMUM and last.status is not SolveStatus.OPTIMAL:
        return Diagnosis(category=Category.RUNTIME_OTHER, detail=f"the last solve ended {last.status.value}")
    model = last.model
    evidence: dict[str, float] = {"reference": float(reference.value or 0.0)}
    try:
        status, value = _harness_value(last, model, solver)
        if value is not None:
            evidence["harness_value"] = value
        if status is SolveStatus.OPTIMAL and value is not None:
            exponent = scaled(rule, reference, value)
            if exponent is not None:
                evidence["scale_exponent"] = float(exponent)
                return _done(
                    Category.OBJECTIVE_SCALED,
                    f"the value times 10^{exponent} meets the reference",
                    evidence,
                    solver,
                )
        found = _search_edits(model, reference, rule, solver, evidence, harness=(status, value))
        if found is not None:
            return found
        stopped = None
    except _OutOfBudget:
        status, value = (
            (last.status, finite_or_none(last.objective))
            if "harness_value" not in evidence
            else (SolveStatus.OPTIMAL, evidence["harness_value"])
        )
        stopped = (
            f"the diagnosis budget of {solver.budget.time_s:g} s ran out after {solver.count} re-solve(s)"
        )
    if model is not None and model.num_vars > solver.budget.max_columns:
        stopped = (
            f"the model has {model.num_vars} columns, over the diagnosis cap of {solver.budget.max_columns}"
        )
    if model is None:
        stopped = "no model was captured"
    cheap = _value_checks(status, value, reference, rule, evidence)
    if cheap is not None:
        if stopped is not None:
            evidence["search_complete"] = 0.0
            cheap = cheap.model_copy(update={"detail": f"{cheap.detail} (edit search incomplete: {stopped})"})
        return _done(cheap.category, cheap.detail, evidence, solver)
    if stopped is not None:
        return _done(Category.UNEXPLAINED, stopped, evidence, solver)
    if status is SolveStatus.INFEASIBLE or (
        status is SolveStatus.INF_OR_UNBD and not _feasible(model, solver)
    ):
        return _done(
            Category.INFEASIBLE_MODEL,
            "the model is infeasible; no single edit reaches the reference",
            evidence,
            solver,
        )
    if status in _NO_OPTIMUM:
        return _done(
            Category.UNBOUNDED_MODEL,
            "the model is unbounded; no single edit reaches the reference",
            evidence,
            solver,
        )
    return _done(Category.UNEXPLAINED, "no single edit of the model reaches the reference", evidence, solver)


def _harness_value(
    last: SolveRecord, model: LinearModel | None, solver: _Solver
) -> tuple[SolveStatus, float | None]:
    """The harness's status and value of the last solve: its verified objective where the re-solve
    matched, else a re-solve of the captured model, else (no model) the claim."""
    if last.verification == "match":
        return last.status, finite_or_none(last.verified_objective)
    if model is None:
        return last.status, finite_or_none(last.objective)
    status, value = solver(model)
    if status is SolveStatus.ERROR:  # the harness cannot solve it: the claim is all there is
        return last.status, finite_or_none(last.objective)
    return status, value


def _search_edits(
    model: LinearModel | None,
    reference: ObjectiveReference,
    rule: ObjectiveRule,
    solver: _Solver,
    evidence: dict[str, float],
    *,
    harness: tuple[SolveStatus, float | None],
) -> Diagnosis | None:
    """The first single edit whose re-solve the rule accepts, or ``None``. Rounding and near
    misses of the ``harness`` value are checked before the first row is dropped: among hundreds
    of rows one drop can land within a rule's tolerance by chance (measured on B4O mutants), so a
    value already that close is the likelier explanation."""
    if model is None or model.num_vars > solver.budget.max_columns:
        return None
    checked = False
    for edit in candidate_edits(model, max_rows=solver.budget.max_dropped_rows):
        if edit.category is Category.CONSTRAINT_EXTRA and not checked:
            checked = True
            cheap = _value_checks(*harness, reference, rule, evidence)
            if cheap is not None:
                return _done(cheap.category, cheap.detail, evidence, solver)
        status, value = solver(edit.model)
        if status is SolveStatus.OPTIMAL and value is not None and accepts(rule, reference, status, value):
            evidence["edited_value"] = value
            return _done(edit.category, edit.detail, evidence, solver)
    return None


def _value_checks(
    status: SolveStatus,
    value: float | None,
    reference: ObjectiveReference,
    rule: ObjectiveRule,
    evidence: dict[str, float],
) -> Diagnosis | None:
    """Rounding to the label, then a near miss, of an optimal value."""
    if status is not SolveStatus.OPTIMAL or value is None:
        return None
    decimals = rounds_to_label(rule, reference, value)
    if decimals is not None:
        evidence["decimals"] = float(decimals)
        return Diagnosis(
            category=Category.ROUNDING,
            detail=f"the value rounded to {decimals} decimal(s) meets the reference",
        )
    distance = near_miss(reference, value)
    if distance is not None:
        evidence["relative_error"] = distance
        return Diagnosis(
            category=Category.NEAR_MISS, detail=f"the value is {distance:.2g} (relative) from the reference"
        )
    return None


def _feasible(model: LinearModel | None, solver: _Solver) -> bool:
    """Whether ``model`` has a feasible point (its re-solve without an objective is optimal); an
    ``inf_or_unbd`` model that has one is unbounded. Without a model or time left: not shown."""
    if model is None:
        return False
    zero = model.model_copy(update={"obj": (0.0,) * model.num_vars, "q_obj": ()})
    try:
        status, _ = solver(zero)
    except _OutOfBudget:
        return False
    return status is SolveStatus.OPTIMAL


def _done(category: Category, detail: str, evidence: dict[str, float], solver: _Solver) -> Diagnosis:
    evidence = {**evidence, "resolves": float(solver.count), "seconds": round(solver.spent(), 4)}
    return Diagnosis(
        category=category, detail=detail, evidence={k: v for k, v in evidence.items() if math.isfinite(v)}
    )
