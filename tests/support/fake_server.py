"""A real OpenAI-compatible HTTP server for tests, scriptable per request.

It listens on 127.0.0.1 (an ephemeral port) in a background thread and speaks HTTP/1.1 with
keep-alive, like vLLM or any hosted API. Every ``POST /v1/chat/completions`` is keyed by the
content of its last message (tests put the problem id there) and numbered per key, so a script
``(key, attempt) -> Action`` can inject faults deterministically even under heavy concurrency:

* :class:`Reply` a normal completion (optionally slow),
* :class:`Status` any HTTP error status with headers (``Retry-After``) and body,
* :class:`Delay` no answer for a while (past the client's timeout), then a normal reply,
* :class:`Drop` a response cut off mid-body: headers and part of the body, then the socket closes,
* :class:`Malformed` a 200 whose body is not a chat completion.

The server records each request (headers, JSON body, arrival time) and the highest number of
chat requests it was handling at once. :meth:`FakeOpenAIServer.kill` makes it die like a
crashed replica (no more answers, every open connection cut).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """A 200 chat completion. ``text=None`` answers ``"answer <key>"``; ``delay_s`` is served
    before answering (a slow but healthy server)."""

    text: str | None = None
    reasoning: str | None = None
    reasoning_key: str = "reasoning_content"
    finish_reason: str = "stop"
    usage: tuple[int, int] = (11, 7)
    model: str = "served-model"
    delay_s: float = 0.0


@dataclass(frozen=True)
class Status:
    code: int
    body: str = '{"error": {"message": "injected failure", "type": "server_error"}}'
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Delay:
    seconds: float


@dataclass(frozen=True)
class Drop:
    pass


@dataclass(frozen=True)
class Malformed:
    body: str = '{"choices": [{"message": {"content": "trunc'


Action = Reply | Status | Delay | Drop | Malformed
Script = Callable[[str, int], Action]


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    key: str | None
    attempt: int
    headers: dict[str, str]
    body: dict[str, Any] | None
    at: float = field(default_factory=time.monotonic)


def always_reply(key: str, attempt: int) -> Action:
    return Reply()


class FakeOpenAIServer:
    """Context manager running the server; ``base_url`` is ``http://127.0.0.1:<port>/v1``.

    ``models`` is what ``GET /v1/models`` lists; ``models_status`` replaces that answer with an
    error status (404: an endpoint without a model list, 401: bad key).
    """

    def __init__(
        self,
        script: Script = always_reply,
        *,
        models: tuple[str, ...] = ("served-model",),
        models_status: int = 200,
    ) -> None:
        self.script = script
        self.models = models
        self.models_status = models_status
        self.seen: list[Seen] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._attempts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._dead = threading.Event()
        self.answered: list[str] = []
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def attempts(self, key: str) -> int:
        with self._lock:
            return self._attempts[key]

    def chat_requests(self, key: str | None = None) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == "POST" and key in (None, s.key)]

    def kill(self) -> None:
        """Die like a crashed replica: stop listening; requests in flight get no answer (their
        connection is cut) and so does every later request on a kept-alive connection."""
        self._dead.set()
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- called from handler threads

    def _register(self, handler: BaseHTTPRequestHandler, body: dict[str, Any] | None) -> Seen:
        key = None
        if body is not None:
            messages = body.get("messages") or [{}]
            key = str(messages[-1].get("content"))
        with self._lock:
            attempt = 0
            if key is not None:
                self._attempts[key] += 1
                attempt = self._attempts[key]
            seen = Seen(
                method=handler.command,
                path=handler.path,
                key=key,
                attempt=attempt,
                headers={k.lower(): v for k, v in handler.headers.items()},
                body=body,
            )
            self.seen.append(seen)
        return seen

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's algorithm
        # and the client's delayed ACK add ~40 ms to every response.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _die(self) -> None:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

        def do_GET(self) -> None:
            if server._dead.is_set():
                self._die()
                return
            server._register(self, None)
            if self.path.partition("?")[0].rstrip("/").endswith("/models"):
                if server.models_status != 200:
                    self._send(server.models_status, {"error": {"message": "models unavailable"}})
                else:
                    self._send(
                        200, {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]}
                    )
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"null")
            if server._dead.is_set():
                self._die()
                return
            seen = server._register(self, body)
            server._enter()
            try:
                self._act(server.script(seen.key or "", seen.attempt), seen)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up on this request (its timeout); nothing to answer
            finally:
                server._leave()

        def _act(self, action: Action, seen: Seen) -> None:
            if isinstance(action, Reply):
                if action.delay_s:
                    server._stopping.wait(action.delay_s)
                if server._dead.is_set():
                    self._die()  # killed while "generating": the answer is lost
                    return
                with server._lock:  # before sending: a superset of what clients received
                    server.answered.append(seen.key or "")
                self._send(200, _completion(action, seen))
            elif isinstance(action, Status):
                self._send(action.code, action.body.encode(), headers=action.headers)
            elif isinstance(action, Delay):
                server._stopping.wait(action.seconds)
                self._send(200, _completion(Reply(), seen))
            elif isinstance(action, Drop):
                self.close_connection = True
                self.wfile.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
                    b'{"choices": [{"mess'
                )
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                self._send(200, action.body.encode())

        def _send(
            self, code: int, payload: dict[str, Any] | bytes, *, headers: tuple[tuple[str, str], ...] = ()
        ) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    return Handler


def _completion(reply: Reply, seen: Seen) -> dict[str, Any]:
    prompt_tokens, completion_tokens = reply.usage
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if reply.text is not None else f"answer {seen.key}",
    }
    if reply.reasoning is not None:
        message[reply.reasoning_key] = reply.reasoning
    return {
        "id": f"chatcmpl-{seen.key}-{seen.attempt}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
