"""``trex-eval serve``: the reward service over HTTP/1.1 (asyncio streams, ``h11`` for the protocol).

==========================  ===================================================================
``POST /v1/score``          ``{"requests": [{"problem": {...}, "completion": "..."}], "deadline_s": 60}``
                            -> ``{"records": [RewardRecord, ...], "elapsed_s": ...}``
``POST /get_reward``        OpenRLHF's remote reward model: ``{"query": [...], "prompts": [...],
                            "labels": [...]}`` -> ``{"rewards": [...], "scores": [...],
                            "extra_logs": {"correct": [...], "graded": [...]}}`` (a rollout not
                            graded: reward 0.0, graded 0.0); each label names the problem
                            (:func:`~.problems.problem_from`), the completion is the query with
                            its prompt taken off the front
``GET /health``             ``{"status": "ok" | "draining", "version", "pending", ...}``: what an
                            operator checks (:func:`health_view`), no path, command line or host
``GET /metrics``            Prometheus text
==========================  ===================================================================

Answers: 200; 400 for a body that names no valid rollout, is not JSON, nests deeper than
:data:`~.intake.MAX_JSON_DEPTH` or holds a number that is not finite (the message says which field);
404, 405; 408 for a request that did not arrive within ``request_timeout_s``; 413 for a body over
``max_body_bytes`` or the whole body budget; 431 for a head over :data:`MAX_HEAD_BYTES`; 429 (with
``Retry-After``) when the batch does not fit the pending limit; 503 (with ``Retry-After``) while
draining, for a body that would pass the server-wide body budget, and for a connection over
``max_connections`` while every open one has a request in progress (:class:`~.intake.Connections`).
A connection waiting longer than ``idle_timeout_s`` for its next request is closed. SIGTERM or
SIGINT drains: nothing new is admitted, requests in the house are answered, then the server stops
(the sandbox pool with it).
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

from trex_eval._version import __version__
from trex_eval.errors import ConfigError, TrexError
from trex_eval.reward.intake import (
    BadBody,
    BodyBudget,
    Connections,
    Slot,
    declared_length,
    ensure_descriptors,
    front_metrics,
    json_object,
    raw_answer,
    receive,
)
from trex_eval.reward.problems import problem_from
from trex_eval.reward.records import RewardRecord, RewardRequest
from trex_eval.reward.service import Busy, Draining, RewardService, health_view

CLIENT_CHECK_S = 0.5  # seconds between a graded request's looks at whether its client is still there
DRAIN_TIMEOUT_S = 900.0
"""How long a draining server waits for the rollouts in the house before it stops anyway."""

RETRY_AFTER_S = 1
"""The ``Retry-After`` of a refusal for load (a full house, the body budget, the connection cap)."""

LINGER_S = 2.0
"""After a refusal sent before the request was read whole, how long what the client still sends
is read and dropped, so that it reads the answer rather than a reset connection."""

MAX_HEAD_BYTES = 16 << 10
"""A request's line and headers, at most (else 431)."""

MAX_LINGERING = 64
"""Refused connections over the cap lingering at once, at most; more are closed at once (a flood
of them must not hold the descriptors the cap keeps free)."""


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


