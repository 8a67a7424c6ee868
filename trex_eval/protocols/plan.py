"""How one benchmark's samples are judged in a run: a protocol bound to a benchmark.

An :class:`EvaluationPlan` fixes, for one benchmark, everything between a completion and its
grade: the extractor, the job a program becomes, the rule, and (for structure benchmarks) which
generated model the rule compares. What each protocol chooses is documented in its package
(:mod:`trex_eval.protocols.default`, :mod:`trex_eval.protocols.trex_compat`).

Pure: reading files and running programs happen in the run (:meth:`EvaluationPlan.fallback`
runs a rule's converted programs through the callable the run hands it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import cast

from trex_eval.benchmarks import Benchmark, GraderSpec
from trex_eval.benchmarks.loading import spec_location
from trex_eval.errors import ConfigError, GradingError
from trex_eval.extract import extract, extractor_function
from trex_eval.grading import ObjectiveRule, Rule, StructureRule, rule_for
from trex_eval.grading.diagnosis import NOT_DIAGNOSED, DiagnosisBudget, diagnose
from trex_eval.grading.diagnosis.failures import failure_diagnosis
from trex_eval.grading.diagnosis.structure import failed_check, structure_diagnosis
from trex_eval.grading.objective.base import (
    BudgetingRule,
    Conversion,
    ConvertingRule,
    RuleBudgets,
    failure_verdict,
)
from trex_eval.grading.objective.sign import stated_sense
from trex_eval.protocols import Protocol, get_protocol, protocol_names
from trex_eval.records import (
    Completion,
    Diagnosis,
    DiagnosisCategory,
    ExecStatus,
    Execution,
    Grade,
    GraderKind,
    GurobiPolicy,
    LinearModel,
    ObjectiveEvidence,
    ObjectiveReference,
    Problem,
    Program,
    SolveStatus,
    StructureEvidence,
    StructureReference,
    Verdict,
)
from trex_eval.sandbox import Job, SandboxLimits
from trex_eval.store import BenchmarkEntry, SizeBuckets
from trex_eval.verify import (
    ModelFileRefused,
    OutOfTime,
    Resolve,
    Unsolvable,
    read_model_file,
    resolve_remembered,
    verification_budget,
    verify_last_solve,
)

ReferenceModelLoader = Callable[[StructureReference], LinearModel]
"""Returns the parsed reference model of a structure reference (the run reads and caches it)."""

ProgramRunner = Callable[[Program], Awaitable[Execution]]
"""Runs one program of a sample in the run's sandbox (the run's own lane and limits)."""

BUDGET_WALL_FACTOR = 3.0
BUDGET_WALL_MARGIN_S = 30.0
"""Under a rule with a program CPU budget the wall limit is ``BUDGET_WALL_FACTOR * budget +
BUDGET_WALL_MARGIN_S``: it only ends a program that waits instead of computing, and the CPU
budget decides. (The wall limit discounts time a job was starved of CPU, but only in part: a
program that received 27.9 CPU s in 68 s on a loaded machine was charged 60 s of wall.)"""

_BUCKET_LIMITS = ("memory_mib", "record_mib")
"""The limits a row's size bucket states (``Problem.meta``; :mod:`trex_eval.benchmarks.scale`)."""

_PASSING = frozenset({Verdict.CORRECT, Verdict.UNVERIFIED})
"""Verdicts a peer's harness would count as passed: no conversion fallback after them."""


