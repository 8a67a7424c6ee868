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

Each function returns verl's dict form: ``score`` (the reward), ``correct`` (1.0 or 0.0) and
``graded`` (1.0, or 0.0 for a rollout the harness did not grade), which verl keeps per item in
its reward extra info and logs beside the score.

Two keys of ``reward_kwargs`` are this module's, not the scorer's: ``deadline_s``, seconds one
call may take (default: until every rollout is graded), and ``no_reward_score``, the ``score`` of
a rollout not graded by then (default 0.0). verl's reward is a float in a tensor, with no "no
reward" (a NaN would spread through the group's advantages), so such a rollout is paid
``no_reward_score`` and flagged ``graded`` 0.0, for the trainer's logs or a filter of its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from trex_eval.errors import ConfigError
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
    """The rewards of a batch, graded concurrently (verl's ``BatchRewardManager``).

    Raises:
        ConfigError: an unknown ``reward_kwargs`` key, a ``deadline_s`` that is not a positive
            number, a ``no_reward_score`` that is not a finite number, or a row naming no problem.
    """
    deadline_s, fallback = _own_kwargs(kwargs)
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    requests = []
    for index, (truth, text, info) in enumerate(zip(ground_truths, solution_strs, infos, strict=True)):
        named = info.get(REWARD_KEY) if isinstance(info, Mapping) else None
        source = named if named is not None else truth
        where = f"item {index} ({data_sources[index]}): " + (
            "extra_info" if named is not None else "ground_truth"
        )
        requests.append(RewardRequest(problem=problem_from(source, where=where), completion=text))
    scorer = shared_scorer(ScorerSettings.from_mapping(kwargs, what="reward_kwargs"))
    records = scorer.score(requests, deadline_s=deadline_s)
    return [verl_dict(record, no_reward_score=fallback) for record in records]


def verl_dict(record: RewardRecord, *, no_reward_score: float = 0.0) -> dict[str, float]:
    """verl's dict form of one record (see the module docstring)."""
    return {
        "score": no_reward_score if record.reward is None else record.reward,
        "correct": 1.0 if record.verdict.value == "correct" else 0.0,
        "graded": 0.0 if record.reward is None else 1.0,
    }


def _own_kwargs(kwargs: dict[str, Any]) -> tuple[float | None, float]:
    """Take this module's keys out of ``kwargs``: ``deadline_s`` and ``no_reward_score``."""
    deadline = kwargs.pop("deadline_s", None)
    fallback = kwargs.pop("no_reward_score", 0.0)
    if deadline is not None and (
        isinstance(deadline, bool) or not isinstance(deadline, int | float) or not 0 < deadline < math.inf
    ):
        raise ConfigError(
            f"reward_kwargs.deadline_s must be a positive number of seconds, not {deadline!r}",
            hint="leave it out to wait for every rollout",
        )
    if isinstance(fallback, bool) or not isinstance(fallback, int | float) or not math.isfinite(fallback):
        raise ConfigError(
            f"reward_kwargs.no_reward_score must be a finite number, not {fallback!r}",
            hint="the score verl gets for a rollout not graded in time (default 0.0)",
        )
    return (None if deadline is None else float(deadline)), float(fallback)
