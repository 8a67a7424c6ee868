"""How ``trex-eval serve`` stops, as an operator meets it: the real command in a subprocess, a
trainer's keep-alive connection held open over real HTTP on loopback. Ctrl-C with nothing pending
exits 0 at once and says so (an idle keep-alive connection used to hold it for the rest of
``--idle-timeout``), and so does SIGTERM with many idle connections open, none left to a
traceback; a request still arriving is given the grace, then cut; a second signal cuts a drain
short and exits 130, naming what it left."""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path

import httpx

from tests.reward.test_server import SLEEPER, _start, _stop
from trex_eval.reward.shutdown import CLOSE_GRACE_S

PROMPT_EXIT_S = 3.0
"""A server with nothing pending exits within this many seconds of Ctrl-C (the default
``--idle-timeout`` is 60 s: a connection left open must not count)."""


def _kept_alive(port: int) -> socket.socket:
    """A connection that asked for ``/health`` over HTTP/1.1 and keeps its socket open, idle."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
        answer += sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200") and b"connection: close" not in answer
    return sock


def test_ctrl_c_with_nothing_pending_exits_at_once_and_says_so(tmp_path: Path, data_dir: Path) -> None:
    server = _start(tmp_path, "--data-dir", str(data_dir), "--workers", "1")
    try:
        idle = _kept_alive(server.port)
        with httpx.Client(timeout=30) as pooled:  # a trainer's client: its connection stays pooled
            assert pooled.get(f"{server.url}/health").json()["pending"] == 0
            started = time.monotonic()
            server.process.send_signal(signal.SIGINT)
            code = server.process.wait(timeout=60)
            elapsed = time.monotonic() - started
        idle.settimeout(5)
        closed = idle.recv(1) == b""
    finally:
        _stop(server)
    stderr = server.process.stderr.read() if server.process.stderr else ""

    assert code == 0, stderr[-2000:]
    assert elapsed < PROMPT_EXIT_S, (elapsed, stderr[-2000:])
    assert "SIGINT: no rollouts pending; stopping" in stderr
    assert "Traceback" not in stderr and "CancelledError" not in stderr, stderr[-2000:]
    assert closed  # the server closed the idle connection, not the client


def test_a_second_signal_cuts_the_drain_short_and_exits_130(tmp_path: Path, data_dir: Path) -> None:
    server = _start(tmp_path, "--data-dir", str(data_dir), "--workers", "1")
    answers: list[object] = []

    def ask() -> None:
        body = {"requests": [{"problem": {"value": 11}, "completion": SLEEPER.format(seconds=60)}]}
        try:
            answers.append(httpx.post(f"{server.url}/v1/score", json=body, timeout=120).status_code)
        except httpx.HTTPError as error:
            answers.append(type(error).__name__)

    request = threading.Thread(target=ask)
    try:
        request.start()
        for _ in range(100):  # until the rollout is in the house
            if httpx.get(f"{server.url}/health", timeout=10).json()["pending"] == 1:
                break
            time.sleep(0.1)
        server.process.send_signal(signal.SIGINT)
        time.sleep(1.0)
        assert server.process.poll() is None  # draining: the rollout has a minute to go
        started = time.monotonic()
        server.process.send_signal(signal.SIGINT)
        code = server.process.wait(timeout=60)
        elapsed = time.monotonic() - started
        request.join(timeout=30)
    finally:
        _stop(server)
    stderr = server.process.stderr.read() if server.process.stderr else ""

    assert code == 130, stderr[-2000:]
    assert elapsed < 10.0, (elapsed, stderr[-2000:])
    assert "SIGINT: draining 1 rollouts" in stderr and "SIGINT again stops at once" in stderr
    assert "SIGINT again: stopping now, 1 rollouts left unanswered" in stderr
    assert "stopped with 1 rollouts unanswered" in stderr
    assert "before anything was stored" not in stderr and "Traceback" not in stderr, stderr[-2000:]
    # The client learns at once that no answer comes (the connection closed, never a reward made up).
    assert answers in (["RemoteProtocolError"], ["ReadError"]), answers


def _silent(port: int) -> socket.socket:
    """A connection that has sent nothing yet (idle since it was accepted)."""
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _half_sent(port: int) -> socket.socket:
    """A connection in the middle of a request: its head and part of its body sent, the rest never."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b'POST /v1/score HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{"requests": [')
    return sock


def test_sigterm_with_idle_keep_alive_connections_exits_0_at_once_without_a_traceback(
    tmp_path: Path, data_dir: Path
) -> None:
    server = _start(tmp_path, "--data-dir", str(data_dir), "--workers", "1")
    held: list[socket.socket] = []
    try:
        held += [_kept_alive(server.port) for _ in range(4)] + [_silent(server.port) for _ in range(2)]
        with httpx.Client(timeout=30) as pooled:
            assert pooled.get(f"{server.url}/health").json()["connections"] == len(held) + 1
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            code = server.process.wait(timeout=60)
            elapsed = time.monotonic() - started
    finally:
        for sock in held:
            sock.close()
        _stop(server)
    stderr = server.process.stderr.read() if server.process.stderr else ""

    assert code == 0, stderr[-2000:]  # a clean drain: 143 only when a second SIGTERM cuts it short
    assert elapsed < PROMPT_EXIT_S, (elapsed, stderr[-2000:])
    assert "SIGTERM: no rollouts pending; stopping" in stderr
    assert "Traceback" not in stderr and "CancelledError" not in stderr, stderr[-2000:]


def test_sigterm_cuts_a_request_still_arriving_after_the_grace(tmp_path: Path, data_dir: Path) -> None:
    server = _start(tmp_path, "--data-dir", str(data_dir), "--workers", "1")
    held: list[socket.socket] = []
    try:
        held += [_kept_alive(server.port), _half_sent(server.port), _silent(server.port)]
        time.sleep(0.5)  # the half-sent head is read: that connection has a request in progress
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(timeout=60)
        elapsed = time.monotonic() - started
    finally:
        for sock in held:
            sock.close()
        _stop(server)
    stderr = server.process.stderr.read() if server.process.stderr else ""

    assert code == 0, stderr[-2000:]
    assert elapsed < CLOSE_GRACE_S + PROMPT_EXIT_S, (elapsed, stderr[-2000:])
    assert "Traceback" not in stderr and "CancelledError" not in stderr, stderr[-2000:]
