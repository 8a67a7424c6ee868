"""Reading OpenAI-compatible response bodies: chat completions and ``/models`` lists.

A 2xx body that is not the JSON of a chat completion is a retryable
:class:`~.openai_retry.Failure` (see the retry contract in :mod:`~.openai_compat`); fields of
the wrong type are dropped rather than trusted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx

from trex_eval.backends.openai_http import ERROR_EXCERPT_CHARS, excerpt, status_failure
from trex_eval.backends.openai_retry import Failure
from trex_eval.records import Usage


@dataclass(frozen=True)
class Reply:
    """The parts of a chat completion response that a Completion records."""

    text: str
    reasoning: str | None
    finish_reason: str | None
    usage: Usage
    model: str | None


def read_chat_response(response: httpx.Response, *, secret: str | None) -> Reply | Failure:
    """The reply in a ``/chat/completions`` response, or why there is none.

    ``secret`` (the API key) is scrubbed from any error text taken from the body.
    """
    if not 200 <= response.status_code < 300:
        return status_failure(response, secret=secret)
    try:
        payload = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return Failure(
            f"malformed response: body is not JSON: {excerpt(response, secret=secret)}", retryable=True
        )
    return parse_chat_payload(payload)


def parse_chat_payload(payload: object) -> Reply | Failure:
    """The reply inside a chat completion body; a malformed body is a retryable failure."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(payload, dict) or not isinstance(choices, list) or not choices:
        error = payload.get("error") if isinstance(payload, dict) else None
        detail = f"error {json.dumps(error)[:ERROR_EXCERPT_CHARS]}" if error else "no choices"
        return Failure(f"malformed response: {detail}", retryable=True)
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(first, dict) or not isinstance(message, dict):
        return Failure("malformed response: choices[0] has no message", retryable=True)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return Failure("malformed response: message.content is not a string", retryable=True)
    # vLLM's reasoning parsers and DeepSeek use ``reasoning_content``; newer vLLM uses ``reasoning``.
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    finish_reason = first.get("finish_reason")
    model = payload.get("model")
    return Reply(
        text=content or "",
        reasoning=reasoning if isinstance(reasoning, str) else None,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=_usage(payload.get("usage")),
        model=model if isinstance(model, str) and model else None,
    )


def model_ids(response: httpx.Response) -> tuple[str, ...] | None:
    """Model ids from a ``/models`` response, or ``None`` if it is not the expected shape."""
    try:
        payload = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        return None
    return tuple(e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str))


def _usage(raw: object) -> Usage:
    if not isinstance(raw, dict):
        return Usage()

    def count(key: str) -> int | None:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    return Usage(
        prompt_tokens=count("prompt_tokens"),
        completion_tokens=count("completion_tokens"),
        total_tokens=count("total_tokens"),
    )
