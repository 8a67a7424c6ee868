"""A real TRL ``GRPOTrainer`` run on CPU (two steps, SmolLM2-135M) whose rewards come from the
real ``trex-eval serve`` over HTTP. The trainer runs in the vLLM virtualenv that
``scripts/setup_vllm_cpu.sh`` builds (torch CPU, transformers; ``.ci/run`` adds trl and datasets),
the grader in this one: the split a training job has, where only ``trex_eval.reward.client``
(standard library and httpx) is imported beside torch."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ci_required import required

from trex_eval import config
from trex_eval.backends.model_files import hf_export_dir

REPO = Path(__file__).resolve().parents[2]


def _require(condition: bool, why: str) -> None:
    required(condition, why, in_ci="CI must run it: .ci/run builds the vLLM virtualenv and adds trl")


@pytest.mark.slow
@pytest.mark.vllm
def test_grpo_trainer_takes_its_rewards_from_trex_eval_serve(tmp_path: Path, data_dir: Path) -> None:
    executable = config.getenv("TREX_VLLM_EXECUTABLE")
    _require(executable is not None and Path(executable).is_file(), "TREX_VLLM_EXECUTABLE is not set")
    assert executable is not None
    python = Path(executable).parent / "python"
    has_trl = subprocess.run([str(python), "-c", "import trl, datasets"], capture_output=True, check=False)
    _require(has_trl.returncode == 0, f"trl and datasets are not installed in {python.parent.parent}")
    model_dir = hf_export_dir("smollm2-135m-instruct-q4")
    _require((model_dir / "config.json").is_file(), f"no converted SmolLM2 at {model_dir}")

    dataset, log = tmp_path / "nl4opt.jsonl", tmp_path / "rewards.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "trex_eval",
            "export-rl",
            "-b",
            "nl4opt",
            "--out",
            str(dataset),
            "--data-dir",
            str(data_dir),
        ],
        check=True,
        capture_output=True,
    )
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trex_eval",
            "serve",
            "-b",
            "nl4opt",
            "--port",
            "0",
            "--log",
            str(log),
            "--data-dir",
            str(data_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        address = re.search(r"http://127\.0\.0\.1:\d+", server.stdout.readline())
        assert address is not None
        trained = subprocess.run(
            [
                str(python),
                str(REPO / "scripts" / "trl_grpo_smoke.py"),
                "--reward-url",
                address.group(0),
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
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=120) == 0

    assert trained.returncode == 0, trained.stderr[-3000:]
    result = json.loads(trained.stdout.strip().splitlines()[-1])
    assert result["steps"] == 2 and result["reward_calls"] == 2
    assert [len(batch) for batch in result["rewards"]] == [2, 2]
    assert len(result["logged"]) == 2  # the trainer logged a reward per step
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(logged) == 4 and {record["benchmark"] for record in logged} == {"nl4opt"}
    assert [r["reward"] for r in logged] == [reward for batch in result["rewards"] for reward in batch]
