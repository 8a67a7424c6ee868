"""`trex-eval run`: generate, execute and grade (or continue a run with ``--resume``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

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
    RuleOption,
    RunOutOption,
    TimeoutOption,
    WorkersOption,
    few_shot_strategy,
    gurobi_policy,
    key_values,
    protocol_name,
    sandbox_limits,
    split_list,
    workers_count,
)
from trex_eval.errors import ConfigError
from trex_eval.protocols import DEFAULT_PROTOCOL
from trex_eval.store import RunStore


def run(
    model: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--model",
            "-m",
            help="Model preset or ad-hoc spec (see `trex-eval models`), e.g. deepseek-v4-flash-or, "
            "reference, vllm/Qwen/Qwen2.5-7B-Instruct, openai/gpt-4o, openai-compatible/<model>, "
            "local/<key>.",
            rich_help_panel=PANEL_MODEL,
        ),
    ] = None,
    base_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--base-url",
            help="A running OpenAI-compatible endpoint (several: comma-separated, balanced with "
            "failover); alone it means --model openai-compatible/$MODEL_NAME.",
            rich_help_panel=PANEL_MODEL,
        ),
    ] = None,
    dry_run: Annotated[
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
    ] = False,
    price: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--price",
            help="With --dry-run: US dollars per million prompt / completion tokens (IN/OUT, e.g. "
            "0.27/1.10), to price the run.",
            rich_help_panel=PANEL_MODEL,
            show_default=False,
        ),
    ] = None,
    opt: Annotated[
        list[str],
        typer.Option(
            "--opt",
            help="Override a preset field or backend option: KEY=VALUE (model, temperature, top_p, "
            "max_tokens, seed, base_url, concurrency, path, ...). Repeatable.",
            rich_help_panel=PANEL_MODEL,
        ),
    ] = [],  # noqa: B006 - typer needs a literal default
    models_file: ModelsFileOption = None,
    benchmarks: BenchmarksOption = [],  # noqa: B006 - typer needs a literal default
    benchmark_file: Annotated[
        list[Path],
        typer.Option(
            "--benchmark-file",
            help="A benchmark defined by a YAML file (ad hoc, not registered). Repeatable.",
            rich_help_panel=PANEL_WHAT,
        ),
    ] = [],  # noqa: B006
    prompt_set: Annotated[
        str,
        typer.Option(
            "--prompt-set",
            help="t-rex (upstream templates; benchmarks without them use their "
            "default set), neutral, pulp, ortools, gurobipy.",
            rich_help_panel=PANEL_WHAT,
        ),
    ] = "t-rex",
    samples: Annotated[
        int,
        typer.Option(
            "--samples",
            "-k",
            help="Completions per problem (seeds: the preset's seed, +1, +2, ...).",
            rich_help_panel=PANEL_WHAT,
        ),
    ] = 1,
    limit: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--limit", "-n", help="Only the first N problems of each benchmark.", rich_help_panel=PANEL_WHAT
        ),
    ] = None,
    few_shot: Annotated[
        int,
        typer.Option(
            "--few-shot",
            help="Few-shot examples per prompt (never the problem itself or its twin wording).",
            rich_help_panel=PANEL_WHAT,
        ),
    ] = 0,
    few_shot_strategy_name: Annotated[
        str, typer.Option("--few-shot-strategy", help="random | similar (BM25).", rich_help_panel=PANEL_WHAT)
    ] = "random",
    few_shot_source: Annotated[
        str,
        typer.Option(
            "--few-shot-source",
            help="'reference' (benchmark reference programs) or a run directory "
            "whose correct samples are used.",
            rich_help_panel=PANEL_WHAT,
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
            rich_help_panel=PANEL_WHAT,
        ),
    ] = 0,
    repair_feedback: Annotated[
        str,
        typer.Option(
            "--repair-feedback",
            help="execution (default: only what the program did) or objective-differs (also repair "
            "a wrong answer, saying only that it differs from the expected one; recorded in the "
            "manifest, for studies of label feedback).",
            rich_help_panel=PANEL_WHAT,
        ),
    ] = "execution",
    protocol: ProtocolOption = DEFAULT_PROTOCOL,
    rule: RuleOption = [],  # noqa: B006
    gurobi: GurobiOption = DEFAULT_GUROBI,
    workers: WorkersOption = DEFAULT_WORKERS,
    wall_s: TimeoutOption = None,
    memory_mib: MemoryOption = None,
    out_dir: RunOutOption = None,
    resume: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--resume",
            help="Continue the run in this directory with its recorded settings.",
            rich_help_panel=PANEL_OUTPUT,
            show_default=False,
        ),
    ] = None,
    no_progress: NoProgressOption = False,
    diagnose: Annotated[
        bool,
        typer.Option(
            "--diagnose/--no-diagnose",
            help="Store why each failing sample failed (a diagnosis category from edits of the model "
            "it built, re-solved by the harness; verdicts never change).",
            rich_help_panel=PANEL_GRADING,
        ),
    ] = True,
    data_dir: DataDirOption = None,
) -> None:
    """Generate, execute and grade: writes manifest.json, completions.jsonl, samples.jsonl and a summary.

    Benchmarks: all four T-Rex benchmarks unless -b names others. Exit codes: 0 done, 2 a user error
    (or a dry run that found the run cannot start), 3 not a measurement (most model requests
    failed), 130 interrupted (continue with --resume).

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

    command = tuple(sys.argv)
    if price is not None and not dry_run:
        raise ConfigError("--price prices a --dry-run", hint="add --dry-run")
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
                ("--gurobi", gurobi != DEFAULT_GUROBI),
                ("--prompt-set", prompt_set != "t-rex"),
                ("--out", out_dir is not None),
            )
            if given
        ]
        if ignored:
            raise ConfigError(
                f"--resume continues a run with its recorded settings; {', '.join(ignored)} "
                "cannot change them",
                hint="drop those flags, or start a new run with --out",
            )
        recorded = RunStore(resume).read_manifest().settings.benchmarks
        root = data_dir_for([b.requested for b in recorded], data_dir)
        spec = runner.resume_spec(resume)
        options = RunOptions(
            data_dir=root,
            out=resume,
            workers=workers_count(workers),
            command=command,
            show_progress=not no_progress,
            diagnose=diagnose,
        )
    else:
        from trex_eval.backends.specs import implicit_spec

        model = model or implicit_spec(base_url)
        if model is None:
            raise ConfigError("choose a model with --model NAME", hint="`trex-eval models` lists the presets")
        protocol = protocol_name(protocol)
        strategy = few_shot_strategy(few_shot_strategy_name)
        policy = gurobi_policy(gurobi)
        preset = resolve_preset(
            model, presets=load_presets(user_file=models_file), overrides=key_values(opt), base_url=base_url
        )
        backend_spec, said = model_for_protocol(preset, protocol)
        if said is not None:
            note(said)
        if few_shot < 0:
            raise ConfigError("--few-shot must be 0 or more")
        limits = sandbox_limits(wall_s, memory_mib)
        names = (split_list(benchmarks) + tuple(str(p) for p in benchmark_file)) or ALL_BENCHMARKS
        names = expand_suites(names)  # `--benchmarks sirl`: a suite stands for its members
        spec = RunSpec(
            model=backend_spec,
            benchmarks=names,
            prompt_set=prompt_set,
            samples=samples,
            limit=limit,
            protocol=protocol,
            rules=split_list(rule),
            few_shot=FewShotSettings(k=few_shot, strategy=strategy, source=few_shot_source),
            limits=limits,
            gurobi=policy,
            repair=RepairSettings(rounds=repair, feedback=repair_feedback),  # type: ignore[arg-type]
        )
        options = RunOptions(
            data_dir=data_dir_for(names, data_dir),
            out=out_dir,
            workers=workers_count(workers),
            command=command,
            show_progress=not no_progress,
            diagnose=diagnose,
        )
    if dry_run:
        from trex_eval.cli.dry_run import Price, print_dry_run

        if not print_dry_run(spec, data_dir=options.data_dir, price=Price.parse(price) if price else None):
            raise typer.Exit(EXIT_USER_ERROR)
        return
    report_result(run_interruptibly(spec, options))
