"""Graders behind one small registry: objective rules by spec, structural-equivalence variants by
name. Pure: no I/O, no environment.

The runner asks for a grader once per benchmark and calls it per sample::

    grade = objective_grader("strict:rtol=1e-6")(execution, problem.reference)
    grade = structure_grader("orgeval-fixed")(reference_model, generated_model)

Objective rules and their spec grammar: :mod:`trex_eval.grading.rules`. Structure variants are
imported lazily from ``"module:attribute"`` targets (:data:`STRUCTURE_VARIANTS`), so this package
imports without them and a variant's dependencies load only when it is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import cast

from trex_eval.errors import ConfigError, GradingError
from trex_eval.grading.objective import grade_objective
from trex_eval.grading.objective_base import ObjectiveRule
from trex_eval.grading.rules import DEFAULT_RULE, RULE_SUMMARIES, get_rule, resolve_rule, rule_names
from trex_eval.records import Execution, Grade, LinearModel, ObjectiveReference

__all__ = [
    "DEFAULT_RULE",
    "DEFAULT_STRUCTURE_VARIANT",
    "RULE_SUMMARIES",
    "STRUCTURE_DESCRIPTIONS",
    "STRUCTURE_VARIANTS",
    "ObjectiveGrader",
    "ObjectiveRule",
    "StructureGrader",
    "get_rule",
    "grade_objective",
    "objective_grader",
    "rule_names",
    "structure_grader",
]

ObjectiveGrader = Callable[[Execution, ObjectiveReference], Grade]
"""Grades one program run against an objective reference."""

StructureGrader = Callable[[LinearModel, LinearModel], Grade]
"""Grades a generated model against the reference model: ``grader(reference, generated)``."""

DEFAULT_STRUCTURE_VARIANT = "orgeval-fixed"

STRUCTURE_VARIANTS: Mapping[str, str] = MappingProxyType(
    {
        "orgeval-fixed": "trex_eval.grading.structure_fixed:check_fixed",
        "orgeval-trex-compat": "trex_eval.grading.structure_compat:check_trex_compat",
    }
)
"""Structure variant name -> ``"module:attribute"`` of its grader function."""

STRUCTURE_DESCRIPTIONS: Mapping[str, str] = MappingProxyType(
    {
        "orgeval-fixed": "structural equivalence incl. sense, constant, bounds, integrality, class sizes",
        "orgeval-trex-compat": "the reference ORGEval check (LP round trip, md5-WL colour sets, sufficiency)",
    }
)
"""One line per structure variant, printed next to its numbers."""


def objective_grader(rule: ObjectiveRule | str = DEFAULT_RULE) -> ObjectiveGrader:
    """The grading function of an objective rule object or spec.

    Raises:
        ConfigError: ``rule`` is a spec that does not name a valid rule.
    """
    return resolve_rule(rule).grade


def structure_grader(variant: str = DEFAULT_STRUCTURE_VARIANT) -> StructureGrader:
    """The grading function of a structural-equivalence variant, imported on first use.

    Raises:
        ConfigError: ``variant`` is not a registered name.
        GradingError: the variant's module or function is missing from this installation.
    """
    target = STRUCTURE_VARIANTS.get(variant)
    if target is None:
        raise ConfigError(
            f"unknown structure grader {variant!r}", hint=f"choose one of: {', '.join(STRUCTURE_VARIANTS)}"
        )
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        raise GradingError(
            f"structure grader {variant!r} is not available: module {module_name} is missing",
            hint="reinstall trex-eval; the installation is incomplete",
        ) from error
    grader = getattr(module, attribute, None)
    if not callable(grader):
        raise GradingError(f"structure grader {variant!r}: {target} is not a function")
    return cast(StructureGrader, grader)
