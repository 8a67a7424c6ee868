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
* the number compared is the **harness's**: when the last solve the hooks observed is
  ``model``'s (same library, status and objective) and the harness's re-solve of its captured
  model matched it (``verification == "match"``, the project's verification contract), that
  re-solve's objective is rounded and compared, not the program's (which only had to agree with
  it within verification's tolerance; a claim ORLM would pass whose re-solve misses is
  ``wrong``, the reason saying so). Without such a value a claim ORLM would pass is
  ``unverified`` and the reason says why (``No Best Solution`` for a model that was never solved
  has nothing to verify); a miss is ``wrong`` unless no re-solve was attempted yet and one
  agreeing with the claim could still pass (``unverified``: the grading step re-solves it). A
  re-solve that contradicts the claim is ``wrong``. ``unverified=true`` counts a passing claim
  without a harness value as ``correct``, for ORLM's numbers exactly; the reason says the claim
  was graded unverified;
* environment failures (``licence_error``, ``needs_gurobi``, ``needs_library``, ``not_run``) keep their own
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
    harness_objective,
    harness_path,
    may_pass_when_verified,
    resolver_name,
    rule_spec,
    unverified_reason,
    verified_source,
)
from trex_eval.grading.spec import RuleSpec
from trex_eval.records import (
    Execution,
    Grade,
    GraderKind,
    ModelBinding,
    ObjectiveEvidence,
    ObjectiveReference,
    SolveRecord,
    SolveStatus,
    Verdict,
    finite_or_none,
)

