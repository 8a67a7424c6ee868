"""A TRL reward function that asks a ``trex-eval serve`` reward server, for a trainer that runs in
another environment (its own torch, its own machine) than the grader::

    # trex-eval serve -b nl4opt --port 8000          (the harness's environment)
    from trex_eval.reward.client import RemoteReward  # the trainer's: needs only httpx
    trainer = GRPOTrainer(..., reward_funcs=[RemoteReward("http://127.0.0.1:8000")])

Each call posts the batch to ``/v1/score`` and returns the rewards in order. Rows name their
problems as :class:`~.trl.TrlReward`'s do (a ``trex_problem`` JSON column, or ``benchmark`` +
``problem_id``). A 429 (the server's queue is full) and a 503 that carries a ``Retry-After``
(the bytes of bodies or the connections it holds at their limit) are retried after it; any
other failure raises, with the server's message: a reward that silently fell back to 0 would
train on noise. A rollout the server did not grade (its deadline passed, or the harness failed on
it: ``reward`` null, verdict ``not_run``) is ``None``, TRL's "no reward", never 0. Imports nothing
of trex-eval beyond this module (standard library and httpx).

:class:`AsyncRemoteReward` is the same over ``httpx.AsyncClient``, for TRL's async reward path::

    trainer = GRPOTrainer(..., reward_funcs=[AsyncRemoteReward("http://127.0.0.1:8000")])
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

import httpx

REWARD_KEY = "trex_problem"
"""The dataset column holding a row's problem as JSON (as ``trex-eval export-rl`` writes it)."""


class RemoteRewardError(RuntimeError):
    """The reward server refused the batch or could not be reached (the message says why)."""


