"""Messages a new user met that did not say what, where and what to do (issue 46), through the real
CLI: a disk that fills mid-run, a malformed completions line, a first-use download that fails, the
data directory's search order, and the closing line of `compare` and `leaderboard`."""

from __future__ import annotations

import functools
import resource
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import trex_eval

from trex_eval.benchmarks import data
from trex_eval.cli._common import data_dir_or_pull
from trex_eval.errors import DataError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "or-word-problems"


def _limit_file_size(max_bytes: int) -> None:
    # Soft limit only: the sandbox's workers may still set their own. Python ignores SIGXFSZ, so a
    # write past the limit fails with EFBIG, as a write to a full disk fails with ENOSPC.
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, resource.RLIM_INFINITY))


def test_a_write_the_machine_refuses_mid_run_exits_1_and_names_the_resume_command(
    tmp_path: Path, data_dir: Path
) -> None:
    run_dir = tmp_path / "run"
    command = [
        sys.executable, "-m", "trex_eval", "run", "--model", "reference", "-b", "nl4opt", "--limit", "30",
        "--workers", "1", "--no-progress", "-o", str(run_dir),
    ]  # fmt: skip
    env = {"TREX_DATA_DIR": str(data_dir), "COLUMNS": "250", "PATH": "/usr/bin:/bin"}
    # The manifest (~30 kB) fits; completions.jsonl outgrows the limit after a few problems.
    stopped = subprocess.run(
        command,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=functools.partial(_limit_file_size, 48_000),
    )
    # The machine, not the input: exit 1 (README, exit codes), not 2.
    assert stopped.returncode == 1, stopped.stderr
    assert f"cannot write {run_dir / 'completions.jsonl'}: file too large" in stopped.stderr
    assert f"then continue with `trex-eval run --resume {run_dir}`" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    # The command it names continues the run once the limit is lifted, and nothing is lost.
    resumed = subprocess.run(
        [*command[:3], *shlex.split(f"run --resume {run_dir} --no-progress")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert len((run_dir / "samples.jsonl").read_text().splitlines()) == 30


def test_a_malformed_completions_line_says_how_to_fix_it(tmp_path: Path) -> None:
    lines = (EXAMPLE / "completions-coptpy.jsonl").read_text().splitlines()
    path = tmp_path / "out.jsonl"
    path.write_text("\n".join([lines[0], '{"task_id": "diet", oops}', lines[2]]) + "\n")
    done = trex_eval(
        "grade", str(path), "-b", str(EXAMPLE / "benchmark.yaml"), "--id-field", "task_id",
        "--text-field", "response.choices.0.message.content", "-o", str(tmp_path / "g"),
        columns=250, expect=2,
    )  # fmt: skip
    assert f"{path}:2: malformed line: not valid JSON" in done.stderr
    assert (
        "-> make line 2 one JSON object (as the other lines are) or delete it, then run the command again"
        in (done.stderr)
    )


def test_a_first_use_download_that_fails_names_options_the_command_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    # No data anywhere (not beside the checkout, not in the cache): the command downloads, from
    # an address where nothing answers.
    monkeypatch.delenv("TREX_DATA_DIR", raising=False)
    monkeypatch.setenv("TREX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(data, "checkout_data_dir", lambda: None)
    monkeypatch.setattr(
        data, "pull", functools.partial(data.pull, url=f"http://127.0.0.1:{port}/data.tar.gz")
    )
    with pytest.raises(DataError, match="cannot download") as caught:
        data_dir_or_pull(None)
    hint = caught.value.hint or ""
    # `run` and `audit` take no --url: the mirror goes through `data pull`, which does.
    assert "`trex-eval data pull --url http://<mirror>/<file>.tar.gz`" in hint
    assert "--data-dir DIR or TREX_DATA_DIR=DIR" in hint
    assert "give it with --url" not in hint


def test_data_where_help_lists_every_place_it_looks() -> None:
    done = trex_eval("data", "where", "--help", columns=250)
    order = ["--data-dir", "$TREX_DATA_DIR", "../shared/benchmarks/t-rex", "the user cache"]
    first = done.stdout.split("Print the data directory in force", 1)[1]
    assert [first.index(step) for step in order] == sorted(first.index(step) for step in order)


def test_compare_and_leaderboard_end_with_a_command_that_writes_the_details(
    tmp_path: Path, data_dir: Path
) -> None:
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        trex_eval(
            "run", "--model", "reference", "-b", "nl4opt", "--limit", "2", "--no-progress", "-o", str(run),
            env={"TREX_DATA_DIR": str(data_dir)},
        )  # fmt: skip
    for command, file_name, what in (
        ("leaderboard", "leaderboard.md", "definitions and run details"),
        ("compare", "comparison.md", "flipped problems and definitions"),
    ):
        shown = trex_eval(command, *map(str, runs), columns=80, cwd=tmp_path).stdout
        (line,) = (line for line in shown.splitlines() if line.startswith(f"{what}: "))
        again = line.removeprefix(f"{what}: ").removesuffix("  (or --md prints them)")
        assert again == f"trex-eval {command} {runs[0]} {runs[1]} --out {file_name}"
        # The command it names writes the file it promises.
        trex_eval(*shlex.split(again)[1:], columns=80, cwd=tmp_path)
        printed = trex_eval(command, *map(str, runs), "--md", columns=80, cwd=tmp_path).stdout
        assert (tmp_path / file_name).read_text().strip() == printed.strip() != ""
