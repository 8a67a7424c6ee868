"""The entry point: :func:`diagnose` one graded sample. Pure but for the clock and the re-solves
of edited models, which go through the solver the caller hands it (the harness's own re-solve,
:func:`trex_eval.verify.resolve`, in a run; grading may not import the sandbox).

Order of the checks, cheapest and most specific first; the first that holds decides:

0. the captured solve first: a program that raised (``runtime_error``, ``solver_error``) after
   its last solve ended infeasible, unbounded or ``inf_or_unbd``, against a reference with an
   optimum, is named by that solve's status (``infeasible_model``/``unbounded_model``), not by
   its exception: reading the objective of a model without an optimum is what raised. An
   ``inf_or_unbd`` status is told apart by a re-solve without the objective (one not told apart
   names nothing: the search of 2. decides). The search of 2. runs on the captured model, and
   the edit that reaches the reference, where one does, is named in the detail (its value in
   the evidence). A completion cut off by the token limit stays ``truncated``;
   A program that raised after an optimal last solve whose harness value the rule accepts is
   ``crashed_after_solve`` (:mod:`.crash`); one whose value it does not accept goes on to 1.;
1. failures before a model exists (:mod:`.failures`);
2. a model whose value is wrong, or whose status is infeasible/unbounded against a reference
   with an optimum: the value the verdict judged (the harness's re-solve where the judge made
   one, else the program's own solve; a re-solve of the captured model only where that has no
   optimum, infeasibility or unboundedness to show); the value times a power of ten accepted by
   the rule (``objective_scaled``); then each edit of :func:`.edits.model_edits` re-solved in
   turn (sense, integrality, bounds), the first whose value the rule accepts naming the
   category; the value negated (``objective_negated``), rounded to the label's decimals
   (``rounding``) and a near miss (``near_miss``); one constraint dropped
   (:func:`.drops.first_drop`, ``constraint_extra``);
   for gurobipy, an integrality relaxation bracketing the reference once the bounds gurobipy
   rounded are widened (``integrality_extra``); then the status
   (``infeasible_model``/``unbounded_model``); else ``unexplained``. An edit that can only move
   the optimum away from the reference (a relaxation of a model already past it, a restriction
   of one short of it) is not re-solved: it could not name its category.

Bounds: all re-solves of one sample share :attr:`DiagnosisBudget.time_s`; a model over
:attr:`DiagnosisBudget.max_columns` columns is not edited; the first
:attr:`DiagnosisBudget.max_dropped_rows` constraints are the candidates of a drop. A search
stopped by the budget or the cap is ``unexplained``, its detail saying why — unless a check that
needs no re-solve (rounding, near miss) held, which then stands with
``evidence["search_complete"] = 0``.
Never changes a verdict: the caller stores the diagnosis on the grade as it is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from trex_eval.errors import TrexError
from trex_eval.fairness import DeadlinePassed
from trex_eval.grading.diagnosis.crash import crashed_after_solve
from trex_eval.grading.diagnosis.drops import describe, droppable, first_drop
from trex_eval.grading.diagnosis.edits import Edit, model_edits, rounded_bounds_widened
from trex_eval.grading.diagnosis.failures import NOT_DIAGNOSED, failure_diagnosis
from trex_eval.grading.diagnosis.values import (
    Standing,
    accepts,
    near_miss,
    rounds_to_label,
    scaled,
    standing,
)
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
    Verdict,
    finite_or_none,
)

Category = DiagnosisCategory


class Solved(Protocol):
    """What a re-solve returns (:class:`trex_eval.verify.Resolve` is one)."""

    @property
    def status(self) -> SolveStatus: ...

    @property
    def objective(self) -> float | None: ...

    @property
    def cpu_s(self) -> float:
        """CPU seconds the re-solve took (0 where not measured), charged to the budget."""
        ...


ModelSolver = Callable[[LinearModel, float], Solved]
"""Re-solves a model within the given CPU seconds. Contract: returns ``TIME_LIMIT`` when the time
ran out and ``ERROR`` for a model it cannot solve; an exception is read as ``ERROR``."""


@dataclass(frozen=True)
class DiagnosisBudget:
    """Bounds of one sample's diagnosis: ``time_s`` CPU seconds for all its work together (its own
    thread's and its re-solves'; machine load does not use them up),
    edits only on models of at most ``max_columns`` columns, the first ``max_dropped_rows``
    constraints the candidates of a single drop."""

    time_s: float = 2.0
    max_columns: int = 2000
    max_dropped_rows: int = 500


class _OutOfBudget(Exception):
    pass


class _Solver:
    """The caller's solver against one sample's budget: counts re-solves, raises
    :class:`_OutOfBudget` once the time is spent or a re-solve stopped at its limit."""

    def __init__(self, solve: ModelSolver, budget: DiagnosisBudget) -> None:
        self.solve, self.started, self.budget = solve, time.thread_time(), budget
        self.count = 0
        self.solved_s = 0.0

    def spent(self) -> float:
        """CPU seconds of this diagnosis: its own thread's, and its re-solves' as they report
        them (in the verifier processes, which load does not use up either)."""
        return time.thread_time() - self.started + self.solved_s

    def __call__(self, model: LinearModel) -> tuple[SolveStatus, float | None]:
        left = self.budget.time_s - self.spent()
        if left <= 0.0:
            raise _OutOfBudget
        self.count += 1
        try:
            result = self.solve(model, left)
        except (DeadlinePassed, TrexError):  # nobody waits, or the harness failed: no diagnosis
            raise
        except Exception:  # a model the solver refuses is no explanation; the search goes on
            return SolveStatus.ERROR, None
        self.solved_s += result.cpu_s
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
    reference = problem.reference
    last = execution.last_solve
    if (
        last is not None
        and isinstance(rule, ObjectiveRule)
        and _raised_without_optimum(reference, completion=completion, grade=grade, last=last)
    ):
        solver = _Solver(solve, budget or DiagnosisBudget())
        return _raised_diagnosis(last, execution, reference, rule, solver)
    if last is not None and isinstance(rule, ObjectiveRule):
        solver = _Solver(solve, budget or DiagnosisBudget())
        crashed = crashed_after_solve(
            execution, completion=completion, grade=grade, reference=reference, rule=rule, resolve=solver
        )
        if crashed is not None:
            return crashed
    found = failure_diagnosis(completion, execution, grade)
    if found is not None:
        return found
    if last is None:
        return Diagnosis(category=Category.NO_SOLVE, detail=grade.reason)
    if not isinstance(reference, ObjectiveReference) or not isinstance(rule, ObjectiveRule):
        return Diagnosis(category=Category.UNEXPLAINED, detail="model checks need an objective rule")
    if reference.status is not SolveStatus.OPTIMAL or reference.value is None:
        return Diagnosis(category=Category.UNEXPLAINED, detail="the reference has no optimum to reach")
    return _model_diagnosis(last, reference, rule, _Solver(solve, budget or DiagnosisBudget()))


_TIMED_OUT = frozenset({SolveStatus.TIME_LIMIT, SolveStatus.INTERRUPTED})
_NO_OPTIMUM = frozenset({SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD})
_RAISED = frozenset({Verdict.RUNTIME_ERROR, Verdict.SOLVER_ERROR})
_STATUS_CATEGORY = {
    SolveStatus.INFEASIBLE: Category.INFEASIBLE_MODEL,
    SolveStatus.UNBOUNDED: Category.UNBOUNDED_MODEL,
}


def _raised_without_optimum(
    reference: object, *, completion: Completion | None, grade: Grade, last: SolveRecord
) -> TypeGuard[ObjectiveReference]:
    """Whether the program raised after a last solve without an optimum, against a ``reference``
    with one: its model, not its exception, is what went wrong first. A completion cut off by
    the token limit is not (the cut explains whatever failed after it)."""
    return (
        isinstance(reference, ObjectiveReference)
        and reference.status is SolveStatus.OPTIMAL
        and reference.value is not None
        and grade.verdict in _RAISED
        and last.status in _NO_OPTIMUM
        and not (completion is not None and completion.finish_reason == "length")
    )


def _raised_diagnosis(
    last: SolveRecord,
    execution: Execution,
    reference: ObjectiveReference,
    rule: ObjectiveRule,
    solver: _Solver,
) -> Diagnosis:
    """A program that raised after its last solve ended without an optimum: named by that
    solve's status (an ``inf_or_unbd`` one told apart by :func:`_told_apart`), the edit the
    model search (:func:`_model_diagnosis`) finds, where it finds one, named in the detail with
    its category and its value in the evidence; a search the budget or the column cap stopped
    says so in the detail. A status not told apart (no model, no time left) is no name: the
    model search's diagnosis stands, the detail saying what the program raised."""
    told = _told_apart(last.status, last.model, solver)
    found = _model_diagnosis(last.model_copy(update={"status": told}), reference, rule, solver)
    lines = (execution.detail or "").strip().splitlines()
    error = lines[-1].strip() if lines else execution.error_type or execution.status.value
    raised = f"the program raised {error} after its last solve ended {told.value}"
    category = _STATUS_CATEGORY.get(told)
    if category is None or found.category in (category, Category.UNEXPLAINED):
        detail = f"{raised}; {found.detail}"
    else:
        detail = f"{raised}; the edit that reaches the reference: {found.detail} ({found.category.value})"
    return found.model_copy(update={"category": category or found.category, "detail": detail})


