"""Measure the ``openai`` SDK as a transport against the client's own httpx path (issue 14).

Prints: cold import time of each (median of 5 fresh interpreters), the median and p90 wall time of
one chat request over keep-alive loopback HTTP (N sequential requests against the fake server of
the tests), and what each path hands back for the fault cases the client's tests inject (cut-off
body, malformed 200, 503 + Retry-After, 401). The figures are quoted in the docstring of
``trex_eval/backends/openai_compat.py``.

Usage: .venv/bin/python scripts/bench_openai_sdk.py [N]   (needs the openai package installed)
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import httpx
from fake_server import Drop, FakeOpenAIServer, Malformed, Reply, Status

BODY = {"model": "served-model", "messages": [{"role": "user", "content": "k"}], "max_tokens": 8}


def import_ms(module: str) -> float:
    times = []
    for _ in range(5):
        code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(out.stdout) * 1000)
    return statistics.median(times)


async def httpx_path(base_url: str, n: int) -> list[float]:
    async with httpx.AsyncClient(trust_env=False) as client:
        times = []
        for _ in range(n):
            started = time.perf_counter()
            response = await client.post(f"{base_url}/chat/completions", json=BODY)
            response.json()
            times.append(time.perf_counter() - started)
        return times


async def sdk_path(base_url: str, n: int) -> list[float]:
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0)
    times = []
    try:
        for _ in range(n):
            started = time.perf_counter()
            raw = await client.chat.completions.with_raw_response.create(**BODY)  # type: ignore[call-overload]
            raw.http_response.json()
            times.append(time.perf_counter() - started)
    finally:
        await client.close()
    return times


async def sdk_fault(base_url: str) -> str:
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0)
    try:
        raw = await client.chat.completions.with_raw_response.create(**BODY)  # type: ignore[call-overload]
        try:
            raw.parse()
            return f"HTTP {raw.http_response.status_code}, parse() ok"
        except Exception as error:
            return f"HTTP {raw.http_response.status_code}, parse() raised {type(error).__name__}"
    except openai.APIStatusError as error:
        wait = error.response.headers.get("retry-after")
        return f"raised {type(error).__name__} (status {error.status_code}, Retry-After {wait})"
    except openai.APIError as error:
        return f"raised {type(error).__name__}"
    finally:
        await client.close()


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[int(len(ordered) * 0.9)]
    return f"median {statistics.median(ordered) * 1e6:.0f} us, p90 {p90 * 1e6:.0f} us"


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    plain, sdk = import_ms("httpx"), import_ms("openai")
    print(f"cold import (median of 5): httpx {plain:.0f} ms, openai {sdk:.0f} ms")
    with FakeOpenAIServer(lambda key, attempt: Reply()) as server:
        for label, path in (("httpx", httpx_path), ("openai SDK (raw)", sdk_path)):
            asyncio.run(path(server.base_url, 20))  # warm
            print(f"{label:17s} {n} sequential requests: {summary(asyncio.run(path(server.base_url, n)))}")
    faults = {
        "cut-off body": Drop(),
        "malformed 200": Malformed(),
        "503 + Retry-After": Status(503, headers=(("Retry-After", "7"),)),
        "401": Status(401),
    }
    for label, action in faults.items():
        with FakeOpenAIServer(lambda key, attempt, a=action: a) as server:
            print(f"SDK on {label}: {asyncio.run(sdk_fault(server.base_url))}")


if __name__ == "__main__":
    main()
