"""One real ``inspect eval`` of trex-eval's tasks against a scripted OpenAI-compatible server on
loopback, for the inspect_ai tests (tests/integrations/test_inspect_task.py, test_inspect_view.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fake_server import Action, FakeOpenAIServer, Reply, Status

INSPECT = Path(sys.executable).parent / "inspect"


def inspect_eval(
    answers: dict[str, str], arguments: list[str], *, logs: Path
) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """``inspect eval ARGUMENTS --model openai-api/fake/served-model --display none`` with its logs
    in ``logs``; the server answers a request whose last user message is a key of ``answers`` with
    its value, any other with 404. Returns the finished process and the chat requests' bodies."""

    def script(key: str, attempt: int) -> Action:
        text = answers.get(key)
        return Status(404) if text is None else Reply(text=text)

    with FakeOpenAIServer(script) as server:
        env = {
            **os.environ,
            "FAKE_BASE_URL": server.base_url,
            "FAKE_API_KEY": "not-a-secret",
            "INSPECT_LOG_DIR": str(logs),
        }
        command = [str(INSPECT), "eval", *arguments, "--model", "openai-api/fake/served-model"]
        done = subprocess.run(
            [*command, "--display", "none"], env=env, capture_output=True, text=True, timeout=240, check=False
        )
        return done, [seen.body for seen in server.chat_requests() if seen.body is not None]