@dataclass(frozen=True)
class EvaluationPlan:
    """Extractor, job builder, limits and rule of one benchmark under one protocol.

    ``rule.spec`` (canonical ``name@version``) is what every grade of the plan records, failures
    included; ``limits`` are the sandbox limits its programs run under, adjusted per problem by
    :meth:`limits_for` unless ``limits_given`` (the user chose them: they hold for every job).
    """

    benchmark: Benchmark
    protocol: Protocol
    extractor: str
    rule: Rule
    limits: SandboxLimits
    gurobi: GurobiPolicy = "auto"
    limits_given: bool = False
    rule_budgets: RuleBudgets | None = field(init=False, default=None, repr=False, compare=False)
    """The budgets the rule declares (``budgeted``'s, also under a protocol's conventions),
    else None."""

    def __post_init__(self) -> None:
        # Checked once here: a runtime-checkable Protocol's isinstance costs ~80 us, per grade
        # (the budgets are read for every job's limits and every re-solve).
        wanted = ObjectiveRule if self.kind is GraderKind.OBJECTIVE else StructureRule
        if not isinstance(self.rule, wanted):
            raise GradingError(
                f"rule {self.rule.spec} cannot grade {self.benchmark.name} ({self.kind.value} benchmark)"
            )
        budgets = self.rule.budgets() if isinstance(self.rule, BudgetingRule) else None
        object.__setattr__(self, "rule_budgets", budgets)

    @property
    def kind(self) -> GraderKind:
        return self.benchmark.spec.grader.kind

    def extract(self, completion: Completion) -> Program:
        return extract(completion, extractor=self.extractor)

    def job(self, problem: Problem, program: Program) -> Job:
        """The sandbox job for ``program`` (whose ``code`` must not be ``None``)."""
        if program.code is None:
            raise GradingError("cannot build a job from a program without code")
        job = self.protocol.job(self.benchmark, problem, program.code)
        return job.model_copy(update={"gurobi": self.gurobi})

    def failed(self, verdict: Verdict, reason: str) -> Grade:
        """A grade decided before the rule could look (e.g. the model request failed)."""
        return Grade(verdict=verdict, rule=self.rule.spec, reason=reason)

    def grade(
        self, problem: Problem, execution: Execution, *, reference_model: ReferenceModelLoader
    ) -> Grade:
        """Judge one executed program. ``reference_model`` is only called for structure benchmarks.

        The execution is judged as it is: a claim whose last solve was not verified yet grades
        ``unverified`` under the default rules (:meth:`judge` verifies first where it matters).
        """
        reference = problem.reference
        if isinstance(reference, ObjectiveReference):
            # see __post_init__; a stated sense signs a minimise-only solver's optimum
            return cast(ObjectiveRule, self.rule).grade(execution, stated_sense(problem, reference))
        return self._grade_structure(
            cast(StructureRule, self.rule), problem, execution, reference_model(reference)
        )

    def judge(
        self, problem: Problem, execution: Execution, *, reference_model: ReferenceModelLoader
    ) -> tuple[Execution, Grade]:
        """:meth:`grade`, verifying the claim first where it can change the verdict: only when the
        rule calls the last solve's claim ``unverified`` (it would pass it, or a re-solve agreeing
        with it could pass: the rules grade the harness's value) does the harness re-solve the
        captured model (:func:`trex_eval.verify.verify_last_solve`) and grade again. A
        claim that cannot pass is not re-solved: no proof can make it correct, and a forged wrong
        answer stays wrong. Returns the execution as verified (stored with
        the grade) and the grade. Blocking (seconds for a hard MILP): call it off the event loop.
        """
        return judged(
            lambda found: self.grade(problem, found, reference_model=reference_model),
            execution,
            budget_s=self.verification_budget_s,
        )

    def limits_for(self, problem: Problem) -> SandboxLimits:
        """The sandbox limits of ``problem``'s job: :attr:`limits` as the user gave them
        (``limits_given``), else :attr:`budgeted_limits` with the row's ``meta["memory_mib"]``
        and ``meta["record_mib"]`` (its size bucket's, :mod:`trex_eval.benchmarks.scale`)."""
        if self.limits_given:
            return self.limits
        bucket = {
            key: int(problem.meta[key]) for key in _BUCKET_LIMITS if problem.meta.get(key, "").isdigit()
        }
        return self.budgeted_limits.model_copy(update=bucket) if bucket else self.budgeted_limits

    @property
    def budgeted_limits(self) -> SandboxLimits:
        """:attr:`limits` with the rule's program budget (``budgeted``'s ``cpu``) as the CPU limit
        and ``BUDGET_WALL_FACTOR * budget + BUDGET_WALL_MARGIN_S`` as the wall limit (never
        below the plan's), so a program over its budget is stopped at it rather than running on
        to the protocol's limit; :attr:`limits` where the user gave them or the rule states no
        budget. What the manifest records as the benchmark's limits."""
        budget = self.program_budget_s
        if self.limits_given or budget is None:
            return self.limits
        wall = BUDGET_WALL_FACTOR * budget + BUDGET_WALL_MARGIN_S
        return self.limits.model_copy(update={"cpu_s": budget, "wall_s": max(self.limits.wall_s, wall)})

    @property
    def program_budget_s(self) -> float | None:
        """CPU seconds a program gets where the rule states them (``budgeted``'s ``cpu``), else
        ``None`` (the limits decide alone)."""
        budgets = self.rule_budgets
        return None if budgets is None else budgets.program_cpu_s

    @property
    def verification_budget_s(self) -> float | None:
        """CPU seconds of a re-solve where the rule states them (``budgeted``'s ``verify``), else
        ``None``: :func:`trex_eval.verify.verification_budget`, grown from the program's CPU time."""
        budgets = self.rule_budgets
        return None if budgets is None else budgets.verify_cpu_s

    def diagnosed(
        self,
        problem: Problem,
        completion: Completion | None,
        execution: Execution,
        grade: Grade,
        *,
        budget: DiagnosisBudget | None = None,
        reference_model: ReferenceModelLoader | None = None,
    ) -> Grade:
        """``grade`` with its :class:`~trex_eval.records.Diagnosis` (why it failed), edited models
        re-solved by the harness's own re-solve (:func:`trex_eval.verify.resolve_remembered`) within
        ``budget``; unchanged for a grade that passed or is not diagnosed. The verdict is never
        changed. Blocking (up to the budget's seconds): call it off the event loop. A
        structure-graded sample is compared with its reference model part by part
        (:mod:`trex_eval.grading.diagnosis.structure`; needs ``reference_model``, else its model
        is ``unexplained``)."""
        if isinstance(problem.reference, StructureReference) and reference_model is not None:
            found = self._structure_diagnosis(problem, completion, execution, grade, reference_model)
            return grade if found is None else grade.model_copy(update={"diagnosis": found})
        last = execution.last_solve
        gurobi = last is not None and last.library == "gurobipy"
        found = diagnose(
            problem,
            completion,
            execution,
            grade,
            rule=self.rule,
            solve=lambda model, seconds: _resolved(model, seconds, prefer_gurobi=gurobi),
            budget=budget,
        )
        return grade if found is None else grade.model_copy(update={"diagnosis": found})

    def conversions(self, program: Program, grade: Grade) -> tuple[Conversion, ...]:
        """The converted programs the rule's fallback tries after ``grade`` (empty unless the rule
        is a :class:`~trex_eval.grading.objective.base.ConvertingRule` built with its fallback on,
        the program has code and ``grade`` neither passed nor would pass unverified)."""
        if program.code is None or grade.verdict in _PASSING or not isinstance(self.rule, ConvertingRule):
            return ()
        return self.rule.conversions(program.code)

    async def fallback(
        self,
        problem: Problem,
        program: Program,
        grade: Grade,
        *,
        run: ProgramRunner,
        reference_model: ReferenceModelLoader,
    ) -> Grade:
        """``grade``, or the grade of the first of :meth:`conversions` that passes (``correct``, or
        ``unverified`` where its claim could not be checked), each converted program run by
        ``run`` and judged (:meth:`judge`) in turn. The reason of a converted grade starts with
        ``conversion fallback (<rewrite>)`` and ends with the verdict of the program as written;
        the sample keeps the program and execution as written. Without conversions, ``grade``
        is returned at once."""
        for conversion in self.conversions(program, grade):
            execution = await run(program.model_copy(update={"code": conversion.code}))
            _, tried = await asyncio.to_thread(
                self.judge, problem, execution, reference_model=reference_model
            )
            if tried.verdict in _PASSING:
                reason = (
                    f"conversion fallback ({conversion.name}): {tried.reason}; "
                    f"as written: {grade.verdict.value} ({grade.reason})"
                )
                return tried.model_copy(update={"reason": reason})
        return grade

    def _grade_structure(
        self, rule: StructureRule, problem: Problem, execution: Execution, reference: LinearModel
    ) -> Grade:
        generated = self._generated(problem, execution)
        if isinstance(generated, Grade):
            return generated
        model, name = generated
        grade = rule.grade(reference, model)
        evidence = grade.evidence
        if isinstance(evidence, StructureEvidence):
            evidence = evidence.model_copy(update={"generated_from": name})
        return grade.model_copy(update={"evidence": evidence})

    def _generated(self, problem: Problem, execution: Execution) -> tuple[LinearModel, str] | Grade:
        """The model the program made (and the file or solve it came from), or the grade of a
        program that made none readable."""
        source = self.protocol.structure_source(problem, execution)
        if isinstance(source, str):
            return self._no_model(execution, source)
        if source.model is not None:
            return source.model, source.name
        try:
            budget = verification_budget(execution)
            return read_model_file(source.text or "", name=source.name, budget_s=budget), source.name
        except ModelFileRefused as exc:  # neither read nor compared: no verdict on the model
            verdict, why = Verdict.NOT_DETERMINABLE, f"the model file {source.name} was not read: {exc}"
        except GradingError as exc:
            verdict, why = Verdict.WRONG, f"the model file {source.name} is not a readable model: {exc}"
        return Grade(
            verdict=verdict,
            rule=self.rule.spec,
            reason=why,
            evidence=StructureEvidence(checks=(), generated_from=source.name),
        )

    def _structure_diagnosis(
        self,
        problem: Problem,
        completion: Completion | None,
        execution: Execution,
        grade: Grade,
        reference_model: ReferenceModelLoader,
    ) -> Diagnosis | None:
        """A structure-graded sample's diagnosis: a failure before any model, else the smallest
        part in which its model differs from the reference (:mod:`.diagnosis.structure`)."""
        if grade.verdict in NOT_DIAGNOSED:
            return None
        early = failure_diagnosis(completion, execution, grade)
        if early is not None:
            return early
        generated = self._generated(problem, execution)
        if isinstance(generated, Grade):
            category = (
                DiagnosisCategory.NO_SOLVE
                if generated.verdict is Verdict.NO_SOLVE
                else DiagnosisCategory.UNEXPLAINED
            )
            return Diagnosis(category=category, detail=generated.reason)
        assert isinstance(problem.reference, StructureReference)  # the caller's check
        evidence = grade.evidence if isinstance(grade.evidence, StructureEvidence) else None
        return structure_diagnosis(
            reference_model(problem.reference), generated[0], failed_check=failed_check(evidence)
        )

    def _no_model(self, execution: Execution, what: str) -> Grade:
        if execution.status is ExecStatus.OK or execution.status is ExecStatus.NO_SOLVE:
            return self.failed(Verdict.NO_SOLVE, what)
        verdict = failure_verdict(execution.status)
        detail = execution.detail or execution.error_type or ""
        return self.failed(verdict, f"{what}: {verdict.value}" + (f" ({detail})" if detail else ""))


