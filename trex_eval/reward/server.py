"""``trex-eval serve``: the reward service over HTTP/1.1 (asyncio streams, ``h11`` for the protocol).

==========================  ===================================================================
``POST /v1/score``          ``{"requests": [{"problem": {...}, "completion": "..."}], "deadline_s": 60}``
                            -> ``{"records": [RewardRecord, ...], "elapsed_s": ...}``
``POST /get_reward``        OpenRLHF's remote reward model: ``{"query": [...], "prompts": [...],
                            "labels": [...]}`` -> ``{"rewards": [...], "scores": [...],
                            "extra_logs": {"correct": [...]}}``; each label names the problem
                            (:func:`~.problems.problem_from`), the completion is the query with
                            its prompt taken off the front
``GET /health``             ``{"status": "ok" | "draining", "pending": n, ...what scores}``
``GET /metrics``            Prometheus text
==========================  ===================================================================

Answers: 200; 400 for a body that names no valid rollout (the message says which field); 404,
405; 413 for a body over the limit; 429 (with ``Retry-After``) when the batch does not fit the
pending limit; 503 while draining. SIGTERM or SIGINT drains: nothing new is admitted, requests in
the house are answered, then the server stops (the sandbox pool with it).
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
from pydantic import ValidationError

from trex_eval.errors import ConfigError, TrexError
from trex_eval.reward.problems import problem_from
from trex_eval.reward.records import RewardRecord, RewardRequest
from trex_eval.reward.service import Busy, Draining, RewardService

DRAIN_TIMEOUT_S = 900.0
"""How long a draining server waits for the rollouts in the house before it stops anyway."""


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


class HttpError(Exception):
    def __init__(self, status: int, message: str, *, headers: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


def _json(status: int, payload: object, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    return Reply(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), headers=headers)


class RewardServer:
    """Serves a :class:`RewardService` on ``host:port`` (port 0: any free port, see :attr:`port`)."""

    def __init__(self, service: RewardService, *, host: str = "127.0.0.1", port: int = 8000) -> None:
        self.service, self.host, self.port = service, host, port
        self._server: asyncio.Server | None = None
        self._stopped = asyncio.Event()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._connection, self.host, self.port, limit=1 << 20)
        self.port = self._server.sockets[0].getsockname()[1]

    async def serve_until_stopped(self, *, on_signal: Callable[[str], None] | None = None) -> None:
        """Serve until SIGTERM/SIGINT (or :meth:`stop`), then drain and close."""
        loop = asyncio.get_running_loop()
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, self._on_signal, number, on_signal)
        await self._stopped.wait()
        await self.service.wait_idle(DRAIN_TIMEOUT_S)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def stop(self) -> None:
        self.service.drain()
        self._stopped.set()

    def _on_signal(self, number: int, report: Callable[[str], None] | None) -> None:
        if report is not None:
            report(f"{signal.Signals(number).name}: draining {self.service.pending} rollouts; admitting none")
        self.stop()

    # ------------------------------------------------------------------ HTTP

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = h11.Connection(h11.SERVER)
        try:
            while True:
                request, body = await self._read_request(connection, reader)
                if request is None:
                    return
                reply = await self._answer(request, body)
                keep = connection.our_state is h11.SEND_RESPONSE and not self.service.draining
                await self._send(connection, writer, reply, close=not keep)
                if connection.our_state is not h11.DONE or connection.their_state is not h11.DONE:
                    return
                connection.start_next_cycle()
        except (h11.RemoteProtocolError, ConnectionError):
            return
        finally:
            writer.close()

    async def _read_request(
        self, connection: h11.Connection, reader: asyncio.StreamReader
    ) -> tuple[h11.Request | None, bytes | HttpError]:
        request: h11.Request | None = None
        chunks: list[bytes] = []
        size = 0
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(1 << 16)
                connection.receive_data(data)
                if not data and request is None:
                    return None, b""
                continue
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size <= self.service.limits.max_body_bytes:
                    chunks.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                if size > self.service.limits.max_body_bytes:
                    return request, HttpError(
                        413, f"the body is over {self.service.limits.max_body_bytes} bytes"
                    )
                return request, b"".join(chunks)
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None, b""

    async def _send(
        self, connection: h11.Connection, writer: asyncio.StreamWriter, reply: Reply, *, close: bool
    ) -> None:
        headers = [
            ("content-type", reply.content_type),
            ("content-length", str(len(reply.body))),
            *reply.headers,
        ]
        if close:
            headers.append(("connection", "close"))
        writer.write(connection.send(h11.Response(status_code=reply.status, headers=headers)) or b"")
        writer.write(connection.send(h11.Data(data=reply.body)) or b"")
        writer.write(connection.send(h11.EndOfMessage()) or b"")
        await writer.drain()

    async def _answer(self, request: h11.Request, body: bytes | HttpError) -> Reply:
        path = request.target.decode("ascii", "replace").split("?", 1)[0]
        method = request.method.decode("ascii", "replace")
        try:
            if isinstance(body, HttpError):
                raise body
            routes = {
                ("GET", "/health"): self._health,
                ("GET", "/metrics"): self._metrics,
                ("POST", "/v1/score"): self._score,
                ("POST", "/get_reward"): self._openrlhf,
            }
            handler = routes.get((method, path))
            if handler is None:
                known = {route_path for _, route_path in routes}
                raise HttpError(405 if path in known else 404, f"no {method} {path}")
            reply = await handler(body)
            self.service.count("ok")
            return reply
        except HttpError as error:
            self.service.count({429: "busy", 503: "draining"}.get(error.status, f"http_{error.status}"))
            return _json(error.status, {"error": error.message}, error.headers)
        except Exception as error:  # the harness's failure: answered, logged, and the server stays up
            self.service.count("http_500")
            self.service.report(f"{method} {path}: {type(error).__name__}: {error}")
            return _json(500, {"error": f"harness failure: {type(error).__name__}: {error}"[:2000]})

    async def _health(self, _: bytes) -> Reply:
        status = "draining" if self.service.draining else "ok"
        return _json(
            200, {"status": status, "pending": self.service.pending, **self.service.scorer.describe()}
        )

    async def _metrics(self, _: bytes) -> Reply:
        return Reply(200, self.service.metrics().encode(), content_type="text/plain; version=0.0.4")

    async def _score(self, body: bytes) -> Reply:
        payload = _payload(body)
        items = payload.get("requests")
        if not isinstance(items, list):
            raise HttpError(400, 'the body needs "requests": a list of {"problem", "completion"}')
        requests = []
        for index, item in enumerate(items):
            try:
                requests.append(RewardRequest.model_validate(item))
            except ValidationError as error:
                first = error.errors()[0]
                field = ".".join(str(part) for part in first["loc"])
                raise HttpError(400, f"requests[{index}].{field}: {first['msg']}") from None
        records, elapsed = await self._run(requests, payload.get("deadline_s"))
        return _json(200, {"records": [r.model_dump(mode="json") for r in records], "elapsed_s": elapsed})

    async def _openrlhf(self, body: bytes) -> Reply:
        payload = _payload(body)
        queries, prompts, labels = payload.get("query"), payload.get("prompts"), payload.get("labels")
        if not isinstance(queries, list) or not isinstance(labels, list) or len(labels) != len(queries):
            raise HttpError(
                400, 'the body needs "query" and "labels", lists of one length (each label names the problem)'
            )
        if prompts is not None and (not isinstance(prompts, list) or len(prompts) != len(queries)):
            raise HttpError(400, '"prompts", when given, must be a list as long as "query"')
        requests = []
        for index, (query, label) in enumerate(zip(queries, labels, strict=True)):
            prompt = prompts[index] if prompts is not None else ""
            text = str(query)
            completion = text[len(prompt) :] if isinstance(prompt, str) and text.startswith(prompt) else text
            try:
                problem = problem_from(label, where=f"labels[{index}]")
            except ConfigError as error:
                raise HttpError(400, str(error)) from None
            requests.append(
                RewardRequest(
                    problem=problem, completion=completion, prompt=prompt if isinstance(prompt, str) else ""
                )
            )
        records, _ = await self._run(requests, payload.get("deadline_s"))
        rewards = [r.reward for r in records]
        correct = [1.0 if r.verdict.value == "correct" else 0.0 for r in records]
        return _json(200, {"rewards": rewards, "scores": rewards, "extra_logs": {"correct": correct}})

    async def _run(self, requests: list[RewardRequest], deadline: Any) -> tuple[list[RewardRecord], float]:
        if deadline is not None and (not isinstance(deadline, int | float) or deadline <= 0):
            raise HttpError(400, '"deadline_s" must be a positive number of seconds')
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            records = await self.service.score(
                requests, deadline_s=None if deadline is None else float(deadline)
            )
        except Busy:
            raise HttpError(
                429,
                f"{self.service.pending} rollouts pending; {len(requests)} more would pass the limit of "
                f"{self.service.limits.max_pending} (or the batch limit of {self.service.limits.max_batch})",
                headers=(("retry-after", "1"),),
            ) from None
        except Draining:
            raise HttpError(503, "the server is shutting down", headers=(("retry-after", "5"),)) from None
        except TrexError as error:  # an unknown benchmark or problem: the caller's to fix
            raise HttpError(400, str(error)) from None
        return records, loop.time() - started


def _payload(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise HttpError(400, f"the body is not JSON: {error}") from None
    if not isinstance(payload, dict):
        raise HttpError(400, "the body must be a JSON object")
    return payload
