"""An inspect_ai log of a trex-eval task as a trex-eval run directory (``trex-eval import``), which
``leaderboard``, ``compare``, ``report`` and ``grade`` read like any run.

The log holds everything a run directory holds: the task's metadata the benchmarks' manifest
entries and the run's settings (:func:`~.tasks.build_task`), each sample its prompt, the model's
output, and its score the program, execution and grade the run's judge decided
(:func:`~.grading.score_metadata`). Nothing is graded again: each sample record is the one the
scorer built. Inspect's epoch *e* is the run's sample index *e - 1*. A sample inspect could not
score (its model call failed, or the eval was cut short) is stored as the run stores a failed
request (``api_error``); a problem the log does not hold is left out of the manifest's selection.

inspect_ai is imported when :func:`import_log` is called (the ``integrations`` extra).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trex_eval.errors import ConfigError
from trex_eval.integrations.inspect.grading import INSPECT_BACKEND, METADATA_KEY
from trex_eval.records import (
    BackendSpec,
    ExecStatus,
    Execution,
    Grade,
    Program,
    Prompt,
    SampleRecord,
    SamplingParams,
    Verdict,
)
from trex_eval.report.runs import natural_key
from trex_eval.report.summary import render_summary_markdown, summarize, summary_json
from trex_eval.store import BenchmarkEntry, CompletionLine, RunManifest, RunSettings, RunStore


@dataclass(frozen=True)
class Imported:
    """What :func:`import_log` wrote: the run directory, samples stored per benchmark, and how
    many of them inspect had not scored (stored as ``api_error``)."""

    out: Path
    samples: dict[str, int]
    unscored: int


def import_log(log: Path, *, out: Path, command: Sequence[str] = ()) -> Imported:
    """Write the run directory ``out`` from the inspect log ``log`` (``.eval`` or ``.json``).

    Raises:
        ConfigError: inspect_ai is not installed, ``log`` cannot be read as an inspect log, or it
            is the log of a task that is not trex-eval's (no trex-eval task metadata).
        StoreError: ``out`` holds a run already.
    """
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise ConfigError(
            "reading an inspect log needs inspect_ai, which is not installed",
            hint="pip install 'trex-eval[integrations]'",
        ) from None
    try:
        eval_log = read_eval_log(str(log))
    except Exception as error:  # inspect raises what its readers raise: name the file either way
        raise ConfigError(
            f"{log} cannot be read as an inspect log: {type(error).__name__}: {error}",
            hint="pass a .eval or .json file from an inspect log directory (`inspect log list`)",
        ) from None
    meta = (eval_log.eval.metadata or {}).get(METADATA_KEY)
    if not isinstance(meta, dict):
        raise ConfigError(
            f"{log} is the log of task {eval_log.eval.task!r}, not of a trex-eval task",
            hint="import logs of `inspect eval trex_eval/<benchmark>` (`inspect list tasks` shows them)",
        )
    records = [_record(sample, meta) for sample in eval_log.samples or ()]
    manifest = _manifest(eval_log, meta, log=log, records=records, command=command)
    with RunStore.create(out, manifest) as store:
        for record in records:
            store.append_completion(
                CompletionLine(benchmark=record.benchmark, prompt=record.prompt, completion=record.completion)
            )
            store.append_sample(record)
        manifest = manifest.model_copy(update={"finished_at": _now()})
        store.write_manifest(manifest)
        summary = summarize(manifest, store.iter_samples())
        store.write_summary(summary_json(summary), render_summary_markdown(summary))
    counts: dict[str, int] = {}
    for record in records:
        counts[record.benchmark] = counts.get(record.benchmark, 0) + 1
    unscored = sum(record.execution.status is ExecStatus.NOT_RUN for record in records)
    return Imported(out=out, samples=counts, unscored=unscored)


def _record(sample: Any, meta: dict[str, Any]) -> SampleRecord:
    """The run's record of one inspect sample (an ``EvalSample``)."""
    from trex_eval.integrations.inspect.tasks import completion_of

    benchmark = str(sample.metadata["benchmark"])
    problem_id = str(sample.metadata["problem_id"])
    prompt = Prompt.model_validate(sample.metadata["prompt"])
    completion = completion_of(
        sample.output, problem_id=problem_id, sample_index=sample.epoch - 1, seed=meta.get("seed")
    )
    scored = next(
        (
            score.metadata["record"]
            for score in (sample.scores or {}).values()
            if "record" in (score.metadata or {})
        ),
        None,
    )
    if scored is not None:
        program = Program.model_validate(scored["program"])
        execution = Execution.model_validate(scored["execution"])
        grade = Grade.model_validate(scored["grade"])
    else:
        why = sample.error.message if sample.error is not None else "inspect did not score it"
        completion = completion.model_copy(update={"error": why})
        entry = _entry_of(meta, benchmark)
        program = Program(code=None, extractor=entry.extractor, reason="no completion")
        execution = Execution(status=ExecStatus.NOT_RUN, detail=f"no completion: {why}")
        grade = Grade(verdict=Verdict.API_ERROR, rule=entry.rule, reason=f"the model request failed: {why}")
    return SampleRecord(
        benchmark=benchmark,
        problem_id=problem_id,
        sample_index=completion.sample_index,
        prompt=prompt,
        completion=completion,
        program=program,
        execution=execution,
        grade=grade,
    )


