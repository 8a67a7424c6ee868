"""The ``trex-compat`` objective rule: the reference T-Rex harness's verdicts, reproduced from the
:class:`~trex_eval.records.Execution` record (reference-harness §4.1, §5.1; golden facts G13-G15).
Pure.

The reference wrapper ``exec``s the program at module level inside one ``try`` and then looks
for the answer only in the module-level names ``model`` and then ``m``. Reproduced here:

1. The program raised ``SystemExit`` (``called_sys_exit``): the wrapper never printed its result
   (``SystemExit`` is not caught), so the item fails -- "Could not parse output" when the program
   printed something, "Code execution failed" when stdout was empty.
2. Timeout -> "Code execution timeout"; any other failed execution (an exception anywhere,
   even after a successful solve) -> ``"ERROR: <message>"``.
3. Model discovery: the first of ``model``, ``m`` among ``Execution.bindings`` whose object had
   both ``optimize`` and ``ObjVal`` (``ModelBinding.has_optimize and has_objval``, evaluated as
   the wrapper's ``hasattr``). In gurobipy 13 ``ObjVal`` is unreadable before a solution exists,
   so only a model the program optimised to a solution is found; otherwise ``MODEL_NOT_FOUND``.
   Models under other names, inside functions or never optimised therefore score 0, as in
   the reference.
4. Status 2 (``OPTIMAL``) yields ``ObjVal``; ``INFEASIBLE``/``UNBOUNDED``/``INF_OR_UNBD`` and
   anything else (``UNKNOWN``) yield no value, which fails.
5. Correct iff ``|obj − gt| ≤ atol`` with ``atol = 1e-6`` absolute (the harness's
   ``--tolerance``; overridable). No relative tolerance, rounding or sense check.

Deliberate differences, none of which changes a verdict on a program that does not attack the
harness: the result comes from the sandbox's record of the model object, not from parsing the
program's stdout (so a forged ``{"status": 2, ...}`` line plus ``os._exit(0)`` is not believed);
environment failures (``licence_error``, ``needs_gurobi``, ``needs_library``, ``not_run``) keep
their own verdicts instead of scoring as an error; and references without an optimum (which the
shipped data never has) are ``wrong``, where the reference code would crash or score 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from trex_eval.grading.objective.base import check_reference, failure_detail, failure_verdict, fmt, rule_spec
from trex_eval.grading.spec import RuleSpec
from trex_eval.records import (
    ExecStatus,
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

TREX_COMPAT_VERSION = "1"
TREX_COMPAT_ATOL = 1e-6
MODEL_NAMES = ("model", "m")
"""Module-level names the reference wrapper inspects, in order."""

_STATUS_NAMES = {
    SolveStatus.INFEASIBLE: "INFEASIBLE",
    SolveStatus.UNBOUNDED: "UNBOUNDED",
    SolveStatus.INF_OR_UNBD: "INF_OR_UNBD",
}


def discover_model(bindings: tuple[ModelBinding, ...]) -> ModelBinding | None:
    """The binding the reference wrapper would pick: ``model`` then ``m``, each only if the object
    had both ``optimize`` and ``ObjVal``; ``None`` is the wrapper's ``MODEL_NOT_FOUND``."""
    by_name = {binding.name: binding for binding in bindings}
    for name in MODEL_NAMES:
        binding = by_name.get(name)
        if binding is not None and binding.has_optimize and binding.has_objval:
            return binding
    return None


