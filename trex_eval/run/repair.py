"""The repair protocol as the run uses it (``trex-eval run --repair N``): its home is
:mod:`trex_eval.protocols.repair`, shared with the reward server's repair environment
(:mod:`trex_eval.reward.environment`); the names are re-exported here for the run's modules."""

from __future__ import annotations

from trex_eval.protocols.repair import (
    FEEDBACK_MODES,
    MESSAGE_CHARS,
    TAIL_CHARS,
    TAIL_LINES,
    TEMPLATE,
    FailureKind,
    RepairFacts,
    RepairTemplate,
    conversation,
    repair_need,
)

__all__ = [
    "FEEDBACK_MODES",
    "MESSAGE_CHARS",
    "TAIL_CHARS",
    "TAIL_LINES",
    "TEMPLATE",
    "FailureKind",
    "RepairFacts",
    "RepairTemplate",
    "conversation",
    "repair_need",
]
