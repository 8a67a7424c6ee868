"""What every reward scorer offers on top of grading one rollout: the context managers, batch
scoring (blocking and asyncio), key lookup and the description of what grades. A scorer
(:class:`~.scorer.RewardScorer`, :class:`~.ray_pool.RayRewardPool`) supplies ``start``, ``close``,
``score_rollout`` and the extra part of its description."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from types import TracebackType
from typing import TypeVar

from trex_eval.errors import ConfigError
from trex_eval.reward.catalogue import Catalogue, ScorerSettings, Target
from trex_eval.reward.deadline import Batch, Missed, new_tenant, not_graded
from trex_eval.reward.policy import RewardPolicy, get_policy, require_diagnosis
from trex_eval.reward.records import InlineProblem, ProblemKey, RewardRecord, RewardRequest, Rollout

_Scorer = TypeVar("_Scorer", bound="ScorerFront")


class ScorerFront:
    """The shared half of a scorer; see the module docstring.

    Raises (from the constructor): ConfigError for an unknown or invalid policy (or one paying by
    diagnosis on a scorer that does not diagnose) or rule.
    """

    def __init__(self, settings: ScorerSettings | None = None) -> None:
        self.settings = settings or ScorerSettings()
        self.policy: RewardPolicy = get_policy(self.settings.policy)
        require_diagnosis(self.policy, diagnose=self.settings.diagnose)
        self.catalogue = Catalogue(self.settings)

    def start(self: _Scorer) -> _Scorer:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    async def score_target(self, target: Target, text: str) -> RewardRecord:
        """The record of one rollout answering ``target`` (from :meth:`target`)."""
        return (await self.score_rollout(target, text)).record

    async def score_rollout(self, target: Target, text: str) -> Rollout:
        """:meth:`score_target` with the evidence a reward log stores (:mod:`.runlog`)."""
        raise NotImplementedError

    def _where(self) -> dict[str, object]:
        """Where rollouts run (the sandbox pool, the Ray actors), for :meth:`describe`."""
        raise NotImplementedError

    def __enter__(self: _Scorer) -> _Scorer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self: _Scorer) -> _Scorer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.close)

    def describe(self) -> dict[str, object]:
        """What scores (for manifests and the server's health answer)."""
        return {
            "policy": self.policy.spec,
            "protocol": self.settings.protocol,
            "rule_override": self.settings.rule,
            "inline_rule": self.catalogue.inline_rule.spec,
            "benchmarks": self.catalogue.rules(),
            **self._where(),
        }

    def target(self, problem: ProblemKey | InlineProblem) -> Target:
        """The problem ready to grade (:meth:`.catalogue.Catalogue.target`)."""
        return self.catalogue.target(problem)

    def score(
        self, requests: Sequence[RewardRequest], *, deadline_s: float | None = None
    ) -> list[RewardRecord]:
        """One record per request, in order; blocks until all are graded, or ``deadline_s``
        seconds at most: a rollout not graded by then has no reward (``reward`` None, ``not_run``,
        :mod:`.deadline`). A call is one tenant of the fair sandbox lanes: calls from several
        threads at once share the lanes round robin, whatever their sizes.

        Raises:
            ConfigError: called from a running event loop (use :meth:`ascore`), or a request names
                an unknown benchmark or problem.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ascore(requests, deadline_s=deadline_s))
        raise ConfigError(
            f"{type(self).__name__}.score was called inside a running event loop",
            hint="await scorer.ascore(requests) there instead",
        )

    async def ascore(
        self, requests: Sequence[RewardRequest], *, deadline_s: float | None = None
    ) -> list[RewardRecord]:
        """:meth:`score` for asyncio code: the rollouts run concurrently.

        Raises:
            Exception: the first harness failure of a rollout graded in time (as :meth:`score`).
        """
        targets = [self.target(request.problem) for request in requests]  # fail before running any
        started = time.monotonic()
        batch = Batch(
            [
                self.score_target(target, request.completion)
                for target, request in zip(targets, requests, strict=True)
            ],
            tenant=new_tenant("call"),
            deadline_s=deadline_s,
        )
        records = []
        for target, outcome in zip(targets, await batch.settle(), strict=True):
            if isinstance(outcome, Missed):
                if outcome.error is not None:
                    raise outcome.error
                outcome = not_graded(
                    target, outcome, policy=self.policy.spec, elapsed_s=time.monotonic() - started
                )
            records.append(outcome)
        return records
