"""Real records built in memory, for report tests that need a situation the pipeline cannot
produce on demand (another data digest, a run that lost samples, a sample the manifest does not
list). Every record is a genuine ``trex_eval.records``/``trex_eval.store`` object."""

from __future__ import annotations

from collections.abc import Sequence

from trex_eval.backends.base import BackendSpec
from trex_eval.records import (
    ChatMessage,
    Completion,
    ExecStatus,
    Execution,
    Grade,
    GraderKind,
    ObjectiveEvidence,
    Program,
    Prompt,
    SampleRecord,
    SamplingParams,
    SolveStatus,
    Verdict,
)
from trex_eval.store import BenchmarkEntry, RunManifest, RunSettings

SHA = "a" * 64


def entry(
    name: str, *, problems: int, rule: str = "strict@3", sha256: str = SHA, version: int = 1
) -> BenchmarkEntry:
    return BenchmarkEntry(
        name=name,
        title=name.upper(),
        version=version,
        sha256=sha256,
        problems=problems,
        grader=GraderKind.OBJECTIVE,
        rule=rule,
        rule_description=f"the {rule} rule",
        extractor="default",
        prompt_set="t-rex",
        template_sha256="b" * 64,
    )


def manifest(
    run_id: str,
    entries: Sequence[BenchmarkEntry],
    *,
    samples: int = 1,
    model: str = "m",
    served: str | None = None,
    prompt_set: str = "t-rex",
) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        created_at="2026-11-29T00:00:00+00:00",
        settings=RunSettings(
            model=BackendSpec(name=model, backend="replay", model=model if served is None else served),
            sampling=SamplingParams(),
            samples=samples,
            prompt_set=prompt_set,
            benchmarks=tuple(entries),
        ),
    )


def sample(
    benchmark: str,
    problem_id: str,
    index: int = 0,
    *,
    verdict: Verdict = Verdict.CORRECT,
    predicted: float | None = None,
    status: SolveStatus | None = SolveStatus.OPTIMAL,
    reference: float = 1.0,
    text: str = "```python\nprint(1)\n```",
) -> SampleRecord:
    evidence = None
    if predicted is not None or verdict in (Verdict.CORRECT, Verdict.WRONG):
        evidence = ObjectiveEvidence(
            predicted=predicted,
            predicted_status=status,
            reference=reference,
            reference_status=SolveStatus.OPTIMAL,
        )
    return SampleRecord(
        benchmark=benchmark,
        problem_id=problem_id,
        sample_index=index,
        prompt=Prompt(
            problem_id=problem_id,
            prompt_set="t-rex",
            messages=(ChatMessage(role="user", content=f"solve problem {problem_id}"),),
            template_sha256="b" * 64,
        ),
        completion=Completion(problem_id=problem_id, sample_index=index, text=text),
        program=Program(code="print(1)", extractor="default", reason="last fence"),
        execution=Execution(status=ExecStatus.OK, stdout_tail="1\n"),
        grade=Grade(
            verdict=verdict, rule="strict@3", reason=f"{verdict.value} by construction", evidence=evidence
        ),
    )