def _entry_of(meta: dict[str, Any], benchmark: str) -> BenchmarkEntry:
    for entry in meta["benchmarks"]:
        if entry["name"] == benchmark:
            return BenchmarkEntry.model_validate(entry)
    raise ConfigError(f"the log's sample of {benchmark!r} names no benchmark of its task")


def _manifest(
    eval_log: Any, meta: dict[str, Any], *, log: Path, records: list[SampleRecord], command: Sequence[str]
) -> RunManifest:
    """The manifest of the imported run: the task's settings, the model inspect ran, and each
    benchmark's entry selecting the problems the log holds."""
    held: dict[str, set[str]] = {}
    for record in records:
        held.setdefault(record.benchmark, set()).add(record.problem_id)
    entries = []
    for raw in meta["benchmarks"]:
        entry = BenchmarkEntry.model_validate(raw)
        ids = tuple(sorted(held.get(entry.name, ()), key=natural_key))
        if ids:
            entries.append(entry.model_copy(update={"problems": len(ids), "problem_ids": ids}))
    sampling = _sampling(eval_log, meta)
    model = str(eval_log.eval.model)
    settings = RunSettings(
        model=BackendSpec(
            name=model,
            backend=INSPECT_BACKEND,
            model=model,
            options={"log": str(log.resolve()), "task": str(eval_log.eval.task)},
            sampling=sampling,
            description=f"inspect eval {eval_log.eval.task} --model {model}",
        ),
        sampling=sampling,
        samples=int(meta["samples"]),
        limit=meta.get("limit"),
        protocol=str(meta["protocol"]),
        prompt_set=str(meta["prompt_set"]),
        extractor=meta.get("extractor"),
        few_shot=int(meta.get("few_shot", 0)),
        benchmarks=tuple(entries),
    )
    return RunManifest(
        run_id=f"inspect-{eval_log.eval.task.rsplit('/', 1)[-1]}-{eval_log.eval.eval_id[:8]}",
        created_at=str(eval_log.eval.created),
        command=tuple(command),
        settings=settings,
        provenance={
            "inspect": {
                "log": str(log.resolve()),
                "eval_id": eval_log.eval.eval_id,
                "run_id": eval_log.eval.run_id,
                "status": eval_log.status,
                "inspect_ai": eval_log.eval.packages.get("inspect_ai"),
                "model_args": eval_log.eval.model_args,
                "task_args": eval_log.eval.task_args,
            }
        },
    )


def _sampling(eval_log: Any, meta: dict[str, Any]) -> SamplingParams:
    """The sampling in force: the generate config inspect recorded over the task's defaults."""
    recorded = SamplingParams.model_validate(meta["sampling"])
    config = eval_log.plan.config
    return SamplingParams(
        temperature=recorded.temperature if config.temperature is None else config.temperature,
        top_p=recorded.top_p if config.top_p is None else config.top_p,
        max_tokens=recorded.max_tokens if config.max_tokens is None else config.max_tokens,
        seed=meta.get("seed"),
        stop=tuple(config.stop_seqs or ()),
    )


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
