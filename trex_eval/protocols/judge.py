"""One sample's judgement, the same for every entry point: ``run``, ``grade``, ``audit`` (the run's
session) and ``serve`` and the Python reward API (the reward scorer).

:class:`SampleJudge` takes one completion of one problem under its benchmark's
:class:`~trex_eval.protocols.plan.EvaluationPlan` through the whole sequence: extract; a program
without code is graded ``no_code`` (the rule's own grade of it); else run (through the caller's
runner: its sandbox pool, lanes and reused executions), judge (the captured model re-solved where
the verdict hangs on it), the rule's conversion fallback; then, for a grade that did not pass and
a judge asked to diagnose, the diagnosis (edited models re-solved) refined against the reference
program's model (:mod:`.reference_programs`). One error policy: a diagnosis that fails keeps the
grade as judged and is logged (``trex_eval.judge``); it never changes a verdict. Everything else
that fails is the harness's failure and raises.

The judge holds the caches its callers share: the parsed reference LPs (:class:`ReferenceModels`)
and the reference programs' captured models. It runs nothing itself and starts no pool.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from trex_eval import fairness as fair
from trex_eval.lp import parse_lp
from trex_eval.protocols.plan import EvaluationPlan, ProgramRunner, judged
from trex_eval.protocols.reference_programs import ReferencePrograms, Runner
from trex_eval.records import (
    Completion,
    ExecStatus,
    Execution,
    Grade,
    LinearModel,
    Problem,
    Program,
    StructureReference,
)

logger = logging.getLogger("trex_eval.judge")
T = TypeVar("T")


class Offload(Protocol):
    """Runs a blocking call (a re-solve, a diagnosis) off the event loop and awaits its result."""

    def __call__(self, call: Callable[[], T], /) -> Awaitable[T]: ...


async def in_thread(call: Callable[[], T]) -> T:
    """The default :class:`Offload`: ``asyncio.to_thread`` (the loop's default executor)."""
    return await asyncio.to_thread(call)


class ReferenceModels:
    """Parses each reference LP once, for every thread that asks (a :data:`ReferenceModelLoader`).

    Raises (from a call): OSError where the reference LP cannot be read, GradingError where it
    is not a readable LP: the benchmark's data is broken, a harness failure.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, LinearModel] = {}

    def __call__(self, reference: StructureReference) -> LinearModel:
        with self._lock:
            model = self._cache.get(reference.lp_path)
        if model is None:
            # Parsed outside the lock: parsing is idempotent, and a slow file must not hold up
            # every other structure grade.
            model = parse_lp(Path(reference.lp_path).read_text(encoding="utf-8"))
            with self._lock:
                model = self._cache.setdefault(reference.lp_path, model)
        return model


@dataclass(frozen=True, slots=True)
class Judged:
    """What :meth:`SampleJudge.judge` decided: the program as extracted, its execution as verified
    (the program as written, never a conversion's), the grade (with its diagnosis where asked),
    and where the time went, in wall-clock seconds: extraction, the first run of the program as
    written (0 for a program without code), and everything after it (judging, conversions,
    diagnosis)."""

    program: Program
    execution: Execution
    grade: Grade
    extract_s: float
    execute_s: float
    grade_s: float


class SampleJudge:
    """Grades one completion of one problem; see the module docstring.

    ``diagnose``: diagnose every grade that did not pass (``run --diagnose``, ``serve
    --diagnose``). ``verify_wrong``: also re-solve a ``wrong`` claim before grading it again (a
    reward policy that pays for a verified feasible model; a run never does). ``offload`` runs the
    blocking steps (default: :func:`in_thread`). Safe to share between tasks, threads and event
    loops.
    """

    def __init__(self, *, diagnose: bool, verify_wrong: bool = False, offload: Offload = in_thread) -> None:
        self.diagnose = diagnose
        self.verify_wrong = verify_wrong
        self._offload = offload
        self.references = ReferenceModels()
        self.reference_programs = ReferencePrograms()

    async def judge(
        self,
        plan: EvaluationPlan,
        problem: Problem,
        completion: Completion,
        *,
        run: ProgramRunner,
        run_reference: Runner,
    ) -> Judged:
        """The judgement of ``completion`` (which arrived: a failed model request is no program)
        under ``plan``. ``run`` runs one of the sample's programs (as written, or a conversion);
        ``run_reference`` runs a problem's reference program for a diagnosis, both as ``plan``
        runs programs.

        Raises:
            DeadlinePassed: the caller's deadline (:mod:`trex_eval.fairness`) passed before the
                execution was judged.
            Exception: the harness's failures (the sandbox, a verifier process, the data).
        """
        started = time.perf_counter()
        program = plan.extract(completion)
        extracted = executed = time.perf_counter()
        if program.code is None:
            execution = Execution(status=ExecStatus.NO_CODE, detail=program.reason)
            grade = plan.grade(problem, execution, reference_model=self.references)
        else:
            execution = await run(program)
            executed = time.perf_counter()
            # Past its caller's deadline nobody waits for the grade: the re-solve is not spent.
            fair.check_deadline("its execution was graded")
            fair.note("being graded (its captured model re-solved where the verdict needs it)")
            grade_of = functools.partial(plan.grade, problem, reference_model=self.references)
            execution, grade = await self._offload(
                functools.partial(
                    judged,
                    grade_of,
                    execution,
                    verify_wrong=self.verify_wrong,
                    budget_s=plan.verification_budget_s,
                )
            )
            # A rule's conversion fallback (optmath:fallback=true) runs its rewrites of a miss.
            grade = await plan.fallback(problem, program, grade, run=run, reference_model=self.references)
        if self.diagnose and not grade.passed:
            grade = await self._diagnosed(
                plan, problem, completion, program, execution, grade, run_reference=run_reference
            )
        done = time.perf_counter()
        return Judged(
            program=program,
            execution=execution,
            grade=grade,
            extract_s=extracted - started,
            execute_s=executed - extracted,
            grade_s=done - executed,
        )

    async def _diagnosed(
        self,
        plan: EvaluationPlan,
        problem: Problem,
        completion: Completion,
        program: Program,
        execution: Execution,
        grade: Grade,
        *,
        run_reference: Runner,
    ) -> Grade:
        """``grade`` with why it failed: the value search over edited copies of the captured
        model, then, where that leaves it unexplained, the reference program's model compared
        part by part. A step that fails keeps what the steps before it found, and is logged."""
        diagnosed = functools.partial(
            plan.diagnosed, problem, completion, execution, grade, reference_model=self.references
        )
        try:
            grade = await self._offload(diagnosed)
            return await self.reference_programs.refined(
                grade, problem, execution, run=run_reference, code=program.code
            )
        except Exception:  # a diagnosis never costs a sample its grade
            logger.exception(
                "the diagnosis of a %s sample of problem %s failed; its grade is kept (%s)",
                problem.benchmark,
                problem.id,
                grade.verdict.value,
            )
            return grade
