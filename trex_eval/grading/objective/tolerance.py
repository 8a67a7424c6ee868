"""Tolerance rules: ``strict`` (the default) and its parameterised relatives (``rel``, ``abs``,
``round`` and the published conventions ``orlm``, ``sirl``, ``optmath``, ``mamo`` and
``orthought``, each citing the peer's source file in its description; their presets and the
registry factory are :mod:`trex_eval.grading.objective.presets`; the acceptance test
:class:`Tolerance` is :mod:`~trex_eval.grading.objective.comparison`'s). Pure.

One decision procedure, read top to bottom:

1. A program that failed (any execution status but ``ok``/``no_solve``) gets the verdict naming the
   failure (``runtime_error``, ``timeout``, ``licence_error`` ...), even if it solved something first.
2. The answer is the **last** solve the sandbox hooks observed, whatever the library. Without one,
   the verdict is ``no_solve`` -- unless the rule was built with ``use_printed`` (spec key
   ``printed=true``), in which case ``Execution.printed_objective`` is compared instead; that
   number comes from stdout, so its solver status is unknown and unchecked, and the evidence
   says ``source="printed"``. The fallback is off for every preset, so no number ever comes
   from stdout silently.
3. A solve whose claim the harness's own re-solve contradicts (``verification == "mismatch"``)
   is ``wrong``, the reason naming both numbers: the reported objective is not the model's.
4. Against an optimal reference the solver status must be ``optimal`` (else ``wrong``) with a
   finite objective (else ``not_determinable``). The value graded is the **harness's**: its
   re-solve of the captured model when that matched the claim
   (:func:`~trex_eval.grading.objective.base.harness_objective`; ``source="verified"``), never
   the claim itself, which only had to agree with it within verification's tolerance
   (:mod:`trex_eval.verify`: ``|claimed − verified| ≤ 1e-6 + rtol·max(1, |verified|)``,
   ``rtol`` 1e-6 for LPs and 2e-4 for models with integer or quadratic parts; the parent's own
   MIP gap is 1e-6). That tolerance never widens the rule's, which applies to the harness's value
   only: a claim close to its re-solve whose re-solve misses is ``wrong``, the reason saying that
   the claim was close but the harness's value is what is graded. The value must satisfy
   ``|pred − ref| ≤ atol + rtol·|ref|``, after rounding both to ``digits`` decimals when set
   (Python ``round``: half-to-even on the binary value). A miss where ``−pred`` would match says
   so (minimise/maximise confusion is still just ``wrong``). The one exception to "the value as
   solved" is a minimise-only solver (SciPy's ``linprog``, ``milp``), which cannot state a
   maximisation: the negation of the harness's value is graded where the benchmark states a
   maximisation or the program printed that negation (SciPy's ``-res.fun``), the magnitude still
   the harness's (:mod:`~trex_eval.grading.objective.sign`; ``source="verified-negated"``).
5. Against a reference without a finite optimum only the solver status counts: ``infeasible``
   matches ``infeasible`` and ``unbounded`` matches ``unbounded``; a solver answer
   ``inf_or_unbd`` against either is ``not_determinable`` (the solver did not decide which);
   a reference ``inf_or_unbd`` is matched by any of the three. The claimed status decides, and a
   "match" says the parent's re-solve reached a compatible verdict.
6. Without a harness value (no matrix captured, a model kind no parent solver takes, a re-solve
   that timed out or was not run yet, a printed value) the claim is all there is: one that
   passes 4 or 5 is ``unverified`` and the reason says why; one that misses is ``wrong`` --
   unless no re-solve was attempted yet (``verification is None``) and a re-solve agreeing with
   the claim could still pass 4 (:func:`~trex_eval.grading.objective.base.may_pass_when_verified`):
   that is ``unverified`` too, so that the grading step re-solves it
   (:meth:`trex_eval.protocols.plan.EvaluationPlan.judge`) and the verdict rests on the harness's
   value however close the claim was. ``correct`` needs a harness value (or a matched status).
   ``unverified=true`` (spec key; refused by ``strict``) counts a passing claim without one as
   ``correct``, for reproducing conventions that trust the program's solver; the reason says the
   claim was graded unverified. A harness value, where there is one, is graded under every rule.

``optmath:fallback=true`` (``optmath@3:fallback=true`` wherever the rule is named; off by default
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

from dataclasses import dataclass
from typing import ClassVar

from trex_eval.errors import GradingError
from trex_eval.grading.objective.base import (
    FINISHED,
    NO_FINITE_OPTIMUM,
    Conversion,
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
from trex_eval.grading.objective.comparison import Comparison, Tolerance
from trex_eval.grading.objective.sign import Signed, signed, unsigned_note
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

__all__ = ["OPTMATH_CONVERSIONS", "TOLERANCE_RULE_VERSION", "Comparison", "Tolerance", "ToleranceRule"]

TOLERANCE_RULE_VERSION = "3"
"""3: a minimise-only solver's optimum (SciPy's ``linprog``, ``milp``) is graded negated where the
program printed its negation or the benchmark states a maximisation (:mod:`.sign`; 2 graded it as
solved, so SciPy's ``-res.fun`` idiom was ``wrong``). 2: the harness's re-solve is graded, not the
program's claim (1 graded the claim once the re-solve agreed with it within verification's
tolerance, which widened every rule's)."""

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


@dataclass(frozen=True)
class ToleranceRule:
    """An :class:`~trex_eval.grading.objective.base.ObjectiveRule` judging by :class:`Tolerance`.

    ``title`` names the convention in the description (``"SIRL convention"``); ``parameters``
    is the canonical text of the non-default parameters, appended to ``spec`` (the registry in
    :mod:`trex_eval.grading.registry` fills it in).
    """

    name: str
    tolerance: Tolerance = Tolerance()  # noqa: RUF009 -- a frozen dataclass, shared safely
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
        text = (
            f"{lead}solver status optimal and {self.tolerance.formula()}, pred being the harness's "
            "re-solve of the program's captured model (the program's claim must agree with it)"
        )
        if self.use_printed:
            text += "; a printed objective is used (status unchecked) when no solve was hooked"
        if self.count_unverified:
            text += "; claims the harness could not verify count as correct, graded as claimed"
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
        claimed = finite_or_none(solve.objective)
        if solve.verification == "mismatch":
            return self._grade(
                Verdict.WRONG,
                f"the program's claimed objective {fmt(solve.objective)} is not the model's: the "
                f"harness's {resolver_name(solve)} re-solve of the captured model gives "
                f"{fmt(solve.verified_objective)}",
                self._evidence(claimed, solve.status, reference, claimed=claimed, solve=solve),
            )
        if reference.status is not SolveStatus.OPTIMAL:
            return self._grade_status(solve, reference)
        if solve.status is not SolveStatus.OPTIMAL:
            return self._grade(
                Verdict.WRONG,
                f"{solve.library} solve ended {solve.status.value} ({solve.raw_status}); "
                f"the reference optimum is {fmt(reference.value)}",
                self._evidence(claimed, solve.status, reference, claimed=claimed, solve=solve),
            )
        if claimed is None:
            return self._grade(
                Verdict.NOT_DETERMINABLE,
                f"{solve.library} reported optimal without a finite objective ({fmt(solve.objective)})",
                self._evidence(None, solve.status, reference, solve=solve),
            )
        harness = harness_objective(solve)
        value = claimed if harness is None else harness
        sign = signed(solve, value, stdout=execution.stdout_tail, sense=reference.sense)
        if harness is not None:
            return self._grade_harness_value(harness, claimed, solve, reference, sign)
        # A "match" without a value cannot come from the harness's re-solve of an optimal claim.
        why = unverified_reason(solve) or "the re-solve that agreed recorded no objective"
        return self._grade_claim(
            sign.factor * claimed,
            reference,
            status=solve.status,
            source="hook-negated" if sign.negated else "hook",
            unverified=why,
            pending=solve.verification is None,
            solve=solve,
            note=sign.note,
        )

    # ----------------------------------------------------------------------- helpers

    def _grade(self, verdict: Verdict, reason: str, evidence: ObjectiveEvidence | None = None) -> Grade:
        return Grade(verdict=verdict, rule=self.spec, reason=reason, evidence=evidence)

    def _check(self, value: float, reference: ObjectiveReference) -> Comparison:
        expected = reference.value
        if expected is None:  # excluded by check_reference; kept for the type checker
            raise GradingError(f"optimal reference without a value (label {reference.label!r})")
        return self.tolerance.compare(value, expected, label=reference.label)

    def _evidence(
        self,
        predicted: float | None,
        status: SolveStatus | None,
        reference: ObjectiveReference,
        *,
        source: str = "hook",
        claimed: float | None = None,
        solve: SolveRecord | None = None,
        result: Comparison | None = None,
    ) -> ObjectiveEvidence:
        return ObjectiveEvidence(
            predicted=predicted,
            predicted_status=status,
            reference=reference.value,
            reference_status=reference.status,
            abs_error=result.abs_error if result is not None else None,
            rel_error=result.rel_error if result is not None else None,
            atol=self.tolerance.atol,
            rtol=self.tolerance.rtol,
            digits=self.tolerance.digits,
            verified_objective=solve.verified_objective if solve is not None else None,
            source=source,
            claimed=claimed,
        )

    def _values(self, what: str, value: float, reference: ObjectiveReference, result: Comparison) -> str:
        """``what value vs reference ref``, and the rounded pair compared when the rule rounds."""
        text = f"{what} {fmt(value)} vs reference {fmt(reference.value)}"
        if self.tolerance.digits is not None:
            text += (
                f" (rounded to {self.tolerance.digits} decimals: {fmt(result.predicted)} vs "
                f"{fmt(result.reference)})"
            )
        return text

    def _sign_note(
        self, value: float, reference: ObjectiveReference, solve: SolveRecord | None, *, negated: bool
    ) -> str:
        """For a miss whose negation would pass, the likely confusion (:func:`.sign.unsigned_note`
        for a minimise-only solve graded as solved)."""
        if not (reference.value and self._check(-value, reference).passed):
            return ""
        unsigned = None if negated else unsigned_note(solve)
        return f"; pred = −ref: {unsigned or 'minimise/maximise confused?'}"

    def _grade_harness_value(
        self, harness: float, claimed: float, solve: SolveRecord, reference: ObjectiveReference, sign: Signed
    ) -> Grade:
        """Grade the harness's re-solve ``harness`` of a claim ``claimed`` that agreed with it,
        with the sign ``sign`` (:func:`.sign.signed`: negated only for a minimise-only solve)."""
        value, claim_value = sign.factor * harness, sign.factor * claimed
        result = self._check(value, reference)
        evidence = self._evidence(
            value,
            solve.status,
            reference,
            source=verified_source(solve) + ("-negated" if sign.negated else ""),
            claimed=claimed,
            solve=solve,
            result=result,
        )
        what = harness_path(solve) + (f" {fmt(harness)} negated:" if sign.negated else "")
        values = self._values(what, value, reference, result)
        claim = (
            "the program claimed the same"
            if claimed == harness
            else f"the program claimed {fmt(claimed)}, within verification's agreement tolerance of it"
        )
        if result.passed:
            reason = f"{values}: |Δ| {result.abs_error:.3g} ≤ {result.bound:.3g}; {claim}"
            return self._grade(Verdict.CORRECT, reason + _note(sign.note), evidence)
        reason = f"{values}: |Δ| {result.abs_error:.3g} > {result.bound:.3g}"
        if claimed != harness and self._check(claim_value, reference).passed:
            # What verification's tolerance let through under rule version 1 is named as such.
            reason += (
                f"; the program's claim {fmt(claim_value)} was close to the harness's value {fmt(value)} "
                f"(within verification's agreement tolerance), but {fmt(value)} is what is graded"
            )
        else:
            reason += f"; {claim}"
        reason += _note(sign.note) + self._sign_note(value, reference, solve, negated=sign.negated)
        return self._grade(Verdict.WRONG, reason, evidence)

    def _grade_claim(
        self,
        claimed: float,
        reference: ObjectiveReference,
        *,
        status: SolveStatus | None,
        source: str,
        unverified: str,
        pending: bool,
        solve: SolveRecord | None = None,
        note: str = "",
    ) -> Grade:
        """Grade a claim the harness has no value for (``unverified`` says why); ``pending``: no
        re-solve was attempted yet, so a near miss waits for one (step 6); ``claimed`` already
        signed, ``note`` saying why when it was negated (:func:`.sign.signed`)."""
        result = self._check(claimed, reference)
        evidence = self._evidence(
            claimed, status, reference, source=source, claimed=claimed, solve=solve, result=result
        )
        what = "printed" if source == "printed" else "the program's claim" + (", negated," if note else "")
        values = self._values(what, claimed, reference, result)
        if result.passed:
            reason = f"{values}: |Δ| {result.abs_error:.3g} ≤ {result.bound:.3g}{_note(note)}"
            if self.count_unverified:
                return self._grade(
                    Verdict.CORRECT,
                    f"{reason}; counted although unverified: {unverified} (the claim is graded: the "
                    "harness has no value of its own)",
                    evidence,
                )
            return self._grade(
                Verdict.UNVERIFIED, f"{reason}; not verified by the harness: {unverified}", evidence
            )
        reason = f"{values}: |Δ| {result.abs_error:.3g} > {result.bound:.3g}{_note(note)}"
        expected = reference.value
        if (
            pending
            and not self.count_unverified
            and expected is not None
            and may_pass_when_verified(lambda value: self._check(value, reference).passed, claimed, expected)
        ):
            return self._grade(
                Verdict.UNVERIFIED,
                f"{reason}, but a re-solve agreeing with the claim could pass: the harness's value "
                f"decides; not verified by the harness: {unverified}",
                evidence,
            )
        return self._grade(
            Verdict.WRONG, reason + self._sign_note(claimed, reference, solve, negated=bool(note)), evidence
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
                self._evidence(printed, None, reference, source="printed", claimed=printed),
            )
        return self._grade_claim(
            printed,
            reference,
            status=None,
            source="printed",
            unverified="the value was printed, not observed in a solve",
            pending=False,
        )

    def _grade_status(self, solve: SolveRecord, reference: ObjectiveReference) -> Grade:
        predicted = solve.status
        claimed = finite_or_none(solve.objective)
        evidence = self._evidence(claimed, predicted, reference, claimed=claimed, solve=solve)
        said = f"{solve.library} solve ended {predicted.value}; the reference is {reference.status.value}"
        if predicted is reference.status or (
            reference.status is SolveStatus.INF_OR_UNBD and predicted in NO_FINITE_OPTIMUM
        ):
            why = unverified_reason(solve)
            if why is None:
                return self._grade(
                    Verdict.CORRECT, f"{said}; {resolver_name(solve)} re-solve agrees", evidence
                )
            if self.count_unverified:
                reason = f"{said}; counted although unverified: {why} (the claimed status is graded)"
                return self._grade(Verdict.CORRECT, reason, evidence)
            return self._grade(Verdict.UNVERIFIED, f"{said}; not verified by the harness: {why}", evidence)
        if predicted is SolveStatus.INF_OR_UNBD:
            return self._grade(
                Verdict.NOT_DETERMINABLE,
                f"{said}; the solver did not decide between infeasible and unbounded",
                evidence,
            )
        return self._grade(Verdict.WRONG, said, evidence)


def _note(note: str) -> str:
    return f"; {note}" if note else ""
