"""`trex-eval run | grade | audit | models`: the evaluation commands."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional, TypeVar, cast, get_args

import typer
from pydantic import ValidationError
from rich.markup import escape

from trex_eval.cli._common import (
    DataDirOption,
    ModelsFileOption,
    data_dir_for,
    data_dir_or_pull,
    echo_text,
    err,
    out,
)
from trex_eval.errors import ConfigError
from trex_eval.protocols import DEFAULT_PROTOCOL
from trex_eval.records import GUROBI_POLICY_ALIASES, FewShotStrategy, GurobiPolicy
from trex_eval.store import MANIFEST, SUMMARY_MD, RunStore

if TYPE_CHECKING:
    from trex_eval.run.pipeline import RunResult
    from trex_eval.run.spec import RunOptions, RunSpec


_T = TypeVar("_T")


def _protocol_help() -> str:
    from trex_eval.protocols import protocol_names

    # Names only: describing each would load every protocol at every CLI start.
    names = protocol_names()
    return (
        f"{names[0]} (trex-eval's corrected grading) or another registered protocol: "
        f"{', '.join(names[1:])} (`trex-eval rules` describes each)."
    )


def _rule_help() -> str:
    from trex_eval.grading import families
    from trex_eval.records import GraderKind

    objective = ", ".join(f.name for f in families(GraderKind.OBJECTIVE))
    structure = ", ".join(f.name for f in families(GraderKind.STRUCTURE))
    return (
        f"Override the grading rule: an objective rule spec ({objective}; e.g. strict:rtol=1e-6, "
        f"rel:1e-4, round:2) and/or a structure rule ({structure}). `trex-eval rules` describes each."
    )


_PROTOCOL_HELP = _protocol_help()
_RULE_HELP = _rule_help()
_PANEL_WHAT = "What to run"
_PANEL_MODEL = "Model"
_PANEL_GRADING = "Grading"
_PANEL_SANDBOX = "Sandbox"
_PANEL_OUTPUT = "Output"


def _split(values: list[str]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _one_of(value: str, choices: tuple[str, ...], *, what: str) -> str:
    """``value`` if it is one of ``choices``, else the user error naming them."""
    if value not in choices:
        allowed = f"{', '.join(choices[:-1])} or {choices[-1]}"
        raise ConfigError(f"unknown {what} {value!r}", hint=f"use {allowed}")
    return value


def _protocol(value: str) -> str:
    from trex_eval.protocols import protocol_names

    return _one_of(value, protocol_names(), what="protocol")


def _gurobi_policy(value: str) -> GurobiPolicy:
    value = GUROBI_POLICY_ALIASES.get(value, value)  # compat: the old name of highs
    return cast("GurobiPolicy", _one_of(value, get_args(GurobiPolicy), what="--gurobi policy"))


def _few_shot_strategy(value: str) -> FewShotStrategy:
    return cast("FewShotStrategy", _one_of(value, get_args(FewShotStrategy), what="few-shot strategy"))


def _overrides(opts: list[str]) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for item in opts:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"--opt {item!r} is not KEY=VALUE", hint="e.g. --opt base_url=http://localhost:8000/v1"
            )
        parsed[key.strip()] = value.strip()
    return parsed


EXIT_NOT_A_MEASUREMENT = 3
"""Exit code of a run or grade that finished but measured nothing trustworthy: every model request
failed, or more than ``MAX_API_ERROR_RATE`` of them (the cause is printed on stderr)."""


def _run_interruptibly(spec: RunSpec, options: RunOptions) -> RunResult:
    """:func:`trex_eval.run.pipeline.run`, saying how to continue when the user presses Ctrl-C or
    the process gets SIGTERM."""
    from dataclasses import replace

    from trex_eval.run import pipeline as runner

    if options.out is None:
        # Chosen here rather than in the pipeline so that an interrupted run can name its directory.
        options = replace(options, out=Path("results") / runner.default_run_id(spec))
    return _interruptible(lambda: runner.run(spec, options), options.out)


def _interruptible(work: Callable[[], _T], where: Path | None) -> _T:
    try:
        return work()
    except KeyboardInterrupt:
        _resume_hint("interrupted", where)
        raise typer.Exit(130) from None
    except SystemExit as exit_:
        if exit_.code == 128 + signal.SIGTERM:
            _resume_hint("terminated (SIGTERM)", where)
        raise


def _resume_hint(what: str, where: Path | None) -> None:
    if where is not None and (where / MANIFEST).is_file():
        err.print(
            f"{what}: finished samples are kept; continue with `trex-eval run --resume {where}`",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    else:
        err.print(f"{what} before the run stored anything", markup=False, highlight=False)


def _report(result: RunResult, *, what: str = "full summary") -> None:
    """The end of ``run`` and ``grade``: the compact table, where the full summary is, and exit
    code 3 with the cause on stderr when the run is not a measurement."""
    from trex_eval.report.terminal import summary_table

    for note in result.notes:
        err.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    out.print(summary_table(result.summary))
    repaired = [bench for bench in result.summary.benchmarks if bench.repair is not None]
    for bench in repaired:  # the repair protocol's scores, apart from the zero-shot table
        assert bench.repair is not None
        rounds = " → ".join(f"r{k} {value * 100:.2f}%" for k, value in sorted(bench.repair.pass_at_1.items()))
        out.print(f"{bench.benchmark} pass@1 by repair round: {rounds}", highlight=False, soft_wrap=True)
    for bench in result.summary.benchmarks:
        if bench.unverified_samples:  # a missing solver extra shows up here, not as a lower score alone
            err.print(
                f"note: {bench.benchmark}: {bench.unverified_samples} passing claim(s) the harness could "
                f"not verify, not counted as correct (verdict unverified; each one's reason in "
                f"{result.run_dir / 'samples.jsonl'} says why)",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    counts = f"{result.generated_now} generated, {result.graded_now} graded"
    if result.reused_now:
        counts += f", {result.reused_now} stored executions reused, {result.executed_now} programs run"
    out.print(f"{what}: {result.run_dir / SUMMARY_MD}  ({counts})", highlight=False, soft_wrap=True)
    if result.failure is not None:
        err.print(f"[bold red]error:[/] {escape(result.failure)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_NOT_A_MEASUREMENT)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("grade")(grade)
    app.command("audit")(audit)


def run(
    model: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--model",
            "-m",
            help="Model preset or ad-hoc spec (see `trex-eval models`), e.g. deepseek-v4-flash-or, "
            "reference, vllm/Qwen/Qwen2.5-7B-Instruct, openai/gpt-4o, openai-compatible/<model>, "
            "local/<key>.",
            rich_help_panel=_PANEL_MODEL,
        ),
    ] = None,
    base_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--base-url",
            help="A running OpenAI-compatible endpoint (several: comma-separated, balanced with "
            "failover); alone it means --model openai-compatible/$MODEL_NAME.",
            rich_help_panel=_PANEL_MODEL,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Resolve the model, print the server command line, parallelism, download source "
            "and the first rendered prompt; start nothing.",
            rich_help_panel=_PANEL_MODEL,
        ),
    ] = False,
    opt: Annotated[
        list[str],
        typer.Option(
            "--opt",
            help="Override a preset field or backend option: KEY=VALUE (model, temperature, top_p, "
            "max_tokens, seed, base_url, concurrency, path, ...). Repeatable.",
            rich_help_panel=_PANEL_MODEL,
        ),
    ] = [],  # noqa: B006 - typer needs a literal default
    models_file: ModelsFileOption = None,
    benchmarks: Annotated[
        list[str],
        typer.Option(
            "--benchmarks",
            "-b",
            help="Benchmarks (comma-separated or repeated). Default: all four.",
            rich_help_panel=_PANEL_WHAT,
        ),
    ] = [],  # noqa: B006
    benchmark_file: Annotated[
        list[Path],
        typer.Option(
            "--benchmark-file",
            help="A benchmark defined by a YAML file (ad hoc, not registered). Repeatable.",
            rich_help_panel=_PANEL_WHAT,
        ),
    ] = [],  # noqa: B006
    prompt_set: Annotated[
        str,
        typer.Option(
            "--prompt-set",
            help="t-rex (upstream templates; benchmarks without them use their "
            "default set), neutral, pulp, ortools, gurobipy.",
            rich_help_panel=_PANEL_WHAT,
        ),
    ] = "t-rex",
    samples: Annotated[
        int,
        typer.Option(
            "--samples",
            "-k",
            help="Completions per problem (seeds: the preset's seed, +1, +2, ...).",
            rich_help_panel=_PANEL_WHAT,
        ),
    ] = 1,
    limit: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--limit", "-n", help="Only the first N problems of each benchmark.", rich_help_panel=_PANEL_WHAT
        ),
    ] = None,
    few_shot: Annotated[
        int,
        typer.Option(
            "--few-shot",
            help="Few-shot examples per prompt (never the problem itself or its twin wording).",
            rich_help_panel=_PANEL_WHAT,
        ),
    ] = 0,
    few_shot_strategy: Annotated[
        str, typer.Option("--few-shot-strategy", help="random | similar (BM25).", rich_help_panel=_PANEL_WHAT)
    ] = "random",
    few_shot_source: Annotated[
        str,
        typer.Option(
            "--few-shot-source",
            help="'reference' (benchmark reference programs) or a run directory "
            "whose correct samples are used.",
            rich_help_panel=_PANEL_WHAT,
        ),
    ] = "reference",
    repair: Annotated[
        int,
        typer.Option(
            "--repair",
            help="Repair rounds after the first answer (default 0: zero-shot). A sample whose program "
            "failed (no code, syntax or runtime error, timeout, no solve, a non-optimal status, or "
            "infeasible/unbounded where the reference has an optimum) gets its answer and a feedback "
            "message (prompts/repair.j2: the status, error and last output lines; never the reference "
            "answer) and is asked again, up to N times. A solved model with a wrong objective is not "
            "fed back. pass@1 stays the zero-shot score; pass@1@r1..rN are reported apart.",
            rich_help_panel=_PANEL_WHAT,
        ),
    ] = 0,
    repair_feedback: Annotated[
        str,
        typer.Option(
            "--repair-feedback",
            help="execution (default: only what the program did) or objective-differs (also repair "
            "a wrong answer, saying only that it differs from the expected one; recorded in the "
            "manifest, for studies of label feedback).",
            rich_help_panel=_PANEL_WHAT,
        ),
    ] = "execution",
    protocol: Annotated[
        str,
        typer.Option(
            "--protocol",
            help=_PROTOCOL_HELP,
            rich_help_panel=_PANEL_GRADING,
        ),
    ] = DEFAULT_PROTOCOL,
    rule: Annotated[
        list[str],
        typer.Option(
            "--rule",
            help=_RULE_HELP,
            rich_help_panel=_PANEL_GRADING,
        ),
    ] = [],  # noqa: B006
    gurobi: Annotated[
        str,
        typer.Option(
            "--gurobi",
            help="gurobipy inside the sandbox: auto (real if licensed, else highs), real, or highs "
            "(the licence-free gurobipy_highs layer; compat is an alias).",
            rich_help_panel=_PANEL_SANDBOX,
        ),
    ] = "auto",
    workers: Annotated[
        int, typer.Option("--workers", help="Programs executed at once.", rich_help_panel=_PANEL_SANDBOX)
    ] = 2,
    wall_s: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--timeout",
            help="Wall-clock seconds per program (default 60; 360/180 under trex-compat).",
            rich_help_panel=_PANEL_SANDBOX,
        ),
    ] = None,
    memory_mib: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--memory-mib",
            help="Address-space limit per program (default 2048).",
            rich_help_panel=_PANEL_SANDBOX,
        ),
    ] = None,
    out_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--out", "-o", help="Run directory (default results/<run-id>).", rich_help_panel=_PANEL_OUTPUT
        ),
    ] = None,
    resume: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--resume",
            help="Continue the run in this directory with its recorded settings.",
            rich_help_panel=_PANEL_OUTPUT,
        ),
    ] = None,
    no_progress: Annotated[
        bool, typer.Option("--no-progress", help="No progress bars.", rich_help_panel=_PANEL_OUTPUT)
    ] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Generate, execute and grade: writes manifest.json, completions.jsonl, samples.jsonl and a summary.

    Examples:

      trex-eval run --model reference                      (self-test: should score ~100%)

      trex-eval run --model local-qwen-coder --limit 5     (a real LLM on CPU)

      trex-eval run --model deepseek-v4-flash-or           (the T-Rex model on a GPU via vLLM)

      trex-eval run --model vllm/Qwen/Qwen2.5-7B-Instruct --dry-run   (any checkpoint; show the plan)

      trex-eval run --base-url http://127.0.0.1:8000/v1 --model openai-compatible/my-model

      trex-eval run --model local-qwen-coder --repair 2 -b nl4opt -n 5   (2 repair rounds)

      trex-eval run --resume results/<run-id>              (continue a killed run)
    """
    from trex_eval.backends.presets import load_presets, resolve_preset
    from trex_eval.benchmarks.suites import expand as expand_suites
    from trex_eval.run import pipeline as runner
    from trex_eval.run.spec import (
        ALL_BENCHMARKS,
        FewShotSettings,
        RepairSettings,
        RunOptions,
        RunSpec,
        model_for_protocol,
    )
    from trex_eval.sandbox import SandboxLimits

    command = tuple(sys.argv)
    if resume is not None:
        ignored = [
            flag
            for flag, given in (
                ("--model", model is not None),
                ("--base-url", base_url is not None),
                ("--opt", bool(opt)),
                ("--benchmarks", bool(benchmarks)),
                ("--benchmark-file", bool(benchmark_file)),
                ("--samples", samples != 1),
                ("--limit", limit is not None),
                ("--rule", bool(rule)),
                ("--protocol", protocol != DEFAULT_PROTOCOL),
                ("--few-shot", few_shot != 0),
                ("--repair", repair != 0),
                ("--repair-feedback", repair_feedback != "execution"),
                ("--timeout", wall_s is not None),
                ("--memory-mib", memory_mib is not None),
                ("--gurobi", gurobi != "auto"),
                ("--prompt-set", prompt_set != "t-rex"),
                ("--out", out_dir is not None),
            )
            if given
        ]
        if ignored:
            raise ConfigError(
                f"--resume continues a run with its recorded settings; "
                f"{', '.join(ignored)} cannot change them",
                hint="drop those flags, or start a new run with --out",
            )
        recorded = RunStore(resume).read_manifest().settings.benchmarks
        root = data_dir_for([b.requested for b in recorded], data_dir)
        spec = runner.resume_spec(resume)
        options = RunOptions(
            data_dir=root, out=resume, workers=workers, command=command, show_progress=not no_progress
        )
    else:
        from trex_eval.backends.specs import implicit_spec

        model = model or implicit_spec(base_url)
        if model is None:
            raise ConfigError("choose a model with --model NAME", hint="`trex-eval models` lists the presets")
        protocol_name = _protocol(protocol)
        strategy = _few_shot_strategy(few_shot_strategy)
        gurobi_policy = _gurobi_policy(gurobi)
        preset = resolve_preset(
            model, presets=load_presets(user_file=models_file), overrides=_overrides(opt), base_url=base_url
        )
        backend_spec, note = model_for_protocol(preset, protocol_name)
        if note is not None:
            err.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
        if workers < 1:
            raise ConfigError("--workers must be at least 1")
        if few_shot < 0:
            raise ConfigError("--few-shot must be 0 or more")
        if repair < 0:
            raise ConfigError("--repair must be 0 or more")
        if repair_feedback not in ("execution", "objective-differs"):
            raise ConfigError(
                f"unknown --repair-feedback '{repair_feedback}'", hint="choose execution or objective-differs"
            )
        limits = None
        if wall_s is not None or memory_mib is not None:
            chosen = {"wall_s": wall_s, "cpu_s": wall_s, "memory_mib": memory_mib}
            try:
                limits = SandboxLimits(
                    **{**SandboxLimits().model_dump(), **{k: v for k, v in chosen.items() if v is not None}}
                )
            except ValidationError as error:
                problem = error.errors()[0]
                raise ConfigError(
                    f"invalid sandbox limit {'.'.join(map(str, problem['loc']))}: {problem['msg']}",
                    hint="--timeout is in seconds (> 0); --memory-mib is at least 64",
                ) from None
        names = (_split(benchmarks) + tuple(str(p) for p in benchmark_file)) or ALL_BENCHMARKS
        names = expand_suites(names)  # `--benchmarks sirl`: a suite stands for its members
        spec = RunSpec(
            model=backend_spec,
            benchmarks=names,
            prompt_set=prompt_set,
            samples=samples,
            limit=limit,
            protocol=protocol_name,
            rules=_split(rule),
            few_shot=FewShotSettings(k=few_shot, strategy=strategy, source=few_shot_source),
            limits=limits,
            gurobi=gurobi_policy,
            repair=RepairSettings(rounds=repair, feedback=repair_feedback),  # type: ignore[arg-type]
        )
        options = RunOptions(
            data_dir=data_dir_for(names, data_dir),
            out=out_dir,
            workers=workers,
            command=command,
            show_progress=not no_progress,
        )
    if dry_run:
        from trex_eval.cli.dry_run import print_dry_run

        print_dry_run(spec, data_dir=options.data_dir)
        return
    _report(_run_interruptibly(spec, options))


