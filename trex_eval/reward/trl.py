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
"""

from __future__ import annotations

import atexit
from typing import Any

from trex_eval.reward.client import trainer_prompts
from trex_eval.reward.problems import completion_text, problems_from_columns
from trex_eval.reward.records import RewardRecord, RewardRequest
from trex_eval.reward.scorer import RewardScorer, ScorerSettings


class TrlReward:
    """A TRL reward function backed by a :class:`~.scorer.RewardScorer` (its own, made from
    ``settings``, unless ``scorer`` is given and already started by the caller).

    ``deadline_s``: seconds one call may take at most (None: until every rollout is graded);
    a rollout not graded by then is None. Each call is one tenant of the scorer's fair lanes.
    ``last_records`` holds the records of the latest call, for logging verdicts beside rewards.
    """

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
        self.last_records: list[RewardRecord] = []

    def __call__(self, prompts: Any = None, completions: Any = None, **columns: Any) -> list[float | None]:
        texts = [completion_text(item) for item in completions or ()]
        columns.pop("completion_ids", None)
        columns.pop("trainer_state", None)
        problems = problems_from_columns(len(texts), columns)
        if not self._started:
            self._scorer.start()
            atexit.register(self.close)
            self._started = True
        asked = trainer_prompts(prompts, len(texts))
        requests = [
            RewardRequest.model_validate({"problem": p, "completion": t, "prompt": q})
            for p, t, q in zip(problems, texts, asked, strict=True)
        ]
        self.last_records = self._scorer.score(requests, deadline_s=self.deadline_s)
        return [record.reward for record in self.last_records]

    def close(self) -> None:
        """Stop the scorer this object made (a scorer given to it is the caller's to close)."""
        if self._own:
            self._scorer.close()
