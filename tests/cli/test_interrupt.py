"""Ctrl-C belongs to the harness: a SIGINT sent to the terminal's whole process group while a run
grades (programs running, claims being re-solved by gurobipy and HiGHS) stops the run with exit
130, keeps every finished sample, and ``--resume`` finishes it.

The solver libraries used to re-solve claims in the harness process, where gurobipy takes SIGINT
while it optimises ("Interrupt request received") and the run went on to exit 0; re-solves now
run in verifier processes outside the terminal's process group (``trex_eval.verify.worker``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_process import trex_eval

TOTAL = 40


def test_ctrl_c_before_the_run_stored_anything_says_so_and_exits_130(tmp_path: Path, data_dir: Path) -> None:
    """Typer alone exits 130 without a word on a Ctrl-C that comes before a command's own work."""
    for delay in (0.05, 0.4, 0.8):  # while Python starts, while the CLI loads, while the run sets up
        process = subprocess.Popen(
            [sys.executable, "-m", "trex_eval", "run", "--model", "reference", "-b", "b4o-feasible",
             "--limit", "5", "--no-progress", "-o", str(tmp_path / f"run-{delay}")],
            env={**os.environ, "TREX_DATA_DIR": str(data_dir)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        time.sleep(delay)
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=90)
        if process.returncode == 0:
            continue  # it had finished: nothing to check
        # Before Python installed its handler the signal's default action ends the process at once.
        assert process.returncode in (130, -signal.SIGINT), stderr[-2000:]
        if process.returncode == 130:
            assert "interrupted" in stderr and "Traceback" not in stderr, stderr[-2000:]


@pytest.mark.parametrize("after", [1, 12, 25])
def test_ctrl_c_while_grading_exits_130_and_the_run_resumes(
    tmp_path: Path, data_dir: Path, after: int
) -> None:
    run_dir = tmp_path / "run"
    env = {**os.environ, "TREX_DATA_DIR": str(data_dir), "COLUMNS": "250"}
    process = subprocess.Popen(
        [sys.executable, "-m", "trex_eval", "run", "--model", "reference", "-b", "b4o-feasible",
         "--limit", str(TOTAL), "--workers", "2", "--no-progress", "-o", str(run_dir)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group, as a shell gives a foreground job
    )  # fmt: skip
    samples = run_dir / "samples.jsonl"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and process.poll() is None:
        if samples.is_file() and samples.read_text().count("\n") >= after:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before the signal"
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    _, stderr = process.communicate(timeout=90)

    assert process.returncode == 130, stderr[-2000:]
    assert (
        f"interrupted: finished samples are kept; continue with `trex-eval run --resume {run_dir}`" in stderr
    )
    assert "Interrupt request received" not in stderr
    kept = samples.read_text().count("\n")
    assert after <= kept < TOTAL
    resumed = trex_eval(
        "run", "--resume", str(run_dir), "--no-progress", env={"TREX_DATA_DIR": str(data_dir)}
    )
    assert f"the run holds {TOTAL} graded samples" in resumed.stdout
    assert samples.read_text().count("\n") == TOTAL
