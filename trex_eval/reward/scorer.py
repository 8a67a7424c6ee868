"""The verified grader as a reward function: score batches of (problem, completion) rollouts.

:class:`RewardScorer` holds one warm sandbox pool and the benchmarks it was asked for, and grades
each rollout exactly as a run grades a sample (the benchmark's protocol, extractor, limits and
rule; every pass re-derived by the harness's own re-solve), then pays it by a named policy
(:mod:`.policy`). It is safe to share: :meth:`score` may be called from many threads at once,
and :meth:`ascore` from any event loop; a batch's rollouts run concurrently on the pool's lanes.

Programs never see the answers: the data directory, the pinned source repositories and the
folder of every benchmark named at start-up are hidden from the sandbox. A problem key naming a
benchmark that was not named at start-up is loaded on first use only when its files lie in a
hidden folder already (a shipped benchmark); otherwise the call fails and says to name it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time

from trex_eval.errors import ConfigError
from trex_eval.extract import extract
from trex_eval.protocols.plan import judged
from trex_eval.records import (
    Completion,
    ExecStatus,
    Execution,
    Grade,
    ObjectiveReference,
    Program,
    SandboxLimits,
)
from trex_eval.reward.catalogue import INLINE_BENCHMARK, ScorerSettings, Target
from trex_eval.reward.front import ScorerFront
from trex_eval.reward.records import RewardRecord, RewardTimings, Rollout
from trex_eval.run.session import ReferenceModels
from trex_eval.sandbox import Job, SandboxPool

__all__ = ["INLINE_BENCHMARK", "RewardScorer", "ScorerSettings", "Target"]

logger = logging.getLogger("trex_eval.reward")


class RewardScorer(ScorerFront):
    """Scores rollouts; see the module docstring. Start it (``with``, ``async with`` or
    :meth:`start`) before scoring: starting the sandbox pool takes a few seconds.

    Raises (from the constructor): ConfigError for an unknown policy or rule.
    """

    def __init__(self, settings: ScorerSettings | None = None) -> None:
        super().__init__(settings)
        self._lock = threading.Lock()
        self._references = ReferenceModels()
        self._pool: SandboxPool | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> RewardScorer:
        """Load the named benchmarks and start the sandbox pool (idempotent).

        Raises:
            DataError, BenchmarkError: the data or a named benchmark cannot be found or read.
        """
        with self._lock:
            if self._pool is not None:
                return self
            self.catalogue.open()
            pool = SandboxPool(
                limits=SandboxLimits(),
                workers=self.settings.workers,
                verify=False,  # judged below, as a run does: only where the verdict hangs on it
                isolation=self.settings.isolation,  # type: ignore[arg-type]
                hidden=tuple(str(path) for path in self.catalogue.hidden),
            )
            pool.start()
            self._pool = pool
        return self

    def close(self) -> None:
        """Stop the sandbox pool (idempotent)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _where(self) -> dict[str, object]:
        pool = self._pool
        return {"sandbox": pool.describe() if pool is not None else None}

    async def score_rollout(self, target: Target, text: str) -> Rollout:
        pool = self._pool
        if pool is None:
            raise ConfigError(
                "the reward scorer is not started", hint="use `with RewardScorer(...)` or call start()"
            )
        started = time.perf_counter()
        completion = Completion(problem_id=target.problem.id, sample_index=0, text=text)
        program = target.plan.extract(completion) if target.plan else extract(completion, extractor="default")
        extracted = time.perf_counter()
        executed = extracted
        if program.code is None:
            execution = Execution(status=ExecStatus.NO_CODE, detail=program.reason)
            grade = self._grade(target, execution)
        else:
            execution = await self._run(pool, target, program)
            executed = time.perf_counter()
            execution, grade = await asyncio.to_thread(self._judge, target, execution)
            if (
                target.plan is not None
            ):  # a rule's conversion fallback (optmath:fallback=true), as a run has it
                grade = await target.plan.fallback(
                    target.problem,
                    program,
                    grade,
                    run=functools.partial(self._run, pool, target),
                    reference_model=self._references,
                )
        if self.settings.diagnose and target.plan is not None and not grade.passed:
            try:
                grade = await asyncio.to_thread(
                    functools.partial(target.plan.diagnosed, reference_model=self._references),
                    target.problem,
                    completion,
                    execution,
                    grade,
                )
            except Exception:  # a diagnosis never costs a rollout its reward: it keeps the grade
                logger.exception("diagnosis of a %s rollout failed", target.benchmark)
        ran = None if program.code is None else execution  # what the policy calls "nothing ran"
        reward, stage = self.policy.pay(grade.verdict, ran, program)
        done = time.perf_counter()
        solve = execution.last_solve
        record = RewardRecord(
            benchmark=target.benchmark,
            problem_id=target.problem.id,
            reward=reward,
            verdict=grade.verdict,
            reason=grade.reason,
            rule=grade.rule,
            policy=self.policy.spec,
            stage=stage,
            status=None if ran is None else ran.status,
            objective=None if solve is None else solve.verified_objective,
            diagnosis=grade.diagnosis,
            timings=RewardTimings(
                extract_s=extracted - started,
                execute_s=executed - extracted,
                grade_s=done - executed,
                total_s=done - started,
            ),
        )
        return Rollout(
            record=record, completion=completion, program=program, execution=execution, grade=grade
        )

    async def _run(self, pool: SandboxPool, target: Target, program: Program) -> Execution:
        job, limits = self._job(target, program)
        return await pool.arun(job, limits=limits)

    def _job(self, target: Target, program: Program) -> tuple[Job, SandboxLimits]:
        if target.plan is not None:
            return target.plan.job(target.problem, program), target.plan.limits
        assert program.code is not None
        return Job(
            code=program.code, files=dict(target.problem.instance_files), expect="solve"
        ), SandboxLimits()

    def _grade(self, target: Target, execution: Execution) -> Grade:
        if target.plan is not None:
            return target.plan.grade(target.problem, execution, reference_model=self._references)
        assert target.rule is not None and isinstance(target.problem.reference, ObjectiveReference)
        return target.rule.grade(execution, target.problem.reference)

    def _judge(self, target: Target, execution: Execution) -> tuple[Execution, Grade]:
        """The grade, re-solving the captured model where the verdict (or the policy) needs it."""
        return judged(
            functools.partial(self._grade, target), execution, verify_wrong=self.policy.verify_wrong
        )
