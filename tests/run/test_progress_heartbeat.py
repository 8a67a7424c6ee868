"""Plain progress lines keep coming while nothing moves, and say what the run waits on (issue:
no line for 76 s behind a 75-s model request, 46 s of silence before an unreachable server's
error). The interval is shortened through ``TREX_PROGRESS_INTERVAL_S``; the model is a real
OpenAI-compatible HTTP server on loopback that answers slowly, or 503 with ``Retry-After`` first."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_server import Action, FakeOpenAIServer, Reply, Status
from rich.console import Console

from trex_eval.errors import ConfigError
from trex_eval.run.progress import RunProgress, plain_interval_s
from trex_eval.waits import BOARD, waiting

REPLY_S = 3.0
RETRY_AFTER_S = 2
INTERVAL_S = 0.4


def _script(key: str, attempt: int) -> Action:
    """Each problem's first attempt is refused (503, Retry-After), the second answered slowly."""
    if attempt == 1:
        return Status(503, headers=(("Retry-After", str(RETRY_AFTER_S)),))
    return Reply(delay_s=REPLY_S)


def _run_reading_lines(args: list[str], env: dict[str, str]) -> tuple[int, list[tuple[float, str]]]:
    """Run the CLI; every stderr line with the (monotonic) time it arrived here."""
    process = subprocess.Popen(
        [sys.executable, "-m", "trex_eval", *args],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[tuple[float, str]] = []
    assert process.stderr is not None

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append((time.monotonic(), line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    returncode = process.wait(timeout=180)
    reader.join(timeout=10)
    return returncode, lines


def test_lines_keep_coming_while_a_request_is_outstanding_and_while_retries_back_off(
    tmp_path: Path, data_dir: Path
) -> None:
    with FakeOpenAIServer(_script) as server:
        returncode, lines = _run_reading_lines(
            ["run", "--model", "openai-compatible/served-model", "--base-url", server.base_url,
             "-b", "nl4opt", "--limit", "1", "-o", str(tmp_path / "run")],
            {"TREX_DATA_DIR": str(data_dir), "TREX_PROGRESS_INTERVAL_S": str(INTERVAL_S), "COLUMNS": "250"},
        )  # fmt: skip
        refused, answered = server.chat_requests()
    text = "\n".join(line for _, line in lines)
    assert returncode == 0, text
    reply_wait = f"waiting on: a model reply from {server.base_url} ("
    backoff_wait = "waiting on: a retry back-off after HTTP 503 (ends in "
    # Lines printed while the back-off ran (between the 503 and the retry) name it ...
    during_backoff = [line for at, line in lines if refused.at < at < answered.at and backoff_wait in line]
    # ... and lines printed while the slow reply was outstanding name the request and its server.
    during_reply = [
        line for at, line in lines if answered.at < at < answered.at + REPLY_S and reply_wait in line
    ]
    # At least one line per interval, with a generous margin for a loaded machine.
    assert len(during_backoff) >= 2, text
    assert len(during_reply) >= 3, text
    assert all(
        line.startswith("NL4OPT: graded 0/1 · 0 generated this session ")
        for line in during_backoff + during_reply
    )
    assert lines[-1][1].startswith("NL4OPT: graded 1/1 · 1 generated this session "), text


def test_a_quiet_benchmark_gets_a_line_each_interval_naming_the_outstanding_waits() -> None:
    buffer = io.StringIO()
    now = [0.0]
    progress = RunProgress(
        {"nl4opt": ("NL4OPT", 2), "mamo": ("MAMO", 1)},
        console=Console(file=buffer, width=60),
        interval_s=30,
        clock=lambda: now[0],
    )
    board = progress.board  # what heartbeat() makes the current board (its thread is not used here)
    now[0] = 31.0
    progress.tick()  # before the samples start: the start-up is what it waits on
    with progress:
        progress.generated("mamo")
        progress.graded("mamo", passed=True)  # finished: no more lines for it
        reply = "a model reply from http://127.0.0.1:1/v1"
        with board.waiting(reply), board.waiting(reply):
            now[0] = 55.0
            with board.waiting("a retry back-off after HTTP 429", for_s=26):
                progress.tick()  # not due: the last line was at 31 s
                now[0] = 75.0
                progress.tick()
        now[0] = 200.0
        progress.tick()
    assert buffer.getvalue().splitlines() == [
        "NL4OPT: graded 0/2 · 0 generated this session · correct 0 · pass@1 so far - · 0m31s · waiting on: "
        "the run to start (sandbox workers, model backend)",
        "MAMO: graded 0/1 · 0 generated this session · correct 0 · pass@1 so far - · 0m31s · waiting on: "
        "the run to start (sandbox workers, model backend)",
        "MAMO: graded 1/1 · 1 generated this session · correct 1 · pass@1 so far 100.0% · 0m31s",
        "NL4OPT: graded 0/2 · 0 generated this session · correct 0 · pass@1 so far - · 1m15s · waiting on: "
        "a model reply from http://127.0.0.1:1/v1 ×2 (oldest 44s); "
        "a retry back-off after HTTP 429 (ends in 6s)",
        "NL4OPT: graded 0/2 · 0 generated this session · correct 0 · pass@1 so far - · 3m20s · waiting on: "
        "no model request, back-off or sandbox run outstanding (the harness is grading)",
    ]


def test_the_heartbeat_makes_its_board_current_for_the_block_only() -> None:
    progress = RunProgress({"nl4opt": ("NL4OPT", 1)}, enabled=False)
    with progress.heartbeat():
        assert BOARD.get() is progress.board
        with waiting("a free sandbox lane"):
            assert [wait.what for wait in progress.board.current()] == ["a free sandbox lane"]
    assert BOARD.get() is None and progress.board.current() == ()
    with waiting("nobody listens"):  # outside a board: recorded nowhere
        assert progress.board.current() == ()


@pytest.mark.parametrize("value", ["0", "-3", "nan", "inf", "soon"])
def test_a_bad_interval_in_the_environment_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("TREX_PROGRESS_INTERVAL_S", value)
    with pytest.raises(ConfigError, match="TREX_PROGRESS_INTERVAL_S"):
        plain_interval_s()
    monkeypatch.setenv("TREX_PROGRESS_INTERVAL_S", "2.5")
    assert plain_interval_s() == 2.5
