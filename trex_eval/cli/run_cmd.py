"""`trex-eval run`: generate, execute and grade (or continue a run with ``--resume``)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from trex_eval.cli._common import data_dir_for
from trex_eval.cli.finish import EXIT_USER_ERROR, note, report_result, run_interruptibly
from trex_eval.cli.options import (
    DEFAULT_GUROBI,
    DEFAULT_WORKERS,
    PANEL_GRADING,
    PANEL_MODEL,
    PANEL_OUTPUT,
    PANEL_WHAT,
    BenchmarksOption,
    DataDirOption,
    GurobiOption,
    MemoryOption,
    ModelsFileOption,
    NoProgressOption,
    ProtocolOption,
    RayActorsOption,
    RayAddressOption,
    RuleOption,
    RunOutOption,
    TimeoutOption,
    WorkersOption,
    few_shot_strategy,
    gurobi_policy,
    key_values,
    protocol_name,
    ray_options,
    sandbox_limits,
    split_list,
    split_rules,
    workers_count,
)
from trex_eval.errors import ConfigError
from trex_eval.protocols import DEFAULT_PROTOCOL

if TYPE_CHECKING:
    from trex_eval.run.spec import RunOptions, RunSpec

# The options only `run` takes; those shared with other commands are in cli/options.py.
_ModelOption = Annotated[
    Optional[str],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
    typer.Option(
        "--model",
        "-m",
        help="Model preset or ad-hoc spec (see `trex-eval models`), e.g. deepseek-v4-flash-or, "
        "reference, vllm/Qwen/Qwen2.5-7B-Instruct, openai/gpt-4o, openai-compatible/<model>, "
        "local/<key>.",
        rich_help_panel=PANEL_MODEL,
    ),
]
_BaseUrlOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--base-url",
        help="A running OpenAI-compatible endpoint (several: comma-separated, balanced with "
        "failover); alone it means --model openai-compatible/$MODEL_NAME.",
        rich_help_panel=PANEL_MODEL,
    ),
]
_DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Resolve the model and print the plan: the server command line, parallelism, "
        "download source, the GPU fit, the requests and tokens the run would take (a price with "
        "--opt price_per_1m_input/output), and the first rendered prompt; start nothing. Exits 2 "
        "when the run could not start.",
        metavar="",
        rich_help_panel=PANEL_MODEL,
    ),
]
_PriceOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--price",
        help="With --dry-run: US dollars per million prompt / completion tokens (IN/OUT, e.g. "
        "0.27/1.10), to price the run.",
        rich_help_panel=PANEL_MODEL,
        show_default=False,
    ),
]
_OptOption = Annotated[
    list[str],
    typer.Option(
        "--opt",
        help="Override a preset field or backend option: KEY=VALUE (model, temperature, top_p, "
        "max_tokens, seed, base_url, concurrency, path, ...). Repeatable.",
        rich_help_panel=PANEL_MODEL,
    ),
]
_BenchmarkFileOption = Annotated[
    list[Path],
    typer.Option(
        "--benchmark-file",
        help="A benchmark defined by a YAML file (ad hoc, not registered). Repeatable.",
        rich_help_panel=PANEL_WHAT,
    ),
]
_PromptSetOption = Annotated[
    str,
    typer.Option(
        "--prompt-set",
        help="t-rex (upstream templates; benchmarks without them use their "
        "default set), neutral, pulp, ortools, gurobipy.",
        rich_help_panel=PANEL_WHAT,
    ),
]
_SamplesOption = Annotated[
    int,
    typer.Option(
        "--samples",
        "-k",
        help="Completions per problem (seeds: the preset's seed, +1, +2, ...).",
        rich_help_panel=PANEL_WHAT,
    ),
]
_LimitOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--limit", "-n", help="Only the first N problems of each benchmark.", rich_help_panel=PANEL_WHAT
    ),
]
_ProblemsOption = Annotated[
    list[str],
    typer.Option(
        "--problems",
        help="Only these problem ids (comma-separated or repeated) of the one benchmark run, "
        "e.g. -b miplib-nl --problems flugpl,gr4x6.",
        rich_help_panel=PANEL_WHAT,
    ),
]
_FewShotOption = Annotated[
    int,
    typer.Option(
        "--few-shot",
        help="Few-shot examples per prompt (never the problem itself or its twin wording).",
        rich_help_panel=PANEL_WHAT,
    ),
]
_FewShotStrategyOption = Annotated[
    str, typer.Option("--few-shot-strategy", help="random | similar (BM25).", rich_help_panel=PANEL_WHAT)
]
_FewShotSourceOption = Annotated[
    str,
    typer.Option(
        "--few-shot-source",
        help="'reference' (benchmark reference programs) or a run directory whose correct samples are used.",
        rich_help_panel=PANEL_WHAT,
    ),
]
_RepairOption = Annotated[
    int,
    typer.Option(
        "--repair",
        help="Repair rounds after the first answer (default 0: zero-shot). A sample whose program "
        "failed (no code, syntax or runtime error, timeout, no solve, a non-optimal status, or "
        "infeasible/unbounded where the reference has an optimum) gets its answer and a feedback "
        "message (prompts/repair.j2: the status, error and last output lines; never the reference "
        "answer) and is asked again, up to N times. A solved model with a wrong objective is not "
        "fed back. pass@1 stays the zero-shot score; pass@1@r1..rN are reported apart.",
        rich_help_panel=PANEL_WHAT,
    ),
]
_RepairFeedbackOption = Annotated[
    str,
    typer.Option(
        "--repair-feedback",
        help="execution (default: only what the program did) or objective-differs (also repair "
        "a wrong answer, saying only that it differs from the expected one; recorded in the "
        "manifest, for studies of label feedback).",
        rich_help_panel=PANEL_WHAT,
    ),
]
_ResumeOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--resume",
        help="Continue the run in this directory with its recorded settings.",
        rich_help_panel=PANEL_OUTPUT,
        show_default=False,
    ),
]
_DiagnoseOption = Annotated[
    bool,
    typer.Option(
        "--diagnose/--no-diagnose",
        help="Store why each failing sample failed (a diagnosis category from edits of the model "
        "it built, re-solved by the harness; verdicts never change).",
        rich_help_panel=PANEL_GRADING,
    ),
]


@dataclass(frozen=True, kw_only=True)
class RunFlags:
    """The flags of one `trex-eval run`, as parsed: one field per parameter of :func:`run`, of the
    same name, type and default meaning (``None``: not given)."""

    model: str | None
    base_url: str | None
    dry_run: bool
    price: str | None
    opt: list[str]
    models_file: Path | None
    benchmarks: list[str]
    benchmark_file: list[Path]
    prompt_set: str
    samples: int
    limit: int | None
    problems: list[str]
    few_shot: int
    few_shot_strategy_name: str
    few_shot_source: str
    repair: int
    repair_feedback: str
    protocol: str
    rule: list[str]
    gurobi: str
    workers: int
    ray_address: str | None
    ray_actors: int | None
    wall_s: float | None
    memory_mib: int | None
    out_dir: Path | None
    resume: Path | None
    no_progress: bool
    diagnose: bool
    data_dir: Path | None


def run(
    model: _ModelOption = None,
    base_url: _BaseUrlOption = None,
    dry_run: _DryRunOption = False,
    price: _PriceOption = None,
    opt: _OptOption = [],  # noqa: B006 - typer needs a literal default
    models_file: ModelsFileOption = None,
    benchmarks: BenchmarksOption = [],  # noqa: B006
    benchmark_file: _BenchmarkFileOption = [],  # noqa: B006
    prompt_set: _PromptSetOption = "t-rex",
    samples: _SamplesOption = 1,
    limit: _LimitOption = None,
    problems: _ProblemsOption = [],  # noqa: B006
    few_shot: _FewShotOption = 0,
    few_shot_strategy_name: _FewShotStrategyOption = "random",
    few_shot_source: _FewShotSourceOption = "reference",
    repair: _RepairOption = 0,
    repair_feedback: _RepairFeedbackOption = "execution",
    protocol: ProtocolOption = DEFAULT_PROTOCOL,
    rule: RuleOption = [],  # noqa: B006
    gurobi: GurobiOption = DEFAULT_GUROBI,
    workers: WorkersOption = DEFAULT_WORKERS,
    ray_address: RayAddressOption = None,
    ray_actors: RayActorsOption = None,
    wall_s: TimeoutOption = None,
    memory_mib: MemoryOption = None,
    out_dir: RunOutOption = None,
    resume: _ResumeOption = None,
    no_progress: NoProgressOption = False,
    diagnose: _DiagnoseOption = True,
    data_dir: DataDirOption = None,
) -> None:
    """Generate, execute and grade: writes manifest.json, completions.jsonl, samples.jsonl and a summary.

    Benchmarks: all four T-Rex benchmarks unless -b names others. Exit codes: 0 done, 1 the harness
    or the machine failed (a full disk: free space, then --resume), 2 a user error (or a dry run
    that found the run cannot start), 3 not a measurement (most model requests failed), 130
    interrupted (continue with --resume).

    Examples:

      trex-eval run --model reference                      (self-test: should score ~100%)

      trex-eval run --model local-qwen-coder --limit 5     (a real LLM on CPU)

      trex-eval run --model deepseek-v4-flash-or           (the T-Rex model on a GPU via vLLM)

      trex-eval run --model vllm/Qwen/Qwen2.5-7B-Instruct --dry-run   (any checkpoint; show the plan)

      trex-eval run --base-url http://127.0.0.1:8000/v1 --model openai-compatible/my-model

      trex-eval run --model local-qwen-coder --repair 2 -b nl4opt -n 5   (2 repair rounds)

      trex-eval run --resume results/<run-id>              (continue a killed run)

      trex-eval run --model reference --ray-address auto   (grade on the Ray cluster's nodes)
    """
    # Every flag as one typed record for the helpers below; nothing else is bound yet.
    flags = RunFlags(**locals())
    if price is not None and not dry_run:
        raise ConfigError("--price prices a --dry-run", hint="add --dry-run")
    spec, options = _resumed_run(flags, resume=resume) if resume is not None else _new_run(flags)
    if dry_run:
        from trex_eval.cli.dry_run import Price, print_dry_run

        if not print_dry_run(spec, data_dir=options.data_dir, price=Price.parse(price) if price else None):
            raise typer.Exit(EXIT_USER_ERROR)
        return
    report_result(run_interruptibly(spec, options))


def _resumed_run(flags: RunFlags, *, resume: Path) -> tuple[RunSpec, RunOptions]:
    """The spec and options that continue the run in ``resume`` with its recorded settings.

    Raises:
        ConfigError: a flag that would change a recorded setting was given (it would be ignored).
    """
    from trex_eval.run import pipeline as runner
    from trex_eval.store import RunStore

    _refuse_settings_on_resume(flags)
    recorded = RunStore(resume).read_manifest().settings.benchmarks
    root = data_dir_for([b.requested for b in recorded], flags.data_dir)
    spec = runner.resume_spec(resume)
    return spec, _run_options(flags, data_dir=root, out=resume)


def _refuse_settings_on_resume(flags: RunFlags) -> None:
    """Refuse the flags that set what ``--resume`` takes from the run's manifest: the run would
    silently go on without them."""
    ignored = [
        flag
        for flag, given in (
            ("--model", flags.model is not None),
            ("--base-url", flags.base_url is not None),
            ("--opt", bool(flags.opt)),
            ("--benchmarks", bool(flags.benchmarks)),
            ("--benchmark-file", bool(flags.benchmark_file)),
            ("--samples", flags.samples != 1),
            ("--limit", flags.limit is not None),
            ("--problems", bool(flags.problems)),
            ("--rule", bool(flags.rule)),
            ("--protocol", flags.protocol != DEFAULT_PROTOCOL),
            ("--few-shot", flags.few_shot != 0),
            ("--repair", flags.repair != 0),
            ("--repair-feedback", flags.repair_feedback != "execution"),
            ("--timeout", flags.wall_s is not None),
            ("--memory-mib", flags.memory_mib is not None),
            ("--gurobi", flags.gurobi != DEFAULT_GUROBI),
            ("--prompt-set", flags.prompt_set != "t-rex"),
            ("--out", flags.out_dir is not None),
        )
        if given
    ]
    if ignored:
        raise ConfigError(
            f"--resume continues a run with its recorded settings; {', '.join(ignored)} cannot change them",
            hint="drop those flags, or start a new run with --out",
        )


def _new_run(flags: RunFlags) -> tuple[RunSpec, RunOptions]:
    """The spec and options of a new run, the flags checked in the order the user reads them.

    Raises:
        ConfigError: no model (neither --model nor --base-url), or a flag's value is invalid.
    """
    from trex_eval.backends.presets import load_presets, resolve_preset
    from trex_eval.backends.specs import implicit_spec
    from trex_eval.benchmarks.suites import expand as expand_suites
    from trex_eval.run.spec import (
        ALL_BENCHMARKS,
        FewShotSettings,
        RepairSettings,
        RunSpec,
        model_for_protocol,
    )

    model = flags.model or implicit_spec(flags.base_url)
    if model is None:
        raise ConfigError("choose a model with --model NAME", hint="`trex-eval models` lists the presets")
    protocol = protocol_name(flags.protocol)
    strategy = few_shot_strategy(flags.few_shot_strategy_name)
    policy = gurobi_policy(flags.gurobi)
    presets = load_presets(user_file=flags.models_file)
    preset = resolve_preset(model, presets=presets, overrides=key_values(flags.opt), base_url=flags.base_url)
    backend_spec, said = model_for_protocol(preset, protocol)
    if said is not None:
        note(said)
    if flags.few_shot < 0:
        raise ConfigError("--few-shot must be 0 or more")
    limits = sandbox_limits(flags.wall_s, flags.memory_mib)
    names = (split_list(flags.benchmarks) + tuple(str(p) for p in flags.benchmark_file)) or ALL_BENCHMARKS
    names = expand_suites(names)  # `--benchmarks sirl`: a suite stands for its members
    chosen = split_list(flags.problems)
    if chosen and len(names) != 1:
        raise ConfigError(
            f"--problems chooses problems of one benchmark; this run has {len(names)}",
            hint="run one benchmark with -b NAME --problems ID,ID",
        )
    spec = RunSpec(
        model=backend_spec,
        benchmarks=names,
        prompt_set=flags.prompt_set,
        samples=flags.samples,
        limit=flags.limit,
        protocol=protocol,
        rules=split_rules(flags.rule),
        few_shot=FewShotSettings(k=flags.few_shot, strategy=strategy, source=flags.few_shot_source),
        limits=limits,
        gurobi=policy,
        repair=RepairSettings(rounds=flags.repair, feedback=flags.repair_feedback),  # type: ignore[arg-type]
        problem_ids={names[0]: chosen} if chosen else {},
    )
    return spec, _run_options(flags, data_dir=data_dir_for(names, flags.data_dir), out=flags.out_dir)


def _run_options(flags: RunFlags, *, data_dir: Path | None, out: Path | None) -> RunOptions:
    """How this process runs the spec: ``--workers`` checked, the command line recorded."""
    from trex_eval.run.spec import RunOptions

    return RunOptions(
        data_dir=data_dir,
        out=out,
        workers=workers_count(flags.workers),
        command=tuple(sys.argv),
        show_progress=not flags.no_progress,
        diagnose=flags.diagnose,
        ray=ray_options(flags.ray_address, flags.ray_actors),
    )
