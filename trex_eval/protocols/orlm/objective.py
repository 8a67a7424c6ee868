"""The ``orlm-compat`` objective rule: ORLM's verdicts, reproduced from the
:class:`~trex_eval.records.Execution` of the program with ORLM's lines appended. Pure.

Cardinal-Operations/ORLM@38712c9 eval/execute.py appends ``ADD_SCRIPT`` (see
:data:`trex_eval.protocols.orlm.ADD_SCRIPT`) to the program, runs it, and reads the first
``Just print the best solution: <value>`` line of stdout, else ``No Best Solution`` when stdout
contains it, else nothing. Reproduced here:

1. The program failed (an exception anywhere -- also a ``NameError`` raised by the appended lines
   when the model is not bound to the module-level name ``model`` or ``COPT`` is not imported --,
   a timeout, a non-zero exit): ORLM's ``Execution Failed``, no answer, scored 0. Here the
   failure keeps its own verdict (``runtime_error``, ``timeout`` ...: none passes).
2. The program called ``sys.exit()``: the appended lines never ran, nothing was printed ("Out of
   Expectation"), ``wrong``.
3. The printed answer is ``model``'s: its objective when ``model.status == COPT.OPTIMAL`` (a
   ``coptpy`` model solved to optimality), otherwise ``No Best Solution`` -- whatever the
   status (infeasible, unbounded, a time limit, never solved) and whatever the library (the
   status of a model of another library that got through the appended lines without an error is
   not COPT's OPTIMAL, 1: e.g. a gurobipy model with ``COPT`` imported, optimal at 2).
4. Comparison (``main``, ``is_anyone_match``): a label ``No Best Solution`` matches only the
   printed ``No Best Solution``; any other label is read with ``float()`` and rounded, the
   answer too, and ``|pred − gt| / |gt| ≤ 0.05`` must hold (``|pred| ≤ 0.05`` for ``gt == 0``);
   Python's ``round`` (half to even), as upstream. A numeric sentinel (``-99999``) is compared
   as the number it is, as upstream does. No solver status beyond step 3, no sense check.

Deliberate differences (stated in every description):

* the answer is read from the sandbox's record of the module-level ``model`` object
  (``Execution.bindings``), not parsed from stdout -- as the ``trex-compat`` rule reads its
  model -- so a program that prints its own ``Just print the best solution:`` line first, or
  forges one, is not believed;
* a claim ORLM would pass is ``correct`` only when the harness checked it: the last solve the
  hooks observed is ``model``'s (same library, status and objective) and the harness's re-solve
  of its captured model matched (``verification == "match"``, the project's verification
  contract); otherwise the verdict is ``unverified`` and the reason says why (``No Best
  Solution`` for a model that was never solved has nothing to verify). A re-solve that
  contradicts the claim is ``wrong``. ``unverified=true`` counts such claims as ``correct``, for
  ORLM's numbers exactly; the reason still says so;
* environment failures (``licence_error``, ``needs_gurobi``, ``not_run``) keep their own
  verdicts instead of scoring as an error;
* a label ``float()`` cannot read (ORLM's script would crash) is compared by its parsed value,
  or, for a status word (``infeasible``), as ``No Best Solution``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from trex_eval.grading.objective.base import (
    FINISHED,
    check_reference,
    failure_detail,
    failure_verdict,
    fmt,
    rule_spec,
    unverified_reason,
)
from trex_eval.grading.spec import RuleSpec
from trex_eval.records import (
    Execution,
    Grade,
    GraderKind,
    ModelBinding,
    ObjectiveEvidence,
    ObjectiveReference,
    SolveStatus,
    Verdict,
    finite_or_none,
)

ORLM_COMPAT_VERSION = "1"
ORLM_TOLERANCE = 0.05
"""ORLM's ``--numerical_err_tolerance`` default (the pass@1 scripts keep it)."""
MODEL_NAME = "model"
"""The module-level name ORLM's appended lines read."""
NO_BEST_SOLUTION = "No Best Solution"
SOURCE = "Cardinal-Operations/ORLM@38712c9 eval/execute.py"


