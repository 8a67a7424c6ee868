"""The ``default`` protocol: trex-eval's corrected grading.

* extraction: the benchmark's extractor (``default``: the last complete Python block after the
  reasoning, see :mod:`trex_eval.extract`);
* rule: the benchmark's rule (``strict`` for objective benchmarks, ``orgeval-exact`` for
  structure ones), with the YAML's ``rtol``/``atol`` applied;
* the program runs unchanged, its instance file in its working directory; objective programs are
  expected to solve something (``no_solve`` otherwise);
* a structure-graded program is judged by the last LP/MPS file it wrote, else the matrix the
  hooks captured at its last solve;
* limits: :class:`~trex_eval.sandbox.SandboxLimits` defaults (60 s wall and CPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from trex_eval.benchmarks import Benchmark, GraderSpec
from trex_eval.protocols.base import ModelSource, Protocol, SummaryRow
from trex_eval.protocols.trex_compat.summary import summary_row
from trex_eval.records import Execution, GraderKind, Problem, SampleRecord
from trex_eval.sandbox import Job, SandboxLimits


class DefaultProtocol(Protocol):
    name = "default"
    description = "trex-eval's corrected grading"

    def extractor(self, grader: GraderSpec) -> str:
        return grader.extractor

    def rule(self, grader: GraderSpec) -> str:
        if grader.kind is GraderKind.OBJECTIVE and (grader.rtol is not None or grader.atol is not None):
            params = ",".join(
                f"{k}={v:g}" for k, v in (("rtol", grader.rtol), ("atol", grader.atol)) if v is not None
            )
            return f"{grader.rule}:{params}"
        return grader.rule

    def limits(self, kind: GraderKind) -> SandboxLimits:
        return SandboxLimits()

    def job(self, benchmark: Benchmark, problem: Problem, code: str) -> Job:
        expect: Literal["solve", "any"] = (
            "solve" if benchmark.spec.grader.kind is GraderKind.OBJECTIVE else "any"
        )
        return Job(code=code, files=dict(problem.instance_files), links=problem.instance_links, expect=expect)

    def structure_source(self, problem: Problem, execution: Execution) -> ModelSource | str:
        model_files = [f for f in execution.written_files if f.name.lower().endswith((".lp", ".mps"))]
        if model_files:
            return ModelSource(model_files[-1].name, text=model_files[-1].content)
        solve = execution.last_solve
        if solve is not None and solve.model is not None:
            return ModelSource(f"{solve.library} solve (captured matrix)", model=solve.model)
        return "the program neither wrote an LP/MPS file nor solved a model"

    def summary_row(
        self, benchmark: str, problems: Sequence[Sequence[SampleRecord | None]], *, selected: int
    ) -> SummaryRow:
        # Default runs print the reference harness's table too, so their numbers line up with
        # published ones row for row.
        return summary_row(benchmark, problems, selected=selected)


PROTOCOL = DefaultProtocol()
