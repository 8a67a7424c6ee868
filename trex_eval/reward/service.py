"""The reward server's core, apart from HTTP: admission (a bounded number of rollouts in the
house, refusal when full or draining), per-request deadlines, metrics and the reward log.

Back-pressure counts rollouts, not requests: a batch is admitted whole only when every one of its
rollouts fits under ``max_pending`` (else :class:`Busy`, HTTP 429). A rollout stays counted until
its grading really ends, also past its request's deadline, so the count is the load, not the
promises; past the deadline that is soon: one waiting for a lane gives its place up, one running
is stopped by its wall limit, which the deadline cut, and none is graded. Once
:meth:`RewardService.drain` is called, new batches are refused (:class:`Draining`, HTTP 503)
and :meth:`RewardService.wait_idle` returns when the last admitted rollout is done.

Each request is one tenant of the fair sandbox lanes (:mod:`trex_eval.fairness`): a free
lane goes to the request holding the fewest, so a request's many or slow rollouts cannot keep
another request's rollouts waiting behind all of them. A rollout not graded by its request's
deadline (waiting for a lane, running, being graded) or whose grading failed in the harness gets
no reward: ``reward`` None (JSON ``null``), verdict ``not_run``, the reason saying where it was
(:mod:`.deadline`); ``trex_reward_not_graded_total`` counts them by cause.
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

from trex_eval.reward.catalogue import Target
from trex_eval.reward.deadline import DEADLINE, HARNESS_FAILURE, Batch, Missed, not_graded
from trex_eval.reward.policy import RewardPolicy
from trex_eval.reward.records import (
    InlineProblem,
    ProblemKey,
    RewardRecord,
    RewardRequest,
    Rollout,
)
from trex_eval.reward.runlog import LoggedRollout, RewardRunLog, unfinished_rollout
from trex_eval.verify import verifier_lanes

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
    rollouts not graded by then are answered ``not_run`` with no reward (None); ``max_body_bytes``:
    the largest request body read.

    The HTTP front's limits (:mod:`.server`, :mod:`.intake`): ``max_connections``: connections
    open at once, at most (at the cap a new one closes the longest-idle one, or is answered 503
    when every open one has a request in progress); ``idle_timeout_s``: seconds a connection may
    wait for its next request (first byte) before it is closed; ``request_timeout_s``: seconds a
    request may take to arrive from its first byte to its last (else 408 and closed), and an
    answer to be taken by the client (else the connection is dropped); ``body_budget_bytes``: the
    bytes of request bodies held at once, server-wide (a body that would pass it is answered 503
    with ``Retry-After`` before it is read; one larger than the whole budget, 413)."""

    max_pending: int = 4096
    max_batch: int = 2048
    deadline_s: float = 600.0
    max_body_bytes: int = 256 << 20
    max_connections: int = 512
    idle_timeout_s: float = 60.0
    request_timeout_s: float = 60.0
    body_budget_bytes: int = 512 << 20


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
        self._not_graded: Counter[str] = Counter()
        self._reward_sum = 0.0
        self._latency = [0] * (len(LATENCY_BUCKETS_S) + 1)
        self._latency_sum = 0.0
        self._next_id = 0
        self._log_lock = threading.Lock()
        self._past_per_problem = 0
        self._told_per_problem = False

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
        self._check_groups(targets)
        started = time.perf_counter()
        self._admit(len(requests))
        self._open += 1  # idle only once this request's records are handed to the log too
        self._next_id += 1
        request_id = self._next_id
        try:
            batch = Batch(
                [
                    self._graded(target, request.completion)
                    for target, request in zip(targets, requests, strict=True)
                ],
                tenant=f"request-{request_id}",
                deadline_s=deadline,
            )
            for task in batch.tasks:
                task.add_done_callback(self._release)
            try:
                outcomes = await batch.settle()
            except asyncio.CancelledError:  # nobody waits for the answer (the client left)
                for task in batch.tasks:
                    task.cancel()
                raise
            graded = [
                self._missed(target, outcome, time.perf_counter() - started)
                if isinstance(outcome, Missed)
                else outcome
                for target, outcome in zip(targets, outcomes, strict=True)
            ]
            records = [record for record, _ in graded]
            self._observe(request_id, records, time.perf_counter() - started)
            if self.runlog is not None:
                self._store(list(zip(targets, requests, graded, strict=True)))
            return records
        finally:
            self._open -= 1
            self._settle()

    def _check_groups(self, targets: Sequence[Target]) -> None:
        """Count a request's rollouts past the reward log's ``per_problem`` (``--per-problem``)
        for their problem, and say so on the first such request.

        Past it a rollout is scored and paid like any (a reward never depends on the log) and
        stored in a later epoch (:mod:`.runlog`), so a group larger than ``per_problem`` spans
        epochs, each a part of it. Only one request's rollouts are counted: a trainer that sends
        a group over several requests is not told apart from one that sends the next group."""
        if self.runlog is None or not targets:
            return
        limit = self.runlog.per_problem
        groups = Counter((target.benchmark, target.problem.id) for target in targets)
        past = sum(max(0, count - limit) for count in groups.values())
        if not past:
            return
        self._past_per_problem += past
        if self._told_per_problem:
            return
        self._told_per_problem = True
        (benchmark, problem_id), largest = groups.most_common(1)[0]
        self.report(
            f"reward log: a request carried {largest} rollouts of {benchmark} {problem_id}, more than "
            f"--per-problem {limit}: all are scored and paid, and those past {limit} are stored in later "
            f"epochs, so one group spans {-(-largest // limit)} epochs; serve with --per-problem {largest} "
            "(the trainer's group size) to keep each group in one epoch (said once; /metrics counts "
            "such rollouts: trex_reward_rollouts_past_per_problem_total)"
        )

    def _missed(
        self, target: Target, missed: Missed, elapsed_s: float
    ) -> tuple[RewardRecord, Rollout | None]:
        self._not_graded[missed.cause] += 1
        if missed.cause == HARNESS_FAILURE:  # the operator's to see: the trainer only gets null
            self.report(f"a rollout of {target.benchmark} {target.problem.id}: {missed.reason}")
        return not_graded(target, missed, policy=self.scorer.policy.spec, elapsed_s=elapsed_s), None

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

    def _observe(self, request_id: int, records: list[RewardRecord], elapsed_s: float) -> None:
        for record in records:
            self._verdicts[record.verdict.value] += 1
            self._reward_sum += record.reward or 0.0
        self._latency[_bucket(elapsed_s)] += 1
        self._latency_sum += elapsed_s
        if self.log is not None:
            stamp = time.time()
            lines = "".join(
                json.dumps({"request": request_id, "time": stamp, **record.model_dump(mode="json")}) + "\n"
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
            "# HELP trex_reward_not_graded_total Rollouts answered with no reward (null, not_run): "
            "the server did not grade them, by cause (deadline: their request's deadline passed "
            "first; harness_failure: grading failed in the harness).",
            "# TYPE trex_reward_not_graded_total counter",
            *(
                f'trex_reward_not_graded_total{{cause="{key}"}} {self._not_graded[key]}'
                for key in (DEADLINE, HARNESS_FAILURE)
            ),
            "# HELP trex_reward_reward_sum Sum of the rewards paid (rollouts with no reward add nothing).",
            "# TYPE trex_reward_reward_sum counter",
            f"trex_reward_reward_sum {self._reward_sum}",
            "# HELP trex_reward_rollouts_past_per_problem_total Rollouts of a request past --per-problem "
            "for their problem (scored and paid; stored in a later epoch of --out).",
            "# TYPE trex_reward_rollouts_past_per_problem_total counter",
            f"trex_reward_rollouts_past_per_problem_total {self._past_per_problem}",
            "# HELP trex_reward_pending Rollouts admitted and not yet graded.",
            "# TYPE trex_reward_pending gauge",
            f"trex_reward_pending {self.pending}",
            "# HELP trex_verifier_replaced_total Verifier processes of this process ended (a re-solve "
            "or model-file reading over its CPU budget, or a crash) and replaced.",
            "# TYPE trex_verifier_replaced_total counter",
            f"trex_verifier_replaced_total {verifier_lanes().replaced}",
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


def health_view(described: dict[str, object]) -> dict[str, object]:
    """What ``/health`` shows of a scorer's description: what an operator checks (policy, rules,
    benchmarks, the isolation level in force, sandbox lanes; Ray actors) and nothing that names a
    path, a command line or a host."""
    view = {
        key: described.get(key)
        for key in ("policy", "protocol", "rule_override", "inline_rule", "benchmarks")
    }
    ray = described.get("ray")
    if isinstance(ray, dict):
        placement = [actor for actor in ray.get("placement", []) if isinstance(actor, dict)]
        levels = {str(actor.get("isolation")) for actor in placement}
        view["lanes"] = sum(_lanes(actor.get("sandbox")) for actor in placement)
        view["ray_actors"] = ray.get("actors")
    else:
        levels = {str(described.get("isolation"))}
        view["lanes"] = _lanes(described.get("sandbox"))
    view["isolation"] = "/".join(sorted(levels)) or None
    return view


def _lanes(sandbox: object) -> int:
    workers = sandbox.get("workers") if isinstance(sandbox, dict) else None
    return workers if isinstance(workers, int) else 0