def orlm_answer(binding: ModelBinding) -> float | str:
    """What ORLM's appended lines print for ``binding``: the objective of a coptpy model at
    COPT's OPTIMAL, else ``No Best Solution`` (step 3 of the module docstring)."""
    if binding.library == "coptpy" and binding.status is SolveStatus.OPTIMAL:
        value = finite_or_none(binding.objective)
        if value is not None:
            return value
    return NO_BEST_SOLUTION


def orlm_label(reference: ObjectiveReference) -> float | str:
    """The label as ORLM compares it: ``No Best Solution``, else the number ``float()`` reads
    (falling back on the parsed value, or ``No Best Solution`` for a status word)."""
    text = reference.label.strip()
    if text == NO_BEST_SOLUTION:
        return NO_BEST_SOLUTION
    try:
        value = float(text)
    except ValueError:
        return reference.value if reference.value is not None else NO_BEST_SOLUTION
    return value if math.isfinite(value) else NO_BEST_SOLUTION


def orlm_match(predicted: float | str, label: float | str, tolerance: float = ORLM_TOLERANCE) -> bool:
    """ORLM's ``is_anyone_match`` for one answer (both already as :func:`orlm_answer` and
    :func:`orlm_label` give them)."""
    if isinstance(label, str):
        return predicted == label
    if isinstance(predicted, str):
        return False
    gt, pred = round(label), round(predicted)
    if gt == 0:
        return abs(pred) <= tolerance
    return abs((pred - gt) / gt) <= tolerance


