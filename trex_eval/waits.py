"""What a run is waiting on right now: model replies, retry back-offs, sandbox lanes, a server.

The code that waits says so (:func:`waiting`, around the ``await`` or the blocking call); the
run's progress reads the board (:meth:`WaitBoard.describe`) to say, in the line it prints at
least every interval, why nothing moved. The board travels in a :mod:`contextvars` variable
(:data:`BOARD`), set by whoever owns the progress display: asyncio tasks copy it when they are
created and ``asyncio.to_thread`` into its thread, so a backend or a gate reports its waits
without being handed anything. Outside a board (a library call, the reward server) :func:`waiting`
costs one context-variable read and records nothing.

A wait's ``what`` is a phrase that follows "waiting on" (``"a model reply from URL"``,
``"a free sandbox lane"``) and is written by the harness: never put text a server or a program
chose into it (it reaches the terminal and logs).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

MAX_SHOWN = 3
"""Kinds of wait named in :meth:`WaitBoard.describe`; the rest are counted."""


@dataclass(frozen=True)
class Wait:
    """One outstanding wait: what for, since when and, for a timed wait (a back-off), until when
    (both :func:`time.monotonic` seconds of the board's clock)."""

    what: str
    since: float
    until: float | None = None


class WaitBoard:
    """The waits outstanding in one run. Thread-safe (a sandbox gate waits in a thread).

    ``clock`` (default :func:`time.monotonic`, seconds) stamps and ages the waits.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._waits: dict[int, Wait] = {}
        self._ids = itertools.count()

    @contextlib.contextmanager
    def waiting(self, what: str, *, for_s: float | None = None) -> Iterator[None]:
        """Record ``what`` as outstanding for the block; ``for_s``: the wait's known length."""
        now = self._clock()
        wait = Wait(what, now, None if for_s is None else now + for_s)
        with self._lock:
            key = next(self._ids)
            self._waits[key] = wait
        try:
            yield
        finally:
            with self._lock:
                del self._waits[key]

    def current(self) -> tuple[Wait, ...]:
        """The outstanding waits, oldest first."""
        with self._lock:
            return tuple(sorted(self._waits.values(), key=lambda wait: wait.since))

    def describe(self) -> str:
        """The outstanding waits in words, grouped by ``what``, longest-waiting group first: e.g.
        ``a model reply from http://127.0.0.1:8000/v1 ×4 (oldest 1m15s); a retry back-off after
        HTTP 503 (ends in 3s)``; ``""`` when nothing is outstanding."""
        now = self._clock()
        groups: dict[str, list[Wait]] = {}
        for wait in self.current():
            groups.setdefault(wait.what, []).append(wait)
        parts = [_group_text(what, waits, now) for what, waits in list(groups.items())[:MAX_SHOWN]]
        hidden = sum(len(waits) for waits in list(groups.values())[MAX_SHOWN:])
        if hidden:
            parts.append(f"{hidden} other wait(s)")
        return "; ".join(parts)


def _group_text(what: str, waits: list[Wait], now: float) -> str:
    count = f" ×{len(waits)}" if len(waits) > 1 else ""
    ends = [wait.until for wait in waits if wait.until is not None]
    if ends:
        return f"{what}{count} (ends in {duration(min(ends) - now)})"
    return f"{what}{count} ({'oldest ' if count else ''}{duration(now - waits[0].since)})"


def duration(seconds: float) -> str:
    """Whole seconds as ``45s`` or ``1m15s`` (negative counts as 0)."""
    whole = max(0, round(seconds))
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"


BOARD: ContextVar[WaitBoard | None] = ContextVar("trex_wait_board", default=None)
"""The board of the run the current work belongs to; ``None``: nobody is listening."""


@contextlib.contextmanager
def waiting(what: str, *, for_s: float | None = None) -> Iterator[None]:
    """:meth:`WaitBoard.waiting` on the current board; nothing outside one."""
    board = BOARD.get()
    if board is None:
        yield
        return
    with board.waiting(what, for_s=for_s):
        yield


@contextlib.asynccontextmanager
async def holding(slots: asyncio.Semaphore, what: str) -> AsyncIterator[None]:
    """``async with slots``, the time spent queueing for it recorded as :func:`waiting` on ``what``."""
    with waiting(what):
        await slots.acquire()
    try:
        yield
    finally:
        slots.release()