ORLM_COMPAT_VERSION = "2"
"""2: the harness's re-solve of ``model`` is rounded and compared, not the program's answer (1
compared the answer once the re-solve agreed with it within verification's tolerance)."""
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
            f"of `model`, not its printed line; the value compared is the harness's re-solve of "
            f"`model`'s captured matrix (the answer must agree with it)"
        )
        if self.count_unverified:
            text += "; claims the harness could not verify count as correct, graded as answered"
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
        answer = orlm_answer(binding)
        label = orlm_label(reference)
        said = (
            f"Just print the best solution: {fmt(answer)}"
            if isinstance(answer, float)
            else f"`model` ({binding.library}, {binding.raw_status or 'no status'}): {NO_BEST_SOLUTION}"
        )
        expected = label if isinstance(label, str) else fmt(label)
        solve = _models_solve(execution, binding)
        if isinstance(answer, float) and solve is not None:
            if solve.verification == "mismatch":
                return self._grade(
                    Verdict.WRONG,
                    f"{said}, but the harness's {resolver_name(solve)} re-solve of the captured model "
                    f"gives {fmt(solve.verified_objective)}: the reported result is not the model's",
                    self._evidence(binding, reference, answer, label, solve=solve),
                )
            harness = harness_objective(solve)
            if harness is not None:
                return self._grade_harness_value(
                    harness, answer, solve, binding, reference, label=label, said=said
                )
        evidence = self._evidence(binding, reference, answer, label, solve=execution.last_solve)
        rounded = self._rounded(answer, label)
        if not orlm_match(answer, label, self.tolerance):
            reason = f"{said} vs label {expected}: no match{rounded}"
            if (
                isinstance(answer, float)
                and isinstance(label, float)
                and solve is not None
                and solve.verification is None
                and not self.count_unverified
                and may_pass_when_verified(lambda v: orlm_match(v, label, self.tolerance), answer, label)
            ):
                return self._grade(
                    Verdict.UNVERIFIED,
                    f"{reason}, but a re-solve agreeing with the answer could match: the harness's value "
                    f"decides; not verified by the harness: no re-solve was run",
                    evidence,
                )
            return self._grade(Verdict.WRONG, reason, evidence)
        reason = f"{said} vs label {expected}: match{rounded}"
        return self._checked(execution, binding, reason, evidence, numeric=isinstance(answer, float))

    # ----------------------------------------------------------------------- helpers

    def _rounded(self, value: float | str, label: float | str) -> str:
        """The reason's note on the rounded comparison (empty unless both are numbers)."""
        if not (isinstance(value, float) and isinstance(label, float)):
            return ""
        gt, pred = round(label), round(value)
        test = f"|Δ|/|gt| {abs(pred - gt) / abs(gt):.3g}" if gt else f"|pred| {abs(pred)}"
        return f" (rounded: {pred} vs {gt}, {test}, tolerance {self.tolerance:g})"

    def _grade_harness_value(
        self,
        harness: float,
        answer: float,
        solve: SolveRecord,
        binding: ModelBinding,
        reference: ObjectiveReference,
        *,
        label: float | str,
        said: str,
    ) -> Grade:
        """Compare the harness's re-solve ``harness`` of ``model`` (whose ``answer`` agreed with it)
        with ``label`` as ORLM reads it."""
        expected = label if isinstance(label, str) else fmt(label)
        source = verified_source(solve)
        evidence = self._evidence(binding, reference, harness, label, solve=solve, source=source)
        graded = f"{said}; graded: the harness's {harness_path(solve)} {fmt(harness)}"
        rounded = self._rounded(harness, label)
        if orlm_match(harness, label, self.tolerance):
            agrees = "" if answer == harness else " within verification's agreement tolerance"
            return self._grade(
                Verdict.CORRECT,
                f"{graded} vs label {expected}: match{rounded}; re-solve agrees with the answer{agrees}",
                evidence,
            )
        reason = f"{graded} vs label {expected}: no match{rounded}"
        if answer != harness and orlm_match(answer, label, self.tolerance):
            reason += (
                f"; the program's answer {fmt(answer)} was close to the harness's value {fmt(harness)} "
                f"(within verification's agreement tolerance), but {fmt(harness)} is what is graded"
            )
        return self._grade(Verdict.WRONG, reason, evidence)

    def _checked(
        self,
        execution: Execution,
        binding: ModelBinding,
        reason: str,
        evidence: ObjectiveEvidence,
        *,
        numeric: bool,
    ) -> Grade:
        """A matching answer without a harness value: ``correct`` for a status the re-solve agreed
        with; ``wrong`` when the re-solve contradicts it; else ``unverified`` (or ``correct``
        saying so). ``numeric``: the answer is a number (a match then needs the re-solve's value)."""
        solve = execution.last_solve
        why: str | None
        if solve is None:
            why = "no solve was observed: `model` was never solved"
        elif _models_solve(execution, binding) is None:
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
            if why is None and numeric:
                # A "match" without a value cannot come from the harness's re-solve of an optimum.
                why = "the re-solve that agreed recorded no objective"
            if why is None:
                return self._grade(Verdict.CORRECT, f"{reason}; re-solve agrees", evidence)
        if self.count_unverified:
            return self._grade(
                Verdict.CORRECT,
                f"{reason}; counted although unverified: {why} (the answer is graded: the harness has "
                "no value of its own)",
                evidence,
            )
        return self._grade(Verdict.UNVERIFIED, f"{reason}; not verified by the harness: {why}", evidence)

    def _evidence(
        self,
        binding: ModelBinding,
        reference: ObjectiveReference,
        predicted: float | str,
        label: float | str,
        *,
        solve: SolveRecord | None,
        source: str | None = None,
    ) -> ObjectiveEvidence:
        """``predicted`` is the value compared (the harness's re-solve, or ``model``'s answer), the
        claim ``binding``'s objective, ``solve`` the last solve (its re-solve's value is shown)."""
        abs_error = rel_error = None
        if isinstance(predicted, float) and isinstance(label, float):
            abs_error = float(abs(round(predicted) - round(label)))
            rel_error = abs_error / abs(round(label)) if round(label) else None
        claimed = finite_or_none(binding.objective)
        return ObjectiveEvidence(
            predicted=predicted if isinstance(predicted, float) else claimed,
            predicted_status=binding.status,
            reference=reference.value,
            reference_status=reference.status,
            abs_error=abs_error,
            rel_error=rel_error,
            atol=0.0,
            rtol=self.tolerance,
            digits=0,
            verified_objective=solve.verified_objective if solve is not None else None,
            source=source or f"binding:{binding.name}",
            claimed=claimed,
        )

    def _grade(self, verdict: Verdict, reason: str, evidence: ObjectiveEvidence | None = None) -> Grade:
        return Grade(verdict=verdict, rule=self.spec, reason=reason, evidence=evidence)


def _models_solve(execution: Execution, binding: ModelBinding) -> SolveRecord | None:
    """The last solve when it is ``binding``'s (same library, status and objective), else ``None``:
    only that solve's re-solve speaks for ``model``."""
    solve = execution.last_solve
    if (
        solve is None
        or solve.library != binding.library
        or solve.status is not binding.status
        or finite_or_none(solve.objective) != finite_or_none(binding.objective)
    ):
        return None
    return solve


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
