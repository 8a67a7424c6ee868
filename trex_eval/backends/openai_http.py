"""One HTTP attempt against an OpenAI-compatible endpoint, and the failures it can end in.

:func:`send` turns timeouts and transport errors into retryable :class:`~.openai_retry.Failure`
values; :func:`status_failure` does the same for an error status. Error texts are built by
:func:`excerpt`, which keeps them short and free of the API key.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

import httpx

from trex_eval.backends.openai_retry import Failure, is_retryable_status, parse_retry_after

ERROR_EXCERPT_CHARS = 300
"""Longest error-body text kept in a failure reason."""


async def send(
    client: httpx.AsyncClient,
    method: str,
    url: httpx.URL,
    *,
    body: Mapping[str, Any] | None,
    timeout_s: float,
) -> httpx.Response | Failure:
    """One HTTP attempt: the response (any status, body read), or a transport failure.

    A timeout, connection error or undecodable body is a retryable Failure. The status is not
    judged here: the caller decides what a 401 or another error status means.
    """
    try:
        return await asyncio.wait_for(client.request(method, url, json=body), timeout=timeout_s)
    except (asyncio.TimeoutError, httpx.TimeoutException):
        return Failure(f"no response within {timeout_s:g} s", retryable=True)
    except httpx.TransportError as exc:
        return Failure(f"connection error: {type(exc).__name__}: {exc}", retryable=True)
    except httpx.DecodingError as exc:
        return Failure(f"undecodable response body: {exc}", retryable=True)


def status_failure(response: httpx.Response, *, secret: str | None) -> Failure:
    """The Failure of an error-status response: retryable or not, with the server's wait."""
    status = response.status_code
    retryable = is_retryable_status(status)
    retry_after = (
        parse_retry_after(response.headers.get("Retry-After"), now=time.time()) if retryable else None
    )
    return Failure(
        f"HTTP {status}{'' if retryable else ', not retried'}: {excerpt(response, secret=secret)}",
        retryable=retryable,
        retry_after_s=retry_after,
        status=status,
    )


def excerpt(response: httpx.Response, *, secret: str | None) -> str:
    """A short, key-free description of an error body (its ``error.message`` if JSON)."""
    try:
        text = response.text
    except UnicodeDecodeError:
        return f"<{len(response.content)} undecodable bytes>"
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str) and message:
            text = message
    text = " ".join(text.split())
    if len(text) > ERROR_EXCERPT_CHARS:
        text = text[:ERROR_EXCERPT_CHARS] + "..."
    return redact(text or "<empty body>", secret)


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` (the API key) replaced by ``<redacted>``."""
    # A misconfigured proxy may echo request headers into an error body; the key must not
    # reach a Completion, the run directory or a log.
    return text.replace(secret, "<redacted>") if secret else text
