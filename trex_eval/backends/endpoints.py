"""Several replicas of one model behind one client: least-outstanding balancing and failover.

``base_url`` may name several endpoints (``http://node1:8000/v1,http://node2:8000/v1``); they
must serve the same model with the same weights (vLLM replicas, one per node). The
OpenAI-compatible client then sends every attempt to the *healthy* endpoint with the fewest
requests in flight (ties: the one that has served fewest), so a slow replica receives less work.

Health: an attempt that ends in a transport failure (refused, reset, timed out, cut off) or an
HTTP 502/503/504 takes its endpoint out of rotation; the retry of that request goes at once (no
backoff: :attr:`~.openai_retry.Failure.failover`) to another healthy endpoint when there is one,
and counts against the request's retry budget like any retry. A background probe
(``GET <root>/models``, every ``probe_interval_s`` seconds, doubling to 30 s while it keeps
failing) re-admits the endpoint when it answers 200 again. When every endpoint is out, attempts
go to the one that has been out longest (so the retry budget, not the balancer, decides when a
request fails). Other statuses (4xx, 500, 429) leave the endpoint in rotation: they are answers,
not a dead replica.

Each completion records the endpoint that produced it (``Completion.endpoint``, in
``completions.jsonl`` and ``samples.jsonl``); the client's ``describe()`` (the run manifest's
``provenance.backend``) lists the endpoints, and ``endpoint_stats()`` how many completions each
served, its failed attempts and its health now. At the end of a run the manifest's
``provenance.endpoints`` (:func:`endpoint_summary`) counts, per endpoint, the stored completions
it served and the failed requests it was tried last for (over every session of a resumed run),
with this session's live counters.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trex_eval.backends.openai_retry import Failure
from trex_eval.records import Completion

if TYPE_CHECKING:
    import httpx  # annotations only: a run that reaches no endpoint never loads httpx

_DOWN_STATUSES = frozenset({502, 503, 504})
_PROBE_MAX_S = 30.0
_SEPARATORS = re.compile(r"[,\s]+")


def split_base_urls(text: str) -> list[str]:
    """The endpoints of a ``base_url`` option: one URL, or several separated by commas or spaces."""
    return [part for part in _SEPARATORS.split(text.strip()) if part]


def is_loopback(url: httpx.URL) -> bool:
    """Whether ``url`` names this machine (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    host = url.host.strip("[]").lower()
    return host == "localhost" or host == "::1" or host.startswith("127.")


@dataclass
class Endpoint:
    """One replica: its API root, its public form (no credentials), and live counters."""

    root: httpx.URL
    public: str
    outstanding: int = 0
    served: int = 0
    failed_attempts: int = 0
    down_since: float | None = None
    probe_delay_s: float = 0.0

    @property
    def healthy(self) -> bool:
        return self.down_since is None

    def facts(self) -> dict[str, object]:
        return {
            "url": self.public,
            "served": self.served,
            "failed_attempts": self.failed_attempts,
            "healthy": self.healthy,
        }


Probe = Callable[[Endpoint], Awaitable[bool]]
"""Whether an endpoint answers its health check now."""


class EndpointPool:
    """The endpoints of one client, their health, and the background re-admission probe.

    Not thread-safe: used from one event loop (the client's).
    """

    def __init__(self, endpoints: list[Endpoint], *, probe_interval_s: float = 1.0) -> None:
        if not endpoints:
            raise ValueError("an endpoint pool needs at least one endpoint")
        self.endpoints = endpoints
        self.probe_interval_s = probe_interval_s
        self._probe: Probe | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def __len__(self) -> int:
        return len(self.endpoints)

    def pick(self) -> Endpoint:
        """The endpoint for the next attempt (see the module docstring)."""
        healthy = [e for e in self.endpoints if e.healthy]
        if healthy:
            return min(healthy, key=lambda e: (e.outstanding, e.served))
        return min(self.endpoints, key=lambda e: e.down_since or 0.0)

    def succeeded(self, endpoint: Endpoint) -> None:
        endpoint.served += 1
        self._admit(endpoint)

    def failed(self, endpoint: Endpoint, failure: Failure) -> bool:
        """Record a failed attempt; ``True`` when the endpoint was taken out and another healthy
        one can take the retry at once."""
        endpoint.failed_attempts += 1
        if failure.status is not None and failure.status not in _DOWN_STATUSES:
            return False
        if endpoint.healthy:
            endpoint.down_since = time.monotonic()
            endpoint.probe_delay_s = self.probe_interval_s
            self._wake.set()
        return any(e.healthy for e in self.endpoints)

    def mark_down(self, endpoint: Endpoint) -> None:
        """Take ``endpoint`` out of rotation (unreachable at start-up)."""
        if endpoint.healthy:
            endpoint.down_since = time.monotonic()
            endpoint.probe_delay_s = self.probe_interval_s
            self._wake.set()

    def start(self, probe: Probe) -> None:
        """Start the re-admission probe (a no-op for a single endpoint: nothing to fail over to)."""
        self._probe = probe
        if len(self.endpoints) > 1 and self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._probe_loop(), name="trex-endpoint-probe"
            )

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _admit(self, endpoint: Endpoint) -> None:
        endpoint.down_since = None
        endpoint.probe_delay_s = 0.0

    async def _probe_loop(self) -> None:
        assert self._probe is not None
        while True:
            down = [e for e in self.endpoints if not e.healthy]
            if not down:
                self._wake.clear()
                await self._wake.wait()
                continue
            delay = min(e.probe_delay_s for e in down)
            await asyncio.sleep(delay)
            for endpoint in [e for e in self.endpoints if not e.healthy]:
                if await self._probe(endpoint):
                    self._admit(endpoint)
                else:
                    endpoint.probe_delay_s = min(
                        _PROBE_MAX_S, max(self.probe_interval_s, endpoint.probe_delay_s * 2)
                    )


def endpoint_summary(
    completions: Iterable[Completion], *, live: Sequence[Mapping[str, object]] = ()
) -> dict[str, object] | None:
    """Which endpoints served a run, for its manifest (``provenance.endpoints``).

    ``served``: per endpoint, the completions without error it produced; ``failed``: per
    endpoint, the completions that failed after their retries with it tried last; ``session``:
    the live counters of this session's client (``endpoint_stats()``: failed attempts include
    those retried elsewhere). ``None`` when no completion names an endpoint (a replay or
    reference run, or none generated).
    """
    served: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for completion in completions:
        if completion.endpoint is None:
            continue
        (failed if completion.error is not None else served)[completion.endpoint] += 1
    if not served and not failed and not live:
        return None
    order = list(dict.fromkeys([*(str(e.get("url")) for e in live), *served, *failed]))
    return {
        "served": {url: served[url] for url in order},
        "failed": {url: failed[url] for url in order},
        "session": [dict(e) for e in live],
    }
