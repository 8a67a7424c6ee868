"""The reward server's core, apart from HTTP: admission (a bounded number of rollouts in the
house, refusal when full or draining), per-request deadlines, metrics and the reward log.

Back-pressure counts rollouts, not requests: a batch is admitted whole only when every one of its
rollouts fits under ``max_pending`` (else :class:`Busy`, HTTP 429). A rollout stays counted until
its grading really ends, also past its request's deadline (the sandbox still runs it), so the
count is the load, not the promises. Once :meth:`RewardService.drain` is called, new batches are
refused (:class:`Draining`, HTTP 503) and :meth:`RewardService.wait_idle` returns when the last
admitted rollout is done.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from trex_eval.records import Verdict
from trex_eval.reward.catalogue import Target
from trex_eval.reward.policy import RewardPolicy
from trex_eval.reward.records import (
    InlineProblem,
    ProblemKey,
    RewardRecord,
    RewardRequest,
    RewardTimings,
    Rollout,
)
from trex_eval.reward.runlog import LoggedRollout, RewardRunLog, unfinished_rollout

MAX_QUEUED_WRITES = 256
"""Request batches waiting for the reward log's writer at most; more are dropped and reported."""

LATENCY_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Upper bounds of the request-latency histogram the metrics export."""


class Scorer(Protocol):
    """What the service needs of a scorer: :class:`~.scorer.RewardScorer` or
    :class:`~.ray_pool.RayRewardPool`."""

    @property
    def policy(self) -> RewardPolicy: ...

    def target(self, problem: ProblemKey | InlineProblem) -> Target: ...

    async def score_target(self, target: Target, text: str) -> RewardRecord: ...

    async def score_rollout(self, target: Target, text: str) -> Rollout: ...

    def describe(self) -> dict[str, object]: ...


class Busy(Exception):
    """The batch does not fit: more rollouts would be in the house than ``max_pending``."""


class Draining(Exception):
    """The server is shutting down and admits nothing new."""


@dataclass(frozen=True)
class ServiceLimits:
    """``max_pending``: rollouts admitted and not yet graded, at most; ``max_batch``: rollouts in
    one request, at most; ``deadline_s``: the default (and largest) seconds a request may take —
    rollouts not graded by then are answered ``not_run`` with reward 0; ``max_body_bytes``: the
    largest request body read."""

    max_pending: int = 4096
    max_batch: int = 2048
    deadline_s: float = 600.0
    max_body_bytes: int = 256 << 20


class RewardService:
    """Admission, deadlines, metrics and the log around a started scorer (local or on Ray).

    ``log``: a JSONL file each answered rollout's record is appended to (with its request id and
    wall time), or None. ``runlog``: run directories each answered rollout is stored in as a
    sample (:class:`~.runlog.RewardRunLog`, opened by the caller), or None; stored by a writer
    thread of its own after the answer (grading never waits for the log), and :meth:`wait_idle`
    waits for those writes too. A write that fails, or that finds too many queued, is reported
    (``on_error``) and never fails the request.
    """

    def __init__(
        self,
        scorer: Scorer,
        limits: ServiceLimits,
        *,
        log: Path | None = None,
        runlog: RewardRunLog | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.scorer, self.limits, self.log, self.runlog = scorer, limits, log, runlog
        self._writes: set[asyncio.Future[None]] = set()
        self._writer = (
            None
            if runlog is None
            else ThreadPoolExecutor(max_workers=1, thread_name_prefix="trex-reward-log")
        )
        self._open = 0
        self.on_error = on_error or (lambda line: print(line, file=sys.stderr, flush=True))
        self.pending = 0
        self.draining = False
        self.started = time.time()
        self._idle = asyncio.Event()
        self._idle.set()
        self._requests: Counter[str] = Counter()
        self._verdicts: Counter[str] = Counter()
        self._reward_sum = 0.0
        self._latency = [0] * (len(LATENCY_BUCKETS_S) + 1)
        self._latency_sum = 0.0
        self._next_id = 0
        self._log_lock = threading.Lock()

    def report(self, line: str) -> None:
        """Say a harness failure where the operator sees it (``on_error``, default stderr)."""
        self.on_error(line)

    def count(self, outcome: str) -> None:
        """Count one answered HTTP request by outcome (``ok``, ``busy``, ``draining``, ``bad_request``...)."""
        self._requests[outcome] += 1

    async def score(
        self, requests: Sequence[RewardRequest], *, deadline_s: float | None = None
    ) -> list[RewardRecord]:
        """The records of ``requests``, in order, within ``deadline_s`` (at most the limit's).

        Raises:
            Busy, Draining: not admitted (nothing was run).
            ConfigError: a request names an unknown benchmark or problem (nothing was run).
        """
        if self.draining:
            raise Draining
        if len(requests) > self.limits.max_batch or self.pending + len(requests) > self.limits.max_pending:
            raise Busy
        deadline = min(deadline_s or self.limits.deadline_s, self.limits.deadline_s)
        targets = [self.scorer.target(request.problem) for request in requests]
        started = time.perf_counter()
        self._admit(len(requests))
        self._open += 1  # idle only once this request's records are handed to the log too
        try:
            tasks = [
                asyncio.ensure_future(self._graded(target, request.completion))
                for target, request in zip(targets, requests, strict=True)
            ]
            for task in tasks:
                task.add_done_callback(self._release)
            left = max(0.0, deadline - (time.perf_counter() - started))
            done, _ = await asyncio.wait(tasks, timeout=left)
            graded = [
                task.result()
                if task in done and task.exception() is None
                else (_unfinished(target, task, deadline, self.scorer.policy.spec), None)
                for task, target in zip(tasks, targets, strict=True)
            ]
            records = [record for record, _ in graded]
            self._observe(records, time.perf_counter() - started)
            if self.runlog is not None:
                self._store(list(zip(targets, requests, graded, strict=True)))
            return records
        finally:
            self._open -= 1
            self._settle()

    async def _graded(self, target: Target, text: str) -> tuple[RewardRecord, Rollout | None]:
        """The record, with its evidence when there is a run log to store it in."""
        if self.runlog is None:
            return await self.scorer.score_target(target, text), None
        rollout = await self.scorer.score_rollout(target, text)
        return rollout.record, rollout

    def _store(
        self, answered: list[tuple[Target, RewardRequest, tuple[RewardRecord, Rollout | None]]]
    ) -> None:
        """Hand a request's rollouts to the log's own writer thread (grading never waits for it);
        past :data:`MAX_QUEUED_WRITES` batches waiting, the batch is dropped and reported."""
        runlog = self.runlog
        assert runlog is not None and self._writer is not None
        if len(self._writes) >= MAX_QUEUED_WRITES:
            self.report(
                f"reward log: {len(answered)} rollout(s) not stored: {len(self._writes)} writes queued"
            )
            return

        def write() -> None:
            try:
                items = [
                    LoggedRollout(target, request, rollout or unfinished_rollout(target, request, record))
                    for target, request, (record, rollout) in answered
                ]
                for reason in runlog.append(items):
                    self.report(f"reward log: a rollout not stored: {reason}")
            except Exception as error:  # the log's failure never fails a request already answered
                self.report(
                    f"reward log: {len(answered)} rollout(s) not stored: {type(error).__name__}: {error}"
                )

        future = asyncio.get_running_loop().run_in_executor(self._writer, write)
        self._writes.add(future)
        future.add_done_callback(self._writes.discard)

    def drain(self) -> None:
        """Admit nothing more."""
        self.draining = True

    async def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Wait until no admitted rollout is left; False if ``timeout_s`` passed first."""
        started = time.perf_counter()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        except TimeoutError:
            return False
        if self._writes:
            left = None if timeout_s is None else max(0.0, timeout_s - (time.perf_counter() - started))
            _, late = await asyncio.wait(set(self._writes), timeout=left)
            return not late
        return True

    def _admit(self, count: int) -> None:
        self.pending += count
        if self.pending:
            self._idle.clear()

    def _release(self, task: asyncio.Future[tuple[RewardRecord, Rollout | None]]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved: a failure past the deadline is not an unhandled error
        self.pending -= 1
        self._settle()

    def _settle(self) -> None:
        if self.pending == 0 and self._open == 0:
            self._idle.set()

    def _observe(self, records: list[RewardRecord], elapsed_s: float) -> None:
        self._next_id += 1
        for record in records:
            self._verdicts[record.verdict.value] += 1
            self._reward_sum += record.reward
        self._latency[_bucket(elapsed_s)] += 1
        self._latency_sum += elapsed_s
        if self.log is not None:
            stamp = time.time()
            lines = "".join(
                json.dumps({"request": self._next_id, "time": stamp, **record.model_dump(mode="json")}) + "\n"
                for record in records
            )
            with self._log_lock, self.log.open("a", encoding="utf-8") as handle:
                handle.write(lines)

    def metrics(self) -> str:
        """The Prometheus text exposition of the counters."""
        lines = [
            "# HELP trex_reward_requests_total HTTP requests answered, by outcome.",
            "# TYPE trex_reward_requests_total counter",
            *(
                f'trex_reward_requests_total{{outcome="{key}"}} {value}'
                for key, value in sorted(self._requests.items())
            ),
            "# HELP trex_reward_rollouts_total Rollouts answered, by verdict.",
            "# TYPE trex_reward_rollouts_total counter",
            *(
                f'trex_reward_rollouts_total{{verdict="{key}"}} {value}'
                for key, value in sorted(self._verdicts.items())
            ),
            "# HELP trex_reward_reward_sum Sum of the rewards paid.",
            "# TYPE trex_reward_reward_sum counter",
            f"trex_reward_reward_sum {self._reward_sum}",
            "# HELP trex_reward_pending Rollouts admitted and not yet graded.",
            "# TYPE trex_reward_pending gauge",
            f"trex_reward_pending {self.pending}",
            "# HELP trex_reward_request_seconds Seconds from admission to answer, per request.",
            "# TYPE trex_reward_request_seconds histogram",
        ]
        total = 0
        for bound, count in zip((*LATENCY_BUCKETS_S, float("inf")), self._latency, strict=True):
            total += count
            label = "+Inf" if bound == float("inf") else f"{bound:g}"
            lines.append(f'trex_reward_request_seconds_bucket{{le="{label}"}} {total}')
        lines += [
            f"trex_reward_request_seconds_sum {self._latency_sum}",
            f"trex_reward_request_seconds_count {total}",
        ]
        return "\n".join(lines) + "\n"


def _bucket(seconds: float) -> int:
    for index, bound in enumerate(LATENCY_BUCKETS_S):
        if seconds <= bound:
            return index
    return len(LATENCY_BUCKETS_S)


def _unfinished(
    target: Target, task: asyncio.Future[tuple[RewardRecord, Rollout | None]], deadline_s: float, policy: str
) -> RewardRecord:
    """The record of a rollout not graded in time, or whose grading raised (a harness failure:
    the reason names it; it is never paid)."""
    error = task.exception() if task.done() and not task.cancelled() else None
    if error is not None:
        reason = f"harness failure while grading: {type(error).__name__}: {error}"[:500]
    else:
        reason = f"the request's deadline ({deadline_s:g} s) passed before this rollout was graded"
    return RewardRecord(
        benchmark=target.benchmark,
        problem_id=target.problem.id,
        reward=0.0,
        verdict=Verdict.NOT_RUN,
        reason=reason,
        rule=target.rule_spec,
        policy=policy,
        stage="no_code",
        timings=RewardTimings(total_s=deadline_s),
    )
