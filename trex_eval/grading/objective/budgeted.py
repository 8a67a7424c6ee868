"""``budgeted``: the objective rule for solves that may not finish (MIPLIB-NL, issue 49). Pure.

Its budget is part of the rule, so the spec names it (``budgeted@1:cpu=600,verify=120``) and
every grade, manifest entry and leaderboard column carries it:

* ``cpu`` -- CPU seconds a program may use (all its processes and solver threads; default
  :data:`PROGRAM_CPU_S`). CPU seconds, not wall seconds: a loaded machine stretches a program's
  wall time but not its CPU time, so the same program gets the same verdict with or without
  other work beside it. A program that finished over it is ``timeout``, the budget named. (The
  sandbox's own wall limit, which discounts starvation, still ends a program that never stops;
  that is ``timeout`` too.)
* ``verify`` -- CPU seconds of the harness's re-solve of the captured model (reading, building
  and solving; default :data:`VERIFY_CPU_S`), fixed by the rule rather than grown from the
  program's CPU time as the default rules' is (:func:`trex_eval.verify.verification_budget`).
  A re-solve that cannot finish within it is ``unverified``, the budget named: never a silent
  pass or fail.

The decision, top to bottom, after the program failures of every rule:

1. Over ``cpu``: ``timeout``.
2. The last solve is a feasible point the solver did not prove optimal (``time_limit``,
   ``suboptimal``, ``feasible``, ``interrupted``: a budget ran out or the solver stopped early):
   never ``correct``, whatever its value. It is ``wrong``, with the reason starting
   :data:`UNPROVEN` and giving the point's value and its distance to the label. Why not a verdict
   of its own: verdicts are counted by every report, metric and reward policy
   (``report/``, ``metrics.py``, ``reward/policies``), and each would have to be taught where a
   new one sits; what it must mean here -- not correct, the model's miss within the stated
   budget -- is ``wrong`` already, as ``strict`` grades such a solve. The reason tells them apart
   (:func:`is_unproven`). The harness cannot vouch for the point itself: the hooks capture a
   MIP's point only at a proven optimum (``LinearModel.primal``).
3. Otherwise ``strict``'s procedure (:mod:`.tolerance`, rtol 1e-4, atol 1e-6): a proven optimum
   the harness's re-solve matched, within tolerance of the label, is ``correct``; a claim the
   harness's re-solve could not derive within ``verify`` is ``unverified``, the reason naming
   the budget; a forged claim (its re-solve disagrees) is ``wrong``.

What the benchmark's authors did: optsuite/MIPLIB-NL@9f14ad1 publishes no evaluator (README.md,
scores as table images only); its reference programs each choose their own limits (81 of 223
``solve.py`` set a ``TimeLimit`` of 300-3600 s, some a ``MIPGap`` of 1 %), so there is no stated
convention to reproduce as a second rule (``docs/miplib-nl.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from trex_eval.errors import ConfigError
from trex_eval.grading.objective.base import RuleBudgets, check_reference, fmt
from trex_eval.grading.objective.tolerance import ToleranceRule
from trex_eval.grading.spec import RuleSpec, rule_spec
from trex_eval.records import (
    ExecStatus,
    Execution,
    Grade,
    GraderKind,
    ObjectiveEvidence,
    ObjectiveReference,
    SolveStatus,
    Verdict,
    finite_or_none,
)

BUDGETED_RULE_VERSION = "1"
PROGRAM_CPU_S = 600.0
"""Default CPU seconds of a program: ten minutes of one core, the middle of the reference
programs' own ``TimeLimit`` choices (300-3600 s)."""
VERIFY_CPU_S = 120.0
"""Default CPU seconds of a re-solve: :data:`trex_eval.verify.VERIFY_MAX_S`, the most any rule's
re-solve may take."""
UNPROVEN = "feasible point, not proven optimal"
"""How the reason of a graded feasible-but-unproven solve starts (:func:`is_unproven`)."""
_STOPPED = frozenset(
    {SolveStatus.TIME_LIMIT, SolveStatus.SUBOPTIMAL, SolveStatus.FEASIBLE, SolveStatus.INTERRUPTED}
)


def is_unproven(grade: Grade) -> bool:
    """Whether ``grade`` is a ``budgeted`` rule's feasible-but-unproven point (a ``wrong``
    verdict whose reason starts :data:`UNPROVEN`)."""
    return grade.verdict is Verdict.WRONG and grade.reason.startswith(UNPROVEN)


