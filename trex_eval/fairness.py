"""Fair sharing of a fixed number of slots (the sandbox's lanes; any other scarce worker) among
tenants: the requests of a reward server, the calls of a trainer.

A tenant and its deadline travel with the work in :mod:`contextvars` (:func:`scope`): asyncio
tasks copy them when they are created, and ``asyncio.to_thread`` into its thread, so the code that
takes a slot (:meth:`FairGate.acquire` from asyncio, :meth:`FairGate.hold` from a thread) does not
need to be told whom it works for. Work outside any scope is the tenant ``""``.

**Order.** A free slot goes to the waiting tenant that holds the fewest slots now; among those,
to the one served longest ago (round robin); within a tenant, first come first served. So a
tenant's many rollouts cannot keep another tenant's one waiting behind all of them: the newcomer
takes the next slot that frees. The gate is work-conserving: a tenant alone may hold every slot
(nothing is kept idle for tenants that may come) unless the gate keeps a ``reserve`` for tenants
holding none; and a slot once granted is never taken back (a running program is not stopped for
a newcomer: its own limits bound how long it holds the slot).
While others wait, each slot that frees goes to whoever holds fewest, so a tenant holding more
than its share gets no new slot until it is down to it.

**Deadlines.** A waiter whose scope's deadline passes is dropped from the queue and raises
:class:`DeadlinePassed` (the slot goes to the next); :meth:`Grant.fit` shortens a job's wall
limit to what is left of the deadline, so work cut by its own caller's deadline frees its slot
at that deadline instead of holding it for nobody.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from . import waits
from .records import SandboxLimits

TENANT: ContextVar[str] = ContextVar("trex_fair_tenant", default="")
"""Whom the current work is for (a request id); ``""`` outside any :func:`scope`."""
DEADLINE: ContextVar[float | None] = ContextVar("trex_fair_deadline", default=None)
"""When the current work's answer is due, in :func:`time.monotonic` seconds; None: never."""


@dataclass
class Progress:
    """Where one unit of work is (``phase``, since ``since`` in monotonic seconds): set by the
    gates and the code it passes through, read by whoever must say why it is not done."""

    phase: str = "not started"
    since: float = field(default_factory=time.monotonic)

    def note(self, phase: str) -> None:
        self.phase, self.since = phase, time.monotonic()

    def describe(self, now: float | None = None) -> str:
        return f"{self.phase} for {(now or time.monotonic()) - self.since:.1f} s"


PROGRESS: ContextVar[Progress | None] = ContextVar("trex_fair_progress", default=None)
"""The current unit of work's :class:`Progress`, where its owner tracks it."""


@contextlib.contextmanager
def scope(tenant: str, *, deadline: float | None = None) -> Iterator[None]:
    """Run the block (and every task and thread it starts) as ``tenant``, due at ``deadline``
    (monotonic seconds, None: never)."""
    tenant_token, deadline_token = TENANT.set(tenant), DEADLINE.set(deadline)
    try:
        yield
    finally:
        DEADLINE.reset(deadline_token)
        TENANT.reset(tenant_token)


def note(phase: str) -> None:
    """Record that the current work entered ``phase`` (no-op where nobody tracks it)."""
    progress = PROGRESS.get()
    if progress is not None:
        progress.note(phase)


def check_deadline(what: str) -> None:
    """Raise :class:`DeadlinePassed` when the current scope's deadline has passed (before
    ``what``, which is then not worth doing: nobody waits for its result)."""
    deadline = DEADLINE.get()
    if deadline is not None and time.monotonic() >= deadline:
        raise DeadlinePassed(f"the deadline passed before {what}")


class DeadlinePassed(Exception):
    """The caller's deadline passed before its work was done: not the work's failure, and its
    result (if any) is no longer wanted. The message says where the work was."""


@dataclass(eq=False)
class _Waiter:
    tenant: str
    deadline: float | None
    wake: Callable[[], None]
    grant: Grant | None = None


class Grant:
    """One slot held by ``tenant``; :meth:`release` (idempotent) gives it back to the gate."""

    def __init__(self, gate: FairGate, tenant: str, deadline: float | None, waited_s: float) -> None:
        self.gate, self.tenant, self.deadline, self.waited_s = gate, tenant, deadline, waited_s
        self._released = False
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self.gate._release(self.tenant)

    def fit(self, limits: SandboxLimits) -> SandboxLimits:
        """``limits`` with ``wall_s`` at most the seconds left to the deadline (unchanged when
        there is none or more is left). Never below 0.1 s: a job granted at its deadline's edge
        is stopped at once rather than refused."""
        if self.deadline is None:
            return limits
        left = max(0.1, self.deadline - time.monotonic())
        return limits if left >= limits.wall_s else limits.model_copy(update={"wall_s": left})

    def __enter__(self) -> Grant:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