@dataclass(frozen=True)
class TrexCompatRule:
    """The reference harness's solver-target rule (see the module docstring).

    ``atol`` is the absolute tolerance (default 1e-6, the reference's ``--tolerance``);
    ``parameters`` is the canonical non-default parameter text appended to ``spec``.
    """

    atol: float = TREX_COMPAT_ATOL
    parameters: str = ""
    name: str = "trex-compat"
    version: str = TREX_COMPAT_VERSION
    kind: ClassVar[GraderKind] = GraderKind.OBJECTIVE

    @property
    def spec(self) -> str:
        return rule_spec(self.name, self.version, self.parameters)

    @property
    def description(self) -> str:
        return (
            f"reference T-Rex harness: module-level `model`/`m` optimised to status OPTIMAL and "
            f"|ObjVal − gt| ≤ {self.atol:g} (absolute)"
        )

    def grade(self, execution: Execution, reference: ObjectiveReference, /) -> Grade:
        """Judge ``execution`` as the reference harness would.

        Raises:
            GradingError: the reference cannot be judged against (see ``check_reference``).
        """
        check_reference(reference)
        failed = self._failed(execution)
        if failed is not None:
            return failed
        binding = discover_model(execution.bindings)
        if binding is None:
            verdict = Verdict.NO_SOLVE if execution.status is ExecStatus.NO_SOLVE else Verdict.WRONG
            return self._grade(
                verdict,
                "MODEL_NOT_FOUND: no module-level `model` or `m` with `optimize` and an available `ObjVal`",
            )
        evidence = ObjectiveEvidence(
            predicted=finite_or_none(binding.objective),
            predicted_status=binding.status,
            reference=reference.value,
            reference_status=reference.status,
            atol=self.atol,
            rtol=0.0,
            source=f"binding:{binding.name}",
        )
        if binding.status is not SolveStatus.OPTIMAL or binding.objective is None:
            status_name = _STATUS_NAMES.get(binding.status or SolveStatus.UNKNOWN, "UNKNOWN")
            return self._grade(
                Verdict.WRONG, f"{status_name}: `{binding.name}` has status {binding.raw_status}", evidence
            )
        if reference.value is None:
            return self._grade(
                Verdict.WRONG,
                f"OPTIMAL {fmt(binding.objective)}, but the reference is {reference.status.value}",
                evidence,
            )
        error = abs(binding.objective - reference.value)
        evidence = evidence.model_copy(update={"abs_error": error})
        values = f"OPTIMAL: `{binding.name}`.ObjVal {fmt(binding.objective)} vs gt {fmt(reference.value)}"
        if error <= self.atol:
            return self._grade(Verdict.CORRECT, f"{values}: |Δ| {error:.3g} ≤ {self.atol:g}", evidence)
        return self._grade(Verdict.WRONG, f"{values}: |Δ| {error:.3g} > {self.atol:g}", evidence)

    def _failed(self, execution: Execution) -> Grade | None:
        """The grade of a run whose result the wrapper would never have printed, else ``None``."""
        ran = execution.status in (ExecStatus.OK, ExecStatus.NO_SOLVE)
        verdict = Verdict.WRONG if ran else failure_verdict(execution.status)
        if execution.called_sys_exit:
            if execution.stdout_tail.strip():
                return self._grade(verdict, "Could not parse output: the program called sys.exit()")
            stderr = execution.stderr_tail.strip().splitlines()
            return self._grade(verdict, f"Code execution failed: {stderr[-1] if stderr else 'No output'}")
        if ran:
            return None
        if execution.status is ExecStatus.TIMEOUT:
            return self._grade(verdict, f"Code execution timeout ({execution.wall_s:.0f}s)")
        return self._grade(verdict, f"ERROR: {failure_detail(execution)}")

    def _grade(self, verdict: Verdict, reason: str, evidence: ObjectiveEvidence | None = None) -> Grade:
        return Grade(verdict=verdict, rule=self.spec, reason=reason, evidence=evidence)


def build(spec: RuleSpec) -> TrexCompatRule:
    """The registry factory: ``trex-compat[:ATOL]`` (key ``atol`` only)."""
    values = spec.values(primary="atol", allowed=("atol",))
    atol = spec.number("atol", values["atol"]) if "atol" in values else TREX_COMPAT_ATOL
    return TrexCompatRule(atol=atol, parameters=f"atol={atol!r}" if atol != TREX_COMPAT_ATOL else "")
