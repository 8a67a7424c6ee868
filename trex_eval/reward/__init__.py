"""The verified grader as the reward of RL training.

:class:`RewardScorer` (:mod:`.scorer`) scores batches of rollouts, each graded as a run grades a
sample and paid by a named policy (:mod:`.policy`); :mod:`.trl` and :mod:`.verl` load it the way
those trainers load reward functions, and ``trex-eval serve`` (:mod:`.server`) serves it over HTTP.
"""

from __future__ import annotations

from trex_eval.reward.policy import POLICIES, RewardPolicy, get_policy
from trex_eval.reward.records import InlineProblem, ProblemKey, RewardRecord, RewardRequest, RewardTimings
from trex_eval.reward.scorer import RewardScorer, ScorerSettings

__all__ = [
    "POLICIES",
    "InlineProblem",
    "ProblemKey",
    "RewardPolicy",
    "RewardRecord",
    "RewardRequest",
    "RewardScorer",
    "RewardTimings",
    "ScorerSettings",
    "get_policy",
]
