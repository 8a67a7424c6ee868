"""trex-eval benchmarks as inspect_ai tasks: the run's prompts as the dataset, the run's sampling
defaults as the task's generate config, and the run's judge as the scorer.

:func:`build_task` makes the :class:`inspect_ai.Task` of one :class:`~.grading.TaskSettings`
(:mod:`.registry` registers one per shipped benchmark and suite). Each inspect sample is one
problem, its input the chat messages ``trex-eval run`` renders for it (system prompt and few-shot
examples included), its metadata the benchmark and problem id; each epoch is one of the run's
samples (``samples``), generated with the run's per-sample seed (``seed + i``, :func:`seeded_generate`).
The scorer (:func:`trex_judge`) grades the completion with the run's judge on the process's warm
pool and returns 1 (passed) or 0, its verdict and reason as the explanation, and the sample
record's parts as metadata (:func:`~.grading.score_metadata`).

Imports inspect_ai: load it only where inspect_ai is installed (the ``integrations`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage as InspectMessage,
)
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ContentReasoning,
    GenerateConfig,
    ModelOutput,
)
from inspect_ai.scorer import (
    Metric,
    Score,
    Scorer,
    Target,
    accuracy,
    grouped,
    pass_at,
    scorer,
    stderr,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver

from trex_eval.integrations.inspect.grading import (
    METADATA_KEY,
    PreparedTask,
    TaskSettings,
    prepare,
    sample_record,
    score_metadata,
    shared_grader,
)
from trex_eval.records import ChatMessage, Completion, ObjectiveReference, Problem, Prompt, Usage


def build_task(
    settings: TaskSettings,
    *,
    name: str,
    diagnose: bool = True,
    workers: int = 2,
    isolation: str = "auto",
) -> Task:
    """The inspect task of ``settings``; see the module docstring. ``diagnose``, ``workers`` and
    ``isolation`` are ``trex-eval run``'s ``--diagnose``, ``--workers`` and ``--isolation``.

    Raises:
        ConfigError, BenchmarkError, DataError: as ``trex-eval run`` raises them for the same
            flags (an unknown prompt set, protocol or rule, missing data).
    """
    prepared = prepare(settings)
    several = len(prepared.benchmarks) > 1
    samples = [
        _sample(
            item.bench.name,
            problem,
            item.renderer.render(problem, few_shot=item.shots.get(problem.id, ())),
            several,
        )
        for item in prepared.benchmarks
        for problem in item.problems
    ]
    sampling = prepared.spec.model.sampling
    reducers: list[Any] = ["mean"]
    if settings.samples > 1:
        reducers.append(pass_at(settings.samples))
    return Task(
        name=name,
        dataset=MemoryDataset(samples, name=name),
        solver=seeded_generate(seed=settings.seed),
        scorer=trex_judge(prepared, diagnose=diagnose, workers=workers, isolation=isolation),
        config=GenerateConfig(
            temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_tokens
        ),
        epochs=Epochs(settings.samples, reducers),
        metadata={METADATA_KEY: _task_metadata(prepared)},
    )


def _task_metadata(prepared: PreparedTask) -> dict[str, Any]:
    """What :mod:`.importer` needs to write a run's manifest without loading the benchmarks."""
    spec = prepared.spec
    return {
        "protocol": spec.protocol,
        "prompt_set": spec.prompt_set,
        "samples": spec.samples,
        "limit": spec.limit,
        "extractor": spec.extractor,
        "few_shot": spec.few_shot.k,
        "seed": prepared.settings.seed,
        "sampling": spec.model.sampling.model_dump(mode="json"),
        "benchmarks": [item.entry.model_dump(mode="json") for item in prepared.benchmarks],
    }


def _sample(benchmark: str, problem: Problem, prompt: Prompt, several: bool) -> Sample:
    reference = problem.reference
    return Sample(
        id=f"{benchmark}/{problem.id}" if several else problem.id,
        input=[_message(message) for message in prompt.messages],
        target=reference.label if isinstance(reference, ObjectiveReference) else "",
        metadata={"benchmark": benchmark, "problem_id": problem.id, "prompt": prompt.model_dump(mode="json")},
    )


