"""What a user sees at the terminal (issue 16), through the real CLI in a subprocess: did-you-mean for
benchmark and option names, display names accepted, small-n intervals marked, file-system errors in
words, a SIGTERM that says how to resume, `compare --common`, and a failed download that does not
advise running the command that just failed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from cli_process import trex_eval


def test_a_misspelt_benchmark_gets_close_matches_and_a_display_name_is_accepted(
    tmp_path: Path, data_dir: Path
) -> None:
    env = {"TREX_DATA_DIR": str(data_dir)}
    typo = trex_eval("run", "--model", "reference", "-b", "nl4op", env=env, columns=200, expect=2)
    assert "unknown benchmark 'nl4op' (did you mean 'nl4opt'" in typo.stderr
    assert "Traceback" not in typo.stderr
    done = trex_eval(
        "run", "--model", "reference", "-b", "NL4OPT", "--limit", "3", "--no-progress",
        "-o", str(tmp_path / "run"), env=env, columns=80,
    )  # fmt: skip
    table = done.stdout.splitlines()
    row = next(line for line in table if line.strip().startswith("nl4opt"))
    # 3 of 3 correct: a percentile bootstrap would print [100.00, 100.00]; Wilson is not certain.
    assert "100.00*" in row and "[43.85, 100.00]" in row, done.stdout
    assert "Wilson" in done.stdout
    # The table fits 80 columns; the closing path line is left whole (a wrapped path breaks copying).
    assert max(len(line) for line in table if not line.startswith("full summary:")) <= 80


def test_a_misspelt_option_names_the_option_it_meant_and_lists_the_valid_ones(data_dir: Path) -> None:
    done = trex_eval(
        "run", "--model", "reference", "--opt", "temprature=0.2", "-b", "nl4opt", "--limit", "1",
        env={"TREX_DATA_DIR": str(data_dir)}, columns=250, expect=2,
    )  # fmt: skip
    assert "unknown option 'temprature' for backend 'reference' (did you mean 'temperature'?)" in done.stderr
    assert "options of 'reference': libraries; every preset also takes temperature, top_p" in done.stderr
    assert "Extra inputs are not permitted" not in done.stderr


def test_models_shows_whole_first_sentences() -> None:
    done = trex_eval("models", columns=250)
    replay = done.stdout.split("\nreplay ", 1)[1]
    assert "No model: completions recorded earlier, e.g. the samples.jsonl of another run" in replay


def test_a_path_through_a_file_is_explained_in_words(tmp_path: Path, data_dir: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a folder\n")
    done = trex_eval(
        "run", "--model", "reference", "-b", "nl4opt", "--limit", "1", "--no-progress",
        "-o", str(tmp_path / "taken" / "run"), env={"TREX_DATA_DIR": str(data_dir)}, columns=250, expect=2,
    )  # fmt: skip
    assert f"cannot use {tmp_path / 'taken'}" in done.stderr
    assert "a part of the path is a file, not a folder" in done.stderr
    assert "[Errno" not in done.stderr and "Traceback" not in done.stderr


def test_sigterm_keeps_the_finished_samples_and_names_the_resume_command(
    tmp_path: Path, data_dir: Path
) -> None:
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "trex_eval", "run", "--model", "reference", "-b", "b4o-feasible",
         "--limit", "60", "--workers", "1", "--no-progress", "-o", str(run_dir)],
        env={**os.environ, "TREX_DATA_DIR": str(data_dir), "COLUMNS": "250"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    samples = run_dir / "samples.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (samples.is_file() and samples.read_text().count("\n") >= 2):
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert (
        f"terminated (SIGTERM): finished samples are kept; continue with `trex-eval run --resume {run_dir}`"
        in stderr
    )
    kept = samples.read_text().count("\n")
    assert 2 <= kept < 60
    resumed = trex_eval(
        "run", "--resume", str(run_dir), "--no-progress", env={"TREX_DATA_DIR": str(data_dir)}, columns=250
    )
    # Completions generated before the signal are kept too: the resume grades, it need not generate.
    assert f"this session: 0 generated, {60 - kept} graded; the run holds 60 graded samples" in resumed.stdout
    assert samples.read_text().count("\n") == 60


def test_compare_common_pairs_runs_of_different_limits_on_their_shared_problems(
    tmp_path: Path, data_dir: Path
) -> None:
    env = {"TREX_DATA_DIR": str(data_dir)}
    for name, limit in (("three", "3"), ("five", "5")):
        trex_eval(
            "run", "--model", "reference", "-b", "nl4opt", "--limit", limit, "--no-progress",
            "-o", str(tmp_path / name), env=env,
        )  # fmt: skip
    refused = trex_eval("compare", str(tmp_path / "three"), str(tmp_path / "five"), columns=250, expect=2)
    assert "--common" in refused.stderr
    paired = trex_eval(
        "compare", str(tmp_path / "three"), str(tmp_path / "five"), "--common", columns=80, env=env
    )
    assert "nl4opt" in paired.stdout and " 3 " in paired.stdout, paired.stdout
    # The table fits; the closing command (to copy) is never split.
    table = [line for line in paired.stdout.splitlines() if not line.startswith("flipped problems and")]
    assert max(len(line) for line in table) <= 80


def test_a_failed_download_does_not_advise_running_data_pull(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    done = trex_eval(
        "data", "pull", "--url", f"http://127.0.0.1:{port}/data.tar.gz", "--dest", str(tmp_path / "data"),
        columns=250, expect=2,
    )  # fmt: skip
    assert "cannot download" in done.stderr
    assert "run `trex-eval data pull`" not in done.stderr
    assert "--url" in done.stderr and "TREX_DATA_DIR" in done.stderr
