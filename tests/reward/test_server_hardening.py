"""``trex-eval serve``'s HTTP front under hostile input, spoken to over real sockets on loopback:
numbers that are not finite and deep nesting are 400s naming the field or the limit, idle and
trickling connections are closed, the connection cap and the server-wide body budget hold, and
``/health`` names no path. One real server with small limits serves the module."""

from __future__ import annotations

import json
import re
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.reward.test_server import Server, _start, _stop

CAP = 8
IDLE_S = 2.0
REQUEST_S = 2.0
BUDGET = 1 << 20
NOT_GRADED = {"problem": {"value": 11}, "completion": "eleven"}
"""No code: answered no_code at once, without the sandbox."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[Server]:
    started = _start(
        tmp_path_factory.mktemp("hardened"),
        *("--data-dir", str(data_dir), "--workers", "1"),
        *("--max-connections", str(CAP), "--idle-timeout", str(IDLE_S)),
        *("--request-timeout", str(REQUEST_S), "--body-budget-mib", "1"),
    )
    yield started
    assert _stop(started) == 0


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    """One client for the module (a client per call costs a TLS context each)."""
    with httpx.Client(timeout=30) as client:
        yield client


def _connect(server: Server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.settimeout(10)
    return sock


def _answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP answer read off ``sock``: status, headers, body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed without an answer after {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    while len(body) < int(headers["content-length"]):
        body += sock.recv(65536)
    return int(lines[0].split()[1]), headers, body


def _closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closes ``sock`` (reading and dropping what it sends), or None."""
    started = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def _wait_for_quiet(http: httpx.Client, server: Server) -> None:
    """Until the server holds no connection but the one asking (those of earlier tests closed)."""
    for _ in range(100):
        metrics = http.get(f"{server.url}/metrics", timeout=10).text
        if "trex_reward_connections_open 1\n" in metrics and "trex_reward_body_bytes_held 0\n" in metrics:
            return
        time.sleep(0.1)
    raise AssertionError(f"connections of earlier tests still open:\n{metrics[-600:]}")


def _post(http: httpx.Client, server: Server, body: bytes) -> httpx.Response:
    return http.post(
        f"{server.url}/v1/score", content=body, headers={"content-type": "application/json"}, timeout=30
    )


def test_numbers_that_are_not_finite_are_400s_naming_the_field(http: httpx.Client, server: Server) -> None:
    valid = json.dumps([NOT_GRADED])
    cases = [
        (f'{{"requests": {valid}, "deadline_s": NaN}}', "deadline_s: NaN"),
        (f'{{"requests": {valid}, "deadline_s": Infinity}}', "deadline_s: Infinity"),
        (f'{{"requests": {valid}, "deadline_s": -Infinity}}', "deadline_s: -Infinity"),
        ('{"requests": [{"problem": {"value": NaN}, "completion": "x"}]}', "requests[0].problem.value: NaN"),
        (
            '{"requests": [{"problem": {"value": 1e999}, "completion": "x"}]}',
            "requests[0].problem.value: 1e999",
        ),
        ('{"query": ["x"], "labels": ["1"], "deadline_s": -1e400}', "deadline_s: -1e400"),
        (f'{{"requests": {valid}, "deadline_s": true}}', '"deadline_s" must be a positive, finite number'),
        (f'{{"requests": {valid}, "deadline_s": 1{"0" * 400}}}', '"deadline_s" must be a positive, finite'),
    ]
    for body, message in cases:
        path = "/get_reward" if '"query"' in body else "/v1/score"
        answer = http.post(f"{server.url}{path}", content=body.encode(), timeout=30)
        assert answer.status_code == 400, (body[:80], answer.text[:300])
        assert message in answer.json()["error"], answer.text


