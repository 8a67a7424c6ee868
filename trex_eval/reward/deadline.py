"""A batch of rollouts graded as one tenant of the fair sandbox lanes (:mod:`trex_eval.fairness`),
answered by its deadline, and the record of a rollout the harness did not grade: no reward
(``reward`` None, verdict ``not_run``), never a 0 a trainer would read as a wrong answer.

Shared by :class:`~.service.RewardService` (one tenant per HTTP request) and
:meth:`~.front.ScorerFront.ascore` (one tenant per call of a trainer's reward function).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from trex_eval import fairness as fair
from trex_eval.records import Verdict
from trex_eval.reward.catalogue import Target
from trex_eval.reward.records import RewardRecord, RewardTimings

T = TypeVar("T")

NOT_GRADED_STAGE = "not_graded"
"""The ``stage`` of a record with no reward."""
DEADLINE = "deadline"
HARNESS_FAILURE = "harness_failure"
"""The causes of a rollout not graded (the ``cause`` label of the server's metric)."""

_tenants = itertools.count(1)


def new_tenant(kind: str) -> str:
    """A tenant name no other batch of this process has (``kind`` says what made it)."""
    return f"{kind}-{next(_tenants)}"


@dataclass(frozen=True)
class Missed:
    """A rollout not graded: ``cause`` (:data:`DEADLINE` or :data:`HARNESS_FAILURE`) and the
    ``reason`` a record gives (where it was, or what failed)."""

    cause: str
    reason: str
    error: BaseException | None = None


class Batch(Generic[T]):
    """``work`` started now as tasks of ``tenant``, due ``deadline_s`` seconds from now (None:
    whenever it ends). The tasks keep their lanes' places in the fair order until they end; work
    still waiting for a lane at the deadline gives its place up, and work running is stopped at
    its wall limit as the deadline cut it (:meth:`~trex_eval.fairness.Grant.fit`)."""

    def __init__(
        self, work: Sequence[Coroutine[Any, Any, T]], *, tenant: str, deadline_s: float | None
    ) -> None:
        self.deadline_s = deadline_s
        self.started = time.monotonic()
        self.due = None if deadline_s is None else self.started + deadline_s
        self.progress = [fair.Progress() for _ in work]
        with fair.scope(tenant, deadline=self.due):
            self.tasks: list[asyncio.Future[T]] = [
                asyncio.ensure_future(_tracked(progress, item))
                for progress, item in zip(self.progress, work, strict=True)
            ]

    async def settle(self) -> list[T | Missed]:
        """Each task's result, or why it has none: the deadline passed (where it was then), or it
        raised (a harness failure, its error kept). Returns at the deadline at the latest; tasks
        not done then go on (their lanes are freed by the cut) and their results are dropped."""
        if self.tasks:
            timeout = None if self.due is None else max(0.0, self.due - time.monotonic())
            await asyncio.wait(self.tasks, timeout=timeout)
        now = time.monotonic()
        return [
            self._outcome(task, progress, now)
            for task, progress in zip(self.tasks, self.progress, strict=True)
        ]

    def _outcome(self, task: asyncio.Future[T], progress: fair.Progress, now: float) -> T | Missed:
        due = (
            "this rollout was not graded"
            if self.deadline_s is None
            else f"the request's deadline ({self.deadline_s:g} s) passed before this rollout was graded"
        )
        if not task.done():
            return Missed(DEADLINE, f"{due}: it was {progress.describe(now)}")
        if task.cancelled():
            return Missed(HARNESS_FAILURE, "harness failure while grading: the grading was cancelled")
        error = task.exception()
        if isinstance(error, fair.DeadlinePassed):
            return Missed(DEADLINE, f"{due}: {error}")
        if error is not None:
            reason = f"harness failure while grading: {type(error).__name__}: {error}"[:500]
            return Missed(HARNESS_FAILURE, reason, error)
        return task.result()


async def _tracked(progress: fair.Progress, work: Coroutine[Any, Any, T]) -> T:
    fair.PROGRESS.set(progress)  # this task's own context: seen by the gates it passes
    return await work


def not_graded(target: Target, missed: Missed, *, policy: str, elapsed_s: float) -> RewardRecord:
    """The record of a rollout the harness did not grade: no reward, ``not_run``, and why."""
    return RewardRecord(
        benchmark=target.benchmark,
        problem_id=target.problem.id,
        reward=None,
        verdict=Verdict.NOT_RUN,
        reason=missed.reason,
        rule=target.rule_spec,
        policy=policy,
        stage=NOT_GRADED_STAGE,
        timings=RewardTimings(total_s=elapsed_s),
    )
