"""Scale-out on Ray: the reward API over a pool of Ray actors, each a :class:`~.scorer.RewardScorer`
with its own warm sandbox pool (one actor per node by default, spread over the cluster).

:class:`RayRewardPool` is used where a ``RewardScorer`` is (``score``, ``ascore``, ``target``,
``score_target``, ``describe``; ``trex-eval serve --ray-address``). Every key is checked in the
calling process first (its own :class:`~.catalogue.Catalogue`), so a bad request fails before
anything travels; then each rollout goes, as JSON, to the actor with the fewest rollouts in flight,
which grades it exactly as a local scorer would (same settings, same rules, same re-solves): the
verdicts do not depend on where a rollout ran. ``ray`` is imported on :meth:`start` only (the
``ray`` extra).
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import Any

from trex_eval.errors import ConfigError
from trex_eval.reward.catalogue import ScorerSettings, Target
from trex_eval.reward.front import ScorerFront
from trex_eval.reward.records import RewardRecord, RewardRequest, Rollout


@dataclass(frozen=True)
class RayPoolSettings:
    """``address``: the Ray cluster (``auto``, ``ray://...`` or a GCS address; None starts a local
    one); ``actors``: scorer actors (None: one per alive node); ``cpus_per_actor``: the CPUs each
    actor reserves from Ray's scheduler (its sandbox lanes are ``ScorerSettings.workers``)."""

    address: str | None = "auto"
    actors: int | None = None
    cpus_per_actor: float = 1.0


class _ScorerActor:
    """The body of one Ray actor: a started scorer, spoken to in JSON."""

    def __init__(self, settings: dict[str, Any]) -> None:
        from trex_eval.reward.scorer import RewardScorer

        self.scorer = RewardScorer(ScorerSettings.from_mapping(settings)).start()

    async def score(self, request: str) -> str:
        [record] = await self.scorer.ascore([RewardRequest.model_validate_json(request)])
        return record.model_dump_json()

    async def rollout(self, request: str) -> str:
        asked = RewardRequest.model_validate_json(request)
        scored = await self.scorer.score_rollout(self.scorer.target(asked.problem), asked.completion)
        return scored.model_dump_json()

    def describe(self) -> dict[str, object]:
        import socket

        return {"host": socket.gethostname(), **self.scorer.describe()}


class _Call(enum.Enum):
    """What an actor is asked: the record, or the record with its evidence."""

    SCORE = "score"
    ROLLOUT = "rollout"


class RayRewardPool(ScorerFront):
    """Scores rollouts on Ray actors; see the module docstring.

    Raises (from :meth:`start`): ConfigError when ``ray`` is not installed or no actor can start.
    """

    def __init__(
        self, settings: ScorerSettings | None = None, ray_settings: RayPoolSettings | None = None
    ) -> None:
        super().__init__(settings)
        self.ray_settings = ray_settings or RayPoolSettings()
        self._actors: list[Any] = []
        self._in_flight: list[int] = []
        self._lock = threading.Lock()
        self._started_ray = False
        self.placement: list[dict[str, object]] = []
        """Where each actor runs (host and its scorer's description), once started."""

    def start(self) -> RayRewardPool:
        """Connect to (or start) Ray and start the actors, waiting until each has its sandbox up."""
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "Ray scale-out needs the ray package", hint='pip install "trex-eval[ray]"'
            ) from None
        self.catalogue.open()
        if not ray.is_initialized():
            ray.init(address=self.ray_settings.address, include_dashboard=False, log_to_driver=False)
            self._started_ray = True
        alive = [node for node in ray.nodes() if node.get("Alive")]  # type: ignore[no-untyped-call]
        count = self.ray_settings.actors or max(1, len(alive))
        fields = self.settings.as_mapping()
        remote = ray.remote(num_cpus=self.ray_settings.cpus_per_actor, scheduling_strategy="SPREAD")(
            _ScorerActor
        )
        self._actors = [remote.remote(fields) for _ in range(count)]
        self._in_flight = [0] * count
        try:
            self.placement = ray.get([actor.describe.remote() for actor in self._actors], timeout=600)
        except Exception as error:
            self.close()
            raise ConfigError(f"the Ray scorer actors did not start: {error}") from None
        return self

    def close(self) -> None:
        """Stop the actors (and Ray, where :meth:`start` started it)."""
        import ray

        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
            self._started_ray = False

    def _where(self) -> dict[str, object]:
        return {"ray": {"actors": len(self._actors), "placement": self.placement}}

    async def score_target(self, target: Target, text: str) -> RewardRecord:
        """The record of one rollout, graded on the least busy actor."""
        return RewardRecord.model_validate_json(await self._on_actor(_Call.SCORE, target, text))

    async def score_rollout(self, target: Target, text: str) -> Rollout:
        """:meth:`score_target` with its evidence (which travels back only when asked for)."""
        return Rollout.model_validate_json(await self._on_actor(_Call.ROLLOUT, target, text))

    async def _on_actor(self, call: _Call, target: Target, text: str) -> str:
        if not self._actors:
            raise ConfigError("the Ray reward pool is not started", hint="use `with RayRewardPool(...)`")
        request = RewardRequest(problem=target.key, completion=text).model_dump_json()
        with self._lock:
            index = min(range(len(self._actors)), key=self._in_flight.__getitem__)
            self._in_flight[index] += 1
        try:
            actor = self._actors[index]
            method = actor.score if call is _Call.SCORE else actor.rollout
            answer: str = await method.remote(request)
        finally:
            with self._lock:
                self._in_flight[index] -= 1
        return answer
