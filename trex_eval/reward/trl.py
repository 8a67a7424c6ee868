"""TRL: a ``reward_funcs`` entry for ``GRPOTrainer`` (and any trainer that calls
``reward_func(prompts=..., completions=..., **dataset_columns) -> list[float]``)::

    from trex_eval.reward.trl import TrlReward
    trainer = GRPOTrainer(model=..., reward_funcs=[TrlReward()], train_dataset=dataset, ...)

The dataset's rows name their problems (a ``trex_problem`` column, as ``trex-eval export-rl``
writes it, or ``benchmark`` + ``problem_id`` columns; :mod:`.problems`). The scorer starts on the
first call (a few seconds) and stops when the object is closed or the interpreter exits. TRL
names the reward's log column after ``__name__``.

A rollout the harness did not grade (the call's ``deadline_s`` passed first) is ``None``, TRL's
"no reward": TRL turns it into NaN, which its per-function reward metrics skip (``nanmean``); it
warns when every reward function gave None for a row, whose summed reward is then 0
(``nansum``). A graded failure is 0.0 (or the policy's stage), never None.

:class:`AsyncTrlReward` is the same reward as a coroutine: TRL (``trl.trainer.utils.
is_async_callable``, which looks at an instance's ``__call__``) runs async reward functions on an
event loop of its own, all of a step's at once, so the grader's rollouts overlap another async
reward's work without a thread per call.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from typing import Any

from trex_eval.reward.client import trainer_prompts
from trex_eval.reward.problems import completion_text, problems_from_columns
from trex_eval.reward.records import RewardRecord, RewardRequest
from trex_eval.reward.scorer import RewardScorer, ScorerSettings


class _TrlBase:
    """What both forms share: the scorer (their own, made from ``settings``, unless ``scorer`` is
    given and already started by the caller), the name TRL logs under, and a call's requests."""

    def __init__(
        self,
        settings: ScorerSettings | None = None,
        *,
        scorer: RewardScorer | None = None,
        name: str = "trex_eval",
        deadline_s: float | None = None,
    ) -> None:
        self.__name__ = name
        self.deadline_s = deadline_s
        self._own = scorer is None
        self._scorer = scorer or RewardScorer(settings)
        self._started = not self._own
        self._starting = threading.Lock()
        self.last_records: list[RewardRecord] = []

    def _start(self) -> RewardScorer:
        """The scorer, started on the first call (a few seconds; idempotent, thread-safe)."""
        with self._starting:
            if not self._started:
                self._scorer.start()
                atexit.register(self.close)
                self._started = True
        return self._scorer

    @staticmethod
    def _requests(prompts: Any, completions: Any, columns: dict[str, Any]) -> list[RewardRequest]:
        texts = [completion_text(item) for item in completions or ()]
        columns.pop("completion_ids", None)
        columns.pop("trainer_state", None)
        problems = problems_from_columns(len(texts), columns)
        asked = trainer_prompts(prompts, len(texts))
        return [
            RewardRequest.model_validate({"problem": p, "completion": t, "prompt": q})
            for p, t, q in zip(problems, texts, asked, strict=True)
        ]

    def close(self) -> None:
        """Stop the scorer this object made (a scorer given to it is the caller's to close)."""
        if self._own:
            self._scorer.close()


class TrlReward(_TrlBase):
    """A TRL reward function backed by a :class:`~.scorer.RewardScorer` (its own, made from
    ``settings``, unless ``scorer`` is given and already started by the caller).

    ``deadline_s``: seconds one call may take at most (None: until every rollout is graded);
    a rollout not graded by then is None. Each call is one tenant of the scorer's fair lanes.
    ``last_records`` holds the records of the latest call, for logging verdicts beside rewards.
    Blocks; called inside a running event loop it raises ConfigError (use :class:`AsyncTrlReward`).
    """

    def __call__(self, prompts: Any = None, completions: Any = None, **columns: Any) -> list[float | None]:
        requests = self._requests(prompts, completions, columns)
        self.last_records = self._start().score(requests, deadline_s=self.deadline_s)
        return [record.reward for record in self.last_records]


class AsyncTrlReward(_TrlBase):
    """:class:`TrlReward` as a coroutine function, for TRL's async reward path (or any event loop):
    ``await reward(prompts=..., completions=..., **columns)``. Calls on one loop run concurrently,
    each one tenant of the scorer's fair lanes; the scorer's start (first call) runs on a thread
    so that it does not stall the loop. ``last_records`` holds the latest call's records to finish.
    """

    async def __call__(
        self, prompts: Any = None, completions: Any = None, **columns: Any
    ) -> list[float | None]:
        requests = self._requests(prompts, completions, columns)
        scorer = self._scorer if self._started else await asyncio.to_thread(self._start)
        records = await scorer.ascore(requests, deadline_s=self.deadline_s)
        self.last_records = records
        return [record.reward for record in records]