@dataclass(frozen=True)
class BudgetedRule:
    """The ``budgeted`` rule (module docstring): ``program_cpu_s`` and ``verify_cpu_s`` are its
    budgets in CPU seconds; ``strict`` is the tolerance rule of step 3."""

    program_cpu_s: float = PROGRAM_CPU_S
    verify_cpu_s: float = VERIFY_CPU_S
    strict: ToleranceRule = ToleranceRule(name="strict", title="strict")  # noqa: RUF009 -- frozen
    name: str = "budgeted"
    version: str = BUDGETED_RULE_VERSION
    kind: ClassVar[GraderKind] = GraderKind.OBJECTIVE

    @property
    def spec(self) -> str:
        return rule_spec(self.name, self.version, f"cpu={self.program_cpu_s:g},verify={self.verify_cpu_s:g}")

    def budgets(self) -> RuleBudgets:
        """The rule's budgets (see ``BudgetingRule``)."""
        return RuleBudgets(program_cpu_s=self.program_cpu_s, verify_cpu_s=self.verify_cpu_s)

    @property
    def description(self) -> str:
        return (
            f"budgeted: a program gets {self.program_cpu_s:g} CPU s and the harness's re-solve "
            f"{self.verify_cpu_s:g} CPU s; a proven optimum the re-solve matched, "
            f"{self.strict.tolerance.formula()}, is correct; a feasible point not proven optimal is "
            "never correct (wrong, reason 'feasible point, not proven optimal'); a re-solve over its "
            "budget is unverified"
        )

    def grade(self, execution: Execution, reference: ObjectiveReference, /) -> Grade:
        """Judge ``execution`` (module docstring, steps 1-3).

        Raises:
            GradingError: the reference cannot be judged against (see ``check_reference``).
        """
        check_reference(reference)
        budgets = f"budgets: program {self.program_cpu_s:g} CPU s, re-solve {self.verify_cpu_s:g} CPU s"
        cpu = execution.cpu_s
        if execution.status is ExecStatus.TIMEOUT or (cpu is not None and cpu > self.program_cpu_s):
            used = "unknown" if cpu is None else f"{cpu:.1f}"
            return self._grade(
                Verdict.TIMEOUT,
                f"the program ran past its budget: {used} CPU s used of {self.program_cpu_s:g} "
                f"({execution.status.value}, {execution.wall_s:.1f} s wall); {budgets}",
            )
        solve = execution.last_solve
        if execution.status is ExecStatus.OK and solve is not None and solve.status in _STOPPED:
            return self._unproven(solve.status, finite_or_none(solve.objective), reference, budgets)
        inner = self.strict.grade(execution, reference)
        reason = inner.reason
        if inner.verdict is Verdict.UNVERIFIED:
            reason += f" ({budgets})"
        return inner.model_copy(update={"rule": self.spec, "reason": reason})

    def _unproven(
        self,
        status: SolveStatus,
        value: float | None,
        reference: ObjectiveReference,
        budgets: str,
    ) -> Grade:
        label = reference.value
        if value is None:
            what = f"{UNPROVEN}: the solve ended {status.value} without a point"
        elif label is None:
            what = (
                f"{UNPROVEN}: the solve ended {status.value} at {fmt(value)}; "
                f"the reference is {reference.status.value}"
            )
        else:
            gap = abs(value - label) / max(1.0, abs(label))
            what = (
                f"{UNPROVEN}: the solve ended {status.value} at {fmt(value)}, the label is {fmt(label)} "
                f"(|Δ|/max(1,|label|) {gap:.3g})"
            )
        evidence = ObjectiveEvidence(
            predicted=value,
            predicted_status=status,
            reference=label,
            reference_status=reference.status,
            abs_error=None if value is None or label is None else abs(value - label),
            atol=self.strict.tolerance.atol,
            rtol=self.strict.tolerance.rtol,
            claimed=value,
        )
        return self._grade(
            Verdict.WRONG,
            f"{what}; never correct under this rule (the harness cannot vouch for it); {budgets}",
            evidence,
        )

    def _grade(self, verdict: Verdict, reason: str, evidence: ObjectiveEvidence | None = None) -> Grade:
        return Grade(verdict=verdict, rule=self.spec, reason=reason, evidence=evidence)


def build(spec: RuleSpec) -> BudgetedRule:
    """The registry factory: keys ``cpu`` (a bare first value) and ``verify``, CPU seconds > 0.

    Raises:
        ConfigError: an unknown or repeated key, or a budget that is not a positive finite number.
    """
    values = spec.values(primary="cpu", allowed=("cpu", "verify"))
    program = spec.number("cpu", values["cpu"]) if "cpu" in values else PROGRAM_CPU_S
    verify = spec.number("verify", values["verify"]) if "verify" in values else VERIFY_CPU_S
    for key, budget in (("cpu", program), ("verify", verify)):
        if not (budget > 0 and math.isfinite(budget)):
            raise ConfigError(f"{key}={budget!r} must be a positive number of CPU seconds", where=spec.text)
    return BudgetedRule(program_cpu_s=program, verify_cpu_s=verify)
