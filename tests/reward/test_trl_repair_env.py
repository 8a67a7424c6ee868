"""A real TRL ``GRPOTrainer`` run on CPU (two steps, SmolLM2-135M) whose rollouts are repair
episodes of the real ``trex-eval serve``: ``environment_factory=RepairEnvironment.factory(url)``,
each program the policy writes sent as a turn of a ``POST /v1/step`` session and run in the
sandbox (``scripts/trl_repair_env_smoke.py``; the same split of environments as
test_trl_grpo.py).

The untrained policy writes prose, not programs: the script's chat template opens every turn as a
``run_program`` call (a required tool choice), so every rollout reaches the environment, and the
rewards are the policy's for what it wrote (0). What is checked is the plumbing, end to end: TRL
resets one environment per rollout with its row, the tool call opens a server session whose turn
is graded, ``get_reward`` hands TRL the server's reward, and the trainer logs it for both steps."""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest
from trl_setup import export_rows, serving, trainer_python_and_model

REPO = Path(__file__).resolve().parents[2]


def _served_ok(address: str) -> int:
    """The server's count of requests answered 200 (``/metrics``), this one excluded."""
    with urllib.request.urlopen(f"{address}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    found = re.search(r'^trex_reward_requests_total\{outcome="ok"\} (\d+)$', text, re.MULTILINE)
    return int(found.group(1)) if found else 0


@pytest.mark.slow
@pytest.mark.vllm
def test_grpo_trainer_rolls_out_repair_episodes_of_trex_eval_serve(tmp_path: Path, data_dir: Path) -> None:
    python, model_dir = trainer_python_and_model()
    dataset = tmp_path / "nl4opt.jsonl"
    export_rows(dataset, benchmark="nl4opt", data_dir=data_dir)
    with serving("-b", "nl4opt", "--data-dir", str(data_dir)) as address:
        trained = subprocess.run(
            [
                str(python),
                str(REPO / "scripts" / "trl_repair_env_smoke.py"),
                "--url",
                address,
                "--dataset",
                str(dataset),
                "--model",
                str(model_dir),
                "--steps",
                "2",
                "--turns",
                "2",
            ],
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "PYTHONPATH": str(REPO), "TQDM_DISABLE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"},
            check=False,
        )
        served = _served_ok(address)

    assert trained.returncode == 0, trained.stderr[-3000:]
    result = json.loads(trained.stdout.strip().splitlines()[-1])
    assert result["steps"] == 2
    rollouts = result["rollouts"]
    # Two steps of one prompt and two generations each: four rollouts, each reset with its own row.
    assert len(rollouts) == 4
    rows = [json.loads(line) for line in dataset.read_text().splitlines()[:2]]
    assert sorted(r["problem_id"] for r in rollouts) == sorted(2 * [row["problem_id"] for row in rows])
    assert {r["benchmark"] for r in rollouts} == {"nl4opt"}
    # Every rollout's tool call opened its own session on the server, which graded each turn.
    steps = [step for rollout in rollouts for step in rollout["steps"]]
    assert all(rollout["steps"] for rollout in rollouts)
    assert len({rollout["steps"][0]["session"] for rollout in rollouts}) == 4
    assert all(len(step["session"]) >= 32 for step in steps)
    assert served == len(steps)
    for rollout in rollouts:
        turns = [step["turn"] for step in rollout["steps"]]
        assert turns == list(range(1, len(turns) + 1)) and len(turns) <= 2
        assert len({step["session"] for step in rollout["steps"]}) == 1
        # get_reward hands TRL the server's reward of the rollout's last graded turn.
        assert isinstance(rollout["reward"], float)
        assert rollout["reward"] == rollout["steps"][-1]["record_reward"]
    # The trainer logged the environment's reward for each step: the mean of its two rollouts.
    means = [(a["reward"] + b["reward"]) / 2 for a, b in zip(rollouts[::2], rollouts[1::2], strict=True)]
    assert result["logged"] == pytest.approx(means)
