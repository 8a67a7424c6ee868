"""Grading stored completions again: a run directory under another rule or protocol, or a JSONL
of completions recorded by another tool. Both become a ``replay`` run (generate once, grade many)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trex_eval.backends.base import BackendSpec
from trex_eval.errors import ConfigError
from trex_eval.records import SamplingParams
from trex_eval.run.spec import RunOptions, RunSpec
from trex_eval.store import COMPLETIONS, MANIFEST, RunStore


@dataclass(frozen=True)
class CompletionFields:
    """How to read a foreign completions file: its benchmark and field names. ``code_field`` names a
    field holding an already-extracted program (graded with the ``raw`` extractor). ``samples`` is
    the number of completions per problem in the file (records of one id are samples 0, 1, ... in
    file order)."""

    benchmark: str | None = None
    id_field: str = "problem_id"
    text_field: str = "completion"
    code_field: str | None = None
    prompt_set: str = "t-rex"
    samples: int = 1


def request_for(
    source: Path,
    *,
    data_dir: Path | None,
    rules: tuple[str, ...],
    protocol: str,
    fields: CompletionFields,
    workers: int = 2,
    out: Path | None = None,
    command: tuple[str, ...] = (),
    show_progress: bool = True,
) -> tuple[RunSpec, RunOptions]:
    """The replay run that re-grades ``source`` (a run directory or a completions JSONL).

    Raises:
        ConfigError: ``source`` is neither, or a completions file comes without ``--benchmark``.
    """
    options = RunOptions(
        data_dir=data_dir, out=out, workers=workers, command=command, show_progress=show_progress
    )
    if (source / MANIFEST).is_file():
        settings = RunStore(source).read_manifest().settings
        spec = BackendSpec(
            name=settings.model.name,
            backend="replay",
            model=settings.model.model,
            options={
                "path": str(source / COMPLETIONS),
                "id_field": "completion.problem_id",
                "sample_field": "completion.sample_index",
                "benchmark_field": "benchmark",
                "text_field": "completion",
            },
            sampling=settings.sampling,
            description=f"re-grade of {source}",
        )
        return RunSpec.from_settings(settings, model=spec, protocol=protocol, rules=rules), options
    if not source.is_file():
        raise ConfigError(f"{source} is neither a run directory nor a completions file")
    if fields.benchmark is None:
        raise ConfigError(
            "grading a completions file needs --benchmark NAME",
            hint="also give --id-field and --text-field (or --code-field) if they differ from the defaults",
        )
    spec = BackendSpec(
        name=source.stem,
        backend="replay",
        model=str(source),
        options={
            "path": str(source),
            "id_field": fields.id_field,
            "text_field": fields.code_field or fields.text_field,
        },
        sampling=SamplingParams(),
        description=f"completions recorded in {source}",
    )
    run_spec = RunSpec(
        model=spec,
        benchmarks=(fields.benchmark,),
        prompt_set=fields.prompt_set,
        samples=fields.samples,
        protocol=protocol,
        rules=rules,
        extractor="raw" if fields.code_field else None,
    )
    return run_spec, options
