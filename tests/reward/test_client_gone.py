"""A client that sends a batch and leaves does not hold the server: its rollouts are cancelled
(the pending count falls at once, waiting rollouts give their places up) and the next client is
admitted, instead of everyone getting 429 until the batch's deadline (up to 600 s)."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.reward.test_server import Server, _start, _stop

SLEEPER = "```python\nimport time\ntime.sleep(30)\nprint(3)\n```"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[Server]:
    started = _start(
        tmp_path_factory.mktemp("gone"),
        *("--data-dir", str(data_dir), "--workers", "1", "--max-pending", "4"),
    )
    yield started
    assert _stop(started) == 0


def _pending(server: Server) -> int:
    metrics = httpx.get(f"{server.url}/metrics", timeout=10).text
    found = re.search(r"^trex_reward_pending (\d+)$", metrics, re.MULTILINE)
    assert found is not None, metrics
    return int(found.group(1))


def test_a_client_that_leaves_frees_the_house_for_the_next(server: Server) -> None:
    body = json.dumps({"requests": [{"problem": {"value": 3}, "completion": SLEEPER}] * 4}).encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(b"POST /v1/score HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
    deadline = time.monotonic() + 30
    while _pending(server) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _pending(server) == 4  # the house is full: a fifth rollout would get 429
    sock.close()

    deadline = time.monotonic() + 10
    while _pending(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _pending(server) == 0
    answer = httpx.post(
        f"{server.url}/v1/score",
        json={"requests": [{"problem": {"value": 11}, "completion": "eleven"}]},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["records"][0]["verdict"] == "no_code"
    metrics = httpx.get(f"{server.url}/metrics", timeout=10).text
    assert 'trex_reward_requests_total{outcome="client_gone"} 1' in metrics
