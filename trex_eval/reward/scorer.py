"""The verified grader as a reward function: score batches of (problem, completion) rollouts.

:class:`RewardScorer` holds one warm sandbox pool and the benchmarks it was asked for, and grades
each rollout exactly as a run grades a sample (the run's own judge,
:class:`~trex_eval.protocols.judge.SampleJudge`: the benchmark's protocol, extractor, limits and
rule; every pass re-derived by the harness's own re-solve), then pays it by a named policy
(:mod:`.policy`). It is safe to share: :meth:`score` may be called from many threads at once,
and :meth:`ascore` from any event loop; a batch's rollouts run concurrently on the pool's lanes.

Programs never see the answers: the data directory, the pinned source repositories and the
folder of every benchmark named at start-up are hidden from the sandbox. A problem key must name
one of those benchmarks, else the call fails naming the key and the benchmarks served; with
``ScorerSettings(any_benchmark=True)`` another benchmark is loaded on first use when its files lie
in a hidden folder already (a shipped benchmark), and refused otherwise.

Records say whether a rollout matches the reference, never the reference itself (its value, its
rows): :mod:`.labels`, unless ``ScorerSettings(show_reference=True)``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from trex_eval.errors import ConfigError
from trex_eval.fairness import FairGate
from trex_eval.protocols.judge import SampleJudge
from trex_eval.protocols.plan import EvaluationPlan
from trex_eval.records import Completion, Execution, Problem, Program, SandboxLimits
from trex_eval.reward.catalogue import ACCEPT_WEAK_ISOLATION, INLINE_BENCHMARK, ScorerSettings, Target
from trex_eval.reward.front import ScorerFront
from trex_eval.reward.labels import label_free
from trex_eval.reward.records import RewardRecord, RewardTimings, Rollout
from trex_eval.reward.terms import Graded
from trex_eval.sandbox import SandboxPool
from trex_eval.sandbox.isolation import floor_refusal

__all__ = ["INLINE_BENCHMARK", "RewardScorer", "ScorerSettings", "Target"]

T = TypeVar("T")

GRADING_THREADS = 64
"""Threads the scorer grades on (judging, re-solve waits, diagnosis). Most of their time is spent
waiting for a verifier process, in the fair order of :mod:`trex_eval.fairness`; a pool this size
keeps one request's waiting rollouts from holding every thread (asyncio's default executor has
``cores + 4``), which would put another request back in first-come-first-served order."""
GRADING_RESERVE = 4
"""Grading threads kept for requests that hold none (see :class:`~trex_eval.fairness.FairGate`)."""


class RewardScorer(ScorerFront):
    """Scores rollouts; see the module docstring. Start it (``with``, ``async with`` or
    :meth:`start`) before scoring: starting the sandbox pool takes a few seconds.

    Raises (from the constructor): ConfigError for an unknown policy or rule.
    """

    def __init__(self, settings: ScorerSettings | None = None) -> None:
        super().__init__(settings)
        self._lock = threading.Lock()
        # The same judge as a run's (trex_eval.protocols.judge); the policy decides whether a
        # wrong claim is re-solved too.
        self._judge = SampleJudge(
            diagnose=self.settings.diagnose,
            verify_wrong=self.policy.verify_wrong,
            offload=self._in_grading_thread,
        )
        self._pool: SandboxPool | None = None
        self._graders = ThreadPoolExecutor(GRADING_THREADS, thread_name_prefix="trex-grade")
        self._grading_gate = FairGate(GRADING_THREADS, name="grading thread", reserve=GRADING_RESERVE)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> RewardScorer:
        """Load the named benchmarks and start the sandbox pool (idempotent).

        Raises:
            DataError, BenchmarkError: the data or a named benchmark cannot be found or read.
            SandboxError: the isolation level in force is below bubblewrap and the settings did
                not name it (``isolation="auto"``), or the level they name does not work here.
        """
        with self._lock:
            if self._pool is not None:
                return self
            self.catalogue.open()
            pool = SandboxPool(
                limits=SandboxLimits(),
                workers=self.settings.workers,
                isolation=self.settings.isolation,  # type: ignore[arg-type]
                hidden=tuple(str(path) for path in self.catalogue.hidden),
            )
            pool.start()
            refusal = floor_refusal(
                pool.isolation_report,
                asked=self.settings.isolation,
                needed_by="rewards",
                accept=ACCEPT_WEAK_ISOLATION,
            )
            if refusal is not None:
                pool.close()
                raise refusal
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
        if pool is None:
            return {"isolation": None, "sandbox": None}
        return {"isolation": pool.isolation, "sandbox": pool.describe()}

    async def _in_grading_thread(self, call: Callable[[], T]) -> T:
        """``call()`` on one of the scorer's grading threads, in this task's context (its tenant
        and deadline, as ``asyncio.to_thread`` would carry them). The threads are lent in the fair
        order of :mod:`trex_eval.fairness`, a few kept for requests holding none: a request with
        hundreds of rollouts waiting for verifier processes cannot keep another request's
        rollout from even reaching the verifier's queue.

        Raises:
            DeadlinePassed: the request's deadline passed while it waited for a thread.
        """
        grant = await self._grading_gate.acquire()
        try:
            running = self._graders.submit(contextvars.copy_context().run, call)
        except BaseException:
            grant.release()
            raise
        # The slot is given back when the thread's work ends (on that thread), not when this task
        # stops waiting for it: a cancelled task, or a closed loop, leaves the call running.
        running.add_done_callback(lambda _: grant.release())
        return await asyncio.shield(asyncio.wrap_future(running))

    async def score_rollout(self, target: Target, text: str) -> Rollout:
        pool = self._pool
        if pool is None:
            raise ConfigError(
                "the reward scorer is not started", hint="use `with RewardScorer(...)` or call start()"
            )
        completion = Completion(problem_id=target.problem.id, sample_index=0, text=text)
        run = functools.partial(self._run, pool, target.plan)
        judged = await self._judge.judge(
            target.plan,
            target.problem,
            completion,
            run=functools.partial(run, target.problem),
            run_reference=run,
        )
        program, execution, grade = judged.program, judged.execution, judged.grade
        ran = None if program.code is None else execution  # what the policy calls "nothing ran"
        paid = self.policy.pay(
            Graded(problem=target.problem, text=text, program=program, execution=ran, grade=grade)
        )
        if not self.settings.show_reference:
            # Paid on the full grade (a diagnosis credit reads its category); then the one place a
            # grade leaves: the record, the answer and the stored sample all carry this one, so
            # none of them quotes the label.
            grade = label_free(grade, execution)
        solve = execution.last_solve
        record = RewardRecord(
            benchmark=target.benchmark,
            problem_id=target.problem.id,
            reward=paid.reward,
            verdict=grade.verdict,
            reason=grade.reason,
            rule=grade.rule,
            policy=self.policy.spec,
            stage=paid.stage,
            terms=paid.terms,
            status=None if ran is None else ran.status,
            objective=None if solve is None else solve.verified_objective,
            diagnosis=grade.diagnosis,
            timings=RewardTimings(
                extract_s=judged.extract_s,
                execute_s=judged.execute_s,
                grade_s=judged.grade_s,
                total_s=judged.extract_s + judged.execute_s + judged.grade_s,
            ),
        )
        return Rollout(
            record=record, completion=completion, program=program, execution=execution, grade=grade
        )

    @staticmethod
    async def _run(pool: SandboxPool, plan: EvaluationPlan, problem: Problem, program: Program) -> Execution:
        """``program`` run for ``problem`` as ``plan`` runs programs (a rollout's, a conversion of
        it, or a reference program for a diagnosis), on one of the pool's fair lanes."""
        return await pool.arun(plan.job(problem, program), limits=plan.limits_for(problem))
