"""Grading: one registry of rules (:mod:`~trex_eval.grading.registry`), objective rules
(:mod:`~trex_eval.grading.objective`), structural-equivalence rules
(:mod:`~trex_eval.grading.structure`) and the LP/MPS readers they compare
(:mod:`~trex_eval.lp`). Pure: no I/O, no environment.

The run asks for a rule once per benchmark and calls it per sample::

    rule = get_rule("strict:rtol=1e-6")          # or "orgeval-fixed", "trex-compat", ...
    grade = rule.grade(execution, problem.reference)      # objective rules
    grade = rule.grade(reference_model, generated_model)  # structure rules
"""

from __future__ import annotations

from trex_eval.grading.objective.base import ObjectiveRule
from trex_eval.grading.registry import (
    DEFAULT_RULE,
    DEFAULT_RULES,
    FAMILIES,
    Rule,
    RuleFamily,
    families,
    get_rule,
    objective_rule,
    rule_for,
    structure_rule,
    superseded,
)
from trex_eval.grading.structure.base import StructureRule
from trex_eval.records import Execution, Grade, ObjectiveReference

__all__ = [
    "DEFAULT_RULE",
    "DEFAULT_RULES",
    "FAMILIES",
    "ObjectiveRule",
    "Rule",
    "RuleFamily",
    "StructureRule",
    "families",
    "get_rule",
    "grade_objective",
    "objective_rule",
    "rule_for",
    "structure_rule",
    "superseded",
]


def grade_objective(
    execution: Execution, reference: ObjectiveReference, *, rule: ObjectiveRule | str = DEFAULT_RULE
) -> Grade:
    """Grade one program run against an objective reference under ``rule`` (an objective rule
    object or spec; :attr:`Grade.rule` is the rule's canonical spec, e.g. ``"strict@3"``).

    Raises:
        ConfigError: ``rule`` is a spec that does not name an objective rule.
        GradingError: ``reference`` cannot be judged against (an optimal reference without a
            finite value, or a status other than optimal/infeasible/unbounded/inf_or_unbd).
    """
    chosen = objective_rule(rule) if isinstance(rule, str) else rule
    return chosen.grade(execution, reference)