def judged(
    grade: Callable[[Execution], Grade],
    execution: Execution,
    *,
    verify_wrong: bool = False,
    budget_s: float | None = None,
) -> tuple[Execution, Grade]:
    """``grade(execution)``, verified first where it matters (see :meth:`EvaluationPlan.judge`):
    the last solve is re-solved by the harness and graded again when the first grade is
    ``unverified``, and also when it is ``wrong`` with ``verify_wrong`` (a reward policy that pays
    for a verified feasible model). ``budget_s``: the re-solve's CPU seconds where the rule fixes
    them (:attr:`EvaluationPlan.verification_budget_s`), else verify's default. Returns the
    execution as verified and its grade."""
    first = _noting_store(execution, grade(execution))
    if first.verdict is not Verdict.UNVERIFIED and not (verify_wrong and first.verdict is Verdict.WRONG):
        return execution, first
    checked = verify_last_solve(execution, budget_s=budget_s)
    if checked is execution:
        return execution, first
    return checked, _noting_store(checked, grade(checked))


def _noting_store(execution: Execution, grade: Grade) -> Grade:
    """``grade`` with its objective evidence marked ``stored`` where the re-solve of the last
    solve, which objective rules judge, was read from the store of re-solve results."""
    last, evidence = execution.last_solve, grade.evidence
    if last is None or not last.verified_from_store or not isinstance(evidence, ObjectiveEvidence):
        return grade
    return grade.model_copy(update={"evidence": evidence.model_copy(update={"stored": True})})


