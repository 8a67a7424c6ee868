"""What the reward server takes in, under limits: request bodies parsed as JSON (UTF-8, bounded
nesting and number of values, finite numbers only), the server-wide budget of body bytes held at
once, the table of open connections (capped, the longest-idle one given up first) and the file
descriptors the cap needs.

Every body and every connection is adversarial: nothing here may raise anything but
:class:`BadBody` (the caller's 400) for what a client sent, and nothing here grows without a
bound a :class:`~.service.ServiceLimits` field or a constant below sets.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from http import HTTPStatus
from itertools import accumulate
from typing import Any

import h11
import numpy as np

from trex_eval.errors import ConfigError

MAX_JSON_DEPTH = 64
"""Arrays and objects nested in a request body, at most (``/v1/score`` needs 4). Checked on the
raw bytes before :func:`json.loads` runs, so a deeper body is a 400 and never a RecursionError."""

MAX_JSON_VALUES = 1 << 20
"""Values, keys and containers in a request body, at most (a rollout takes about ten: 2048 of
them with long chat prompts fit many times over). Counted on the raw bytes before
:func:`json.loads` runs, because a value costs the parser about 70 bytes of objects however short
its text: ``[],`` is three bytes, and a 64 MiB body of them held 1.8 GB and stopped the event loop
for 22 s (a body at ``max_body_bytes`` scales that fourfold). At the limit: ~75 MB, ~0.3 s."""

DESCRIPTOR_RESERVE = 256
"""File descriptors kept for the server's own use (sandbox pipes, logs, the listening sockets)
on top of ``max_connections``: :func:`ensure_descriptors` wants both under ``ulimit -n``."""

_KEPT = b'"[]{}'
_DROPPED = bytes(byte for byte in range(256) if byte not in _KEPT)
_SEPARATORS = b"[{,:"
"""Each value, key or container of a JSON text but the outermost follows one of these bytes."""
_DROPPED_BUT_SEPARATORS = bytes(byte for byte in range(256) if byte not in b'"' + _SEPARATORS)
_QUOTE = ord('"')
_STRING = re.compile(rb'"[^"]*"')
_STEP = [0] * 256
for _byte in b"[{":
    _STEP[_byte] = 1
for _byte in b"]}":
    _STEP[_byte] = -1
_CHUNK = 1 << 20


def _too_deep(what: str) -> str:
    return (
        f"{what} nests arrays and objects more than {MAX_JSON_DEPTH} deep (the server's limit, "
        "MAX_JSON_DEPTH): send the rollouts as one flat list"
    )


class BadBody(ValueError):
    """A request body the server will not parse; the message names what is wrong and where."""


def _unescaped(body: bytes | bytearray) -> bytes | bytearray:
    """``body`` without its escaped backslashes, then its escaped quotes: what is left of the
    quotes opens and closes strings."""
    unescaped = body.replace(b"\\\\", b"") if b"\\\\" in body else body
    if b'\\"' in unescaped:
        unescaped = unescaped.replace(b'\\"', b"")
    return unescaped


def _outside_strings(body: bytes | bytearray, dropped: bytes) -> bytes:
    """The bytes of ``body`` outside its JSON strings, less those in ``dropped`` (which must
    drop the backslash and keep the quote)."""
    return _STRING.sub(b"", _unescaped(body).translate(None, dropped))


def holds_more_values(body: bytes | bytearray, limit: int = MAX_JSON_VALUES) -> bool:
    """Whether ``body`` (JSON text) holds more than ``limit`` values, keys and containers, counted
    as the ``[ { , :`` bytes outside its strings (an upper bound for every prefix a parser
    reads), in linear time without parsing."""
    if sum(body.count(bytes((byte,))) for byte in _SEPARATORS) <= limit:
        return False
    kept = _unescaped(body).translate(None, _DROPPED_BUT_SEPARATORS)
    # A byte is inside a string when an odd number of quotes precede it: a running parity in
    # NumPy, chunk by chunk (a regex over millions of short strings took seconds).
    count = parity = 0
    for start in range(0, len(kept), _CHUNK):
        chunk = np.frombuffer(kept, np.uint8, count=min(_CHUNK, len(kept) - start), offset=start)
        quotes = (chunk == _QUOTE).view(np.uint8)
        inside = np.bitwise_xor.accumulate(quotes) ^ parity
        count += int(np.count_nonzero((inside | quotes) == 0))
        parity = int(inside[-1])
    return count > limit


def nests_deeper(body: bytes | bytearray, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the arrays and objects of ``body`` (JSON text) nest more than ``limit`` deep,
    counted on the bytes without parsing (linear time; about twice the body's size in memory
    for a moment).

    Exact for every valid prefix of a JSON text, which is all a parser reads before it fails, so
    ``json.loads`` of a body judged not deeper recurses at most ``limit`` levels."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    brackets = _outside_strings(body, _DROPPED)
    level = 0
    for start in range(0, len(brackets), _CHUNK):
        chunk = brackets[start : start + _CHUNK]
        levels = list(accumulate(map(_STEP.__getitem__, chunk), initial=level))
        if max(levels) > limit:
            return True
        level = levels[-1]
    return False


class _NotFinite:
    """Stands in the parsed body for a NaN, an Infinity or a float literal too large for a double."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def json_object(body: bytes | bytearray) -> dict[str, Any]:
    """The JSON object ``body`` holds (:func:`json_value`, which must be an object).

    Raises:
        BadBody: as :func:`json_value`, or the body is not an object.
    """
    payload = json_value(body)
    if not isinstance(payload, dict):
        raise BadBody("the body must be a JSON object")
    return payload


def json_value(body: bytes | bytearray, *, what: str = "the body") -> Any:
    """The JSON value ``body`` holds, under the same bounds wherever JSON text is read: a request
    body, or JSON text inside one (a problem key sent as text; ``what`` names it in messages).

    The text must be UTF-8 (RFC 8259 §8.1; a leading byte order mark is dropped): the nesting
    bound is counted on its bytes, which is exact only where every ASCII character is one byte
    of its own (``json.loads`` of bytes would also take UTF-16 and UTF-32, whose escaped quotes
    the count does not see, and recurse past the bound).

    Raises:
        BadBody: nesting deeper than :data:`MAX_JSON_DEPTH`, more values than
            :data:`MAX_JSON_VALUES`, not JSON (syntax, not UTF-8, an
            integer of more digits than Python converts), or a number that is not finite
            (``NaN``, ``Infinity``, ``1e999``: the message names its field).
    """
    # Values first: a body within their bound holds few brackets, so the depth count is cheap.
    if holds_more_values(body):
        raise BadBody(
            f"{what} holds more than {MAX_JSON_VALUES} JSON values and keys (the server's limit, "
            "MAX_JSON_VALUES): send fewer rollouts per request"
        )
    if nests_deeper(body):
        raise BadBody(_too_deep(what))
    try:
        # surrogatepass: as json.loads(bytes) decodes (a lone surrogate is text.py's to clean)
        text = body.decode("utf-8", "surrogatepass").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise BadBody(f"{what} is not UTF-8 (JSON must be, RFC 8259 §8.1): {error}") from None
    found: list[_NotFinite] = []

    def constant(text: str) -> _NotFinite:
        found.append(_NotFinite(text))
        return found[-1]

    def number(text: str) -> float | _NotFinite:
        value = float(text)
        return value if math.isfinite(value) else constant(text)

    try:
        payload = json.loads(text, parse_constant=constant, parse_float=number)
    except ValueError as error:  # JSONDecodeError, an over-long integer
        raise BadBody(f"{what} is not JSON: {error}") from None
    except RecursionError:  # unreachable while nests_deeper is exact: a 400 all the same
        raise BadBody(_too_deep(what)) from None
    if found:
        raise BadBody(
            f"{_path_of(payload, found[0], what)}: {found[0].text[:40]} is not a finite number (JSON "
            "has no NaN or Infinity): send a finite number"
        )
    return payload


def _path_of(payload: Any, target: _NotFinite, what: str) -> str:
    """Where ``target`` sits in ``payload``: ``requests[0].problem.value``, or ``what`` (the
    whole text)."""
    stack: list[tuple[Any, str]] = [(payload, "")]
    while stack:
        value, path = stack.pop()
        if value is target:
            return path or what
        if isinstance(value, dict):
            stack.extend((item, f"{path}.{key}" if path else str(key)) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(value))
    return what


class BodyBudget:
    """The bytes of request bodies held at once, server-wide, at most ``limit``.

    A body's bytes are taken as they arrive and given back once its answer is sent; a body whose
    ``Content-Length`` would not fit now is refused before it is read, but a declaration alone
    holds nothing (two clients that declare the whole budget and send nothing block nobody)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> bool:
        """Take ``size`` bytes; False (nothing taken) when they would pass the limit."""
        if self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give_back(self, size: int) -> None:
        self.held -= size


class Slot:
    """One open connection: its transport, and since when (``time.monotonic()``) it has waited
    for a request, or None while one is in progress (read, graded or answered)."""

    __slots__ = ("idle_since", "transport")

    def __init__(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.idle_since: float | None = time.monotonic()

    def busy(self) -> None:
        self.idle_since = None

    def idle(self) -> None:
        self.idle_since = time.monotonic()


class Connections:
    """The open connections, ``limit`` at most.

    A connection over the cap closes the one that has waited longest for a request: an idle
    keep-alive connection is the server's to close at any time (HTTP/1.1), its client reconnects,
    and a new client is served at once however many idle sockets someone holds. Only when every
    open connection has a request in progress is the newcomer refused (:meth:`admit` None)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open: set[Slot] = set()
        self.closed_idle = 0

    def admit(self, transport: asyncio.BaseTransport) -> Slot | None:
        """The new connection's slot, or None when the cap is reached and none is idle."""
        if len(self.open) >= self.limit:
            idle = [slot for slot in self.open if slot.idle_since is not None]
            if not idle:
                return None
            oldest = min(idle, key=lambda slot: slot.idle_since or 0.0)
            self.open.discard(oldest)
            oldest.transport.close()
            self.closed_idle += 1
        slot = Slot(transport)
        self.open.add(slot)
        return slot

    def leave(self, slot: Slot) -> None:
        self.open.discard(slot)


def ensure_descriptors(connections: int) -> None:
    """Make room for ``connections`` sockets plus :data:`DESCRIPTOR_RESERVE` under the process's
    file-descriptor limit, raising the soft limit up to the hard one where needed (the sandbox's
    jobs set their own, lower limit).

    Raises:
        ConfigError: the hard limit is too low for the cap.
    """
    try:
        import resource
    except ImportError:  # no RLIMIT_NOFILE to consult (not a POSIX system)
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = connections + DESCRIPTOR_RESERVE
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        raise ConfigError(
            f"--max-connections {connections} needs {need} file descriptors ({DESCRIPTOR_RESERVE} more "
            f"for the server's own use), and this process may open {hard} at most (`ulimit -Hn`)",
            hint=f"lower --max-connections to {max(hard - DESCRIPTOR_RESERVE, 1)} or raise the hard limit",
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


async def receive(reader: asyncio.StreamReader, seconds: float) -> bytes | None:
    """What the client sends next (b"" at its end), or None when ``seconds`` pass first."""
    try:
        return await asyncio.wait_for(reader.read(1 << 16), max(seconds, 0.0))
    except asyncio.TimeoutError:
        return None


def declared_length(request: h11.Request) -> int | None:
    """The body's length as its headers declare it, or None for a chunked body."""
    headers = dict(request.headers)  # h11 gives lower-case names and checked values
    if b"transfer-encoding" in headers:
        return None
    return int(headers.get(b"content-length", b"0"))


def raw_answer(status: int, body: bytes, headers: tuple[tuple[str, str], ...]) -> bytes:
    """A JSON answer that closes the connection, written without h11 (which has no place for an
    answer before a request's head is read: a timeout, a refusal at the connection cap)."""
    head = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        *(f"{name}: {value}" for name, value in headers),
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def front_metrics(connections: Connections, bodies: BodyBudget) -> str:
    """The HTTP front's gauges and counter in Prometheus text (appended to the service's)."""
    return "\n".join(
        [
            "# HELP trex_reward_connections_open HTTP connections open.",
            "# TYPE trex_reward_connections_open gauge",
            f"trex_reward_connections_open {len(connections.open)}",
            "# HELP trex_reward_idle_connections_closed_total Idle connections closed for newcomers.",
            "# TYPE trex_reward_idle_connections_closed_total counter",
            f"trex_reward_idle_connections_closed_total {connections.closed_idle}",
            "# HELP trex_reward_body_bytes_held Bytes of request bodies held (the body budget used).",
            "# TYPE trex_reward_body_bytes_held gauge",
            f"trex_reward_body_bytes_held {bodies.held}",
            "",
        ]
    )
