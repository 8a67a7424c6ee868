"""A shipped benchmark's problems as lm-eval documents: one flat row of text per problem, carrying
the prompt ``trex-eval run`` renders for it and the key its grade is looked up by.

Reads the pinned data through trex-eval's own loader (never a hub dataset) and renders with the
run's renderer: the ``t-rex`` prompt set (the benchmark's ``default_set`` where it has no upstream
template), the default protocol's working directory, zero-shot.
"""

from __future__ import annotations

from pathlib import Path

from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.prompting.render import UPSTREAM_SET, PromptRenderer
from trex_eval.protocols import DEFAULT_PROTOCOL
from trex_eval.protocols.plan import plan_for
from trex_eval.records import ObjectiveReference, Problem

REGENERATE = "python -m trex_eval.integrations.lm_eval --write"


def _target(problem: Problem) -> str:
    """The label as text (lm-eval logs it as the sample's target; grading never reads it)."""
    reference = problem.reference
    if isinstance(reference, ObjectiveReference):
        return reference.label or ("" if reference.value is None else repr(reference.value))
    return ""


def documents(benchmark: str, *, rule: str, data_dir: Path | None) -> list[dict[str, str]]:
    """One document per problem of ``benchmark``, in the benchmark's order: ``benchmark``,
    ``problem_id``, ``system`` (empty when the prompt has no system message), ``user``,
    ``target`` (the label, for lm-eval's logs) and ``rule`` (``name@version``).

    Raises:
        ConfigError: ``rule`` (the task config's) is not the rule trex-eval grades the benchmark
            by (configs older or newer than this trex-eval), or a prompt is not a system message
            and one user message.
        BenchmarkError, DataError: the benchmark or its data cannot be read.
    """
    bench = load_benchmark(benchmark, data_dir=data_dir)
    plan = plan_for(bench, protocol=DEFAULT_PROTOCOL)
    if plan.rule.spec != rule:
        raise ConfigError(
            f"the lm-eval task of benchmark '{benchmark}' reports rule {rule}, but this trex-eval "
            f"grades it by {plan.rule.spec}",
            where="the task's YAML (dataset_kwargs.rule)",
            hint=f"use the configs shipped with this trex-eval (`{REGENERATE.replace('--write', '--path')}`"
            f" prints their folder), or regenerate a checkout's with `{REGENERATE}`",
        )
    prompt_set = UPSTREAM_SET if bench.spec.prompt.upstream is not None else bench.spec.prompt.default_set
    renderer = PromptRenderer(
        bench, prompt_set, working_directory=plan.protocol.prompt_working_directory(bench)
    )
    rows = []
    for problem in bench.problems:
        messages = renderer.render(problem).messages
        roles = [message.role for message in messages]
        if roles not in (["user"], ["system", "user"]):
            raise ConfigError(
                f"benchmark '{benchmark}' problem {problem.id!r}: the prompt's messages are {roles}, "
                "and an lm-eval task carries a system message and one user message",
                hint="report this as a trex-eval bug",
            )
        rows.append(
            {
                "benchmark": benchmark,
                "problem_id": problem.id,
                "system": messages[0].content if len(messages) == 2 else "",
                "user": messages[-1].content,
                "target": _target(problem),
                "rule": plan.rule.spec,
            }
        )
    return rows