def _resolved(model: LinearModel, seconds: float, *, prefer_gurobi: bool) -> Resolve:
    """:func:`~trex_eval.verify.resolve_remembered` as a diagnosis's solver wants it: a time-out is a
    ``time_limit`` verdict, a model no solver takes an ``error`` one."""
    try:
        # Remembered: twin problems and repeated samples make the same edited models.
        return resolve_remembered(model, prefer_gurobi=prefer_gurobi, budget_s=seconds)
    except OutOfTime as error:
        return Resolve(SolveStatus.TIME_LIMIT, None, str(error), error.solver or "")
    except Unsolvable as error:
        return Resolve(SolveStatus.ERROR, None, str(error), "")


def plan_for(
    benchmark: Benchmark,
    *,
    protocol: str | Protocol = "default",
    rule: str | None = None,
    extractor: str | None = None,
    limits: SandboxLimits | None = None,
    gurobi: GurobiPolicy = "auto",
) -> EvaluationPlan:
    """The plan of ``benchmark`` under ``protocol``. ``rule`` overrides the protocol's rule (a
    spec of the benchmark's kind), ``extractor`` its extractor (``raw`` for recorded,
    already-extracted programs), ``limits`` its sandbox limits.

    Raises:
        ConfigError: unknown protocol, rule or extractor, or a rule of the other kind.
    """
    chosen = get_protocol(protocol) if isinstance(protocol, str) else protocol
    grader = benchmark.spec.grader
    name = extractor or chosen.extractor(grader)
    extractor_function(name)  # validates the name now rather than at the first sample
    spec = rule or chosen.rule(grader)
    try:
        graded_by = rule_for(grader.kind, spec)
    except ConfigError as exc:
        # A rule the benchmark file names is located there (a --rule given is the user's flag).
        key = next((k for k in ("rule", "compat_rule") if rule is None and getattr(grader, k) == spec), None)
        if key is None:
            raise
        where = f"{spec_location(benchmark.spec_path, ('grader', key))}: grader.{key}"
        raise ConfigError(exc.message, where=where, hint=exc.hint) from None
    return EvaluationPlan(
        benchmark=benchmark,
        protocol=chosen,
        extractor=name,
        # A composed protocol's grading conventions wrap whichever rule grades (a --rule too).
        rule=chosen.grading_rule(graded_by),
        limits=limits or chosen.limits(grader.kind),
        gurobi=gurobi,
        limits_given=limits is not None,
    )


