"""Tolerance rules: ``strict`` (the default) and its parameterised relatives (``rel``, ``abs``,
``round`` and the published conventions ``orlm``, ``sirl``, ``optmath``, ``mamo`` and
``orthought``, each citing the peer's source file in its description; their presets and the
registry factory are :mod:`trex_eval.grading.objective.presets`). Pure.

One decision procedure, read top to bottom:

1. A program that failed (any execution status but ``ok``/``no_solve``) gets the verdict naming the
   failure (``runtime_error``, ``timeout``, ``licence_error`` ...), even if it solved something first.
2. The answer is the **last** solve the sandbox hooks observed, whatever the library. Without one,
   the verdict is ``no_solve`` -- unless the rule was built with ``use_printed`` (spec key
   ``printed=true``), in which case ``Execution.printed_objective`` is compared instead; that
   number comes from stdout, so its solver status is unknown and unchecked, and the evidence
   says ``source="printed"``. The fallback is off for every preset, so no number ever comes
   from stdout silently.
3. A solve whose objective the harness's own HiGHS re-solve contradicts
   (``verification == "mismatch"``) is ``wrong``: the reported objective is not the model's.
4. Against an optimal reference the solver status must be ``optimal`` (else ``wrong``) with a
   finite objective (else ``not_determinable``), and ``|pred − ref| ≤ atol + rtol·|ref|`` must
   hold, after rounding both to ``digits`` decimals when set (Python ``round``: half-to-even on
   the binary value). A miss where ``−pred`` would match says so (minimise/maximise confusion is
   still just ``wrong``).
5. Against a reference without a finite optimum only the solver status counts: ``infeasible``
   matches ``infeasible`` and ``unbounded`` matches ``unbounded``; a solver answer
   ``inf_or_unbd`` against either is ``not_determinable`` (the solver did not decide which);
   a reference ``inf_or_unbd`` is matched by any of the three.
6. A claim that passes 4 or 5 is ``correct`` only when the harness verified it
   (``verification == "match"``: the parent re-solved the captured model and found the claimed
   result; see :mod:`trex_eval.sandbox.verify`); otherwise it is ``unverified`` and the reason
   says why (no matrix captured, a model kind no parent solver takes, a re-solve that timed out,
   a printed value). The verdict never depends on anything else the program's process reported.
   ``unverified=true`` (spec key; refused by ``strict``) counts such claims as ``correct``, for
   reproducing conventions that trust the program's solver; the reason still says so.

``optmath:fallback=true`` (``optmath@1:fallback=true`` wherever the rule is named; off by default
here, on by default in OptMATH's evaluator) adds OptMATH's **conversion fallback**
(``ScriptExecutor.execute_with_fallback`` of
:data:`~trex_eval.grading.objective.presets.OPTMATH_SOURCE`): a program that does not pass is
run again with its text rewritten, one rewrite at a time, in OptMATH's order --
``GRB.CONTINUOUS`` -> ``GRB.INTEGER``, ``GRB.INTEGER`` -> ``GRB.CONTINUOUS``, ``" > "`` ->
``" >= "`` and ``" < "`` -> ``" <= "``, ``GRB.MINIMIZE`` -> ``GRB.MAXIMIZE``, ``GRB.MAXIMIZE`` ->
``GRB.MINIMIZE`` (a rewrite that changes nothing is skipped) -- and the first rewrite whose grade
passes stands, its reason naming the rewrite; if none passes, the program's own grade stands.
The rule only rewrites text (:meth:`ToleranceRule.conversions`); the run executes the rewrites
(:meth:`trex_eval.protocols.plan.EvaluationPlan.fallback`). It is lenient by design: a model with
the wrong variable types or sense can pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from trex_eval.errors import ConfigError, GradingError
from trex_eval.grading.objective.base import (
    FINISHED,
    NO_FINITE_OPTIMUM,
    Conversion,
    check_reference,
    failure_detail,
    failure_verdict,
    fmt,
    rule_spec,
    unverified_reason,
)
from trex_eval.records import (
    Execution,
    Grade,
    GraderKind,
    ObjectiveEvidence,
    ObjectiveReference,
    SolveRecord,
    SolveStatus,
    Verdict,
    finite_or_none,
)

TOLERANCE_RULE_VERSION = "1"


@dataclass(frozen=True)
class Comparison:
    """One tolerance check: the (rounded) values compared, ``|Δ|``, the bound it must not exceed,
    ``|Δ| / |ref|`` (``None`` for a zero reference) and the outcome."""

    predicted: float
    reference: float
    abs_error: float
    bound: float
    rel_error: float | None
    passed: bool


@dataclass(frozen=True)
class Tolerance:
    """Accept ``pred`` when ``|pred − ref| ≤ atol + rtol·|ref|``.

    ``digits`` (default ``None``: no rounding) rounds both values to that many decimals first
    (negative values round to tens, hundreds ...). The defaults are the ``strict`` rule's.

    Raises:
        ConfigError: a tolerance that is negative or not finite.
    """

    rtol: float = 1e-4
    atol: float = 1e-6
    digits: int | None = None
    exclusive: bool = False
    """``|Δ| < bound`` instead of ``≤`` (ORThought's ``abs(a - b) < 0.01``)."""
    label_digits: int | None = None
    """Mamo's test instead: ``|Δ|·10^d < 1`` with ``d = max(label_digits, decimals written in the
    label)``, or ``|Δ| / |ref| ≤ rtol`` (``|Δ|·1e-4 ≤ rtol`` for a zero reference, as Mamo's
    ``comp`` computes it). ``atol`` is unused then."""

    def __post_init__(self) -> None:
        for key, value in (("rtol", self.rtol), ("atol", self.atol)):
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"tolerance {key}={value!r} must be a finite number >= 0")

    def compare(self, predicted: float, reference: float, *, label: str | None = None) -> Comparison:
        """Check ``predicted`` against ``reference`` (both finite); ``label``, the reference as
        written, is read only by a ``label_digits`` test (its decimals)."""
        if self.digits is not None:
            predicted, reference = round(predicted, self.digits), round(reference, self.digits)
        abs_error = abs(predicted - reference)
        rel_error = abs_error / abs(reference) if reference else None
        if self.label_digits is not None:
            scale = 10.0 ** max(self.label_digits, _written_decimals(label))
            rate = abs_error / abs(reference) if reference else abs_error * 1e-4
            # The bound shown is the larger of the two acceptance tests'.
            bound = max(1 / scale, self.rtol * abs(reference) if reference else self.rtol / 1e-4)
            # Scaled before subtracting, as Mamo's script does: its verdict at the boundary is kept.
            passed = abs(predicted * scale - reference * scale) < 1 or rate <= self.rtol
        else:
            bound = self.atol + self.rtol * abs(reference)
            passed = abs_error < bound if self.exclusive else abs_error <= bound
        return Comparison(
            predicted=predicted,
            reference=reference,
            abs_error=abs_error,
            bound=bound,
            rel_error=rel_error,
            passed=passed,
        )

    def formula(self) -> str:
        """The acceptance test in words, e.g. ``|pred − ref| ≤ 1e-06 + 0.0001·|ref|``."""
        if self.label_digits is not None:
            return (
                f"|pred − ref|·10^d < 1 with d = max({self.label_digits}, decimals written in the label), "
                f"or |pred − ref| ≤ {self.rtol:g}·|ref|"
            )
        text = f"|pred − ref| {'<' if self.exclusive else '≤'} {self.atol:g} + {self.rtol:g}·|ref|"
        if self.digits is not None:
            text = f"{text} after rounding both to {self.digits} decimals"
        return text


