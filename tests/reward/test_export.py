"""``trex-eval export-rl``: the run's prompts with the problem's key (never its label), in the
layouts TRL and verl read, refused as training data unless asked; an exported row's key is what the
reward adapters score by."""

from __future__ import annotations

import json
import re
import shlex
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


DOCS = Path(__file__).resolve().parents[2] / "docs" / "rl-reward.md"
README = DOCS.parents[1] / "README.md"
LOADERS = {"json": ".jsonl", "parquet": ".parquet"}
"""``datasets.load_dataset``'s builder for each file format export-rl writes."""


def _documented_exports() -> dict[str, list[str]]:
    """The ``trex-eval export-rl`` commands of the docs' Datasets section, by layout, as argv."""
    commands: dict[str, list[str]] = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        if line.startswith("trex-eval export-rl "):
            argv = shlex.split(line.split("#", 1)[0])[1:]
            commands["verl" if "verl" in argv else "trl"] = argv
    return commands


def test_the_documented_export_is_the_file_the_documented_trl_snippet_loads(
    tmp_path: Path, data_dir: Path
) -> None:
    datasets = pytest.importorskip("datasets")
    loaded = re.search(r'load_dataset\("(\w+)", data_files="([^"]+)", split="train"\)', DOCS.read_text())
    assert loaded is not None, "the TRL snippet of docs/rl-reward.md loads no dataset file"
    builder, name = loaded.groups()
    commands = _documented_exports()
    trl = commands["trl"]
    assert trl[trl.index("--out") + 1] == name and Path(name).suffix == LOADERS[builder]
    readme = next(line for line in README.read_text().splitlines() if line.startswith("trex-eval export-rl"))
    assert f"--out {name} " in readme  # the README's one-liner writes the same file

    documented = {"trl": name, "verl": commands["verl"][commands["verl"].index("--out") + 1]}
    for layout, argv in commands.items():
        out = str(tmp_path / documented[layout])
        trex_eval(*[out if arg == documented[layout] else arg for arg in argv], "--data-dir", str(data_dir))
    rows = datasets.load_dataset(
        builder, data_files=str(tmp_path / name), split="train", cache_dir=str(tmp_path / "hf")
    )
    verl_suffix = Path(documented["verl"]).suffix
    verl_rows = datasets.load_dataset(
        next(b for b, s in LOADERS.items() if s == verl_suffix),
        data_files=str(tmp_path / documented["verl"]),
        split="train",
        cache_dir=str(tmp_path / "hf"),
    )

    bench = load_benchmark("nl4opt", data_dir=data_dir)
    assert rows.num_rows == verl_rows.num_rows == len(bench.problems)
    assert rows.column_names == ["prompt", "trex_problem", "benchmark", "problem_id", "split"]
    first = rows[0]
    assert [m["role"] for m in first["prompt"]] == [
        m.role for m in PromptRenderer(bench, "t-rex").render(bench.problems[0]).messages
    ]
    assert json.loads(first["trex_problem"]) == {"benchmark": "nl4opt", "problem_id": bench.problems[0].id}
    assert json.loads(verl_rows[0]["reward_model"]["ground_truth"]) == json.loads(first["trex_problem"])
    # GRPOTrainer hands the reward every non-prompt column of the rows it sampled, as loaded.
    reward = TrlReward(ScorerSettings(benchmarks=("nl4opt",), data_dir=data_dir, workers=1))
    try:
        columns = {column: rows[:2][column] for column in rows.column_names if column != "prompt"}
        paid = reward(
            prompts=rows[:2]["prompt"],
            completions=[reference_completion_text(problem) for problem in bench.problems[:2]],
            **columns,
        )
    finally:
        reward.close()
    assert paid == [1.0, 1.0]
