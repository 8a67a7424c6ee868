"""The structural half of an objective sample's diagnosis: where the value-based search leaves a
failing sample ``unexplained`` (or calls it ``objective_scaled``, which a missing row can mimic)
and the benchmark ships reference programs (B4O-Feasible,
ORThought's copies, ...), the model the reference program builds — run once per problem in the
sandbox and captured, as ``trex-eval audit`` runs it — is compared with the sample's captured
model part by part (:mod:`trex_eval.grading.diagnosis.structure`).

Only a comparison that names a part both formulations share is kept: the sense, integrality,
reference rows the generated model lacks while every generated row has a counterpart
(``constraint_missing``), the reverse (``constraint_extra``), the objective or the non-negativity.
Two formulations that differ row against row (``constraint_differs``) or in their number of
columns may well be the same model written differently: the sample stays ``unexplained``, its
detail saying what the comparison found. A verdict is never changed.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable

from trex_eval.backends.reference import reference_completion_text
from trex_eval.extract import extract
from trex_eval.fairness import DeadlinePassed
from trex_eval.grading.diagnosis.structure import structure_diagnosis
from trex_eval.records import (
    Completion,
    DiagnosisCategory,
    ExecStatus,
    Execution,
    Grade,
    LinearModel,
    ObjectiveReference,
    Problem,
    Program,
)


def reference_program(problem: Problem) -> str | None:
    """The program the ``reference`` backend answers ``problem`` with (its reference code, with
    the solve call the audit appends), as extracted; None when it has none."""
    try:
        text = reference_completion_text(problem)
    except ValueError:
        return None
    return extract(Completion(problem_id=problem.id, sample_index=0, text=text), extractor="default").code


KEPT = frozenset(
    {
        DiagnosisCategory.SENSE_FLIPPED,
        DiagnosisCategory.INTEGRALITY_MISSING,
        DiagnosisCategory.INTEGRALITY_EXTRA,
        DiagnosisCategory.CONSTRAINT_MISSING,
        DiagnosisCategory.CONSTRAINT_EXTRA,
        DiagnosisCategory.OBJECTIVE_DIFFERS,
        DiagnosisCategory.BOUNDS_MISSING,
    }
)
"""Structural findings that name a part both formulations share (module docstring)."""

REVISITED = {
    DiagnosisCategory.UNEXPLAINED: KEPT,
    # A value off by a power of ten can be a coincidence of a model missing a row (two of the
    # mutation corpus's dropped constraints landed exactly a tenth off): the missing row is the
    # more direct evidence. A scaled objective itself shows as objective_differs, which keeps it.
    DiagnosisCategory.OBJECTIVE_SCALED: frozenset({DiagnosisCategory.CONSTRAINT_MISSING}),
}
"""Value-search findings the structural comparison may replace, and by which of its own."""

_ROWS = frozenset({DiagnosisCategory.CONSTRAINT_MISSING, DiagnosisCategory.CONSTRAINT_EXTRA})
"""Row findings, kept only where both models have as many columns: a formulation with an extra
column and the row defining it is the same model as one that substitutes it."""

Runner = Callable[[Problem, Program], Awaitable[Execution]]


class ReferencePrograms:
    """Captured models of reference programs, one sandbox run per (benchmark, problem), shared by
    every sample of the problem (concurrent askers on one event loop wait for the one run). ``run``
    executes a program for a problem as the benchmark's plan runs it.

    Safe to share between threads and event loops (a reward scorer's ``score`` runs one loop per
    call): a finished capture is kept for all of them; one still running is awaited on its own
    loop only, another loop starting the same capture meanwhile runs it once more. A capture cut
    short by its caller's deadline (:class:`~trex_eval.fairness.DeadlinePassed`) is not kept: the
    next asker runs it again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: dict[tuple[str, str], LinearModel | None] = {}
        self._pending: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Future[LinearModel | None]]
        ] = weakref.WeakKeyDictionary()
        self.executed = 0

    async def refined(
        self, grade: Grade, problem: Problem, execution: Execution, *, run: Runner, code: str | None = None
    ) -> Grade:
        """``grade`` with an ``unexplained`` diagnosis replaced by a structural one that names a
        shared part, or its detail extended by what the comparison found; an ``objective_scaled``
        one replaced by ``constraint_missing`` only (:data:`REVISITED`); else ``grade``. ``code``
        is the sample's program: the reference program itself (an audit) is not compared with
        itself. A reference run that fails changes nothing; this never raises for what a program
        did, only :class:`~trex_eval.fairness.DeadlinePassed` where the caller's deadline passed
        while the reference program ran for it."""
        found = grade.diagnosis
        last = execution.last_solve
        if (
            found is None
            or found.category not in REVISITED
            or problem.reference_code is None
            or not isinstance(problem.reference, ObjectiveReference)
            or last is None
            or last.model is None
            or (code is not None and code == reference_program(problem))
        ):
            return grade
        reference = await self._model(problem, run)
        generated = last.model
        if reference is None or reference == generated:
            return grade
        try:
            structural = await asyncio.to_thread(structure_diagnosis, reference, generated)
        except Exception:  # a comparison that fails explains nothing; the sample keeps its grade
            return grade
        columns = structural.evidence.get("reference_columns") == structural.evidence.get("generated_columns")
        if structural.category in REVISITED[found.category] and (columns or structural.category not in _ROWS):
            detail = f"against the reference program's model: {structural.detail}"
            diagnosis = structural.model_copy(update={"detail": detail})
        elif found.category is not DiagnosisCategory.UNEXPLAINED:
            return grade
        else:
            diagnosis = found.model_copy(
                update={
                    "detail": f"{found.detail}; against the reference program's model: {structural.detail}",
                    "evidence": {**found.evidence, **structural.evidence},
                }
            )
        return grade.model_copy(update={"diagnosis": diagnosis})

    async def _model(self, problem: Problem, run: Runner) -> LinearModel | None:
        key = (problem.benchmark, problem.id)
        with self._lock:
            if key in self._done:
                return self._done[key]
            pending = self._pending.setdefault(asyncio.get_running_loop(), {})
            future = pending.get(key)
            if future is None:
                # Its own task: a sample cancelled while waiting does not cancel the capture others await.
                future = asyncio.ensure_future(self._capture_or_none(problem, run))
                pending[key] = future
        return await asyncio.shield(future)

    async def _capture_or_none(self, problem: Problem, run: Runner) -> LinearModel | None:
        key = (problem.benchmark, problem.id)
        try:
            model = await self._capture(problem, run)
        except DeadlinePassed:
            self._forget(key)
            raise
        except Exception:  # a reference run the harness could not do explains nothing
            model = None
        with self._lock:
            self._done[key] = model
        self._forget(key)
        return model

    def _forget(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._pending.get(asyncio.get_running_loop(), {}).pop(key, None)

    async def _capture(self, problem: Problem, run: Runner) -> LinearModel | None:
        code = reference_program(problem)
        if code is None:
            return None
        self.executed += 1
        execution = await run(
            problem, Program(code=code, extractor="reference", reason="the reference program")
        )
        last = execution.last_solve
        if execution.status is not ExecStatus.OK or last is None:
            return None
        return last.model
