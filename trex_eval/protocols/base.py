"""The :class:`Protocol` type: everything a reproduced evaluation harness decides between a
benchmark problem and a grade. Pure: protocols build records; the run executes them.

A protocol decides, per benchmark:

* the extractor and the rule a benchmark is graded by when the run does not override them
  (:meth:`Protocol.extractor`, :meth:`Protocol.rule`; benchmark YAML may override both through
  its ``grader`` block, which each protocol reads as it documents);
* the sandbox limits (:meth:`Protocol.limits`);
* the job a program becomes: code rewrites, the files it finds and where (:meth:`Protocol.job`);
* which model a structure-graded program is judged by (:meth:`Protocol.structure_source`);
* the options the embedded ``reference`` backend needs to answer under it
  (:attr:`Protocol.reference_options`);
* the row of the reference harness's own summary table (:meth:`Protocol.summary_row`).

Adding a protocol: a package under ``trex_eval/protocols/`` with a :class:`Protocol` subclass
instance, and one line in :data:`trex_eval.protocols.PROTOCOLS`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from trex_eval.benchmarks import Benchmark, GraderSpec
from trex_eval.grading import Rule
from trex_eval.records import Execution, GraderKind, LinearModel, Problem, Record, SampleRecord
from trex_eval.sandbox import Job, SandboxLimits


@dataclass(frozen=True)
class ModelSource:
    """The generated model a structure rule compares: a file the program wrote (``name`` and
    ``text``, parsed as LP, or MPS when the name ends in ``.mps``) or a matrix the hooks
    captured (``model``, with ``name`` saying where it came from)."""

    name: str
    text: str | None = None
    model: LinearModel | None = None


class SummaryRow(Record):
    """One row of the reference harness's ``summary.md`` table (reference-harness §6.4).

    Unlike the reference, ``count`` is the number of problems selected, so problems lost to API
    failures stay in the denominator (W28).
    """

    dataset: str
    score_count: int
    code_pass_count: int
    api_error_count: int
    count: int


class Protocol(ABC):
    """One way of evaluating: see the module docstring. Instances are immutable and shared."""

    name: str
    """Registry name, as ``--protocol`` takes it and manifests record it."""
    description: str
    """One line for ``--help`` and listings."""
    reference_options: Mapping[str, str] = MappingProxyType({})
    """Options the ``reference`` backend needs under this protocol, unless the user set them."""

    @abstractmethod
    def extractor(self, grader: GraderSpec) -> str:
        """Name of the extractor for a benchmark with this grader block."""

    @abstractmethod
    def rule(self, grader: GraderSpec) -> str:
        """Rule spec a benchmark with this grader block is graded by."""

    @abstractmethod
    def limits(self, kind: GraderKind) -> SandboxLimits:
        """Sandbox limits for programs of a benchmark of ``kind``."""

    @abstractmethod
    def job(self, benchmark: Benchmark, problem: Problem, code: str) -> Job:
        """The sandbox job running ``code`` for ``problem`` (``Job.gurobi`` is set by the caller)."""

    @abstractmethod
    def structure_source(self, problem: Problem, execution: Execution) -> ModelSource | str:
        """The model to compare for a structure-graded ``execution``, or a sentence saying why
        there is none (``"the program did not write the LP file"``)."""

    @abstractmethod
    def summary_row(
        self, benchmark: str, problems: Sequence[Sequence[SampleRecord | None]], *, selected: int
    ) -> SummaryRow:
        """The reference-harness summary row of one benchmark: ``problems`` holds each selected
        problem's samples in index order (``None`` for a missing one)."""

    def grading_rule(self, rule: Rule) -> Rule:
        """The rule a plan grades by, given the rule built from :meth:`rule` (or the user's
        ``--rule``): itself (the default); a composed protocol wraps an objective rule in its
        grading conventions (:mod:`trex_eval.protocols.conventions`)."""
        return rule

    def prompt_working_directory(self, benchmark: Benchmark) -> str | None:
        """The upstream ``{{WorkingDirectory}}`` text of ``benchmark``'s prompts; ``None`` (the
        default): the renderer's machine-independent stand-in path."""
        return None

    def __repr__(self) -> str:
        return f"<protocol {self.name}>"
