"""A real TRL ``GRPOTrainer`` run on CPU (two steps, SmolLM2-135M) whose rewards come from the
real ``trex-eval serve`` over HTTP. The trainer runs in the vLLM virtualenv that
``scripts/setup_vllm_cpu.sh`` builds (torch CPU, transformers; ``.ci/run`` adds trl and datasets),
the grader in this one: the split a training job has, where only ``trex_eval.reward.client``
(standard library and httpx) is imported beside torch."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from trl_setup import export_rows, serving, trainer_python_and_model

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.vllm
def test_grpo_trainer_takes_its_rewards_from_trex_eval_serve(tmp_path: Path, data_dir: Path) -> None:
    python, model_dir = trainer_python_and_model()
    dataset, log = tmp_path / "nl4opt.jsonl", tmp_path / "rewards.jsonl"
    export_rows(dataset, benchmark="nl4opt", data_dir=data_dir)
    with serving("-b", "nl4opt", "--log", str(log), "--data-dir", str(data_dir)) as address:
        trained = subprocess.run(
            [
                str(python),
                str(REPO / "scripts" / "trl_grpo_smoke.py"),
                "--reward-url",
                address,
                "--dataset",
                str(dataset),
                "--model",
                str(model_dir),
                "--steps",
                "2",
            ],
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "PYTHONPATH": str(REPO), "TQDM_DISABLE": "1"},
            check=False,
        )

    assert trained.returncode == 0, trained.stderr[-3000:]
    result = json.loads(trained.stdout.strip().splitlines()[-1])
    assert result["steps"] == 2 and result["reward_calls"] == 2
    assert [len(batch) for batch in result["rewards"]] == [2, 2]
    assert len(result["logged"]) == 2  # the trainer logged a reward per step
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(logged) == 4 and {record["benchmark"] for record in logged} == {"nl4opt"}
    assert [r["reward"] for r in logged] == [reward for batch in result["rewards"] for reward in batch]
