"""The verified grader as the reward of RL training.

:class:`RewardScorer` (:mod:`.scorer`) scores batches of rollouts, each graded as a run grades a
sample and paid by a named policy (:mod:`.policy`); :mod:`.trl` and :mod:`.verl` load it the way
those trainers load reward functions, ``trex-eval serve`` (:mod:`.server`) serves it over HTTP, and
:mod:`.client` is a TRL reward function that asks such a server (it imports only ``httpx``, so a
trainer's environment needs nothing else of trex-eval's).

Names are imported from their modules on first use (PEP 562): importing :mod:`.client` must not
load the grader.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trex_eval.reward.policy import POLICIES as POLICIES
    from trex_eval.reward.policy import RewardPolicy as RewardPolicy
    from trex_eval.reward.policy import get_policy as get_policy
    from trex_eval.reward.records import InlineProblem as InlineProblem
    from trex_eval.reward.records import ProblemKey as ProblemKey
    from trex_eval.reward.records import RewardRecord as RewardRecord
    from trex_eval.reward.records import RewardRequest as RewardRequest
    from trex_eval.reward.records import RewardTimings as RewardTimings
    from trex_eval.reward.scorer import RewardScorer as RewardScorer
    from trex_eval.reward.scorer import ScorerSettings as ScorerSettings

_HOMES = {
    "POLICIES": "trex_eval.reward.policy",
    "RewardPolicy": "trex_eval.reward.policy",
    "get_policy": "trex_eval.reward.policy",
    "InlineProblem": "trex_eval.reward.records",
    "ProblemKey": "trex_eval.reward.records",
    "RewardRecord": "trex_eval.reward.records",
    "RewardRequest": "trex_eval.reward.records",
    "RewardTimings": "trex_eval.reward.records",
    "RewardScorer": "trex_eval.reward.scorer",
    "ScorerSettings": "trex_eval.reward.scorer",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'trex_eval.reward' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