def _told_apart(status: SolveStatus, model: LinearModel | None, solver: _Solver) -> SolveStatus:
    """``inf_or_unbd`` told apart: ``unbounded`` where the model has a feasible point (see
    :func:`_feasible`), ``infeasible`` where its re-solve without an objective is; any other
    status, and one not told apart (no model, no time left, a solver error), as it is."""
    if status is not SolveStatus.INF_OR_UNBD or model is None:
        return status
    try:
        shown = _zero_objective_status(model, solver)
    except _OutOfBudget:
        return status
    if shown is SolveStatus.OPTIMAL:
        return SolveStatus.UNBOUNDED
    return SolveStatus.INFEASIBLE if shown is SolveStatus.INFEASIBLE else status


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
        status, value = _judged_value(last, model, solver)
        if value is not None:
            evidence["judged_value"] = value
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
        found = _search_edits(
            model,
            reference,
            rule,
            solver,
            evidence,
            judged=(status, value),
            gurobi=last.library == "gurobipy",
        )
        if found is not None:
            return found
        stopped = None
    except _OutOfBudget:
        status, value = (
            (last.status, finite_or_none(last.objective))
            if "judged_value" not in evidence
            else (SolveStatus.OPTIMAL, evidence["judged_value"])
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


def _judged_value(
    last: SolveRecord, model: LinearModel | None, solver: _Solver
) -> tuple[SolveStatus, float | None]:
    """The status and value of the last solve the verdict was decided on, re-solved only where
    there is none: the harness's re-solve where the judge made one (the verified objective,
    matching the claim or not), else the program's own solve (an optimum with a finite objective,
    or infeasible, or unbounded). A claim the rule graded wrong is wrong for every value that
    agrees with it within the verification tolerance (the rule asked for a re-solve otherwise),
    so where it stands to the reference is where the captured model's own optimum stands.
    Else (``inf_or_unbd``) a re-solve of the captured model, and without a model the claim."""
    verified = finite_or_none(last.verified_objective)
    if last.verification == "match":
        return last.status, verified
    if last.verification == "mismatch" and verified is not None:
        return SolveStatus.OPTIMAL, verified  # only an optimal re-solve records an objective
    claim = finite_or_none(last.objective)
    if last.status in (SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED) or claim is not None:
        return last.status, claim
    if model is None:
        return last.status, claim
    status, value = solver(model)
    if status is SolveStatus.ERROR:  # the harness cannot solve it: the claim is all there is
        return last.status, claim
    return status, value


def _search_edits(
    model: LinearModel | None,
    reference: ObjectiveReference,
    rule: ObjectiveRule,
    solver: _Solver,
    evidence: dict[str, float],
    *,
    judged: tuple[SolveStatus, float | None],
    gurobi: bool,
) -> Diagnosis | None:
    """The first single edit whose re-solve the rule accepts, or ``None``.

    An edit that can only move the optimum away from the reference is not re-solved (see
    :mod:`.edits`): one that relaxes the model when the ``judged`` value is already past the
    reference, one that restricts it when the value is short of it (or the model infeasible).
    Rounding and near misses of the ``judged`` value are checked before any constraint is
    dropped: among hundreds of rows one drop can land within a rule's tolerance by chance
    (measured on B4O mutants), so a value already that close is the likelier explanation. Last,
    for a gurobipy model, an integrality relaxation whose optimum is short of the reference but
    whose bounds gurobipy may have rounded (:func:`.edits.rounded_bounds_widened`) explains it
    when the same relaxation with those bounds widened is not short: the program's model lies
    between the two."""
    if model is None or model.num_vars > solver.budget.max_columns:
        return None

    def stands(status: SolveStatus, value: float | None) -> Standing | None:
        return standing(rule, reference, model.sense, status, value)

    where = stands(*judged)
    relaxations: list[tuple[Edit, float]] = []
    for edit in model_edits(model):
        if (edit.direction == "relaxes" and where == "past") or (
            edit.direction == "restricts" and where == "short"
        ):
            continue
        status, value = solver(edit.model)
        if status is SolveStatus.OPTIMAL and value is not None and accepts(rule, reference, status, value):
            evidence["edited_value"] = value
            return _done(edit.category, edit.detail, evidence, solver)
        if (
            edit.category is Category.INTEGRALITY_EXTRA
            and value is not None
            and stands(status, value) == "short"
        ):
            relaxations.append((edit, value))
    cheap = _value_checks(*judged, reference, rule, evidence)
    if cheap is not None:
        return _done(cheap.category, cheap.detail, evidence, solver)
    if where != "past":
        candidates = droppable(model, limit=solver.budget.max_dropped_rows)
        found = first_drop(model, candidates, solver, stands)
        if found is not None:
            evidence["edited_value"] = found[1]
            return _done(Category.CONSTRAINT_EXTRA, f"{describe(model, found[0])} dropped", evidence, solver)
    for edit, tight in relaxations if gurobi else ():
        widened = rounded_bounds_widened(model, edit.model)
        if widened is None:
            continue
        status, value = solver(widened)
        if value is not None and stands(status, value) in ("met", "past"):
            evidence.update(edited_value=tight, widened_value=value)
            detail = (
                f"{edit.detail}: the reference lies between the relaxation with the bounds gurobipy "
                "rounded and with them widened by one"
            )
            return _done(edit.category, detail, evidence, solver)
    return None


def _value_checks(
    status: SolveStatus,
    value: float | None,
    reference: ObjectiveReference,
    rule: ObjectiveRule,
    evidence: dict[str, float],
) -> Diagnosis | None:
    """The negation, rounding to the label, then a near miss, of an optimal value."""
    if status is not SolveStatus.OPTIMAL or value is None:
        return None
    if value != 0.0 and accepts(rule, reference, status, -value):
        return Diagnosis(
            category=Category.OBJECTIVE_NEGATED,
            detail="the value negated meets the reference: the model optimises the negated objective "
            "(a minimise-only solver's maximisation) and nothing gave the harness the sign to put back",
        )
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
    try:
        return _zero_objective_status(model, solver) is SolveStatus.OPTIMAL
    except _OutOfBudget:
        return False


def _zero_objective_status(model: LinearModel, solver: _Solver) -> SolveStatus:
    """The status of ``model`` re-solved without its objective (``optimal``: a feasible point).

    Raises:
        _OutOfBudget: no time left for the re-solve.
    """
    zero = model.model_copy(update={"obj": (0.0,) * model.num_vars, "q_obj": ()})
    status, _ = solver(zero)
    return status


def _done(category: Category, detail: str, evidence: dict[str, float], solver: _Solver) -> Diagnosis:
    evidence = {**evidence, "resolves": float(solver.count), "seconds": round(solver.spent(), 4)}
    return Diagnosis(
        category=category, detail=detail, evidence={k: v for k, v in evidence.items() if math.isfinite(v)}
    )
