"""Measure prompt and decode speed of the ``local`` backend's models on this machine.

Starts each model through the real ``local`` backend (weights verified or assembled, llama.cpp
child process, warm-up), then sends the same chat request ``--repeats`` times straight to the
server, with ``ignore_eos`` so every answer has exactly ``--max-tokens`` tokens, and prints
llama.cpp's own timings (prompt tokens/s, decode tokens/s; median over the repeats) with the
load average before and after, since other processes on the machine change these figures::

    python scripts/bench_local_models.py --threads 1 2
    python scripts/bench_local_models.py --models qwen2.5-coder-1.5b-instruct-q4 --max-tokens 64
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import httpx

from trex_eval.backends import BackendSpec, create_backend
from trex_eval.backends.model_files import LOCAL_MODELS

PROMPT = (
    "A factory makes chairs and tables. A chair needs 2 hours of work and earns $30; a table "
    "needs 5 hours and earns $70. There are 40 hours of work available and at most 6 tables can "
    "be sold. Write a Python program using PuLP that finds the most profitable plan and prints "
    "the optimal objective value."
)


async def measure(model: str, *, threads: int, max_tokens: int, repeats: int) -> None:
    backend = create_backend(
        BackendSpec(name=model, backend="local", model=model, options={"threads": threads})
    )
    started = time.perf_counter()
    await backend.start()
    startup_s = time.perf_counter() - started
    endpoint = str(backend.describe()["endpoint"])
    body = {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "ignore_eos": True,
    }
    load_before = os.getloadavg()[0]
    prompt_rates, decode_rates = [], []
    try:
        async with httpx.AsyncClient(timeout=3600) as client:
            for _ in range(repeats):
                response = await client.post(f"{endpoint}/v1/chat/completions", json=body)
                response.raise_for_status()
                timings = response.json()["timings"]
                prompt_rates.append(timings["prompt_per_second"])
                decode_rates.append(timings["predicted_per_second"])
    finally:
        await backend.close()
    print(
        f"{model:32s} threads={threads}  start {startup_s:5.1f} s  "
        f"prompt {statistics.median(prompt_rates):6.1f} tok/s  "
        f"decode {statistics.median(decode_rates):6.1f} tok/s  "
        f"(median of {repeats} x {max_tokens} tokens; load {load_before:.1f} -> {os.getloadavg()[0]:.1f})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=sorted(LOCAL_MODELS), choices=sorted(LOCAL_MODELS))
    parser.add_argument("--threads", nargs="+", type=int, default=[2])
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for model in args.models:
        for threads in args.threads:
            asyncio.run(measure(model, threads=threads, max_tokens=args.max_tokens, repeats=args.repeats))


if __name__ == "__main__":
    main()