class FairGate:
    """``slots`` slots shared among tenants in the order the module docstring gives. Thread-safe,
    and usable from any number of event loops at once. ``name`` says what a slot is (``"sandbox
    lane"``), in progress notes and messages."""

    def __init__(self, slots: int, *, name: str, reserve: int = 0) -> None:
        """``reserve``: slots kept for tenants that hold none (a newcomer then never waits for
        another tenant's long work to end); 0 (the sandbox lanes): every slot goes to whoever
        waits, since a reserve on 2 lanes halves a lone trainer's throughput."""
        if slots < 1 or not 0 <= reserve < slots:
            raise ValueError(
                f"a fair gate needs at least one slot and fewer reserved, not {slots}, {reserve}"
            )
        self.slots, self.name, self.reserve = slots, name, reserve
        self._lock = threading.Lock()
        self._free = slots
        self._held: Counter[str] = Counter()
        self._queues: dict[str, deque[_Waiter]] = {}
        self._served: dict[str, int] = {}
        self._turn = itertools.count()

    async def acquire(self) -> Grant:
        """A slot for the current scope's tenant, waiting (fairly) for one.

        Raises:
            DeadlinePassed: the scope's deadline passed first (the place in the queue is given up).
        """
        tenant, deadline, started = TENANT.get(), DEADLINE.get(), time.monotonic()
        loop = asyncio.get_running_loop()
        woken = loop.create_future()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the waiter's loop is closed: nobody waits
                loop.call_soon_threadsafe(_settle, woken)

        waiter = self._enqueue(tenant, deadline, wake)
        if waiter.grant is None:
            note(f"waiting for a {self.name}")
            try:
                with waits.waiting(f"a free {self.name}"):
                    await asyncio.wait_for(woken, None if deadline is None else max(0.0, deadline - started))
            except BaseException as error:
                self._abandon(waiter)
                if isinstance(error, TimeoutError | asyncio.TimeoutError):
                    raise self._missed(started) from None
                raise
        return self._granted(waiter, started)

    @contextlib.contextmanager
    def hold(self) -> Iterator[Grant]:
        """:meth:`acquire` for threads: blocks until a slot is granted, releases it after the block."""
        tenant, deadline, started = TENANT.get(), DEADLINE.get(), time.monotonic()
        woken = threading.Event()
        waiter = self._enqueue(tenant, deadline, woken.set)
        if waiter.grant is None:
            note(f"waiting for a {self.name}")
            timeout = None if deadline is None else max(0.0, deadline - started)
            try:
                with waits.waiting(f"a free {self.name}"):
                    woke = woken.wait(timeout)
            except BaseException:  # an interrupt: the place (or a slot granted meanwhile) goes back
                self._abandon(waiter)
                raise
            if not woke:
                self._abandon(waiter)  # gives back a slot granted just as the wait ended
                raise self._missed(started)
        with self._granted(waiter, started) as grant:
            yield grant

    def snapshot(self) -> dict[str, object]:
        """Slots free, and slots held and waiters per tenant (for health and metrics answers)."""
        with self._lock:
            return {
                "slots": self.slots,
                "free": self._free,
                "held": dict(self._held),
                "waiting": {tenant: len(queue) for tenant, queue in self._queues.items()},
            }

    # ------------------------------------------------------------------ internals

    def _enqueue(self, tenant: str, deadline: float | None, wake: Callable[[], None]) -> _Waiter:
        waiter = _Waiter(tenant, deadline, wake)
        with self._lock:
            self._queues.setdefault(tenant, deque()).append(waiter)
            self._dispatch()
        return waiter

    def _granted(self, waiter: _Waiter, started: float) -> Grant:
        # A waiter woken while it was abandoning (timeout, cancellation) released its grant there.
        grant = waiter.grant
        if grant is None:  # woken only to find its deadline passed (see _dispatch)
            raise self._missed(started)
        grant.waited_s = time.monotonic() - started
        note(f"holding a {self.name}")
        return grant

    def _missed(self, started: float) -> DeadlinePassed:
        return DeadlinePassed(
            f"the deadline passed while it waited {time.monotonic() - started:.1f} s for a {self.name} "
            f"({self.slots} shared fairly among requests)"
        )

    def _abandon(self, waiter: _Waiter) -> None:
        """Take ``waiter`` out of the queue, or give back the slot it was granted meanwhile."""
        with self._lock:
            queue = self._queues.get(waiter.tenant)
            if queue is not None and waiter in queue:
                queue.remove(waiter)
                if not queue:
                    del self._queues[waiter.tenant]
                return
        if waiter.grant is not None:
            waiter.grant.release()

    def _release(self, tenant: str) -> None:
        with self._lock:
            self._held[tenant] -= 1
            if self._held[tenant] <= 0:
                del self._held[tenant]
            self._free += 1
            self._dispatch()

    def _dispatch(self) -> None:
        """Grant free slots to waiters in fair order (called with the lock held)."""
        now = time.monotonic()
        while self._free and self._queues:
            tenant = min(self._queues, key=lambda name: (self._held[name], self._served.get(name, -1)))
            if self._held[tenant] and self._free <= self.reserve:
                break  # the fewest-holding waiter already holds one: the reserve stays free
            queue = self._queues[tenant]
            waiter = queue.popleft()
            if not queue:
                del self._queues[tenant]
            if waiter.deadline is not None and now >= waiter.deadline:
                waiter.wake()  # it finds no grant and raises DeadlinePassed
                continue
            self._free -= 1
            self._held[tenant] += 1
            self._served[tenant] = next(self._turn)
            waiter.grant = Grant(self, tenant, waiter.deadline, 0.0)
            waiter.wake()
        if len(self._served) > 4 * (len(self._queues) + len(self._held)) + 64:
            # Only tenants still waiting or holding need their turn remembered.
            self._served = {
                name: turn
                for name, turn in self._served.items()
                if name in self._queues or name in self._held
            }


def _settle(woken: asyncio.Future[None]) -> None:
    if not woken.done():  # a waiter that gave up (deadline, cancellation) was cancelled already
        woken.set_result(None)