def _message(message: ChatMessage) -> InspectMessage:
    if message.role == "system":
        return ChatMessageSystem(content=message.content)
    if message.role == "assistant":  # a few-shot example's answer
        return ChatMessageAssistant(content=message.content)
    return ChatMessageUser(content=message.content)


@solver(name="trex_eval/seeded_generate")
def seeded_generate(seed: int | None = 42) -> Solver:
    """Generate once, sending sample i (epoch i + 1) the seed ``seed + i`` as ``trex-eval run``
    does (``None``: no seed, the model's own). The per-call seed wins over ``--seed``."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if seed is None:
            return await generate(state, tool_calls="none")
        return await generate(state, tool_calls="none", seed=seed + state.epoch - 1)

    return solve


def completion_of(output: ModelOutput, *, problem_id: str, sample_index: int, seed: int | None) -> Completion:
    """The trex-eval completion of an inspect model output: its text (reasoning apart, as a run
    keeps a server's reasoning channel), stop reason, token usage and model."""
    message = output.message if output.choices else None
    reasoning = None
    if message is not None and not isinstance(message.content, str):
        parts = [part.reasoning for part in message.content if isinstance(part, ContentReasoning)]
        reasoning = "\n".join(parts) or None
    usage = output.usage
    return Completion(
        problem_id=problem_id,
        sample_index=sample_index,
        text=output.completion,
        reasoning=reasoning,
        finish_reason=output.stop_reason if output.choices else None,
        usage=Usage()
        if usage is None
        else Usage(
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            total_tokens=usage.total_tokens,
        ),
        latency_s=output.time,
        model=output.model or None,
        seed=None if seed is None else seed + sample_index,
    )


def _metrics(several: bool) -> list[Metric | dict[str, list[Metric]]]:
    if several:
        return [grouped(accuracy(), "benchmark"), stderr()]
    return [accuracy(), stderr()]


def trex_judge(prepared: PreparedTask, *, diagnose: bool, workers: int, isolation: str) -> Scorer:
    """The scorer of ``prepared``'s samples: the run's judge on the process's warm pool."""
    grader = shared_grader(prepared, workers=workers, isolation=isolation)
    problems = {(item.bench.name, p.id): (item, p) for item in prepared.benchmarks for p in item.problems}

    @scorer(metrics=_metrics(len(prepared.benchmarks) > 1), name="trex_eval/trex_judge")
    def make() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            key = (str(state.metadata["benchmark"]), str(state.metadata["problem_id"]))
            found = problems.get(key)
            if found is None:
                raise KeyError(f"sample {key} is no problem of this task ({prepared.names()})")
            item, problem = found
            completion = completion_of(
                state.output, problem_id=problem.id, sample_index=state.epoch - 1, seed=prepared.settings.seed
            )
            judged = await grader.judge(item, problem, completion, diagnose=diagnose)
            prompt = Prompt.model_validate(state.metadata["prompt"])
            record = sample_record(item, problem, prompt, completion, judged)
            grade = record.grade
            return Score(
                value=1.0 if grade.passed else 0.0,
                answer=record.program.code or "",
                explanation=f"{grade.verdict.value}: {grade.reason}",
                metadata=score_metadata(record),
            )

        return score

    return make()


def task_settings(
    benchmarks: Sequence[str],
    *,
    prompt_set: str,
    protocol: str,
    rule: str | Sequence[str] | None,
    extractor: str | None,
    limit: int | None,
    few_shot: int,
    samples: int,
    seed: int | None,
    data_dir: str | None,
) -> TaskSettings:
    """:class:`TaskSettings` from task parameters as ``-T`` gives them (``rule``: one spec or a list)."""
    rules = () if rule is None else (rule,) if isinstance(rule, str) else tuple(rule)
    return TaskSettings(
        benchmarks=tuple(benchmarks),
        prompt_set=prompt_set,
        protocol=protocol,
        rules=rules,
        extractor=extractor,
        limit=limit,
        few_shot=few_shot,
        samples=samples,
        seed=seed,
        data_dir=None if data_dir is None else Path(data_dir),
    )