def test_nesting_is_bounded_before_the_parser_recurses(http: httpx.Client, server: Server) -> None:
    deep = b'{"requests": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    answer = _post(http, server, deep)
    assert answer.status_code == 400, answer.text[:300]
    assert "more than 64 deep" in answer.json()["error"]

    def padded(depth: int) -> bytes:  # the body object is level 1, "pad" holds the rest
        return b'{"requests": [], "pad": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"

    assert _post(http, server, padded(64)).status_code == 200
    assert "more than 64 deep" in _post(http, server, padded(65)).json()["error"]
    # Brackets inside strings (escaped quotes and backslashes included) are text, not nesting.
    text = '\\"[' * 30_000 + "\\\\" + "{" * 30_000
    inside = {"requests": [{**NOT_GRADED, "completion": text}]}
    answer = _post(http, server, json.dumps(inside).encode())
    assert answer.status_code == 200 and answer.json()["records"][0]["verdict"] == "no_code"


def test_health_is_small_and_names_no_path(http: httpx.Client, server: Server, data_dir: Path) -> None:
    answer = http.get(f"{server.url}/health", timeout=30)
    health = answer.json()

    assert len(answer.content) < 1024, answer.text
    assert "/" not in answer.text and str(data_dir) not in answer.text and sys.prefix not in answer.text
    assert health["status"] == "ok" and health["pending"] == 0 and health["version"]
    assert health["isolation"] == "bwrap" and health["lanes"] == 1 and health["policy"] == "binary@1"
    assert health["benchmarks"] == {"b4o-feasible": "strict@3"}


def test_idle_connections_are_closed(server: Server) -> None:
    silent = _connect(server)
    kept_alive = _connect(server)
    kept_alive.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
    status, headers, _ = _answer(kept_alive)
    assert status == 200 and headers.get("connection") != "close"

    waited = [_closed_within(sock, IDLE_S + 4) for sock in (silent, kept_alive)]
    assert all(seconds is not None for seconds in waited), waited


def test_a_trickled_request_is_answered_408_and_closed(server: Server) -> None:
    sock = _connect(server)
    started = time.monotonic()
    head = b"POST /v1/score HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n{}"
    try:
        for byte in head:
            sock.sendall(bytes([byte]))
            time.sleep(0.05)
    except (BrokenPipeError, ConnectionResetError):
        pass
    status, _, body = _answer(sock)

    assert status == 408 and "--request-timeout" in json.loads(body)["error"]
    assert REQUEST_S <= time.monotonic() - started < REQUEST_S + 3
    assert _closed_within(sock, 2) is not None


def test_what_is_not_http_or_too_large_is_answered_and_closed(server: Server) -> None:
    for sent, status, message in [
        (b"GARBAGE\r\n\r\n", 400, "not an HTTP/1.1 request"),
        (b"GET / HTTP/1.1\r\nx-a: " + b"a" * 70_000 + b"\r\n\r\n", 431, "over 16384 bytes"),
        (
            b"POST /v1/score HTTP/1.1\r\ncontent-length: " + b"9" * 5000 + b"\r\n\r\n",
            400,
            "bad Content-Length",
        ),
    ]:
        sock = _connect(server)
        sock.sendall(sent)
        answered, _, body = _answer(sock)
        assert answered == status and message in json.loads(body)["error"], body
        assert _closed_within(sock, 2) is not None
        sock.close()


def test_idle_sockets_over_the_cap_do_not_keep_an_honest_client_out(
    http: httpx.Client, server: Server
) -> None:
    _wait_for_quiet(http, server)
    idle = [_connect(server) for _ in range(CAP + 4)]
    time.sleep(0.3)  # all accepted: the oldest were closed for the newest
    started = time.monotonic()
    answer = _post(http, server, json.dumps({"requests": [NOT_GRADED]}).encode())
    elapsed = time.monotonic() - started

    assert answer.status_code == 200 and elapsed < IDLE_S / 2, (answer.status_code, elapsed)
    readable, _, _ = select.select(idle, [], [], 0.5)  # a closed socket reads (its end)
    closed = [sock for sock in readable if _closed_within(sock, 0.5) is not None]
    assert len(closed) >= len(idle) + 1 - CAP, len(closed)  # well before the idle timeout
    metrics = http.get(f"{server.url}/metrics", timeout=10).text
    found = re.search(r"trex_reward_idle_connections_closed_total (\d+)", metrics)
    assert found is not None and int(found.group(1)) >= len(idle) + 1 - CAP
    for sock in idle:
        sock.close()


