"""How ``trex-eval serve`` stops: the first SIGTERM or SIGINT drains, saying what it waits for; a
second one stops at once; then the open connections are closed, so that the process ends within
:data:`CLOSE_GRACE_S` of the drain whatever keep-alive connections the trainers hold.

Why the connections: an idle keep-alive connection is a handler waiting for its next request, up
to ``--idle-timeout`` (60 s). Python 3.12+ waits in ``Server.wait_closed`` for every handler, so
a server stopped with nothing pending took the rest of that timeout to exit, saying nothing;
3.11 cancelled them at the loop's end instead, with a traceback each.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from dataclasses import dataclass

from trex_eval.reward.service import RewardService

DRAIN_TIMEOUT_S = 900.0
"""How long a draining server waits for the rollouts in the house before it stops anyway."""

DRAIN_REPORT_S = 10.0
"""While draining, seconds between the lines saying how many rollouts are still pending."""

CLOSE_GRACE_S = 2.0
"""After the drain, seconds a connection still sending a request or reading its answer is given
before it is cut (an idle one is closed at once)."""


@dataclass(frozen=True)
class Stopped:
    """How the server stopped: ``signal``, the number of the signal that stopped it (None: stopped
    by :meth:`Shutdown.request`); ``clean``, whether every admitted rollout was answered (and
    stored in the reward log) first; ``pending``, the rollouts left unanswered."""

    signal: int | None
    clean: bool
    pending: int = 0


class Shutdown:
    """The stop of one server over ``service``; ``report`` says each step (the operator's stderr).

    The first :meth:`on_signal` (or :meth:`request`) stops admission; :meth:`drain` then waits for
    the rollouts in the house, at most :data:`DRAIN_TIMEOUT_S`, saying how many every
    :data:`DRAIN_REPORT_S`; a second signal ends that wait at once.
    """

    def __init__(self, service: RewardService, report: Callable[[str], None]) -> None:
        self.service, self.report = service, report
        self.requested = asyncio.Event()
        self._hurry = asyncio.Event()
        self.signal: int | None = None

    def request(self) -> None:
        """Stop admitting; :meth:`drain` may begin."""
        self.service.drain()
        self.requested.set()

    def on_signal(self, number: int) -> None:
        """A SIGTERM or SIGINT: the first drains, the next stops at once."""
        name = signal.Signals(number).name
        pending = self.service.pending
        if self.requested.is_set():
            if not self._hurry.is_set():
                self.report(f"{name} again: stopping now, {pending} rollouts left unanswered")
            self._hurry.set()
            return
        self.signal = number
        if pending:
            self.report(
                f"{name}: draining {pending} rollouts (at most {DRAIN_TIMEOUT_S:g} s); admitting none; "
                f"{name} again stops at once, leaving them unanswered"
            )
        else:
            self.report(f"{name}: no rollouts pending; stopping")
        self.request()

    async def drain(self) -> Stopped:
        """Wait for the admitted rollouts (and the reward log's writes) to be done, saying how
        many are left every :data:`DRAIN_REPORT_S`; cut short by a second signal or
        :data:`DRAIN_TIMEOUT_S`."""
        await self.requested.wait()
        loop = asyncio.get_running_loop()
        until = loop.time() + DRAIN_TIMEOUT_S
        hurry = asyncio.ensure_future(self._hurry.wait())
        try:
            while not self._hurry.is_set():
                left = until - loop.time()
                if left <= 0:
                    self.report(
                        f"drain: {self.service.pending} rollouts still pending after {DRAIN_TIMEOUT_S:g} s; "
                        "stopping without them"
                    )
                    break
                idle = asyncio.ensure_future(self.service.wait_idle(min(DRAIN_REPORT_S, left)))
                await asyncio.wait({idle, hurry}, return_when=asyncio.FIRST_COMPLETED)
                if idle.done() and idle.result():
                    return Stopped(self.signal, clean=True)
                idle.cancel()
                if not self._hurry.is_set() and loop.time() < until:
                    self.report(f"drain: {self.service.pending} rollouts still pending")
        finally:
            hurry.cancel()
        return Stopped(self.signal, clean=False, pending=self.service.pending)
