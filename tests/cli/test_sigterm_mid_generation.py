"""SIGTERM in the middle of generation ends the run cleanly: exit 143, the resume hint, and no
"Task exception was never retrieved ... SystemExit: 143" (issue: a local-model run dumped it).

The signal used to be raised as SystemExit inside whatever the event loop was running, often a
sample task's step; the run now cancels itself between steps and exits after the loop
(``trex_eval.run.sigterm``). To make "inside a task's step" the likely moment of the signal, the
model (a real OpenAI-compatible server on loopback) answers every request with a long completion,
so the loop spends its time reading and extracting them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_server import FakeOpenAIServer, Reply

LONG_ANSWER = "x" * 2_000_000


@pytest.mark.parametrize("pause_s", [0.3, 0.6, 0.9])
def test_sigterm_mid_generation_exits_143_with_the_resume_hint_and_no_task_traceback(
    tmp_path: Path, data_dir: Path, pause_s: float
) -> None:
    run_dir = tmp_path / "run"
    with FakeOpenAIServer(lambda key, attempt: Reply(text=LONG_ANSWER)) as server:
        process = subprocess.Popen(
            [sys.executable, "-m", "trex_eval", "run", "--model", "openai-compatible/served-model",
             "--base-url", server.base_url, "-b", "nl4opt", "--limit", "40", "--no-progress",
             "-o", str(run_dir)],
            env={**os.environ, "TREX_DATA_DIR": str(data_dir), "COLUMNS": "250"},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(server.answered) < 3:
            time.sleep(0.01)
        time.sleep(pause_s)  # answers keep arriving: the loop is busy with them
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert "never retrieved" not in stderr and "Traceback" not in stderr, stderr
    assert (
        f"terminated (SIGTERM): finished samples are kept; continue with `trex-eval run --resume {run_dir}`"
        in stderr
    )
    samples = run_dir / "samples.jsonl"
    graded = samples.read_text(encoding="utf-8").count("\n") if samples.is_file() else 0
    assert graded < 40  # stopped mid-run, not after it
