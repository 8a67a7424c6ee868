"""`trex-eval export-rl`: benchmarks as prompt datasets for RL trainers (TRL, verl)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trex_eval.cli._common import data_dir_or_pull, out
from trex_eval.cli.options import BenchmarksOption, DataDirOption, ProtocolOption, protocol_name, split_list
from trex_eval.errors import ConfigError
from trex_eval.protocols import DEFAULT_PROTOCOL


def export_rl(
    out_path: Annotated[
        Path, typer.Option("--out", "-o", help="File to write: .parquet or .jsonl.", show_default=False)
    ],
    benchmarks: BenchmarksOption = [],  # noqa: B006 - typer needs a literal default
    split: Annotated[
        str,
        typer.Option(
            "--split", help="eval (a trainer's evaluation set) or train (needs --allow-eval-as-train)."
        ),
    ] = "eval",
    layout: Annotated[
        str, typer.Option("--layout", help="Columns as trl (GRPOTrainer) or verl (RL parquet) read them.")
    ] = "trl",
    prompt_set: Annotated[
        str, typer.Option("--prompt-set", help="Prompt set, as `run --prompt-set`.")
    ] = "t-rex",
    protocol: ProtocolOption = DEFAULT_PROTOCOL,
    allow_eval_as_train: Annotated[
        bool,
        typer.Option("--allow-eval-as-train", help="Export evaluation benchmarks as training data anyway."),
    ] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Export benchmarks as the prompt datasets RL trainers read: each row holds the prompt `run`
    renders and the problem's key (never its label), which the reward adapters and `trex-eval
    serve` look up.

    Every shipped benchmark is an evaluation set: exporting one as training data is refused unless
    --allow-eval-as-train says so.
    """
    from trex_eval.benchmarks.suites import expand as expand_suites
    from trex_eval.reward.export import export_rows, write_rows

    names = expand_suites(split_list(benchmarks))
    if not names:
        raise ConfigError(
            "name the benchmarks to export with -b", hint="`trex-eval benchmarks list` names them"
        )
    if split not in ("eval", "train"):
        raise ConfigError(f"unknown split '{split}'", hint="choose eval or train")
    if layout not in ("trl", "verl"):
        raise ConfigError(f"unknown layout '{layout}'", hint="choose trl or verl")
    rows = export_rows(
        names,
        split="train" if split == "train" else "eval",
        layout="verl" if layout == "verl" else "trl",
        data_dir=data_dir_or_pull(data_dir),
        prompt_set=prompt_set,
        protocol=protocol_name(protocol),
        allow_eval_as_train=allow_eval_as_train,
    )
    write_rows(rows, out_path)
    out.print(
        f"{len(rows)} rows ({layout}, split {split}) written to {out_path}", highlight=False, soft_wrap=True
    )