@dataclass(frozen=True)
class ToleranceRule:
    """An :class:`~trex_eval.grading.objective.base.ObjectiveRule` judging by :class:`Tolerance`.

    ``title`` names the convention in the description (``"SIRL convention"``); ``parameters``
    is the canonical text of the non-default parameters, appended to ``spec`` (the registry in
    :mod:`trex_eval.grading.registry` fills it in).
    """

    name: str
    tolerance: Tolerance = Tolerance()
    use_printed: bool = False
    count_unverified: bool = False
    title: str = ""
    parameters: str = ""
    source: str = ""
    """The peer's file this convention reproduces (``owner/repo@commit path``), for the description."""
    conversion_fallback: bool = False
    """OptMATH's conversion fallback (spec key ``fallback=true``; see the module docstring)."""
    version: str = TOLERANCE_RULE_VERSION
    kind: ClassVar[GraderKind] = GraderKind.OBJECTIVE

    @property
    def spec(self) -> str:
        return rule_spec(self.name, self.version, self.parameters)

    @property
    def description(self) -> str:
        lead = f"{self.title}: " if self.title else ""
        text = f"{lead}solver status optimal and {self.tolerance.formula()}"
        if self.use_printed:
            text += "; a printed objective is used (status unchecked) when no solve was hooked"
        if self.count_unverified:
            text += "; claims the harness could not verify count as correct"
        if self.conversion_fallback:
            text += (
                "; conversion fallback on: a miss is re-run with "
                + ", ".join(name for name, _, _ in OPTMATH_CONVERSIONS)
                + " (one at a time) and the first that passes counts"
            )
        if self.source:
            text += f" (source: {self.source})"
        return text

    def conversions(self, code: str) -> tuple[Conversion, ...]:
        """OptMATH's rewrites of ``code`` to try after a miss, in its order, those that change
        nothing left out; empty unless the rule was built with ``fallback=true``."""
        if not self.conversion_fallback:
            return ()
        found = []
        for name, old, new in OPTMATH_CONVERSIONS:
            converted = code
            for before, after in zip(old, new, strict=True):
                converted = converted.replace(before, after)
            if converted != code:
                found.append(Conversion(name=name, code=converted))
        return tuple(found)

    def grade(self, execution: Execution, reference: ObjectiveReference, /) -> Grade:
        """Judge ``execution`` against ``reference`` (see the module docstring for the order).

        Raises:
            GradingError: the reference cannot be judged against (see ``check_reference``).
        """
        check_reference(reference)
        if execution.status not in FINISHED:
            verdict = failure_verdict(execution.status)
            return self._grade(verdict, f"program failed ({verdict.value}): {failure_detail(execution)}")
        solve = execution.last_solve
        if solve is None:
            return self._grade_printed(execution, reference)
        if solve.verification == "mismatch":
            return self._grade(
                Verdict.WRONG,
                f"the reported objective {fmt(solve.objective)} is not the model's: the harness's HiGHS "
                f"re-solve of the captured model gives {fmt(solve.verified_objective)}",
                self._evidence(
                    finite_or_none(solve.objective),
                    solve.status,
                    reference,
                    verified=solve.verified_objective,
                ),
            )
        if reference.status is not SolveStatus.OPTIMAL:
            return self._grade_status(solve, reference)
        evidence = self._evidence(
            finite_or_none(solve.objective), solve.status, reference, verified=solve.verified_objective
        )
        if solve.status is not SolveStatus.OPTIMAL:
            return self._grade(
                Verdict.WRONG,
                f"{solve.library} solve ended {solve.status.value} ({solve.raw_status}); "
                f"the reference optimum is {fmt(reference.value)}",
                evidence,
            )
        objective = finite_or_none(solve.objective)
        if objective is None:
            return self._grade(
                Verdict.NOT_DETERMINABLE,
                f"{solve.library} reported optimal without a finite objective ({fmt(solve.objective)})",
                evidence,
            )
        note = _verification(solve)
        return self._compare(
            objective,
            reference,
            status=solve.status,
            source="hook",
            note=note,
            verified=solve.verified_objective,
            unverified=unverified_reason(solve),
        )

    # ----------------------------------------------------------------------- helpers

    def _grade(self, verdict: Verdict, reason: str, evidence: ObjectiveEvidence | None = None) -> Grade:
        return Grade(verdict=verdict, rule=self.spec, reason=reason, evidence=evidence)

    def _passed(self, reason: str, evidence: ObjectiveEvidence, unverified: str | None) -> Grade:
        """``correct`` for a verified claim; ``unverified`` (or, with ``count_unverified``,
        ``correct`` saying so) for the others."""
        if unverified is None:
            return self._grade(Verdict.CORRECT, reason, evidence)
        if self.count_unverified:
            return self._grade(
                Verdict.CORRECT, f"{reason}; counted although unverified: {unverified}", evidence
            )
        return self._grade(
            Verdict.UNVERIFIED, f"{reason}; not verified by the harness: {unverified}", evidence
        )

    def _evidence(
        self,
        predicted: float | None,
        status: SolveStatus | None,
        reference: ObjectiveReference,
        *,
        source: str = "hook",
        verified: float | None = None,
    ) -> ObjectiveEvidence:
        return ObjectiveEvidence(
            predicted=predicted,
            predicted_status=status,
            reference=reference.value,
            reference_status=reference.status,
            atol=self.tolerance.atol,
            rtol=self.tolerance.rtol,
            digits=self.tolerance.digits,
            verified_objective=verified,
            source=source,
        )

    def _grade_printed(self, execution: Execution, reference: ObjectiveReference) -> Grade:
        printed = finite_or_none(execution.printed_objective)
        if not self.use_printed or printed is None:
            reason = "the program never called a hooked solver"
            if printed is not None:
                reason += f"; it printed {fmt(printed)}, but this rule does not read printed output"
            return self._grade(Verdict.NO_SOLVE, reason)
        if reference.status is not SolveStatus.OPTIMAL:
            return self._grade(
                Verdict.WRONG,
                f"printed objective {fmt(printed)}, but the reference is {reference.status.value}",
                self._evidence(printed, None, reference, source="printed"),
            )
        return self._compare(
            printed,
            reference,
            status=None,
            source="printed",
            note="; printed output",
            unverified="the value was printed, not observed in a solve",
        )

    def _compare(
        self,
        predicted: float,
        reference: ObjectiveReference,
        *,
        status: SolveStatus | None,
        source: str,
        note: str,
        verified: float | None = None,
        unverified: str | None = None,
    ) -> Grade:
        expected = reference.value
        if expected is None:  # excluded by check_reference; kept for the type checker
            raise GradingError(f"optimal reference without a value (label {reference.label!r})")
        result = self.tolerance.compare(predicted, expected, label=reference.label)
        evidence = ObjectiveEvidence(
            predicted=predicted,
            predicted_status=status,
            reference=reference.value,
            reference_status=reference.status,
            abs_error=result.abs_error,
            rel_error=result.rel_error,
            atol=self.tolerance.atol,
            rtol=self.tolerance.rtol,
            digits=self.tolerance.digits,
            verified_objective=verified,
            source=source,
        )
        values = f"{fmt(result.predicted)} vs reference {fmt(result.reference)}"
        if self.tolerance.digits is not None:
            values += f" (rounded to {self.tolerance.digits} decimals)"
        if result.passed:
            reason = f"{values}: |Δ| {result.abs_error:.3g} ≤ {result.bound:.3g}{note}"
            return self._passed(reason, evidence, unverified)
        reason = f"{values}: |Δ| {result.abs_error:.3g} > {result.bound:.3g}{note}"
        if expected != 0 and self.tolerance.compare(-predicted, expected, label=reference.label).passed:
            reason += "; pred = −ref: minimise/maximise confused?"
        return self._grade(Verdict.WRONG, reason, evidence)

    def _grade_status(self, solve: SolveRecord, reference: ObjectiveReference) -> Grade:
        predicted = solve.status
        evidence = self._evidence(finite_or_none(solve.objective), predicted, reference)
        said = f"{solve.library} solve ended {predicted.value}; the reference is {reference.status.value}"
        if predicted is reference.status or (
            reference.status is SolveStatus.INF_OR_UNBD and predicted in NO_FINITE_OPTIMUM
        ):
            return self._passed(said + _verification(solve), evidence, unverified_reason(solve))
        if predicted is SolveStatus.INF_OR_UNBD:
            return self._grade(
                Verdict.NOT_DETERMINABLE,
                f"{said}; the solver did not decide between infeasible and unbounded",
                evidence,
            )
        return self._grade(Verdict.WRONG, said, evidence)


