"""What every structure rule shares: the :class:`StructureRule` protocol and :class:`CheckRule`,
a parameterless rule around a check function. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from trex_eval.grading.spec import RuleIdentity, RuleSpec, rule_spec
from trex_eval.records import Grade, GraderKind, LinearModel

CheckFunction = Callable[[LinearModel, LinearModel], Grade]
"""``check(reference, generated)``: the grade of a generated model against the reference."""


@runtime_checkable
class StructureRule(RuleIdentity, Protocol):
    """A named, versioned way of judging a generated model against the reference model.

    ``spec`` is the canonical ``name@version`` text that :attr:`Grade.rule` records.
    ``grade(reference, generated)`` never raises for a bad model: an unreadable or out-of-scope
    model is a verdict (``wrong``, ``not_determinable``).
    """

    def grade(self, reference: LinearModel, generated: LinearModel, /) -> Grade: ...


@dataclass(frozen=True)
class CheckRule:
    """A structure rule without parameters: ``check`` decides, the rest names it."""

    name: str
    version: str
    description: str
    check: CheckFunction
    kind: ClassVar[GraderKind] = GraderKind.STRUCTURE

    @property
    def spec(self) -> str:
        return rule_spec(self.name, self.version, "")

    def grade(self, reference: LinearModel, generated: LinearModel, /) -> Grade:
        return self.check(reference, generated)

    def build(self, spec: RuleSpec) -> CheckRule:
        """The registry factory: this rule, after checking ``spec`` carries no parameters."""
        spec.values(primary=None, allowed=())
        return self
