"""A third protocol, written the way a reproduced harness is added: this one folder and a
registry line (``register_protocol("answer-only", "answer_only_protocol:PROTOCOL")``).

It stands for an ORLM-style harness: the ``orlm`` rule on objective benchmarks, the raw
completion as the program, a 30 s limit, the instance under ``instance.json``, and its own
summary row (dataset names upper-cased). Structure benchmarks keep the default reading.
"""

from __future__ import annotations

from collections.abc import Sequence

from trex_eval.benchmarks import Benchmark, GraderSpec
from trex_eval.protocols.base import ModelSource, Protocol, SummaryRow
from trex_eval.protocols.default import PROTOCOL as DEFAULT
from trex_eval.records import Execution, GraderKind, Problem, SampleRecord
from trex_eval.sandbox import Job, SandboxLimits

WALL_S = 30.0


class AnswerOnlyProtocol(Protocol):
    name = "answer-only"
    description = "test protocol: orlm rule, raw programs, 30 s"

    def extractor(self, grader: GraderSpec) -> str:
        return "raw" if grader.kind is GraderKind.OBJECTIVE else DEFAULT.extractor(grader)

    def rule(self, grader: GraderSpec) -> str:
        return "orlm" if grader.kind is GraderKind.OBJECTIVE else DEFAULT.rule(grader)

    def limits(self, kind: GraderKind) -> SandboxLimits:
        return SandboxLimits(wall_s=WALL_S, cpu_s=WALL_S)

    def job(self, benchmark: Benchmark, problem: Problem, code: str) -> Job:
        instance = problem.instance_files.get(benchmark.spec.instance_file)
        files = {} if instance is None else {"instance.json": instance}
        return Job(code=code, files=files, expect="solve")

    def structure_source(self, problem: Problem, execution: Execution) -> ModelSource | str:
        return DEFAULT.structure_source(problem, execution)

    def summary_row(
        self, benchmark: str, problems: Sequence[Sequence[SampleRecord | None]], *, selected: int
    ) -> SummaryRow:
        row = DEFAULT.summary_row(benchmark, problems, selected=selected)
        return row.model_copy(update={"dataset": benchmark.upper()})


PROTOCOL = AnswerOnlyProtocol()
