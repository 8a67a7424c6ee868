"""Several endpoints behind one client: balancing, failover when a replica dies, re-admission.

Two real loopback HTTP servers stand in for two vLLM replicas (``tests/support/fake_server.py``).
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

from fake_server import Action, FakeOpenAIServer, Reply, Status
from test_openai_compat import generate_all, request, spec

from trex_eval.backends.openai_compat import OpenAICompatBackend
from trex_eval.records import Completion


def test_a_replica_dying_mid_run_loses_and_duplicates_nothing() -> None:
    kill_after = 6
    killed = threading.Event()

    def dying(key: str, attempt: int) -> Action:
        if len(dying_server.chat_requests()) >= kill_after and not killed.is_set():
            killed.set()
            threading.Thread(target=dying_server.kill, daemon=True).start()
        return Reply(delay_s=0.1)

    with (
        FakeOpenAIServer(dying) as dying_server,
        FakeOpenAIServer(lambda k, n: Reply(delay_s=0.02)) as survivor,
    ):
        backend = OpenAICompatBackend(spec(f"{dying_server.base_url},{survivor.base_url}", concurrency=3))
        keys = [f"p{i}" for i in range(40)]
        completions = generate_all(backend, [request(k) for k in keys])
        facts = backend.describe()
        stats = backend.endpoint_stats()

    assert killed.is_set()
    # Nothing lost: every request has its answer; nothing duplicated: one completion per request.
    assert [c.problem_id for c in completions] == keys
    assert all(c.error is None and c.text == f"answer {c.problem_id}" for c in completions)
    by_endpoint = Counter(c.endpoint for c in completions)
    assert set(by_endpoint) <= {dying_server.base_url, survivor.base_url}
    # A completion credited to the dead replica is one it really sent before dying.
    from_dead = [c.problem_id for c in completions if c.endpoint == dying_server.base_url]
    assert set(from_dead) <= set(dying_server.answered) and len(from_dead) < kill_after
    # The survivor served the rest, each once.
    from_survivor = [c.problem_id for c in completions if c.endpoint == survivor.base_url]
    assert len(from_survivor) == len(keys) - len(from_dead) >= len(keys) - kill_after
    assert Counter(survivor.answered)[from_survivor[0]] == 1
    # Requests cut off by the death were retried elsewhere (more than one attempt).
    assert any(c.attempts > 1 and c.endpoint == survivor.base_url for c in completions)
    endpoints = {e["url"]: e for e in stats}
    assert endpoints[dying_server.base_url]["healthy"] is False
    assert endpoints[dying_server.base_url]["failed_attempts"] >= 1
    assert endpoints[survivor.base_url]["served"] == len(from_survivor)
    assert facts["endpoint"] == f"{dying_server.base_url},{survivor.base_url}"
    assert facts["endpoints"] == [dying_server.base_url, survivor.base_url]


def test_least_outstanding_sends_more_work_to_the_faster_replica() -> None:
    with (
        FakeOpenAIServer(lambda k, n: Reply(delay_s=0.3)) as slow,
        FakeOpenAIServer(lambda k, n: Reply(delay_s=0.01)) as fast,
    ):
        backend = OpenAICompatBackend(spec(f"{slow.base_url},{fast.base_url}", concurrency=4))
        completions = generate_all(backend, [request(f"p{i}") for i in range(40)])
    assert all(c.error is None for c in completions)
    served = Counter(c.endpoint for c in completions)
    assert served[slow.base_url] >= 1  # in rotation from the start
    assert served[fast.base_url] > 3 * served[slow.base_url]
    assert slow.max_in_flight <= 4 and fast.max_in_flight <= 4  # concurrency is per endpoint


def test_an_endpoint_out_of_rotation_is_readmitted_when_healthy() -> None:
    state = {"up": False}

    def flaky(key: str, attempt: int) -> Action:
        return Reply() if state["up"] else Status(503)

    async def scenario(backend: OpenAICompatBackend, flaky_server: FakeOpenAIServer) -> list[Completion]:
        await backend.start()
        try:
            first = [await backend.generate(request(f"a{i}")) for i in range(6)]
            state["up"] = True
            flaky_server.models_status = 200
            await asyncio.sleep(2.5)  # the probe runs every second while an endpoint is out
            second = list(await asyncio.gather(*(backend.generate(request(f"b{i}")) for i in range(12))))
        finally:
            await backend.close()
        return first + second

    with FakeOpenAIServer(flaky) as flaky_server, FakeOpenAIServer() as steady:
        backend = OpenAICompatBackend(spec(f"{flaky_server.base_url},{steady.base_url}", concurrency=2))
        completions = asyncio.run(scenario(backend, flaky_server))
    assert all(c.error is None for c in completions)
    first, second = completions[:6], completions[6:]
    assert {c.endpoint for c in first} == {steady.base_url}  # the 503 took it out at once
    assert sum(c.attempts for c in first) <= 7  # one failover, no backoff loop
    assert any(c.endpoint == flaky_server.base_url for c in second)  # re-admitted


def test_an_endpoint_down_at_start_is_skipped_and_the_run_starts() -> None:
    with FakeOpenAIServer() as alive:
        dead = FakeOpenAIServer()
        with dead:
            dead_url = dead.base_url
        backend = OpenAICompatBackend(spec(f"{dead_url}, {alive.base_url}"))
        completions = generate_all(backend, [request(f"p{i}") for i in range(5)])
    assert all(c.error is None and c.endpoint == alive.base_url for c in completions)
    assert all(c.attempts == 1 for c in completions)
