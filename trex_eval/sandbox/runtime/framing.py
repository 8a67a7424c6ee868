"""Length-prefixed messages between the harness and a worker: a JSON object and raw byte fields.

A frame is an 8-byte big-endian length, then that many bytes: a 4-byte big-endian length and
that many bytes of UTF-8 JSON (one object), then the raw bytes of the message's byte fields, one
after the other, as the object's ``"_blobs"`` entry lists them (``[name, length]`` pairs). A
reader gets the object with each byte field set under its name as ``bytes``.

Byte fields exist for what a program wrote (its output, result records, model files): in JSON a
NUL or another control byte takes six bytes (``\\u0000``), so a program could make its reply six
times larger than what it wrote. ``NaN`` and ``Infinity`` are allowed in the JSON: solver bounds are
often infinite. Both sides use these functions, so the format is defined once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

HEADER_BYTES = 8
_JSON_HEADER_BYTES = 4
MAX_FRAME_BYTES = 1 << 30
_BLOBS = "_blobs"


class FrameError(Exception):
    """The peer closed the stream or sent something that is not a frame."""


def encode(message: dict[str, Any], blobs: Mapping[str, bytes] | None = None) -> bytes:
    """One frame holding ``message`` and the byte fields ``blobs``."""
    listed = [[name, len(data)] for name, data in (blobs or {}).items()]
    header = json.dumps({**message, _BLOBS: listed}, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )
    body = [len(header).to_bytes(_JSON_HEADER_BYTES, "big"), header, *(blobs or {}).values()]
    length = sum(len(part) for part in body)
    return length.to_bytes(HEADER_BYTES, "big") + b"".join(body)


def decode_body(body: bytes) -> dict[str, Any]:
    """The message inside a frame body, byte fields included; FrameError if it is malformed."""
    size = int.from_bytes(body[:_JSON_HEADER_BYTES], "big")
    end = _JSON_HEADER_BYTES + size
    if len(body) < end:
        raise FrameError("malformed frame: truncated header")
    try:
        message = json.loads(body[_JSON_HEADER_BYTES:end].decode("utf-8", "surrogatepass"))
    except ValueError as error:
        raise FrameError(f"malformed frame: {error}") from None
    if not isinstance(message, dict):
        raise FrameError("frame does not hold a JSON object")
    listed = message.pop(_BLOBS, [])
    view = memoryview(body)
    for entry in listed if isinstance(listed, list) else ():
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], int) and entry[1] >= 0):
            raise FrameError("malformed frame: bad byte field")
        name, length = str(entry[0]), entry[1]
        if end + length > len(body):
            raise FrameError("malformed frame: byte field past the end")
        message[name] = bytes(view[end : end + length])
        end += length
    return message


def body_length(header: bytes) -> int:
    """Length announced by a frame header; FrameError when implausible."""
    length = int.from_bytes(header, "big")
    if length > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {length} bytes exceeds the {MAX_FRAME_BYTES}-byte maximum")
    return length


def write_frame(fd: int, message: dict[str, Any], blobs: Mapping[str, bytes] | None = None) -> None:
    """Write one frame to ``fd`` (blocking until all of it is written)."""
    view = memoryview(encode(message, blobs))
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
