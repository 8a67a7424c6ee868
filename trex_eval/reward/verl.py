"""verl: a module for verl's custom reward function. verl's reward loop (verl 0.9: ``reward.*``;
its reward managers await a function ``inspect.iscoroutinefunction`` calls async, and run a
blocking one on a thread of their executor) takes ``compute_score_async``::

    reward:
      custom_reward_function:
        path: pkg://trex_eval.reward.verl   # or this file's path
        name: compute_score_async
        reward_kwargs: {policy: binary, workers: 4}

The blocking ``compute_score`` (one rollout) and ``compute_score_batch`` (verl's
``BatchRewardManager``) serve the older top-level ``custom_reward_function`` and any caller
without an event loop; called inside a running loop they refuse (ConfigError) naming the async
form. The keys verl's managers add to a call of their own (:data:`VERL_CALL_KEYS`) are dropped.

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

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from trex_eval.errors import ConfigError
from trex_eval.reward.problems import REWARD_KEY, problem_from
from trex_eval.reward.records import RewardRecord, RewardRequest
from trex_eval.reward.scorer import ScorerSettings
from trex_eval.reward.shared import shared_scorer, started_scorer

VERL_CALL_KEYS = ("reward_router_address", "reward_model_tokenizer", "strict_box_verify")
"""Keys verl's reward managers add to every call of their own (a reward model's router and
tokenizer, DAPO's box check): set by verl, not by ``reward_kwargs``, and of no use to this grader,
so dropped rather than refused as unknown settings."""


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """The reward of one rollout (verl's ``NaiveRewardManager`` calls it once per item). Blocks.

    Raises:
        ConfigError: as :func:`compute_score_batch`, and when called inside a running event loop
            (name ``compute_score_async`` there).
    """
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """The rewards of a batch, graded concurrently (verl's ``BatchRewardManager``). Blocks.

    Raises:
        ConfigError: an unknown ``reward_kwargs`` key, a ``deadline_s`` that is not a positive
            number, a ``no_reward_score`` that is not a finite number, a row naming no problem, or
            a call inside a running event loop (name ``compute_score_batch_async`` there).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        call = _Call.of(data_sources, solution_strs, ground_truths, extra_infos, kwargs)
        records = shared_scorer(call.settings).score(call.requests, deadline_s=call.deadline_s)
        return call.answers(records)
    raise ConfigError(
        "trex_eval.reward.verl's blocking functions were called inside a running event loop",
        hint="set custom_reward_function.name to compute_score_async (or compute_score_batch_async), "
        "which verl's reward loop awaits",
    )


async def compute_score_async(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """:func:`compute_score` as a coroutine, for verl's reward loop (its reward managers await a
    ``custom_reward_function`` that ``inspect.iscoroutinefunction`` calls async, one call per
    rollout, many at once): the calls share the process's scorer, each one tenant of its fair
    lanes, with no thread per call. Raises as :func:`compute_score_batch` does, the running-loop
    case aside."""
    answers = await compute_score_batch_async(
        [data_source], [solution_str], [ground_truth], [extra_info], **kwargs
    )
    return answers[0]


async def compute_score_batch_async(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """:func:`compute_score_batch` as a coroutine (see :func:`compute_score_async`). The process's
    scorer starts on a thread on the first call (a few seconds), so the loop is never stalled."""
    call = _Call.of(data_sources, solution_strs, ground_truths, extra_infos, kwargs)
    scorer = started_scorer(call.settings)
    if scorer is None:
        scorer = await asyncio.to_thread(shared_scorer, call.settings)
    return call.answers(await scorer.ascore(call.requests, deadline_s=call.deadline_s))


class _Call(NamedTuple):
    """One call's rollouts as requests, with the settings and this module's keys it was given.

    A named tuple, not a dataclass: verl 0.9 executes this file from its path without entering it
    in ``sys.modules`` (``verl.utils.import_utils.load_module``), where ``dataclass`` fails on
    string annotations (it looks the class's module up there)."""

    requests: list[RewardRequest]
    settings: ScorerSettings
    deadline_s: float | None
    no_reward_score: float

    @classmethod
    def of(
        cls,
        data_sources: Sequence[str],
        solution_strs: Sequence[str],
        ground_truths: Sequence[Any],
        extra_infos: Sequence[Mapping[str, Any] | None] | None,
        kwargs: dict[str, Any],
    ) -> _Call:
        for key in VERL_CALL_KEYS:
            kwargs.pop(key, None)
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
        settings = ScorerSettings.from_mapping(kwargs, what="reward_kwargs")
        return cls(requests=requests, settings=settings, deadline_s=deadline_s, no_reward_score=fallback)

    def answers(self, records: Sequence[RewardRecord]) -> list[dict[str, float]]:
        return [verl_dict(record, no_reward_score=self.no_reward_score) for record in records]


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