def _written_decimals(label: str | None) -> int:
    """Digits after the point in a label as written (``"12.50"`` -> 2; ``"3"``, ``None`` -> 0)."""
    text = (label or "").strip()
    return len(text.split(".", 1)[1]) if "." in text else 0


def _verification(solve: SolveRecord) -> str:
    """Reason suffix naming the harness's re-solve (also in ``ObjectiveEvidence.verified_objective``)."""
    solver = {"gurobipy": "gurobipy", "scip": "SCIP"}.get(solve.verified_by or "", "HiGHS")
    if solve.verified_objective is not None:
        return f"; {solver} re-solve {fmt(solve.verified_objective)}"
    if solve.verification == "match":
        return f"; {solver} re-solve agrees"
    return ""


OPTMATH_CONVERSIONS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("variable types to integer", ("GRB.CONTINUOUS",), ("GRB.INTEGER",)),
    ("variable types to continuous", ("GRB.INTEGER",), ("GRB.CONTINUOUS",)),
    ("strict inequalities to non-strict", (" > ", " < "), (" >= ", " <= ")),
    ("objective sense to maximise", ("GRB.MINIMIZE",), ("GRB.MAXIMIZE",)),
    ("objective sense to minimise", ("GRB.MAXIMIZE",), ("GRB.MINIMIZE",)),
)
"""OptMATH's conversion fallback (``ScriptExecutor.execute_with_fallback`` of
:data:`~trex_eval.grading.objective.presets.OPTMATH_SOURCE`, with ``_convert_variable_type``,
``_convert_inequality`` and ``_convert_objective``): (name, texts replaced, replacements), tried
in this order; each is ``str.replace`` of every occurrence, applied to the program as extracted."""
