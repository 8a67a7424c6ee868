"""Length-prefixed JSON messages between the harness and a worker.

A frame is an 8-byte big-endian length followed by that many bytes of UTF-8 JSON (one object).
``NaN`` and ``Infinity`` are allowed: solver bounds are often infinite. Both sides use these
functions, so the format is defined once.
"""

from __future__ import annotations

import json
import os
from typing import Any

HEADER_BYTES = 8
MAX_FRAME_BYTES = 1 << 30


class FrameError(Exception):
    """The peer closed the stream or sent something that is not a frame."""


def encode(message: dict[str, Any]) -> bytes:
    """One frame holding ``message``."""
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    return len(body).to_bytes(HEADER_BYTES, "big") + body


def decode_body(body: bytes) -> dict[str, Any]:
    """The message inside a frame body; FrameError if it is not a JSON object."""
    try:
        message = json.loads(body.decode("utf-8", "surrogatepass"))
    except ValueError as error:
        raise FrameError(f"malformed frame: {error}") from None
    if not isinstance(message, dict):
        raise FrameError("frame does not hold a JSON object")
    return message


def body_length(header: bytes) -> int:
    """Length announced by a frame header; FrameError when implausible."""
    length = int.from_bytes(header, "big")
    if length > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {length} bytes exceeds the {MAX_FRAME_BYTES}-byte maximum")
    return length


def write_frame(fd: int, message: dict[str, Any]) -> None:
    """Write one frame to ``fd`` (blocking until all of it is written)."""
    view = memoryview(encode(message))
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_exactly(fd: int, count: int) -> bytes:
    """Read ``count`` bytes from ``fd`` (blocking); FrameError on end of stream."""
    chunks: list[bytes] = []
    remaining = count
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise FrameError("stream closed")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> dict[str, Any]:
    """Read one frame from ``fd`` (blocking); FrameError on end of stream or garbage."""
    length = body_length(read_exactly(fd, HEADER_BYTES))
    return decode_body(read_exactly(fd, length))
