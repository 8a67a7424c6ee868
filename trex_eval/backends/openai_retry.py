"""Retry decisions of the OpenAI-compatible client: which failures retry, and how long to wait.

The contract (which statuses and errors are retried, ``Retry-After`` handling, full-jitter
backoff, the attempt budget) is stated in :mod:`trex_eval.backends.openai_compat`. Nothing here
performs I/O except the sleeps of :func:`with_retries`.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from trex_eval import waits

_T = TypeVar("_T")

_RETRYABLE_STATUSES = frozenset({408, 409, 429})


@dataclass(frozen=True)
class Failure:
    """One failed attempt: why, whether another attempt may succeed, the server's requested wait,
    the HTTP status when the server answered at all, and whether the retry goes to another,
    healthy endpoint (``failover``: retried at once, without backoff; see
    :mod:`~trex_eval.backends.endpoints`)."""

    reason: str
    retryable: bool
    retry_after_s: float | None = None
    status: int | None = None
    failover: bool = False


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait between attempts of one request (see the module docstring)."""

    max_retries: int = 6
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 300.0

    def delay_s(self, retry: int, *, retry_after_s: float | None, rng: random.Random) -> float:
        """Seconds to sleep before retry number ``retry`` (1-based)."""
        if retry_after_s is not None:
            return min(retry_after_s, self.retry_after_max_s)
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2.0 ** (retry - 1))
        return rng.uniform(0.0, ceiling)


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP error status may succeed on another attempt (408, 409, 429, every 5xx)."""
    return status in _RETRYABLE_STATUSES or status >= 500


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """Seconds to wait according to a ``Retry-After`` header value, or ``None`` if unusable.

    Accepts delay-seconds (``"5"``, also fractional ``"0.5"``) and an HTTP-date
    (``"Wed, 21 Oct 2026 07:28:00 GMT"``), the latter relative to ``now`` (POSIX seconds).
    A date in the past gives 0; a negative, non-finite or unparseable value gives ``None``.
    """
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # an HTTP-date is always GMT; a zone-less parse means "-0000"
            return None
        return max(0.0, when.timestamp() - now)
    if not 0.0 <= seconds < float("inf"):
        return None
    return seconds


async def with_retries(
    attempt: Callable[[], Awaitable[_T | Failure]], policy: RetryPolicy, rng: random.Random
) -> tuple[_T | Failure, int]:
    """Run ``attempt`` until it succeeds, fails for good, or ``policy``'s budget is spent.

    Returns:
        The last outcome and the number of attempts made (at most ``policy.max_retries + 1``).
    """
    number = 1
    while True:
        outcome = await attempt()
        if not isinstance(outcome, Failure) or not outcome.retryable or number > policy.max_retries:
            return outcome, number
        if not outcome.failover:
            delay_s = policy.delay_s(number, retry_after_s=outcome.retry_after_s, rng=rng)
            with waits.waiting(f"a retry back-off after {cause(outcome)}", for_s=delay_s):
                await asyncio.sleep(delay_s)
        number += 1


def cause(failure: Failure) -> str:
    """A short, harness-worded name of why an attempt failed, for progress lines: ``HTTP 503``,
    ``connection error: ConnectError``, ``no response within 60 s`` (never the server's text)."""
    if failure.status is not None:
        return f"HTTP {failure.status}"
    head, _, rest = failure.reason.partition(": ")
    # "connection error: ConnectError: <message>": the exception's type, not its message.
    return f"{head}: {rest.partition(':')[0]}" if head == "connection error" and rest else head
