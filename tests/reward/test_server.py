"""``trex-eval serve`` as a trainer meets it: the real command in a subprocess, spoken to over real
HTTP on loopback (httpx), grading in the real sandbox. Hostile rollouts earn nothing and leave the
server up; full queues answer 429, deadlines are kept, SIGTERM drains and exits 0."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark

BENCH = "b4o-feasible"
LP = (
    "```python\nimport pulp\np = pulp.LpProblem('lp', pulp.LpMaximize)\nx = pulp.LpVariable('x', 0, 3)\n"
    "y = pulp.LpVariable('y', 0)\np += 3 * x + 2 * y\np += x + y <= 4\np += x + 3 * y <= 6\n"
    "p.solve(pulp.PULP_CBC_CMD(msg=0))\nprint(pulp.value(p.objective))\n```"
)
"""Optimum 11."""


def _program(code: str) -> str:
    return f"```python\n{code}\n```"


SLEEPER = LP.replace("import pulp\n", "import time\ntime.sleep({seconds})\nimport pulp\n", 1)
"""Sleeps, then solves the LP (optimum 11)."""

HOSTILE = {
    "fork bomb": "import os\nwhile True:\n    os.fork()",
    "host socket": "import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
    "s.sendall(b'GET /health HTTP/1.0\\r\\n\\r\\n')\nprint(s.recv(100))",
    "vsock": "import socket\nsocket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)",
    "parent environment": "print(open('/proc/1/environ').read())\nprint(open('/proc/self/environ').read())",
    "lone surrogate": "raise ValueError('\\udcff' + '\\x00' * 100)",
    "flood": "import sys\nwhile True:\n    sys.stdout.write('\\x01' * 65536)",
    "printed label": "print({label!r})",
    "memory": "x = bytearray(8 << 30)",
}
"""Programs that attack the harness, the machine or the label; none may earn a reward."""


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    port: int
    log: Path


def _start(tmp: Path, *args: str) -> Server:
    log = tmp / "rewards.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "trex_eval", "serve", "-b", BENCH, "--port", "0", "--log", str(log), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if found is None:
        process.kill()
        raise AssertionError(f"no address in {line!r}; stderr: {process.communicate()[1][-2000:]}")
    port = int(found.group(1))
    return Server(process, f"http://127.0.0.1:{port}", port, log)


def _stop(server: Server) -> int:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
    try:
        return server.process.wait(timeout=120)
    finally:
        if server.process.poll() is None:
            server.process.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[Server]:
    started = _start(tmp_path_factory.mktemp("serve"), "--data-dir", str(data_dir), "--max-pending", "16")
    yield started
    assert _stop(started) == 0


def _score(server: Server, items: list[dict[str, object]], **extra: object) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/score", json={"requests": items, **extra}, timeout=180)


def test_scores_benchmark_rows_and_inline_problems(server: Server, data_dir: Path) -> None:
    row = load_benchmark(BENCH, data_dir=data_dir).problems[0]
    answer = _score(
        server,
        [
            {
                "problem": {"benchmark": BENCH, "problem_id": row.id},
                "completion": reference_completion_text(row),
            },
            {"problem": {"value": 11}, "completion": LP},
            {"problem": {"value": 11}, "completion": "eleven"},
        ],
    )

    assert answer.status_code == 200, answer.text
    records = answer.json()["records"]
    assert [(r["reward"], r["verdict"]) for r in records] == [
        (1.0, "correct"),
        (1.0, "correct"),
        (0.0, "no_code"),
    ]
    assert records[0]["rule"] == "strict@3" and records[0]["policy"] == "binary@1"
    logged = [json.loads(line) for line in server.log.read_text().splitlines()]
    assert [r["verdict"] for r in logged[-3:]] == ["correct", "correct", "no_code"]


def test_openrlhf_remote_reward_protocol(server: Server) -> None:
    answer = httpx.post(
        f"{server.url}/get_reward",
        json={
            "query": ["PROMPT:" + LP, "PROMPT:" + LP],
            "prompts": ["PROMPT:", "PROMPT:"],
            "labels": [json.dumps({"value": 11}), "12"],
        },
        timeout=120,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "rewards": [1.0, 0.0],
        "scores": [1.0, 0.0],
        "extra_logs": {"correct": [1.0, 0.0], "graded": [1.0, 1.0]},
    }


def test_bad_requests_say_what_is_wrong(server: Server) -> None:
    cases = [
        (httpx.post(f"{server.url}/v1/score", content=b"{no", timeout=30), 400, "not JSON"),
        (_score(server, [{"problem": {"value": 1}}]), 400, "requests[0].completion"),
        (
            _score(server, [{"problem": {"benchmark": BENCH, "problem_id": "x"}, "completion": LP}]),
            400,
            "no problem",
        ),
        (
            _score(server, [{"problem": {"benchmark": "nope", "problem_id": "1"}, "completion": LP}]),
            400,
            "nope",
        ),
        (httpx.post(f"{server.url}/get_reward", json={"query": ["a"]}, timeout=30), 400, "labels"),
        (httpx.get(f"{server.url}/v1/score", timeout=30), 405, "no GET"),
        (httpx.get(f"{server.url}/nowhere", timeout=30), 404, "no GET"),
    ]
    for answer, status, message in cases:
        assert answer.status_code == status, answer.text
        assert message in answer.json()["error"]


def test_a_full_house_answers_429_and_health_and_metrics_report_it(server: Server) -> None:
    held = threading.Thread(
        target=_score,
        args=(server, [{"problem": {"value": 11}, "completion": SLEEPER.format(seconds=4)}] * 12),
    )
    held.start()
    time.sleep(1.0)
    busy = _score(server, [{"problem": {"value": 11}, "completion": LP}] * 5)
    health = httpx.get(f"{server.url}/health", timeout=30).json()
    held.join()

    assert busy.status_code == 429 and busy.headers["retry-after"] == "1"
    assert health["status"] == "ok" and health["pending"] == 12 and health["policy"] == "binary@1"
    # Started with the default isolation: bubblewrap or nothing (tests/reward/test_isolation_floor.py).
    assert health["isolation"] == "bwrap"
    metrics = httpx.get(f"{server.url}/metrics", timeout=30).text
    assert 'trex_reward_requests_total{outcome="busy"}' in metrics
    assert re.search(r'trex_reward_rollouts_total\{verdict="correct"\} \d+', metrics)
    assert "trex_reward_request_seconds_bucket" in metrics


def test_the_deadline_is_kept(server: Server) -> None:
    started = time.monotonic()
    answer = _score(
        server,
        [
            {"problem": {"value": 11}, "completion": SLEEPER.format(seconds=6)},
            {"problem": {"value": 11}, "completion": LP},
        ],
        deadline_s=2.5,
    )
    elapsed = time.monotonic() - started

    assert answer.status_code == 200 and elapsed < 5.0
    slow, quick = answer.json()["records"]
    assert slow["verdict"] == "not_run" and slow["reward"] is None and "deadline" in slow["reason"]
    assert quick["verdict"] == "correct"


def test_hostile_rollouts_earn_nothing_and_the_server_stays_up(server: Server, data_dir: Path) -> None:
    row = load_benchmark(BENCH, data_dir=data_dir).problems[0]
    label = row.reference.value  # type: ignore[union-attr]
    key = {"benchmark": BENCH, "problem_id": row.id}
    items = [
        {"problem": key, "completion": _program(code.format(port=server.port, label=label))}
        for code in HOSTILE.values()
    ]
    answer = _score(server, items)

    assert answer.status_code == 200, answer.text
    records = answer.json()["records"]
    assert [r["reward"] for r in records] == [0.0] * len(HOSTILE), {
        name: (r["verdict"], r["reason"][:120]) for name, r in zip(HOSTILE, records, strict=True)
    }
    assert not any(r["verdict"] in ("correct", "unverified") for r in records)
    assert httpx.get(f"{server.url}/health", timeout=30).json()["status"] == "ok"
    after = _score(server, [{"problem": {"value": 11}, "completion": LP}])
    assert after.json()["records"][0]["reward"] == 1.0


def test_sigterm_drains_the_requests_in_the_house(tmp_path: Path, data_dir: Path) -> None:
    server = _start(tmp_path, "--data-dir", str(data_dir))
    answers: list[httpx.Response] = []
    request = threading.Thread(
        target=lambda: answers.append(
            _score(server, [{"problem": {"value": 11}, "completion": SLEEPER.format(seconds=3)}])
        )
    )
    request.start()
    time.sleep(1.5)
    server.process.send_signal(signal.SIGTERM)
    request.join(timeout=60)
    code = _stop(server)

    assert code == 0
    assert len(answers) == 1 and answers[0].status_code == 200
    assert answers[0].json()["records"][0]["verdict"] == "correct"
    assert "SIGTERM: draining 1 rollouts" in (server.process.stderr.read() if server.process.stderr else "")
