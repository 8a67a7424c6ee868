"""How one benchmark's samples are judged: extractor, program preparation, grader.

An :class:`EvaluationPlan` fixes, for one benchmark and one protocol, everything between a
completion and its grade:

``default`` protocol (trex-eval's corrected grading)
    the default extractor; the program runs unchanged with the instance file as ``data.json``;
    objective benchmarks use the benchmark's rule (``strict`` unless overridden); structure
    benchmarks compare the model the program built — its last written LP/MPS file, else the
    matrix captured at its last solve — with the reference LP using ``orgeval-fixed``.
``trex-compat`` protocol (the reference harness, bugs included)
    the reference extractors (§3.1/§3.2), the reference code rewrites (§3.3/§3.4) and the
    reference rules: ``trex-compat`` (module-level ``model``/``m``, absolute 1e-6) and
    ``orgeval-trex-compat`` on the LP file the rewritten program writes (it counts only if that
    file exists, as upstream).

Pure: reading files and running programs happen in the runner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from trex_eval.benchmark import Benchmark
from trex_eval.errors import ConfigError, GradingError
from trex_eval.extract import extract
from trex_eval.grading import STRUCTURE_DESCRIPTIONS, get_rule, objective_grader, structure_grader
from trex_eval.grading.compat_rewrite import orgeval_rewrite, solver_rewrite
from trex_eval.grading.objective_base import failure_verdict
from trex_eval.lp import parse_lp, parse_mps
from trex_eval.records import (
    Completion,
    ExecStatus,
    Execution,
    Grade,
    GraderKind,
    GurobiPolicy,
    LinearModel,
    ObjectiveReference,
    Problem,
    Program,
    ProtocolName,
    StructureEvidence,
    StructureReference,
    Verdict,
)
from trex_eval.sandbox import WORKDIR_TOKEN, Job

PROTOCOLS: tuple[ProtocolName, ...] = ("default", "trex-compat")

# The reference wrapper executes the program inside a module that has already imported these
# (reference-harness §4.1), so compat programs may use them without importing.
_COMPAT_WRAPPER_PRELUDE = (
    "import os\nimport sys\nimport json\nimport gurobipy as gp\nfrom gurobipy import GRB\n"
)

ReferenceModelLoader = Callable[[StructureReference], LinearModel]
"""Returns the parsed reference model of a structure reference (the runner reads and caches it)."""


@dataclass(frozen=True)
class EvaluationPlan:
    """Extractor, job builder and grader of one benchmark under one protocol.

    ``rule`` is the canonical rule spec (objective) or structure variant name that decides;
    ``rule_description`` its one-line description for reports.
    """

    benchmark: Benchmark
    protocol: ProtocolName
    extractor: str
    rule: str
    rule_description: str
    gurobi: GurobiPolicy = "auto"

    @property
    def kind(self) -> GraderKind:
        return self.benchmark.spec.grader.kind

    @property
    def compat(self) -> bool:
        return self.protocol == "trex-compat"

    # ------------------------------------------------------------------ extraction

    def extract(self, completion: Completion) -> Program:
        return extract(completion, extractor=self.extractor)

    # ------------------------------------------------------------------ program preparation

    def job(self, problem: Problem, program: Program) -> Job:
        """The sandbox job for ``program`` (whose ``code`` must not be ``None``)."""
        if program.code is None:
            raise GradingError("cannot build a job from a program without code")
        if not self.compat:
            expect: Literal["solve", "any"] = "solve" if self.kind is GraderKind.OBJECTIVE else "any"
            return Job(
                code=program.code, files=dict(problem.instance_files), expect=expect, gurobi=self.gurobi
            )
        if self.kind is GraderKind.OBJECTIVE:
            # Upstream writes the instance (or {"question": ...} for NL4OPT/OptiBench) to
            # <tmp>/data.json and rewrites the literal "data.json" to that absolute path.
            data = problem.instance_files.get(self.benchmark.spec.instance_file)
            files = {"data.json": data if data is not None else _question_json(problem.question)}
            code = solver_rewrite(program.code, data_json_path=f"{WORKDIR_TOKEN}/data.json")
            return Job(code=_COMPAT_WRAPPER_PRELUDE + code, files=files, expect="any", gurobi=self.gurobi)
        data_path = compat_data_path(self.benchmark, problem)
        content = problem.instance_files.get(self.benchmark.spec.instance_file, "")
        code = orgeval_rewrite(program.code, data_path=data_path, lp_path=compat_lp_name(problem))
        return Job(code=code, files={data_path: content}, expect="any", gurobi=self.gurobi)

    # ------------------------------------------------------------------ grading

    def grade(
        self, problem: Problem, execution: Execution, *, reference_model: ReferenceModelLoader
    ) -> Grade:
        """Judge one executed program. ``reference_model`` is only called for structure benchmarks."""
        reference = problem.reference
        if isinstance(reference, ObjectiveReference):
            return objective_grader(self.rule)(execution, reference)
        return self._grade_structure(problem, execution, reference_model(reference))

    def _grade_structure(self, problem: Problem, execution: Execution, reference: LinearModel) -> Grade:
        if self.compat:
            wanted = compat_lp_name(problem)
            written = next((f for f in execution.written_files if f.name == wanted), None)
            if written is None:
                return _failed(self.rule, execution, "the program did not write the LP file")
            return self._compare_file(reference, written.name, written.content)
        model_files = [f for f in execution.written_files if f.name.lower().endswith((".lp", ".mps"))]
        if model_files:
            return self._compare_file(reference, model_files[-1].name, model_files[-1].content)
        solve = execution.last_solve
        if solve is not None and solve.model is not None:
            grade = structure_grader(self.rule)(reference, solve.model)
            return _with_source(grade, f"{solve.library} solve (captured matrix)")
        return _failed(self.rule, execution, "the program neither wrote an LP/MPS file nor solved a model")

    def _compare_file(self, reference: LinearModel, name: str, text: str) -> Grade:
        try:
            generated = parse_mps(text) if name.lower().endswith(".mps") else parse_lp(text)
        except GradingError as exc:
            return Grade(
                verdict=Verdict.WRONG,
                rule=self.rule,
                reason=f"the model file {name} is not a readable model: {exc}",
                evidence=StructureEvidence(checks=(), generated_from=name),
            )
        return _with_source(structure_grader(self.rule)(reference, generated), name)


def _with_source(grade: Grade, source: str) -> Grade:
    evidence = grade.evidence
    if isinstance(evidence, StructureEvidence):
        evidence = evidence.model_copy(update={"generated_from": source})
    return grade.model_copy(update={"evidence": evidence})


def _failed(rule: str, execution: Execution, what: str) -> Grade:
    if execution.status is ExecStatus.OK or execution.status is ExecStatus.NO_SOLVE:
        return Grade(verdict=Verdict.NO_SOLVE, rule=rule, reason=what)
    verdict = failure_verdict(execution.status)
    detail = execution.detail or execution.error_type or ""
    return Grade(
        verdict=verdict, rule=rule, reason=f"{what}: {verdict.value}" + (f" ({detail})" if detail else "")
    )


def _question_json(question: str) -> str:
    import json

    return json.dumps({"question": question})


def compat_data_path(benchmark: Benchmark, problem: Problem) -> str:
    """Instance path as the reference ORGEval runner inserts it: ``data/<folder>/<data_path>``,
    relative to its working directory."""
    folder = benchmark.root.name
    return f"data/{folder}/{problem.data_path or benchmark.spec.instance_file}"


def compat_lp_name(problem: Problem) -> str:
    """The LP file the compat rewrite makes the program write (upstream's naming)."""
    k = problem.id.rsplit("_", 1)[-1]
    return f"{k}_model_data_{k}_problem{k}.lp"


def plan_for(
    benchmark: Benchmark,
    *,
    protocol: ProtocolName = "default",
    rule: str | None = None,
    extractor: str | None = None,
    gurobi: GurobiPolicy = "auto",
) -> EvaluationPlan:
    """The plan of ``benchmark`` under ``protocol``; ``rule`` overrides the benchmark's rule
    (an objective rule spec, or a structure variant name for structure benchmarks), ``extractor``
    the protocol's extractor (``raw`` for recorded, already-extracted programs).

    Raises:
        ConfigError: unknown protocol, rule or variant.
    """
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unknown protocol {protocol!r}", hint=f"choose one of: {', '.join(PROTOCOLS)}")
    grader = benchmark.spec.grader
    compat = protocol == "trex-compat"
    chosen = rule or (grader.compat_rule if compat else grader.rule)
    extractor = extractor or (grader.compat_extractor if compat else grader.extractor)
    if grader.kind is GraderKind.OBJECTIVE:
        if rule is None and not compat and (grader.rtol is not None or grader.atol is not None):
            params = ",".join(
                f"{k}={v:g}" for k, v in (("rtol", grader.rtol), ("atol", grader.atol)) if v is not None
            )
            chosen = f"{chosen}:{params}"
        resolved = get_rule(chosen)
        return EvaluationPlan(benchmark, protocol, extractor, resolved.spec, resolved.description, gurobi)
    structure_grader(chosen)  # validates the name now rather than at the first sample
    description = STRUCTURE_DESCRIPTIONS.get(chosen, chosen)
    return EvaluationPlan(benchmark, protocol, extractor, chosen, description, gurobi)
