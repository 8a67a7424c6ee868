"""``trex-eval export-rl``: the run's prompts with the problem's key (never its label), in the
layouts TRL and verl read, refused as training data unless asked; an exported row's key is what the
reward adapters score by."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from cli_process import trex_eval

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.prompting.render import PromptRenderer
from trex_eval.reward import RewardScorer, ScorerSettings
from trex_eval.reward.trl import TrlReward

BENCH = "b4o-feasible"


@pytest.fixture(scope="module")
def scorer(data_dir: Path) -> Iterator[RewardScorer]:
    with RewardScorer(ScorerSettings(benchmarks=(BENCH,), data_dir=data_dir, workers=1)) as started:
        yield started


def test_trl_rows_hold_the_runs_prompt_and_the_key_the_reward_scores_by(
    tmp_path: Path, data_dir: Path, scorer: RewardScorer
) -> None:
    path = tmp_path / "eval.parquet"
    done = trex_eval("export-rl", "-b", BENCH, "--out", str(path), "--data-dir", str(data_dir))
    rows = pd.read_parquet(path)
    bench = load_benchmark(BENCH, data_dir=data_dir)

    assert f"{len(bench.problems)} rows" in done.stdout
    assert list(rows.columns) == ["prompt", "trex_problem", "benchmark", "problem_id", "split"]
    assert set(rows["split"]) == {"eval"}
    first = bench.problems[0]
    rendered = PromptRenderer(bench, "t-rex").render(first)
    assert [dict(m) for m in rows["prompt"][0]] == [m.model_dump() for m in rendered.messages]
    label = first.reference.label  # type: ignore[union-attr]
    assert all(label not in json.dumps(list(map(dict, row))) for row in rows["prompt"][:1])
    head = rows.head(2)
    rewards = TrlReward(scorer=scorer)(
        prompts=list(head["prompt"]),
        completions=[reference_completion_text(p) for p in bench.problems[:2]],
        **{column: list(head[column]) for column in ("trex_problem", "benchmark", "problem_id", "split")},
    )
    assert rewards == [1.0, 1.0]


def test_verl_rows_carry_the_key_as_ground_truth(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "eval.jsonl"
    trex_eval(
        "export-rl", "-b", "nl4opt", "--layout", "verl", "--out", str(path), "--data-dir", str(data_dir)
    )
    first = json.loads(path.read_text().splitlines()[0])

    assert first["data_source"] == "trex-eval/nl4opt" and first["ability"] == "operations_research"
    assert json.loads(first["reward_model"]["ground_truth"]) == {"benchmark": "nl4opt", "problem_id": "0"}
    assert first["extra_info"]["trex_problem"] == first["reward_model"]["ground_truth"]


def test_evaluation_benchmarks_are_not_exported_as_training_data_unless_asked(
    tmp_path: Path, data_dir: Path
) -> None:
    path = tmp_path / "train.jsonl"
    refused = trex_eval("export-rl", "-b", "nl4opt", "--split", "train", "--out", str(path), expect=2)
    assert "evaluation benchmarks (nl4opt) as training data" in refused.stderr and not path.exists()

    trex_eval(
        "export-rl",
        "-b",
        "nl4opt",
        "--split",
        "train",
        "--allow-eval-as-train",
        "--out",
        str(path),
        "--data-dir",
        str(data_dir),
    )
    assert json.loads(path.read_text().splitlines()[0])["split"] == "train"
    wrong = trex_eval("export-rl", "-b", "nl4opt", "--out", str(tmp_path / "x.csv"), expect=2)
    assert ".jsonl or .parquet" in wrong.stderr