def completion_text(completion: Any) -> str:
    """The text of one completion as trainers pass it: a string, or a conversation (a list of
    ``{"role", "content"}`` messages, the last assistant message's content being the answer).

    Raises:
        TypeError: neither.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list | tuple):
        for message in reversed(completion):
            if isinstance(message, Mapping) and message.get("role", "assistant") == "assistant":
                content = message.get("content", "")
                return content if isinstance(content, str) else str(content)
        return ""
    raise TypeError(f"a completion of type {type(completion).__name__} is neither text nor messages")


def trainer_prompts(prompts: Any, count: int) -> list[str | list[dict[str, str]]]:
    """The ``prompts`` a trainer passed, one JSON-ready prompt per completion (text, or chat
    messages as ``{"role", "content"}``); ``""`` for each where none (or an unknown shape) was passed.
    A prompt only labels the stored sample (a reward log's): it never changes a reward."""
    if not isinstance(prompts, list | tuple) or len(prompts) != count:
        return [""] * count
    return [_prompt(item) for item in prompts]


def _prompt(item: Any) -> str | list[dict[str, str]]:
    if isinstance(item, str):
        return item
    if isinstance(item, list | tuple):
        messages = [
            {"role": str(m["role"]), "content": str(m.get("content", ""))}
            for m in item
            if isinstance(m, Mapping) and m.get("role") in ("system", "user", "assistant")
        ]
        if len(messages) == len(item):
            return messages
    return ""


class _RemoteBase:
    """What both forms share: the server, the batch's body and the reading of an answer."""

    def __init__(
        self, url: str, *, timeout_s: float = 600.0, retries: int = 60, name: str = "trex_eval"
    ) -> None:
        self.__name__ = name
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.retries = retries
        self.last_records: list[dict[str, Any]] = []

    def _body(self, prompts: Any, completions: Any, columns: Mapping[str, Any]) -> dict[str, Any]:
        texts = [completion_text(item) for item in completions or ()]
        try:
            named = row_problems(len(texts), columns)
        except RowsError as error:
            raise RemoteRewardError(f"{error}: {error.hint}" if error.hint else str(error)) from None
        problems = [json.loads(value) if isinstance(value, str) else value for value in named]
        return {
            "requests": [
                {"problem": p, "completion": t, "prompt": q}
                for p, t, q in zip(problems, texts, trainer_prompts(prompts, len(texts)), strict=True)
            ],
            "deadline_s": self.timeout_s,
        }

    @staticmethod
    def _wait_s(answer: httpx.Response) -> float | None:
        """Seconds to wait before asking again, or None for an answer to keep: 429 (queue full)
        and a 503 with Retry-After (bodies or connections at their limit, or the server draining
        for a restart) are waited out."""
        if answer.status_code == 429 or (answer.status_code == 503 and "retry-after" in answer.headers):
            return float(answer.headers.get("retry-after", "1"))
        return None

    def _unreachable(self, error: httpx.HTTPError) -> RemoteRewardError:
        return RemoteRewardError(f"the reward server at {self.url} could not be reached: {error}")

    def _rewards(self, answer: httpx.Response) -> list[float | None]:
        if answer.status_code != 200:
            raise RemoteRewardError(f"the reward server answered {answer.status_code}: {answer.text[:2000]}")
        records: list[dict[str, Any]] = answer.json()["records"]
        self.last_records = records
        return [None if record["reward"] is None else float(record["reward"]) for record in records]


class RemoteReward(_RemoteBase):
    """A TRL reward function backed by the reward server at ``url``.

    ``timeout_s``: seconds one batch may take (also sent as the request's deadline, so the server
    answers unfinished rollouts ``not_run`` rather than the client giving up); ``retries``: how
    many 429s to wait out. ``last_records`` keeps the latest batch's records (dicts). Blocks: for
    an event loop (TRL's async reward path) use :class:`AsyncRemoteReward`.
    """

    def __init__(
        self, url: str, *, timeout_s: float = 600.0, retries: int = 60, name: str = "trex_eval"
    ) -> None:
        super().__init__(url, timeout_s=timeout_s, retries=retries, name=name)
        self._client = httpx.Client(timeout=timeout_s + 30.0)

    def __call__(self, prompts: Any = None, completions: Any = None, **columns: Any) -> list[float | None]:
        body = self._body(prompts, completions, columns)
        for _ in range(self.retries + 1):
            try:
                answer = self._client.post(f"{self.url}/v1/score", json=body)
            except httpx.HTTPError as error:
                raise self._unreachable(error) from None
            wait_s = self._wait_s(answer)
            if wait_s is None:
                break
            time.sleep(wait_s)
        return self._rewards(answer)

    def close(self) -> None:
        self._client.close()


class AsyncRemoteReward(_RemoteBase):
    """:class:`RemoteReward` as a coroutine function over ``httpx.AsyncClient``: TRL runs async
    reward functions (an instance whose ``__call__`` is ``async``, as ``trl.trainer.utils.
    is_async_callable`` reads it) on an event loop of its own, a step's all at once; any other
    loop may await it too, many batches at once, with no thread per batch. Same arguments, answers
    and errors as :class:`RemoteReward`.

    A client's connections belong to the event loop that opened them, so each loop this object is
    awaited on gets a client of its own (made on its first call there); :meth:`aclose` closes the
    current loop's.
    """

    def __init__(
        self, url: str, *, timeout_s: float = 600.0, retries: int = 60, name: str = "trex_eval"
    ) -> None:
        super().__init__(url, timeout_s=timeout_s, retries=retries, name=name)
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client_here(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop = httpx.AsyncClient(timeout=self.timeout_s + 30.0), loop
        return self._client

    async def __call__(
        self, prompts: Any = None, completions: Any = None, **columns: Any
    ) -> list[float | None]:
        body = self._body(prompts, completions, columns)
        client = self._client_here()
        for _ in range(self.retries + 1):
            try:
                answer = await client.post(f"{self.url}/v1/score", json=body)
            except httpx.HTTPError as error:
                raise self._unreachable(error) from None
            wait_s = self._wait_s(answer)
            if wait_s is None:
                break
            await asyncio.sleep(wait_s)
        return self._rewards(answer)

    async def aclose(self) -> None:
        """Close the client of the running loop (a client of another loop is dropped with it)."""
        client, loop = self._client, self._loop
        self._client, self._loop = None, None
        if client is not None and loop is asyncio.get_running_loop():
            await client.aclose()


class RowsError(ValueError):
    """A trainer's dataset columns name no problem per row (``hint`` says what to add)."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def row_problems(count: int, columns: Mapping[str, Any]) -> list[Any]:
    """What names each of ``count`` rows' problem in a trainer's dataset columns (lists, one value
    per row): the :data:`REWARD_KEY` values as they are (JSON text or mappings), else a mapping
    ``{"benchmark", "problem_id"}`` per row from those two columns.

    Raises:
        RowsError: neither form is there, or a column's length is not ``count``.
    """
    if REWARD_KEY in columns:
        return _column(columns, REWARD_KEY, count)
    if "benchmark" in columns and "problem_id" in columns:
        pairs = zip(_column(columns, "benchmark", count), _column(columns, "problem_id", count), strict=True)
        return [{"benchmark": str(b), "problem_id": str(p)} for b, p in pairs]
    raise RowsError(
        f"the dataset rows name no problem (columns: {', '.join(sorted(columns)) or 'none'})",
        hint=f"add a '{REWARD_KEY}' column (`trex-eval export-rl` writes one), or 'benchmark' and "
        "'problem_id' columns",
    )


def _column(columns: Mapping[str, Any], name: str, count: int) -> list[Any]:
    values = list(columns[name])
    if len(values) != count:
        raise RowsError(f"column {name} has {len(values)} values for {count} completions")
    return values
