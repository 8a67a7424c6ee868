"""A base protocol with convention options: :class:`ComposedProtocol`. Pure.

Everything not named by an option is the base protocol's (extractor, limits, files, structure
source, summary row, the reference backend's options). The options change three things:

* ``rule=SPEC`` -- the objective rule (structure benchmarks keep the base's);
* ``preload=LIB`` -- the job's code: the harness puts ``from LIB import *`` before the program
  (after its docstring and ``from __future__`` imports, which must stay first), then the base
  protocol builds its job from that code (ORLM's appended lines still come last). It runs inside
  the sandbox as part of the program, under the same limits and hooks; a line number in a
  traceback is one more than in the program as written;
* ``after-solve``, ``zero-band``, ``no-best-solution`` -- the objective rule is wrapped by
  :class:`~.rule.ConventionRule` (:meth:`ComposedProtocol.grading_rule`).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Sequence

from trex_eval.benchmarks import Benchmark, GraderSpec
from trex_eval.grading import Rule
from trex_eval.grading.objective.base import ObjectiveRule
from trex_eval.protocols.base import ModelSource, Protocol, SummaryRow
from trex_eval.protocols.conventions.rule import ConventionRule
from trex_eval.protocols.conventions.spec import PRELOADS, ProtocolSpec, parse
from trex_eval.records import Execution, GraderKind, Problem, SampleRecord
from trex_eval.sandbox import Job, SandboxLimits


def with_preload(code: str, statement: str) -> str:
    """``code`` with ``statement`` on a line of its own before the first statement that may follow
    it: after a module docstring and ``from __future__`` imports (a future import must come
    first), else at the top. Code that does not parse gets it at the top (it fails as it would)."""
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError):
        return f"{statement}\n{code}"
    after = 0
    for index, node in enumerate(body):
        docstring = (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            break
        after = node.end_lineno or node.lineno
    if after == 0:
        return f"{statement}\n{code}"
    lines = code.splitlines(keepends=True)
    head = "".join(lines[:after])
    if not head.endswith("\n"):
        head += "\n"
    return f"{head}{statement}\n{''.join(lines[after:])}"


class ComposedProtocol(Protocol):
    """``base`` under the options of ``spec`` (see the module docstring). ``name`` is the
    canonical text (:attr:`~.spec.ProtocolSpec.text`), as manifests and tables record it."""

    def __init__(self, base: Protocol, spec: ProtocolSpec) -> None:
        self.base = base
        self.spec = spec
        self.conventions = spec.conventions
        self.name = spec.text
        self.description = f"{base.description}; with {', '.join(n for n, _ in spec.options)}"
        self.reference_options = base.reference_options

    def extractor(self, grader: GraderSpec) -> str:
        return self.base.extractor(grader)

    def rule(self, grader: GraderSpec) -> str:
        if self.conventions.rule is not None and grader.kind is GraderKind.OBJECTIVE:
            return self.conventions.rule
        return self.base.rule(grader)

    def grading_rule(self, rule: Rule) -> Rule:
        if self.conventions.grades and isinstance(rule, ObjectiveRule):
            return ConventionRule(rule, self.conventions)
        return rule

    def limits(self, kind: GraderKind) -> SandboxLimits:
        return self.base.limits(kind)

    def job(self, benchmark: Benchmark, problem: Problem, code: str) -> Job:
        if self.conventions.preload is not None:
            code = with_preload(code, PRELOADS[self.conventions.preload])
        return self.base.job(benchmark, problem, code)

    def structure_source(self, problem: Problem, execution: Execution) -> ModelSource | str:
        return self.base.structure_source(problem, execution)

    def summary_row(
        self, benchmark: str, problems: Sequence[Sequence[SampleRecord | None]], *, selected: int
    ) -> SummaryRow:
        return self.base.summary_row(benchmark, problems, selected=selected)

    def prompt_working_directory(self, benchmark: Benchmark) -> str | None:
        return self.base.prompt_working_directory(benchmark)


@functools.lru_cache(maxsize=64)
def composed(text: str) -> Protocol:
    """The protocol a ``--protocol`` text names: the registered base itself when no option is
    given, else a :class:`ComposedProtocol` (one instance per canonical text).

    Raises:
        ConfigError: see :func:`~.spec.parse`.
    """
    from trex_eval.protocols import PROTOCOLS

    spec = parse(text)
    base = PROTOCOLS.get(spec.base)
    if not spec.composed:
        return base
    return ComposedProtocol(base, spec)
