"""``trex-eval serve``: the reward service over HTTP/1.1 (asyncio streams, ``h11`` for the protocol).

==========================  ===================================================================
``POST /v1/score``          ``{"requests": [{"problem": {...}, "completion": "..."}], "deadline_s": 60}``
                            -> ``{"records": [RewardRecord, ...], "elapsed_s": ...}``
``POST /get_reward``        OpenRLHF's remote reward model: ``{"query": [...], "prompts": [...],
                            "labels": [...]}`` -> ``{"rewards": [...], "scores": [...],
                            "extra_logs": {"correct": [...], "graded": [...]}}`` (a rollout not
                            graded: reward 0.0, graded 0.0); each label names the problem, the
                            completion is the query with its prompt taken off the front
``POST /v1/step``           a repair episode's turn (:mod:`.sessions`): the policy's program run,
                            the ``--repair`` feedback answered, the last turn paid by the policy
``GET /health``             ``{"status": "ok" | "draining", "version", "pending", ...}``: what an
                            operator checks (:func:`health_view`), no path, command line or host
``GET /metrics``            Prometheus text
==========================  ===================================================================

A ``problem`` (``/v1/score``) and a label (``/get_reward``) take every form of a key that
``trex-eval export-rl`` writes, as an object or as JSON text (:mod:`.endpoints`); a key naming a
benchmark the server does not serve is a 400 naming the key, the benchmarks served and
``--any-benchmark`` (:class:`~.catalogue.ScorerSettings`).

Answers: 200; 400 for a body that names no valid rollout, is not JSON, nests deeper than
:data:`~.intake.MAX_JSON_DEPTH` or holds a number that is not finite (the message says which field);
404, 405; 408 for a request that did not arrive within ``request_timeout_s``; 413 for a body over
``max_body_bytes`` or the whole body budget, and for more rollouts than ``max_batch``
(``--max-batch``); 431 for a head over :data:`MAX_HEAD_BYTES`; 429 (with ``Retry-After``) when
the batch does not fit the pending limit; 503 (with ``Retry-After``) while
draining, for a body that would pass the server-wide body budget, and for a connection over
``max_connections`` while every open one has a request in progress (:class:`~.intake.Connections`).
A connection waiting longer than ``idle_timeout_s`` for its next request is closed. SIGTERM or
SIGINT drains: nothing new is admitted, requests in the house are answered (a second signal stops
at once), every connection is closed, then the server stops, the sandbox pool with it
(:mod:`.shutdown`).
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11

from trex_eval._version import __version__
from trex_eval.errors import TrexError
from trex_eval.reward.endpoints import (
    HttpError,
    Reply,
    json_reply,
    openrlhf_answer,
    openrlhf_requests,
    score_requests,
)
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
from trex_eval.reward.records import RewardRecord, RewardRequest
from trex_eval.reward.service import Busy, Draining, RewardService, health_view
from trex_eval.reward.sessions import RepairSessions
from trex_eval.reward.shutdown import CLOSE_GRACE_S, Shutdown, Stopped

CLIENT_CHECK_S = 0.5  # seconds between a graded request's looks at whether its client is still there

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
        self._shutdown = Shutdown(service, service.report)
        self._handlers: dict[asyncio.Task[None], asyncio.BaseTransport] = {}
        """Each connection's handler, and its transport (the shutdown closes both)."""
        self._connections = Connections(service.limits.max_connections)
        self._bodies = BodyBudget(service.limits.body_budget_bytes)
        self._lingering = 0
        self.sessions = RepairSessions(service)
        """The live repair episodes of ``POST /v1/step`` (:mod:`.sessions`)."""

    async def start(self) -> None:
        """Listen. Raises ConfigError: ``max_connections`` does not fit the descriptor limit."""
        ensure_descriptors(self.service.limits.max_connections)
        self._server = await asyncio.start_server(self._connection, self.host, self.port, limit=1 << 20)
        self.port = self._server.sockets[0].getsockname()[1]

    async def serve_until_stopped(self, *, on_signal: Callable[[str], None] | None = None) -> Stopped:
        """Serve until SIGTERM/SIGINT (or :meth:`stop`), then drain, close every connection and
        stop listening (:mod:`.shutdown`: a second signal cuts the drain short). ``on_signal``
        hears each step (default: the service's report, stderr)."""
        loop = asyncio.get_running_loop()
        shutdown = self._shutdown
        shutdown.report = on_signal or self.service.report
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, shutdown.on_signal, number)
        stopped = await shutdown.drain()
        if self._server is not None:
            self._server.close()  # no new connection from here on
        await self._close_connections(grace_s=CLOSE_GRACE_S if stopped.clean else 0.0)
        if self._server is not None:
            await self._server.wait_closed()
        return stopped

    def stop(self) -> None:
        """Stop admitting and let :meth:`serve_until_stopped` drain and return."""
        self._shutdown.request()

    async def _close_connections(self, *, grace_s: float) -> None:
        """Close the idle connections at once, give the others ``grace_s`` to finish their
        answer, then cut them; return when every connection's handler has ended.

        Cut, not cancelled: a handler whose transport is gone ends within :data:`CLIENT_CHECK_S`
        (a handler task cancelled under it is reported by asyncio 3.11 with a traceback)."""
        for slot in list(self._connections.open):
            if slot.idle_since is not None:
                slot.transport.close()
        late = await self._handlers_left(grace_s)
        if late:
            for task in late:
                transport = self._handlers.get(task)
                if isinstance(transport, asyncio.WriteTransport):
                    transport.abort()
            late = await self._handlers_left(2 * CLIENT_CHECK_S)
        for task in late:  # still there with its transport cut: the last resort
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)

    async def _handlers_left(self, timeout_s: float) -> set[asyncio.Task[None]]:
        """The connection handlers still running after ``timeout_s`` at most."""
        handlers = set(self._handlers)
        if not handlers:
            return set()
        _, late = await asyncio.wait(handlers, timeout=timeout_s)
        return late

    # ------------------------------------------------------------------ HTTP

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:  # the shutdown waits for it (and cuts it past the grace)
            self._handlers[task] = writer.transport
            task.add_done_callback(lambda done: self._handlers.pop(done, None))
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
        reply = json_reply(error.status, {"error": error.message}, error.headers)
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
                ("POST", "/v1/step"): self._step,
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
            return json_reply(error.status, {"error": error.message}, error.headers)
        except Exception as error:  # the harness's failure: answered, logged, and the server stays up
            self.service.count("http_500")
            self.service.report(f"{method} {path}: {type(error).__name__}: {error}")
            return json_reply(500, {"error": f"harness failure: {type(error).__name__}: {error}"[:2000]})

    async def _health(self, _: bytearray) -> Reply:
        status = "draining" if self.service.draining else "ok"
        return json_reply(
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
        requests = score_requests(payload, max_batch=self.service.limits.max_batch)
        records, elapsed = await self._run(requests, payload.get("deadline_s"))
        return json_reply(
            200, {"records": [r.model_dump(mode="json") for r in records], "elapsed_s": elapsed}
        )

    async def _openrlhf(self, body: bytearray) -> Reply:
        payload = _payload(body)
        requests = openrlhf_requests(payload, max_batch=self.service.limits.max_batch)
        records, _ = await self._run(requests, payload.get("deadline_s"))
        return json_reply(200, openrlhf_answer(records))

    async def _step(self, body: bytearray) -> Reply:
        return json_reply(200, await self.sessions.step(_payload(body)))

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
