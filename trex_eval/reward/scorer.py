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
import threading
import time
from collections.abc import Sequence
from types import TracebackType

from trex_eval.errors import ConfigError
from trex_eval.extract import extract
from trex_eval.records import (
    Completion,
    ExecStatus,
    Execution,
    Grade,
    ObjectiveReference,
    Program,
    SandboxLimits,
    Verdict,
)
from trex_eval.reward.catalogue import INLINE_BENCHMARK, Catalogue, ScorerSettings, Target
from trex_eval.reward.policy import RewardPolicy, get_policy
from trex_eval.reward.records import InlineProblem, ProblemKey, RewardRecord, RewardRequest, RewardTimings
from trex_eval.run.session import ReferenceModels
from trex_eval.sandbox import Job, SandboxPool
from trex_eval.sandbox.verify import verify_last_solve

__all__ = ["INLINE_BENCHMARK", "RewardScorer", "ScorerSettings", "Target"]


class RewardScorer:
    """Scores rollouts; see the module docstring. Start it (``with``, ``async with`` or
    :meth:`start`) before scoring: starting the sandbox pool takes a few seconds.

    Raises (from the constructor): ConfigError for an unknown policy or rule.
    """

    def __init__(self, settings: ScorerSettings | None = None) -> None:
        self.settings = settings or ScorerSettings()
        self.policy: RewardPolicy = get_policy(self.settings.policy)
        self.catalogue = Catalogue(self.settings)
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

    def __enter__(self) -> RewardScorer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> RewardScorer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.close)

    def describe(self) -> dict[str, object]:
        """What scores (for manifests and the server's health answer)."""
        pool = self._pool
        return {
            "policy": self.policy.spec,
            "protocol": self.settings.protocol,
            "rule_override": self.settings.rule,
            "inline_rule": self.catalogue.inline_rule.spec,
            "benchmarks": self.catalogue.rules(),
            "sandbox": pool.describe() if pool is not None else None,
        }

    # ------------------------------------------------------------------ scoring

    def score(self, requests: Sequence[RewardRequest]) -> list[RewardRecord]:
        """One record per request, in order; blocks until all are graded.

        Raises:
            ConfigError: called from a running event loop (use :meth:`ascore`), or a request names
                an unknown benchmark or problem.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ascore(requests))
        raise ConfigError(
            "RewardScorer.score was called inside a running event loop",
            hint="await scorer.ascore(requests) there instead",
        )

    async def ascore(self, requests: Sequence[RewardRequest]) -> list[RewardRecord]:
        """:meth:`score` for asyncio code: the rollouts run concurrently."""
        targets = [self.target(request.problem) for request in requests]  # fail before running any
        return list(
            await asyncio.gather(
                *(
                    self.score_target(target, request.completion)
                    for target, request in zip(targets, requests, strict=True)
                )
            )
        )

    async def score_target(self, target: Target, text: str) -> RewardRecord:
        """The record of one rollout answering ``target`` (from :meth:`target`)."""
        pool = self._pool
        if pool is None:
            raise ConfigError(
                "the reward scorer is not started", hint="use `with RewardScorer(...)` or call start()"
            )
        started = time.perf_counter()
        completion = Completion(problem_id=target.problem.id, sample_index=0, text=text)
        program = target.plan.extract(completion) if target.plan else extract(completion, extractor="default")
        extracted = time.perf_counter()
        execution: Execution | None = None
        executed = extracted
        if program.code is None:
            grade = self._grade(target, Execution(status=ExecStatus.NO_CODE, detail=program.reason))
        else:
            job, limits = self._job(target, program)
            execution = await pool.arun(job, limits=limits)
            executed = time.perf_counter()
            execution, grade = await asyncio.to_thread(self._judge, target, execution)
        reward, stage = self.policy.pay(grade.verdict, execution, program)
        done = time.perf_counter()
        solve = execution.last_solve if execution is not None else None
        return RewardRecord(
            benchmark=target.benchmark,
            problem_id=target.problem.id,
            reward=reward,
            verdict=grade.verdict,
            reason=grade.reason,
            rule=grade.rule,
            policy=self.policy.spec,
            stage=stage,
            status=None if execution is None else execution.status,
            objective=None if solve is None else solve.verified_objective,
            timings=RewardTimings(
                extract_s=extracted - started,
                execute_s=executed - extracted,
                grade_s=done - executed,
                total_s=done - started,
            ),
        )

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
        grade = self._grade(target, execution)
        needs = grade.verdict is Verdict.UNVERIFIED or (
            self.policy.verify_wrong and grade.verdict is Verdict.WRONG
        )
        if not needs:
            return execution, grade
        checked = verify_last_solve(execution)
        if checked is execution:
            return execution, grade
        return checked, self._grade(target, checked)

    def target(self, problem: ProblemKey | InlineProblem) -> Target:
        """The problem ready to grade (:meth:`.catalogue.Catalogue.target`)."""
        return self.catalogue.target(problem)
