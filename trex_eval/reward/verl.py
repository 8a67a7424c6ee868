"""verl: a module for ``custom_reward_function.path`` (``name: compute_score``, or
``compute_score_batch`` with ``reward_model.reward_manager=batch``)::

    custom_reward_function:
      path: <site-packages>/trex_eval/reward/verl.py
      name: compute_score
      reward_kwargs: {policy: binary, workers: 4}

``ground_truth`` (the row's ``reward_model.ground_truth``) names the problem: JSON
``{"benchmark": ..., "problem_id": ...}`` as ``trex-eval export-rl`` writes it, or an optimum for an
inline problem (:mod:`.problems`); ``extra_info["trex_problem"]``, when present, wins. The reward
settings come from ``reward_kwargs`` (the fields of :class:`~.scorer.ScorerSettings`) and must be
the same on every call of a process, which holds one scorer (:mod:`.shared`).

Each function returns verl's dict form: ``score`` (the reward) and ``correct`` (1.0 or 0.0), which
verl logs beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trex_eval.reward.problems import REWARD_KEY, problem_from
from trex_eval.reward.records import RewardRecord, RewardRequest
from trex_eval.reward.scorer import ScorerSettings
from trex_eval.reward.shared import shared_scorer


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """The reward of one rollout (verl's ``NaiveRewardManager`` calls it once per item)."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """The rewards of a batch, graded concurrently (verl's ``BatchRewardManager``)."""
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    requests = []
    for index, (truth, text, info) in enumerate(zip(ground_truths, solution_strs, infos, strict=True)):
        named = info.get(REWARD_KEY) if isinstance(info, Mapping) else None
        source = named if named is not None else truth
        where = f"item {index} ({data_sources[index]}): " + (
            "extra_info" if named is not None else "ground_truth"
        )
        requests.append(RewardRequest(problem=problem_from(source, where=where), completion=text))
    records = shared_scorer(ScorerSettings.from_mapping(kwargs, what="reward_kwargs")).score(requests)
    return [_verl_dict(record) for record in records]


def _verl_dict(record: RewardRecord) -> dict[str, float]:
    return {"score": record.reward, "correct": 1.0 if record.verdict.value == "correct" else 0.0}