@dataclass(frozen=True)
class OrlmCompatRule:
    """ORLM's rule and answer reading (see the module docstring).

    ``tolerance`` is ORLM's ``--numerical_err_tolerance`` (spec key ``rtol``, default 0.05);
    ``count_unverified`` (spec key ``unverified=true``) counts claims the harness could not
    verify as correct; ``parameters`` is the canonical non-default text appended to ``spec``.
    """

    tolerance: float = ORLM_TOLERANCE
    count_unverified: bool = False
    parameters: str = ""
    name: str = "orlm-compat"
    version: str = ORLM_COMPAT_VERSION
    kind: ClassVar[GraderKind] = GraderKind.OBJECTIVE

    @property
    def spec(self) -> str:
        return rule_spec(self.name, self.version, self.parameters)

    @property
    def description(self) -> str:
        text = (
            f"ORLM harness: module-level coptpy `model` at COPT.OPTIMAL (else 'No Best Solution'), "
            f"both rounded to integers, |Δ| ≤ {self.tolerance:g}·|ref|; read from the sandbox's record "
            f"of `model`, not its printed line"
        )
        if self.count_unverified:
            text += "; claims the harness could not verify count as correct"
        else:
            text += "; correct only when the harness verified the solve"
        return f"{text} (source: {SOURCE})"

    def grade(self, execution: Execution, reference: ObjectiveReference, /) -> Grade:
        """Judge ``execution`` as ORLM's harness would, on the harness's own evidence.

        Raises:
            GradingError: the reference cannot be judged against (see ``check_reference``).
        """
        check_reference(reference)
        if execution.status not in FINISHED:
            verdict = failure_verdict(execution.status)
            return self._grade(verdict, f"Execution Failed ({verdict.value}): {_failure(execution)}")
        if execution.called_sys_exit:
            return self._grade(
                Verdict.WRONG,
                "the program called sys.exit(): ORLM's appended lines never ran, nothing was printed "
                "(Execution Successful but Out of Expectation)",
            )
        binding = next((b for b in execution.bindings if b.name == MODEL_NAME), None)
        if binding is None:
            return self._grade(Verdict.WRONG, "no module-level `model`: ORLM's appended lines cannot run")
        predicted = orlm_answer(binding)
        label = orlm_label(reference)
        said = (
            f"Just print the best solution: {fmt(predicted)}"
            if isinstance(predicted, float)
            else f"`model` ({binding.library}, {binding.raw_status or 'no status'}): {NO_BEST_SOLUTION}"
        )
        expected = label if isinstance(label, str) else fmt(label)
        evidence = self._evidence(execution, binding, reference, predicted, label)
        rounded = ""
        if isinstance(predicted, float) and isinstance(label, float):
            gt, pred = round(label), round(predicted)
            test = f"|Δ|/|gt| {abs(pred - gt) / abs(gt):.3g}" if gt else f"|pred| {abs(pred)}"
            rounded = f" (rounded: {pred} vs {gt}, {test}, tolerance {self.tolerance:g})"
        if not orlm_match(predicted, label, self.tolerance):
            return self._grade(Verdict.WRONG, f"{said} vs label {expected}: no match{rounded}", evidence)
        reason = f"{said} vs label {expected}: match{rounded}"
        return self._checked(execution, binding, reason, evidence)

    # ----------------------------------------------------------------------- helpers

    def _checked(
        self, execution: Execution, binding: ModelBinding, reason: str, evidence: ObjectiveEvidence
    ) -> Grade:
        """``correct`` when the last solve is ``model``'s and the harness's re-solve matched it;
        ``wrong`` when the re-solve contradicts it; else ``unverified`` (or ``correct`` saying so)."""
        solve = execution.last_solve
        why: str | None
        if solve is None:
            why = "no solve was observed: `model` was never solved"
        elif (
            solve.library != binding.library
            or solve.status is not binding.status
            or finite_or_none(solve.objective) != finite_or_none(binding.objective)
        ):
            why = (
                f"the last solve ({solve.library}, {solve.status.value}, {fmt(solve.objective)}) is not "
                f"`model`'s ({binding.library}, {binding.status.value if binding.status else 'none'}, "
                f"{fmt(binding.objective)})"
            )
        elif solve.verification == "mismatch":
            return self._grade(
                Verdict.WRONG,
                f"{reason}, but the harness's re-solve of the captured model gives "
                f"{fmt(solve.verified_objective)}: the reported result is not the model's",
                evidence,
            )
        else:
            why = unverified_reason(solve)
            if why is None:
                return self._grade(Verdict.CORRECT, f"{reason}; re-solve agrees", evidence)
        if self.count_unverified:
            return self._grade(Verdict.CORRECT, f"{reason}; counted although unverified: {why}", evidence)
        return self._grade(Verdict.UNVERIFIED, f"{reason}; not verified by the harness: {why}", evidence)

    def _evidence(
        self,
        execution: Execution,
        binding: ModelBinding,
        reference: ObjectiveReference,
        predicted: float | str,
        label: float | str,
    ) -> ObjectiveEvidence:
        abs_error = rel_error = None
        if isinstance(predicted, float) and isinstance(label, float):
            abs_error = float(abs(round(predicted) - round(label)))
            rel_error = abs_error / abs(round(label)) if round(label) else None
        solve = execution.last_solve
        return ObjectiveEvidence(
            predicted=finite_or_none(binding.objective),
            predicted_status=binding.status,
            reference=reference.value,
            reference_status=reference.status,
            abs_error=abs_error,
            rel_error=rel_error,
            atol=0.0,
            rtol=self.tolerance,
            digits=0,
            verified_objective=solve.verified_objective if solve is not None else None,
            source=f"binding:{binding.name}",
        )

    def _grade(self, verdict: Verdict, reason: str, evidence: ObjectiveEvidence | None = None) -> Grade:
        return Grade(verdict=verdict, rule=self.spec, reason=reason, evidence=evidence)


def _failure(execution: Execution) -> str:
    """The failure, with why ORLM's appended lines raise when they do."""
    detail = failure_detail(execution)
    if execution.error_type == "NameError" and ("'model'" in detail or "'COPT'" in detail):
        detail += (
            " (ORLM appends `if model.status == COPT.OPTIMAL: ...`: the model must be the "
            "module-level name `model` and `COPT` imported from coptpy)"
        )
    return detail


def build(spec: RuleSpec) -> OrlmCompatRule:
    """The registry factory: ``orlm-compat[:rtol=R][,unverified=true]``.

    Raises:
        ConfigError: an unknown key or a malformed value.
    """
    values = spec.values(primary=None, allowed=("rtol", "unverified"))
    tolerance = spec.number("rtol", values["rtol"]) if "rtol" in values else ORLM_TOLERANCE
    trusting = spec.flag("unverified", values["unverified"]) if "unverified" in values else False
    shown = [f"rtol={tolerance!r}"] if tolerance != ORLM_TOLERANCE else []
    if trusting:
        shown.append("unverified=true")
    return OrlmCompatRule(tolerance=tolerance, count_unverified=trusting, parameters=",".join(shown))