def test_busy_connections_at_the_cap_refuse_a_newcomer_with_503(http: httpx.Client, server: Server) -> None:
    _wait_for_quiet(http, server)
    busy = [_connect(server) for _ in range(CAP)]
    for sock in busy:
        sock.sendall(b"GET /health HTTP/1.1\r\n")  # a request begun, never finished
    time.sleep(0.5)
    newcomer = _connect(server)
    newcomer.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
    status, headers, body = _answer(newcomer)

    assert status == 503 and headers["retry-after"] == "1", body
    assert f"{CAP} connections open" in json.loads(body)["error"]
    assert "--max-connections" in json.loads(body)["error"]
    assert [_answer(sock)[0] for sock in busy] == [408] * CAP  # cut off at the request timeout
    assert http.get(f"{server.url}/health", timeout=10).status_code == 200
    for sock in [*busy, newcomer]:
        sock.close()


_PREFIX = b'{"requests": [], "pad": "'
_SENT_FIRST = 600_000
"""Bytes of a held body sent before the rest: bytes received are what holds the budget."""


def _begin(server: Server, size: int) -> socket.socket:
    """A POST of a ``size``-byte JSON body whose head and first :data:`_SENT_FIRST` bytes are
    sent; the rest is not."""
    sock = _connect(server)
    sock.sendall(f"POST /v1/score HTTP/1.1\r\nhost: x\r\ncontent-length: {size}\r\n\r\n".encode())
    sock.sendall(_PREFIX + b"a" * (_SENT_FIRST - len(_PREFIX)))
    return sock


def _finish(sock: socket.socket, size: int) -> int:
    sock.sendall(b"a" * (size - _SENT_FIRST - 2) + b'"}')
    return _answer(sock)[0]


def _padded(size: int) -> bytes:
    return b'{"requests": [], "pad": "' + b"a" * (size - 27) + b'"}'


def test_the_body_budget_refuses_what_would_pass_it_before_reading(
    http: httpx.Client, server: Server
) -> None:
    _wait_for_quiet(http, server)
    size = 700_000
    held = _begin(server, size)
    time.sleep(0.3)

    refused = _post(http, server, _padded(size))
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1", refused.text
    error = refused.json()["error"]
    assert f"body budget of {BUDGET} bytes" in error and "--body-budget-mib" in error and "700000" in error

    chunked = _connect(server)  # counted as it streams: refused once it would pass the budget
    chunked.sendall(b"POST /v1/score HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n")
    try:
        for _ in range(8):
            chunked.sendall(b"%x\r\n%s\r\n" % (100_000, b" " * 100_000))
            time.sleep(0.05)
    except (BrokenPipeError, ConnectionResetError):
        pass
    status, _, body = _answer(chunked)
    assert status == 503 and "body budget" in json.loads(body)["error"]

    assert _finish(held, size) == 200  # the body in the house is answered, its bytes given back
    assert _post(http, server, _padded(size)).status_code == 200

    # Declaring a body holds nothing of the budget: two clients that declare all of it and send
    # nothing do not keep an honest body out.
    squatters = [_connect(server) for _ in range(2)]
    for sock in squatters:
        sock.sendall(b"POST /v1/score HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n" % (BUDGET - 10))
    time.sleep(0.3)
    assert _post(http, server, _padded(size)).status_code == 200
    for sock in squatters:
        sock.close()

    whole = _connect(server)  # over the whole budget: 413, never worth a retry
    whole.sendall(b"POST /v1/score HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n" % (2 * BUDGET))
    status, _, body = _answer(whole)
    assert status == 413 and "whole body budget" in json.loads(body)["error"]
    for sock in (held, chunked, whole):
        sock.close()


def test_the_connection_cap_must_fit_the_descriptor_limit() -> None:
    code = """
import resource
from trex_eval.errors import ConfigError
from trex_eval.reward.intake import ensure_descriptors
resource.setrlimit(resource.RLIMIT_NOFILE, (300, 2000))
ensure_descriptors(512)
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))
try:
    ensure_descriptors(512)
except ConfigError as error:
    print(error)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    raised, message = done.stdout.split("\n", 1)
    assert raised == "768"  # 512 connections + 256 kept for the server's own use
    assert "--max-connections 512 needs 768 file descriptors" in message and "ulimit -Hn" in message
    assert "lower --max-connections to 44" in message