def grade(
    source: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Argument(help="A run directory, or a JSONL file of recorded completions.", show_default=False),
    ] = None,
    completions: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--completions",
            help="A JSONL file of recorded completions (instead of SOURCE).",
            show_default=False,
        ),
    ] = None,
    rule: Annotated[
        list[str], typer.Option("--rule", help="Rule spec(s) to grade under (see `trex-eval run --help`).")
    ] = [],  # noqa: B006
    protocol: Annotated[str, typer.Option("--protocol", help=_PROTOCOL_HELP)] = DEFAULT_PROTOCOL,
    benchmark: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--benchmark", help="Benchmark of a completions file (name or YAML path)."),
    ] = None,
    id_field: Annotated[
        str, typer.Option("--id-field", help="Completions file: problem id field.")
    ] = "problem_id",
    text_field: Annotated[
        str,
        typer.Option("--text-field", help="Completions file: completion text field (dotted path allowed)."),
    ] = "completion",
    code_field: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--code-field", help="Completions file: field holding an already-extracted program."),
    ] = None,
    prompt_set: Annotated[
        str, typer.Option("--prompt-set", help="Prompt set recorded with the samples.")
    ] = "t-rex",
    samples: Annotated[
        int,
        typer.Option(
            "--samples", "-k", help="Completions file: samples per problem (records of an id in file order)."
        ),
    ] = 1,
    all_problems: Annotated[
        bool,
        typer.Option(
            "--all-problems",
            help="Completions file: grade every problem of the benchmark (those without a completion as "
            "missing, ‡) instead of the ids the file holds.",
        ),
    ] = False,
    workers: Annotated[int, typer.Option("--workers", help="Programs executed at once.")] = 2,
    out_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--out", "-o", help="Run directory for the new grades (default results/<run-id>)."),
    ] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bars.")] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Grade stored completions again (other rules or protocol) without calling a model.

    A run directory is re-graded with its own benchmarks, prompt set and samples, reusing each
    program's stored execution when only the rule changes; several --rule of one kind grade into one
    directory, a run directory per rule. A completions file from another tool needs --benchmark and
    its field names (or --code-field for extracted programs); the problems it holds are graded (the
    others are named as left out; --all-problems keeps the benchmark's full denominator).

    Exit codes: 0 graded, 2 a user error, 3 more than 10% of the samples are API errors.

    Example: trex-eval grade --completions out.jsonl --benchmark my-bench --id-field qid
    --text-field response.choices.0.message.content --rule orlm
    """
    from trex_eval.run import regrade

    given = [path for path in (source, completions) if path is not None]
    if len(given) != 1:
        raise ConfigError(
            "give what to grade once: a run directory or completions file as SOURCE, or --completions FILE"
        )

    protocol_name = _protocol(protocol)
    if (given[0] / MANIFEST).is_file():
        names = [b.requested for b in RunStore(given[0]).read_manifest().settings.benchmarks]
    else:
        names = [benchmark] if benchmark else []
    plan = regrade.plan_regrade(
        given[0],
        data_dir=data_dir_for(names, data_dir),
        rules=_split(rule),
        protocol=protocol_name,
        fields=regrade.CompletionFields(
            benchmark=benchmark,
            id_field=id_field,
            text_field=text_field,
            code_field=code_field,
            prompt_set=prompt_set,
            samples=samples,
            all_problems=all_problems,
        ),
        workers=workers,
        out=out_dir,
        command=tuple(sys.argv),
        show_progress=not no_progress,
    )
    for note in plan.notes:
        err.print(f"[bold yellow]warning:[/] {escape(note)}", highlight=False, soft_wrap=True)
    if not plan.several:
        ((spec, options),) = plan.passes
        _report(_run_interruptibly(spec, options))
        return
    from trex_eval.report.terminal import rules_table

    results = _interruptible(lambda: regrade.run_regrade(plan), plan.root)
    for note in dict.fromkeys(note for result in results for note in result.notes):
        err.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
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
    failures = [result.failure for result in results if result.failure is not None]
    if failures:
        err.print(f"[bold red]error:[/] {escape(failures[0])}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_NOT_A_MEASUREMENT)


def audit(
    benchmarks: Annotated[
        list[str], typer.Argument(help="Benchmarks to audit (default: those that ship reference programs).")
    ] = [],  # noqa: B006
    protocol: Annotated[str, typer.Option("--protocol", help=_PROTOCOL_HELP)] = DEFAULT_PROTOCOL,
    rule: Annotated[list[str], typer.Option("--rule", help="Rule spec(s) to audit under.")] = [],  # noqa: B006
    out_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--out", "-o", help="Run directory (default results/audit-<tag>-<time>)."),
    ] = None,
    csv_path: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--csv", help="Also write the per-item CSV here (it is always in the run directory)."),
    ] = None,
    publish: Annotated[
        bool,
        typer.Option(
            "--publish",
            help="Also write the CSV to results/published/audit-<protocol or rule>.csv (committed audits).",
        ),
    ] = False,
    gurobi: Annotated[
        str,
        typer.Option(
            "--gurobi",
            help="gurobipy in the sandbox: auto, real, or highs (licence-free layer; alias compat).",
        ),
    ] = "auto",
    workers: Annotated[int, typer.Option("--workers", help="Programs executed at once.")] = 2,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bars.")] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Grade each benchmark's own reference solutions: every failure is a data or grading problem to check.

    Writes a run directory holding audit.csv and audit.md; results/published/ changes only with --publish.
    """
    from trex_eval.benchmarks.suites import expand as expand_suites
    from trex_eval.run import audit as audit_mod

    protocol_name = _protocol(protocol)
    gurobi_policy = _gurobi_policy(gurobi)
    result = audit_mod.audit(
        expand_suites(_split(benchmarks)) or None,
        data_dir=data_dir_or_pull(data_dir),
        protocol=protocol_name,
        rules=_split(rule),
        csv_path=csv_path,
        gurobi=gurobi_policy,
        workers=workers,
        show_progress=not no_progress,
        out=out_dir,
        publish=publish,
    )
    echo_text(result.markdown)
    out.print(f"per-item CSV: {result.csv_path}", highlight=False, soft_wrap=True)
    for path in result.published:
        out.print(f"also written: {path}", highlight=False, soft_wrap=True)
