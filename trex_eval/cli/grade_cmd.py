"""`trex-eval grade`: grade stored completions again, without calling a model."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from trex_eval.cli._common import data_dir_for, err, out
from trex_eval.cli.finish import (
    EXIT_NOT_A_MEASUREMENT,
    interruptibly,
    note,
    print_isolation,
    report_result,
    run_interruptibly,
    warn,
)
from trex_eval.cli.options import (
    DEFAULT_WORKERS,
    BenchmarksOption,
    DataDirOption,
    MemoryOption,
    NoProgressOption,
    RayActorsOption,
    RayAddressOption,
    RegradeProtocolOption,
    RuleOption,
    RunOutOption,
    TimeoutOption,
    WorkersOption,
    protocol_name,
    ray_options,
    sandbox_limits,
    split_list,
    split_rules,
    workers_count,
)
from trex_eval.errors import ConfigError

if TYPE_CHECKING:
    from trex_eval.run.regrade import Regrade

_FILE = "Completions file"


# The options only `grade` takes; those shared with other commands are in cli/options.py.
_SourceArgument = Annotated[
    Optional[Path],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
    typer.Argument(help="A run directory, or a JSONL file of recorded completions.", show_default=False),
]
_IdFieldOption = Annotated[str, typer.Option("--id-field", help="Problem id field.", rich_help_panel=_FILE)]
_TextFieldOption = Annotated[
    str,
    typer.Option("--text-field", help="Completion text field (dotted path allowed).", rich_help_panel=_FILE),
]
_CodeFieldOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--code-field",
        help="Field holding an already-extracted program (instead of --text-field).",
        rich_help_panel=_FILE,
        show_default=False,
    ),
]
_PromptSetOption = Annotated[
    str, typer.Option("--prompt-set", help="Prompt set recorded with the samples.", rich_help_panel=_FILE)
]
_SamplesOption = Annotated[
    int,
    typer.Option(
        "--samples",
        "-k",
        help="Samples per problem (records of an id in file order).",
        rich_help_panel=_FILE,
    ),
]
_AllProblemsOption = Annotated[
    bool,
    typer.Option(
        "--all-problems",
        help="Grade every problem of the benchmark (those without a completion as missing, ‡) "
        "instead of the ids the file holds.",
        rich_help_panel=_FILE,
        metavar="",
    ),
]
_AllowTornLineOption = Annotated[
    bool,
    typer.Option(
        "--allow-torn-line",
        help="Grade a file whose last line is cut off, without that line (its problem counts as "
        "missing where its id can be read); refused by default.",
        rich_help_panel=_FILE,
        metavar="",
    ),
]
_DiagnoseOption = Annotated[
    bool,
    typer.Option(
        "--diagnose/--no-diagnose",
        help="Store why each failing sample failed (its diagnosis category, from the stored "
        "executions' captured models; no program runs again for it).",
    ),
]
_CompletionsOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--completions", hidden=True, help="Old spelling of SOURCE (a completions file)."),
]
_BenchmarkOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--benchmark", hidden=True, help="Old spelling of --benchmarks."),
]


def grade(
    source: _SourceArgument = None,
    benchmarks: BenchmarksOption = [],  # noqa: B006 - typer needs a literal default
    id_field: _IdFieldOption = "problem_id",
    text_field: _TextFieldOption = "completion",
    code_field: _CodeFieldOption = None,
    prompt_set: _PromptSetOption = "t-rex",
    samples: _SamplesOption = 1,
    all_problems: _AllProblemsOption = False,
    allow_torn_line: _AllowTornLineOption = False,
    rule: RuleOption = [],  # noqa: B006
    diagnose: _DiagnoseOption = True,
    protocol: RegradeProtocolOption = None,
    workers: WorkersOption = DEFAULT_WORKERS,
    ray_address: RayAddressOption = None,
    ray_actors: RayActorsOption = None,
    wall_s: TimeoutOption = None,
    memory_mib: MemoryOption = None,
    out_dir: RunOutOption = None,
    no_progress: NoProgressOption = False,
    data_dir: DataDirOption = None,
    completions: _CompletionsOption = None,
    benchmark: _BenchmarkOption = None,
) -> None:
    """Grade stored completions again (other rules, protocol or limits) without calling a model.

    A run directory is re-graded with its own benchmarks, prompt set, samples and protocol (unless
    --protocol names another; a note says which), reusing each program's stored execution when
    only the rule changes; several --rule of one kind grade into one
    directory, a run directory per rule. A completions file from another tool needs -b BENCHMARK and
    its field names (or --code-field for extracted programs); the problems it holds are graded (the
    others are named as left out; --all-problems keeps the benchmark's full denominator). The new
    grades go to a directory of their own (default results/<source>-regrade-<time>).

    Exit codes: 0 graded, 1 the harness or the machine failed (a full disk), 2 a user error, 3 more
    than 10% of the samples are API errors, 130 interrupted.

    Example: trex-eval grade out.jsonl -b my-bench --id-field qid --text-field
    response.choices.0.message.content --rule orlm
    """
    from trex_eval.run import regrade

    ray = ray_options(ray_address, ray_actors)
    path, is_run, names = _source_and_benchmarks(
        source, completions=completions, benchmarks=benchmarks, benchmark=benchmark
    )
    plan = regrade.plan_regrade(
        path,
        data_dir=data_dir_for(names, data_dir),
        rules=split_rules(rule),
        protocol=None if protocol is None else protocol_name(protocol),
        fields=regrade.CompletionFields(
            benchmark=None if is_run or not names else names[0],
            id_field=id_field,
            text_field=text_field,
            code_field=code_field,
            prompt_set=prompt_set,
            samples=samples,
            all_problems=all_problems,
            allow_torn=allow_torn_line,
        ),
        workers=workers_count(workers),
        limits=sandbox_limits(wall_s, memory_mib),
        out=out_dir,
        command=tuple(sys.argv),
        show_progress=not no_progress,
        diagnose=diagnose,
    )
    if ray is not None:  # every pass grades on Ray; the plan is otherwise the same
        passes = tuple((spec, replace(options, ray=ray)) for spec, options in plan.passes)
        plan = replace(plan, passes=passes)
    _run_plan(plan)


def _source_and_benchmarks(
    source: Path | None, *, completions: Path | None, benchmarks: list[str], benchmark: str | None
) -> tuple[Path, bool, list[str]]:
    """What to grade: the source (SOURCE or the old ``--completions``), whether it is a run
    directory, and the benchmarks it is graded against (a run directory's own, read from its
    manifest; a completions file's one ``-b``, or none).

    Raises:
        ConfigError: not exactly one source; -b with a run directory; several -b with a file.
    """
    from trex_eval.store import MANIFEST, RunStore

    given = [path for path in (source, completions) if path is not None]
    if len(given) != 1:
        raise ConfigError(
            "give one run directory or completions file to grade", hint="trex-eval grade SOURCE"
        )
    names = [*split_list(benchmarks), *([benchmark] if benchmark else [])]
    is_run = (given[0] / MANIFEST).is_file()
    if is_run and names:
        raise ConfigError(
            f"{given[0]} is a run directory: it is re-graded with its own benchmarks",
            hint="drop -b/--benchmarks (it names the benchmark of a completions file)",
        )
    if len(names) > 1:
        raise ConfigError("a completions file is graded against one benchmark", hint="give one -b NAME")
    if is_run:
        names = [b.requested for b in RunStore(given[0]).read_manifest().settings.benchmarks]
    return given[0], is_run, names


def _run_plan(plan: Regrade) -> None:
    """Say which protocol and what to heed, then run the re-grade and report it (one rule: as a
    run; several: :func:`_report_several`)."""
    if plan.protocol_line is not None:
        note(plan.protocol_line)
    for text in plan.notes:
        warn(text)
    if not plan.several:
        ((spec, options),) = plan.passes
        report_result(run_interruptibly(spec, options))
        return
    _report_several(plan)


def _report_several(plan: Regrade) -> None:
    """The end of a several-rule re-grade: one row per rule, where they are, the exit code."""
    from trex_eval.report.terminal import rules_table
    from trex_eval.run import regrade

    results = interruptibly(lambda: regrade.run_regrade(plan), plan.root)
    for text in dict.fromkeys(text for result in results for text in result.notes):
        note(text)
    out.print(rules_table([r.summary for r in results], [r.run_dir.name for r in results]))
    reused = sum(result.reused_now for result in results)
    executed = sum(result.executed_now for result in results)
    assert plan.root is not None
    out.print(
        f"{len(results)} rules: {plan.root / regrade.LEADERBOARD_MD} and one run directory per rule "
        f"({reused} stored executions reused, {executed} programs run)",
        highlight=False,
        soft_wrap=True,
    )
    print_isolation(*(result.run_dir for result in results))
    failures = [result.failure for result in results if result.failure is not None]
    if failures:
        err.print(f"[bold red]error:[/] {escape(failures[0])}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_NOT_A_MEASUREMENT)
