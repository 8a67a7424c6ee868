"""What the real TRL tests share (tests/reward/test_trl_grpo.py, test_trl_repair_env.py): the
trainer's interpreter, the converted tiny model, the exported rows and a ``trex-eval serve`` on
loopback. The trainer runs in the vLLM virtualenv that ``scripts/setup_vllm_cpu.sh`` builds (torch
CPU, transformers; ``.ci/run`` adds trl and datasets), the grader in this one."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ci_required import required

from trex_eval import config
from trex_eval.backends.model_files import hf_export_dir


def _require(condition: bool, why: str) -> None:
    required(condition, why, in_ci="CI must run it: .ci/run builds the vLLM virtualenv and adds trl")


def trainer_python() -> Path:
    """The interpreter with trl and datasets (beside ``TREX_VLLM_EXECUTABLE``); the test is
    skipped (failed under CI) where it is missing."""
    executable = config.getenv("TREX_VLLM_EXECUTABLE")
    _require(executable is not None and Path(executable).is_file(), "TREX_VLLM_EXECUTABLE is not set")
    assert executable is not None
    python = Path(executable).parent / "python"
    has_trl = subprocess.run([str(python), "-c", "import trl, datasets"], capture_output=True, check=False)
    _require(has_trl.returncode == 0, f"trl and datasets are not installed in {python.parent.parent}")
    return python


def trainer_python_and_model() -> tuple[Path, Path]:
    """:func:`trainer_python` and the converted SmolLM2-135M (skipped, or failed under CI, where
    it is missing)."""
    python = trainer_python()
    model_dir = hf_export_dir("smollm2-135m-instruct-q4")
    _require((model_dir / "config.json").is_file(), f"no converted SmolLM2 at {model_dir}")
    return python, model_dir


def export_rows(dataset: Path, *, benchmark: str, data_dir: Path) -> None:
    """``trex-eval export-rl -b BENCHMARK --out DATASET``, as a user runs it."""
    command = ["export-rl", "-b", benchmark, "--out", str(dataset), "--data-dir", str(data_dir)]
    subprocess.run([sys.executable, "-m", "trex_eval", *command], check=True, capture_output=True)


@contextmanager
def serving(*arguments: str) -> Iterator[str]:
    """``trex-eval serve --port 0 ARGUMENTS`` for the block; yields its address. On leaving it is
    sent SIGTERM and must exit 0 (a clean drain)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "trex_eval", "serve", "--port", "0", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        found = re.search(r"http://127\.0\.0\.1:\d+", server.stdout.readline())
        assert found is not None, server.stderr.read() if server.stderr else ""
        yield found.group(0)
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=120) == 0