class HttpError(Exception):
    """A refusal: ``status``, the message the client reads, extra headers, and the outcome it is
    counted under in the metrics (default: by status)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        headers: tuple[tuple[str, str], ...] = (),
        outcome: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers
        self.outcome = outcome or {429: "busy", 503: "draining"}.get(status, f"http_{status}")


def _json(status: int, payload: object, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    return Reply(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), headers=headers)


@dataclass(frozen=True)
class Incoming:
    """A request read whole, and the bytes of the body budget its body holds until it is answered."""

    request: h11.Request
    body: bytearray
    held: int


class RewardServer:
    """Serves a :class:`RewardService` on ``host:port`` (port 0: any free port, see :attr:`port`),
    under the HTTP limits of its :class:`~.service.ServiceLimits`."""

    def __init__(self, service: RewardService, *, host: str = "127.0.0.1", port: int = 8000) -> None:
        self.service, self.host, self.port = service, host, port
        self._server: asyncio.Server | None = None
        self._stopped = asyncio.Event()
        self._connections = Connections(service.limits.max_connections)
        self._bodies = BodyBudget(service.limits.body_budget_bytes)
        self._lingering = 0

    async def start(self) -> None:
        """Listen. Raises ConfigError: ``max_connections`` does not fit the descriptor limit."""
        ensure_descriptors(self.service.limits.max_connections)
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
        slot = self._connections.admit(writer.transport)
        if slot is None:
            await self._refuse_connection(reader, writer)
            return
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        try:
            while True:
                try:
                    incoming = await self._read_request(connection, reader, writer, slot)
                except HttpError as error:  # refused before it was read whole: answered, then closed
                    # Lingering lets a client still sending its body read why; a trickler is
                    # not waited for. Either way the slot is free for a newcomer to take.
                    slot.idle()
                    await self._refuse(reader, writer, error, linger=error.status != 408)
                    return
                if incoming is None:
                    return
                try:
                    reply = await self._answer_while_connected(reader, incoming)
                    if reply is None:  # the client left: its rollouts were cancelled
                        return
                    keep = connection.our_state is h11.SEND_RESPONSE and not self.service.draining
                    sent = await self._send(connection, writer, reply, close=not keep)
                finally:
                    self._bodies.give_back(incoming.held)
                if not sent or connection.our_state is not h11.DONE or connection.their_state is not h11.DONE:
                    return
                connection.start_next_cycle()
                slot.idle()
        except h11.RemoteProtocolError as error:  # not HTTP/1.1 (or cut short): said once, then closed
            message = f"not an HTTP/1.1 request: {error}"
            if error.error_status_hint == 431:
                message = f"the request's line and headers are over {MAX_HEAD_BYTES} bytes: send shorter ones"
            slot.idle()
            await self._refuse(reader, writer, HttpError(error.error_status_hint, message), linger=True)
        except ConnectionError:
            return
        finally:
            self._connections.leave(slot)
            writer.close()

    async def _read_request(
        self,
        connection: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        slot: Slot,
    ) -> Incoming | None:
        """The next request, read whole within the limits; None when the connection ends first
        (closed by the client, idle past ``idle_timeout_s``, or given up for a newcomer).

        Raises:
            HttpError: 408, 413 or 503 (nothing of the body budget is held then).
        """
        limits = self.service.limits
        loop = asyncio.get_running_loop()
        until = loop.time() + limits.idle_timeout_s
        request: h11.Request | None = None
        declared: int | None = None
        body = bytearray()
        held = 0
        try:
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    data = await receive(reader, until - loop.time())
                    if data is None and slot.idle_since is not None:
                        return None  # an idle connection is closed without a word
                    if data is None:
                        raise HttpError(
                            408,
                            f"the request did not arrive whole within {limits.request_timeout_s:g} s of its "
                            "first byte (the server's request timeout, --request-timeout): send it at once",
                            outcome="request_timeout",
                        )
                    if data and slot.idle_since is not None:
                        slot.busy()
                        until = loop.time() + limits.request_timeout_s
                    connection.receive_data(data)
                elif isinstance(event, h11.Request):
                    request, declared = event, declared_length(event)
                    if slot.idle_since is not None:  # read ahead of its first byte (pipelined)
                        slot.busy()
                        until = loop.time() + limits.request_timeout_s
                    if declared is not None:  # refused now if it could not fit; charged as it arrives
                        self._take_body(declared, declared, charge=False)
                    if connection.they_are_waiting_for_100_continue:
                        writer.write(
                            connection.send(h11.InformationalResponse(status_code=100, headers=[])) or b""
                        )
                elif isinstance(event, h11.Data):
                    # Bytes held are bytes received: a client that declares a large body and sends
                    # nothing holds none of the budget.
                    held += self._take_body(len(event.data), len(body) + len(event.data))
                    body += event.data
                elif isinstance(event, h11.EndOfMessage) and request is not None:
                    return Incoming(request, body, held)
                else:  # ConnectionClosed, PAUSED
                    return None
        except BaseException:
            self._bodies.give_back(held)
            raise

    def _take_body(self, size: int, total: int, *, charge: bool = True) -> int:
        """Take ``size`` bytes of the body budget for a body of ``total`` bytes so far; ``size``
        (``charge=False``: only check that they would fit now, and take nothing).

        Raises:
            HttpError: 413 (the body is over ``max_body_bytes`` or the whole budget), 503 (it
                would pass the budget now).
        """
        limits, budget = self.service.limits, self._bodies
        if total > limits.max_body_bytes:
            raise HttpError(
                413,
                f"the body ({total} bytes or more) is over the largest the server reads "
                f"({limits.max_body_bytes} bytes): send fewer rollouts per request",
            )
        if total > budget.limit:
            raise HttpError(
                413,
                f"the body ({total} bytes or more) is over the server's whole body budget "
                f"({budget.limit} bytes, --body-budget-mib): send fewer rollouts per request",
            )
        if not (budget.take(size) if charge else budget.held + size <= budget.limit):
            raise HttpError(
                503,
                f"the server holds {budget.held} bytes of request bodies; {size} more would pass its "
                f"body budget of {budget.limit} bytes (--body-budget-mib): retry after {RETRY_AFTER_S} s",
                headers=(("retry-after", str(RETRY_AFTER_S)),),
                outcome="body_budget",
            )
        return size if charge else 0

    async def _refuse_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        limit = self._connections.limit
        error = HttpError(
            503,
            f"the server has {limit} connections open (its limit, --max-connections), each with a "
            f"request in progress: retry after {RETRY_AFTER_S} s",
            headers=(("retry-after", str(RETRY_AFTER_S)),),
            outcome="connection_cap",
        )
        linger = self._lingering < MAX_LINGERING
        self._lingering += linger
        try:
            await self._refuse(reader, writer, error, linger=linger)
        finally:
            self._lingering -= linger
            writer.close()

    async def _refuse(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, error: HttpError, *, linger: bool
    ) -> None:
        """Answer ``error`` outside h11's state (there may be no request read), then stop
        sending; with ``linger``, drop what the client still sends for :data:`LINGER_S`."""
        self.service.count(error.outcome)
        reply = _json(error.status, {"error": error.message}, error.headers)
        try:
            writer.write(raw_answer(error.status, reply.body, reply.headers))
            if not await self._drain(writer) or not linger:
                return
            if writer.can_write_eof():
                writer.write_eof()
            loop = asyncio.get_running_loop()
            until = loop.time() + LINGER_S
            while await receive(reader, until - loop.time()):
                pass
        except ConnectionError:  # the client is gone: nobody is left to tell
            return

    async def _send(
        self, connection: h11.Connection, writer: asyncio.StreamWriter, reply: Reply, *, close: bool
    ) -> bool:
        """Send ``reply``; False when the client did not take it within ``request_timeout_s``
        (the connection is dropped)."""
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
        return await self._drain(writer)

    async def _drain(self, writer: asyncio.StreamWriter) -> bool:
        try:
            await asyncio.wait_for(writer.drain(), self.service.limits.request_timeout_s)
        except asyncio.TimeoutError:  # a client that does not read holds nothing longer
            writer.transport.abort()
            return False
        return True

    async def _answer_while_connected(self, reader: asyncio.StreamReader, incoming: Incoming) -> Reply | None:
        """:meth:`_answer`, or None once the client has closed its connection before the answer:
        its rollouts are then cancelled (a waiting one gives its place up, a running one is not
        waited for), so a client that sends batches and leaves holds neither lanes' queues nor
        the pending count for the request's deadline."""
        task = asyncio.ensure_future(self._answer(incoming.request, incoming.body))
        while not task.done():
            await asyncio.wait({task}, timeout=CLIENT_CHECK_S)
            if not task.done() and reader.at_eof():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                self.service.count("client_gone")
                return None
        return task.result()

    async def _answer(self, request: h11.Request, body: bytearray) -> Reply:
        path = request.target.decode("ascii", "replace").split("?", 1)[0]
        method = request.method.decode("ascii", "replace")
        try:
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
            self.service.count(error.outcome)
            return _json(error.status, {"error": error.message}, error.headers)
        except Exception as error:  # the harness's failure: answered, logged, and the server stays up
            self.service.count("http_500")
            self.service.report(f"{method} {path}: {type(error).__name__}: {error}")
            return _json(500, {"error": f"harness failure: {type(error).__name__}: {error}"[:2000]})

    async def _health(self, _: bytearray) -> Reply:
        status = "draining" if self.service.draining else "ok"
        return _json(
            200,
            {
                "status": status,
                "version": __version__,
                "pending": self.service.pending,
                **health_view(self.service.scorer.describe()),
                "connections": len(self._connections.open),
            },
        )

    async def _metrics(self, _: bytearray) -> Reply:
        text = self.service.metrics() + front_metrics(self._connections, self._bodies)
        return Reply(200, text.encode(), content_type="text/plain; version=0.0.4")

    async def _score(self, body: bytearray) -> Reply:
        payload = _payload(body)
        items = payload.get("requests")
        if not isinstance(items, list):
            raise HttpError(400, 'the body needs "requests": a list of {"problem", "completion"}')
        if len(items) > self.service.limits.max_batch:  # before validating them all: a retry never fits
            raise HttpError(
                413,
                f"{len(items)} rollouts in one request, over the server's --max-batch of "
                f"{self.service.limits.max_batch}: send them in smaller requests",
            )
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

    async def _openrlhf(self, body: bytearray) -> Reply:
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
        # OpenRLHF makes a tensor of the rewards: a rollout with no reward is paid 0.0 there,
        # and "graded" 0.0 in its extra logs says which.
        rewards = [0.0 if r.reward is None else r.reward for r in records]
        correct = [1.0 if r.verdict.value == "correct" else 0.0 for r in records]
        graded = [0.0 if r.reward is None else 1.0 for r in records]
        return _json(
            200,
            {"rewards": rewards, "scores": rewards, "extra_logs": {"correct": correct, "graded": graded}},
        )

    async def _run(self, requests: list[RewardRequest], deadline: Any) -> tuple[list[RewardRecord], float]:
        limit = self.service.limits.deadline_s
        if deadline is not None and (
            isinstance(deadline, bool) or not isinstance(deadline, int | float) or not 0 < deadline < 1e300
        ):
            raise HttpError(
                400,
                f'"deadline_s" must be a positive, finite number of seconds (at most {limit:g} is used), '
                f"not {json.dumps(deadline)[:40]}",
            )
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            records = await self.service.score(
                requests, deadline_s=None if deadline is None else float(min(deadline, limit))
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


def _payload(body: bytearray) -> dict[str, Any]:
    try:
        return json_object(body)
    except BadBody as error:
        raise HttpError(400, str(error)) from None