def benchmark_entry(
    plan: EvaluationPlan,
    *,
    requested: str,
    prompt_set: str,
    template_sha256: str,
    problems: int,
    problem_ids: tuple[str, ...] | None,
) -> BenchmarkEntry:
    """The manifest entry of ``plan``'s benchmark as run: ``requested`` is how it was named (a YAML
    path is recorded resolved, so a resumed or re-graded run finds it again)."""
    bench = plan.benchmark
    return BenchmarkEntry(
        name=bench.name,
        source=str(bench.spec_path.resolve()) if requested.endswith((".yaml", ".yml")) else requested,
        skipped_rows=len(bench.row_errors),
        title=bench.spec.title,
        version=bench.spec.version,
        sha256=bench.sha256,
        problems=problems,
        grader=bench.spec.grader.kind,
        rule=plan.rule.spec,
        rule_description=plan.rule.description,
        extractor=plan.extractor,
        prompt_set=prompt_set,
        template_sha256=template_sha256,
        limits=plan.budgeted_limits,
        problem_ids=problem_ids,
        size_buckets=_size_buckets(bench),
    )


def _size_buckets(bench: Benchmark) -> SizeBuckets | None:
    """Every problem's size bucket (``meta["size_bucket"]``), where the benchmark has a scale."""
    scale = bench.spec.scale
    if scale is None:
        return None
    of = {p.id: p.meta["size_bucket"] for p in bench.problems if "size_bucket" in p.meta}
    return SizeBuckets(names=tuple(bucket.name for bucket in scale.buckets), of=of)


def rules_by_protocol(grader: GraderSpec) -> dict[str, str]:
    """Protocol name -> canonical spec of the rule a benchmark with this grader block is graded
    by under it, for every registered protocol (what listings and ``validate`` print).

    Raises:
        ConfigError: the grader block names an unknown rule, or one of the other kind.
    """
    return {name: rule_for(grader.kind, get_protocol(name).rule(grader)).spec for name in protocol_names()}
