"""Benchmarks as the prompt datasets RL trainers read, rendered exactly as ``trex-eval run``
renders them and keyed for the reward adapters.

Each row holds the chat prompt (the run's template and prompt set) and the problem's key as JSON
(``trex_problem``: ``{"benchmark", "problem_id"}``), never its label: the reward is looked up by
the grader, so a training loop cannot leak the answer into the prompt or the logs. Layouts:

``trl``   ``prompt`` (messages), ``trex_problem``, ``benchmark``, ``problem_id``, ``split``
          (``GRPOTrainer`` passes the non-prompt columns to :class:`~.trl.TrlReward`)
``verl``  ``data_source``, ``prompt`` (messages), ``ability`` (``"operations_research"``),
          ``reward_model`` (``{"style": "rule", "ground_truth": <key JSON>}``), ``extra_info``
          (``{"split", "index", "trex_problem"}``), as verl's RL datasets are laid out

Every benchmark trex-eval ships is an evaluation set. Exporting one as ``train`` contaminates
every later evaluation on it, so :func:`export_rows` refuses unless asked explicitly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from trex_eval.benchmarks import load_benchmark
from trex_eval.errors import ConfigError
from trex_eval.prompting.render import UPSTREAM_SET, PromptRenderer
from trex_eval.protocols.plan import plan_for
from trex_eval.reward.problems import REWARD_KEY

Layout = Literal["trl", "verl"]
Split = Literal["train", "eval"]
LAYOUTS: tuple[Layout, ...] = ("trl", "verl")


def export_rows(
    benchmarks: Sequence[str],
    *,
    split: Split,
    layout: Layout = "trl",
    data_dir: Path | None,
    prompt_set: str = "t-rex",
    protocol: str = "default",
    allow_eval_as_train: bool = False,
) -> list[dict[str, Any]]:
    """One row per problem of each benchmark, in the benchmark's order.

    Raises:
        ConfigError: ``split`` is ``train`` without ``allow_eval_as_train``, or an unknown layout.
        BenchmarkError, DataError: a benchmark cannot be loaded.
    """
    if layout not in LAYOUTS:
        raise ConfigError(f"unknown layout '{layout}'", hint=f"choose one of: {', '.join(LAYOUTS)}")
    if split == "train" and not allow_eval_as_train:
        raise ConfigError(
            f"evaluation benchmarks ({', '.join(benchmarks)}) as training data: training on them makes "
            "every later evaluation on them meaningless",
            hint="export them with --split eval (a trainer's evaluation set), or pass "
            "--allow-eval-as-train if contaminating them is what you want",
        )
    rows: list[dict[str, Any]] = []
    for name in benchmarks:
        bench = load_benchmark(name, data_dir=data_dir)
        plan = plan_for(bench, protocol=protocol)
        chosen = prompt_set
        if chosen == UPSTREAM_SET and bench.spec.prompt.upstream is None:
            chosen = bench.spec.prompt.default_set
        renderer = PromptRenderer(
            bench, chosen, working_directory=plan.protocol.prompt_working_directory(bench)
        )
        for index, problem in enumerate(bench.problems):
            messages = [m.model_dump() for m in renderer.render(problem).messages]
            key = json.dumps({"benchmark": name, "problem_id": problem.id})
            if layout == "trl":
                rows.append(
                    {
                        "prompt": messages,
                        REWARD_KEY: key,
                        "benchmark": name,
                        "problem_id": problem.id,
                        "split": split,
                    }
                )
            else:
                rows.append(
                    {
                        "data_source": f"trex-eval/{bench.name}",
                        "prompt": messages,
                        "ability": "operations_research",
                        "reward_model": {"style": "rule", "ground_truth": key},
                        "extra_info": {"split": split, "index": index, REWARD_KEY: key},
                    }
                )
    return rows


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """Write ``rows`` as the format ``path``'s suffix names: ``.jsonl`` or ``.parquet``.

    Raises:
        ConfigError: another suffix.
    """
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    elif suffix == ".parquet":
        import pandas as pd

        pd.DataFrame(rows).to_parquet(path, index=False)
    else:
        raise ConfigError(f"cannot write {path.name}", hint="name a .jsonl or .parquet file")
