"""Objective grading: the one entry point, :func:`grade_objective`. Pure.

The rules themselves live in :mod:`~trex_eval.grading.objective_tolerance` (``strict`` and the
parameterised rules) and :mod:`~trex_eval.grading.objective_compat` (``trex-compat``); the spec
grammar and registry in :mod:`~trex_eval.grading.rules`.
"""

from __future__ import annotations

from trex_eval.grading.objective_base import ObjectiveRule
from trex_eval.grading.rules import DEFAULT_RULE, resolve_rule
from trex_eval.records import Execution, Grade, ObjectiveReference


def grade_objective(
    execution: Execution, reference: ObjectiveReference, *, rule: ObjectiveRule | str = DEFAULT_RULE
) -> Grade:
    """Grade one program run against an objective reference.

    ``rule`` is a rule object or a spec such as ``"strict"``, ``"strict:rtol=1e-6"``,
    ``"rel:1e-4"`` or ``"trex-compat"`` (grammar in :mod:`trex_eval.grading.rules`). The
    returned :attr:`Grade.rule` is the rule's canonical spec (``"strict@1"``).

    Raises:
        ConfigError: ``rule`` is a spec that does not name a valid rule.
        GradingError: ``reference`` cannot be judged against (an optimal reference without a
            finite value, or a status other than optimal/infeasible/unbounded/inf_or_unbd).
    """
    return resolve_rule(rule).grade(execution, reference)
