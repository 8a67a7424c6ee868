"""One process-wide scorer for adapters that trainers load as plain functions (verl's
``custom_reward_function``), started on first use and closed when the interpreter exits."""

from __future__ import annotations

import atexit
import threading

from trex_eval.errors import ConfigError
from trex_eval.reward.scorer import RewardScorer, ScorerSettings

_lock = threading.Lock()
_scorer: RewardScorer | None = None


def started_scorer(settings: ScorerSettings) -> RewardScorer | None:
    """The process's scorer when it is started with ``settings`` already, else None; never blocks
    (an event loop asks this first, and starts the scorer on a thread only when it is None)."""
    scorer = _scorer
    return scorer if scorer is not None and scorer.settings == settings else None


def shared_scorer(settings: ScorerSettings) -> RewardScorer:
    """The process's started scorer, made with ``settings`` on the first call.

    Raises:
        ConfigError: a later call asks for different settings (one process, one reward).
    """
    global _scorer
    with _lock:
        if _scorer is None:
            scorer = RewardScorer(settings).start()
            atexit.register(scorer.close)
            _scorer = scorer
        elif _scorer.settings != settings:
            raise ConfigError(
                f"this process already scores with {_scorer.settings}, not {settings}",
                hint="give every call the same reward settings (verl: custom_reward_function.reward_kwargs)",
            )
        return _scorer
