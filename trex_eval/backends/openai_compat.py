"""Backend for any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Serves vLLM and SGLang servers, llama.cpp's server, OpenAI and DeepSeek alike. The ``vllm`` and
``local`` backends start a server and then delegate every request to :class:`OpenAICompatBackend`,
passing the server's address as ``base_url``.

Why plain ``httpx``, not the ``openai`` SDK: docs/architecture.md ("Model backends"). Waits (for a
slot, a reply, a back-off) are told to the run's progress through :mod:`trex_eval.waits`.

Retry contract (per sample):

* retried: HTTP 408, 409, 429 and every 5xx; timeouts; connection errors (refused, reset,
  dropped mid-response); a 2xx body that is not the JSON of a chat completion.
* not retried: every other 4xx. The sample gets a :class:`~trex_eval.records.Completion` with
  ``error`` set at once.
* HTTP 401 is not a per-sample failure: the credentials will be refused for every sample, so
  :class:`~trex_eval.errors.BackendError` is raised, naming the environment variable that held the
  key, and every later :meth:`~OpenAICompatBackend.generate` call raises it too.
* waits: the server's ``Retry-After`` (delay-seconds or HTTP-date, capped at
  ``retry_after_max_s``) when it sends one, else "full jitter" exponential backoff, a uniform draw
  from ``[0, min(backoff_max_s, backoff_base_s * 2**(retry - 1))]``.
* after ``max_retries`` retries (``max_retries + 1`` attempts) the sample gets a Completion with
  ``error`` set; :meth:`~OpenAICompatBackend.generate` never raises for one failed sample.

Options (``BackendSpec.options``; defaults in :class:`~trex_eval.backends.openai_options.ClientOptions`):

``base_url``
    Root of the API, as the OpenAI client takes it (``http://127.0.0.1:8000/v1``). A URL with no
    path gets ``/v1`` appended (``https://api.deepseek.com`` -> ``https://api.deepseek.com/v1``).
    Several URLs (comma-separated) are replicas of one model: requests are balanced over the
    healthy ones and fail over (:mod:`~trex_eval.backends.endpoints`); ``concurrency`` is then
    per endpoint.
``api_key_env``
    Name of the environment variable that holds the API key. The key is read at ``start()``,
    sent as ``Authorization: Bearer``, never written anywhere, and scrubbed from error texts.
    An unset variable is an error, except when every endpoint is on loopback (a local server
    needs no key): then no key is sent.
``concurrency``, ``timeout_s``, ``max_retries``, ``backoff_base_s``, ``backoff_max_s``, ``retry_after_max_s``
    See :class:`~trex_eval.backends.openai_options.ClientOptions`.
``extra_body``
    A JSON object merged into every request body, e.g.
    ``{"chat_template_kwargs": {"enable_thinking": true}}``. It may not override the fields this
    module sets (model, messages and the sampling parameters).
``send_seed``
    Send the per-sample seed (default true); switch off for endpoints that reject ``seed``.
``verify_model``
    At start, when the server lists its models (``GET /models``), require the configured model
    among them (default true); switch off for endpoints that accept unlisted aliases.

Layout: :class:`OpenAICompatBackend` (lifecycle, request bodies, the 401 latch) and :data:`BACKEND`
here; options and URLs in ``openai_options``, retry decisions in ``openai_retry``, one HTTP attempt
in ``openai_http``, response parsing in ``openai_responses`` (their public names are re-exported).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Mapping
from typing import Any

import httpx

from trex_eval import waits
from trex_eval._version import __version__
from trex_eval.backends.base import Backend, BackendKind, BackendSpec, GenerationRequest
from trex_eval.backends.endpoints import Endpoint, EndpointPool, is_loopback, split_base_urls
from trex_eval.backends.openai_http import excerpt, redact, send, status_failure
from trex_eval.backends.openai_options import (
    CLIENT_OPTION_KEYS,
    ClientOptions,
    api_root,
    endpoint,
    parse_options,
)
from trex_eval.backends.openai_responses import Reply, model_ids, read_chat_response
from trex_eval.backends.openai_retry import Failure, RetryPolicy, parse_retry_after, with_retries
from trex_eval.config import getenv
from trex_eval.errors import BackendError, ConfigError
from trex_eval.records import Completion

__all__ = [
    "CLIENT_OPTION_KEYS",
    "ClientOptions",
    "OpenAICompatBackend",
    "RetryPolicy",
    "api_root",
    "create",
    "parse_options",
    "parse_retry_after",
]

_PROBE_TIMEOUT_S = 30.0
_HEALTH_TIMEOUT_S = 5.0


class OpenAICompatBackend:
    """Client of one OpenAI-compatible endpoint (see the module docstring for the contract).

    Args:
        spec: the model preset. ``spec.model`` is the served model name unless ``served_model``
            is given; options are read as described in the module docstring (unknown keys are
            ignored here: :func:`create` rejects them for the ``openai`` backend).
        base_url: API root, overriding ``options.base_url`` (a launcher passes its server's).
        api_key: the key itself, overriding ``options.api_key_env`` (a launcher that generated
            one). Never shown by :meth:`describe`.
        served_model: model name to request, overriding ``spec.model``.

    Raises:
        ConfigError: invalid options, no base URL, no model name.
    """

    def __init__(
        self,
        spec: BackendSpec,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        served_model: str | None = None,
        trust_env: bool = True,
    ) -> None:
        self.name = spec.name
        # False for servers the harness started on loopback: a proxy from the environment
        # (HTTP_PROXY) must not capture requests to 127.0.0.1.
        self._trust_env = trust_env
        self._options = parse_options(spec, strict=False)
        root = base_url or self._options.base_url
        if not root:
            raise ConfigError(
                "no base_url for an OpenAI-compatible endpoint",
                where=f"model preset '{spec.name}'",
                hint="set options.base_url in the preset or pass --opt base_url=http://host:port/v1",
            )
        roots = [api_root(url) for url in split_base_urls(root)]
        if not roots:
            raise ConfigError("base_url names no endpoint", where=f"model preset '{spec.name}'")
        self._root = roots[0]
        self._pool = EndpointPool(
            [
                Endpoint(root=r, public=str(r.copy_with(username=None, password=None, query=None)))
                for r in roots
            ]
        )
        self._public_endpoint = ",".join(e.public for e in self._pool.endpoints)
        self._loopback = all(is_loopback(r) for r in roots)
        self._keyless_loopback = False
        self._model = served_model or spec.model
        if not self._model:
            raise ConfigError(
                "no model name to request",
                where=f"model preset '{spec.name}'",
                hint="set `model:` to the name the server serves (see GET /v1/models)",
            )
        self._explicit_key = api_key
        self._policy = self._options.retry_policy()
        self._rng = random.Random()
        self._api_key: str | None = None
        self._client: httpx.AsyncClient | None = None
        self._slots: asyncio.Semaphore | None = None
        self._served_models: tuple[str, ...] | None = None
        self._auth_failure: str | None = None
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Read the API key, open the connection pool and ask the server which models it serves.

        Raises:
            ConfigError: ``api_key_env`` names a variable that is unset or empty.
            BackendError: the endpoint cannot be reached, rejects the key (401), or does not
                serve the model (when it lists its models and ``verify_model`` is on).
        """
        if self._client is not None:
            return
        self._api_key = self._explicit_key or self._key_from_environment()
        headers = {"User-Agent": f"trex-eval/{__version__}", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        concurrency = self._options.concurrency * len(self._pool)
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(self._options.timeout_s),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            trust_env=self._trust_env,
        )
        self._slots = asyncio.Semaphore(concurrency)
        self._closed = False
        try:
            self._served_models = await self._probe_models()
            self._pool.start(self._healthy)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the connection pool. Idempotent."""
        client, self._client = self._client, None
        self._closed = True
        await self._pool.close()
        if client is not None:
            await client.aclose()

    def describe(self) -> Mapping[str, object]:
        """Endpoint (no credentials, no query), requested and served models, options.

        ``served_models`` is the server's ``/models`` list, or ``None`` before :meth:`start` or
        when the server has no such endpoint.
        """
        options = self._options.model_dump(exclude={"base_url"})
        return {
            "backend": "openai",
            "endpoint": self._public_endpoint,
            "endpoints": [e.public for e in self._pool.endpoints],
            "model": self._model,
            "served_models": list(self._served_models) if self._served_models is not None else None,
            "authentication": self._authentication_label(),
            "options": options,
        }

    def endpoint_stats(self) -> list[dict[str, object]]:
        """Per endpoint: completions served, failed attempts, health now. (Not in
        :meth:`describe`, which the run records at start-up; each completion records its own
        ``endpoint``.)"""
        return [e.facts() for e in self._pool.endpoints]

    # ------------------------------------------------------------------ generation

    async def generate(self, request: GenerationRequest) -> Completion:
        """One chat completion for ``request``, retried per the module's contract.

        Returns:
            A Completion; on failure after the retry budget (or a non-retryable status) its
            ``error`` says why and ``attempts`` how many HTTP attempts were made.

        Raises:
            BackendError: the endpoint rejected the API key (now or on an earlier request), or
                the backend is not started.
        """
        client, slots = self._require_started()
        body = self._request_body(request)
        timeout_s = self._options.timeout_s
        latencies: list[float] = []
        used: list[Endpoint] = []

        async def attempt() -> Reply | Failure:
            self._raise_if_unauthorised()
            async with waits.holding(slots, "a free request slot (option concurrency)"):
                # Chosen once a slot is free, so that the in-flight counts are current.
                target = self._pool.pick()
                used.append(target)
                target.outstanding += 1
                started = time.perf_counter()
                try:
                    with waits.waiting(f"a model reply from {target.public}"):
                        exchanged = await self._exchange(
                            client,
                            "POST",
                            endpoint(target.root, "chat/completions"),
                            body=body,
                            timeout_s=timeout_s,
                        )
                finally:
                    target.outstanding -= 1
                latencies.append(time.perf_counter() - started)
            outcome = (
                exchanged
                if isinstance(exchanged, Failure)
                else read_chat_response(exchanged, secret=self._api_key)
            )
            if not isinstance(outcome, Failure):
                self._pool.succeeded(target)
            elif self._pool.failed(target, outcome) and outcome.retryable:
                outcome = dataclasses.replace(outcome, failover=True)
            return outcome

        outcome, attempts = await with_retries(attempt, self._policy, self._rng)
        served_by = used[-1].public if used else None
        seed = self._seed(request)
        if isinstance(outcome, Failure):
            return Completion(
                problem_id=request.problem.id,
                sample_index=request.sample_index,
                text="",
                model=self._model,
                seed=seed,
                attempts=attempts,
                endpoint=served_by,
                error=self._redact(f"{outcome.reason} (gave up after {attempts} attempt(s))"),
            )
        return Completion(
            problem_id=request.problem.id,
            sample_index=request.sample_index,
            text=outcome.text,
            reasoning=outcome.reasoning,
            finish_reason=outcome.finish_reason,
            usage=outcome.usage,
            latency_s=latencies[-1],
            model=outcome.model or self._model,
            seed=seed,
            attempts=attempts,
            endpoint=served_by,
        )

    # ------------------------------------------------------------------ internals

    def _require_started(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        if self._client is None or self._slots is None:
            state = "closed" if self._closed else "not started"
            raise BackendError(f"backend for model preset '{self.name}' is {state}: call start() first")
        return self._client, self._slots

    def _key_from_environment(self) -> str | None:
        variable = self._options.api_key_env
        if variable is None:
            return None
        key = getenv(variable)
        if key is None and self._loopback:
            self._keyless_loopback = True  # a local server needs no key
            return None
        if key is None:
            raise ConfigError(
                f"environment variable {variable} is not set",
                where=f"model preset '{self.name}'",
                hint=f"export {variable}=<your API key> (the key is read from the environment only)",
            )
        return key

    def _authentication_label(self) -> str:
        if self._explicit_key:
            return "bearer token given by the launcher"
        if self._options.api_key_env and not self._keyless_loopback:
            return f"bearer token from ${self._options.api_key_env}"
        if self._keyless_loopback:
            return f"none (${self._options.api_key_env} unset; loopback endpoint)"
        return "none"

    def _seed(self, request: GenerationRequest) -> int | None:
        """The seed sent with ``request`` (the per-sample seed, else the sampling seed), if any."""
        if not self._options.send_seed:
            return None
        return request.seed if request.seed is not None else request.params.seed

    def _request_body(self, request: GenerationRequest) -> dict[str, Any]:
        params = request.params
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": m.role, "content": m.content} for m in request.prompt.messages],
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
        }
        seed = self._seed(request)
        if seed is not None:
            body["seed"] = seed
        if params.stop:
            body["stop"] = list(params.stop)
        body.update(self._options.extra_body)
        return body

    async def _exchange(
        self,
        client: httpx.AsyncClient,
        method: str,
        url: httpx.URL,
        *,
        body: Mapping[str, Any] | None,
        timeout_s: float,
    ) -> httpx.Response | Failure:
        """One HTTP attempt: the response (any status, body read), or a transport failure.

        A 401 is latched and raised as BackendError: no later request can succeed either.
        """
        response = await send(client, method, url, body=body, timeout_s=timeout_s)
        if isinstance(response, httpx.Response) and response.status_code == 401:
            self._auth_failure = (
                f"the endpoint rejected the API key (HTTP 401: {excerpt(response, secret=self._api_key)})"
            )
            self._raise_if_unauthorised()
        return response

    def _raise_if_unauthorised(self) -> None:
        if self._auth_failure is None:
            return
        variable = self._options.api_key_env
        if self._explicit_key:
            hint = "the launcher's generated key was refused: the server may belong to another process"
        elif variable and self._keyless_loopback:
            hint = f"this loopback endpoint wants a key: export {variable}=<its key>"
        elif variable:
            hint = f"check the API key in the environment variable {variable}"
        else:
            hint = "this preset sends no API key: set option api_key_env to the variable that holds one"
        raise BackendError(
            self._auth_failure, where=f"model preset '{self.name}', {self._public_endpoint}", hint=hint
        )

    def _redact(self, text: str) -> str:
        return redact(text, self._api_key)

    async def _probe_models(self) -> tuple[str, ...] | None:
        """Ask every endpoint for its models; endpoints that do not answer start out of rotation.

        Retried (per the policy) until at least one endpoint answers.
        """
        client, _ = self._require_started()
        timeout_s = min(self._options.timeout_s, _PROBE_TIMEOUT_S)
        answers: dict[int, httpx.Response | Failure] = {}

        async def one(index: int, target: Endpoint) -> None:
            url = endpoint(target.root, "models")
            with waits.waiting(f"the model server at {target.public} to answer GET /models"):
                outcome = await self._exchange(client, "GET", url, body=None, timeout_s=timeout_s)
            if isinstance(outcome, httpx.Response) and not outcome.is_success:
                outcome = status_failure(outcome, secret=self._api_key)
            answers[index] = outcome

        async def attempt() -> dict[int, httpx.Response | Failure] | Failure:
            pending = [(i, e) for i, e in enumerate(self._pool.endpoints) if _unreachable(answers.get(i))]
            await asyncio.gather(*(one(i, e) for i, e in pending))
            failures = [a for a in answers.values() if _unreachable(a)]
            if len(failures) == len(self._pool):
                return (
                    failures[0] if isinstance(failures[0], Failure) else Failure("no answer", retryable=True)
                )
            return answers

        outcome, attempts = await with_retries(attempt, self._policy, self._rng)
        if isinstance(outcome, Failure):
            raise BackendError(
                f"cannot reach the endpoint after {attempts} attempt(s): {self._redact(outcome.reason)}",
                where=f"model preset '{self.name}', {self._public_endpoint}",
                hint="check base_url and that the server is running",
            )
        served: tuple[str, ...] | None = None
        for index, target in enumerate(self._pool.endpoints):
            answer = outcome.get(index)
            if _unreachable(answer):
                self._pool.mark_down(target)
                continue
            if not isinstance(answer, httpx.Response):
                continue  # the server answers but lists no models: generation may still work
            listed = model_ids(answer)
            if listed is not None and self._options.verify_model and self._model not in listed:
                shown = ", ".join(listed[:20]) or "none"
                raise BackendError(
                    f"the endpoint does not serve model '{self._model}' (it serves: {shown})",
                    where=f"model preset '{self.name}', {target.root}",
                    hint="override the model name (--opt model=NAME), or set option verify_model=false "
                    "if the endpoint accepts names it does not list",
                )
            served = served if served is not None else listed
        return served

    async def _healthy(self, target: Endpoint) -> bool:
        """The re-admission probe of an endpoint taken out of rotation: ``GET /models`` is 200."""
        client = self._client
        if client is None:
            return False
        url = endpoint(target.root, "models")
        outcome = await self._exchange(client, "GET", url, body=None, timeout_s=_HEALTH_TIMEOUT_S)
        return isinstance(outcome, httpx.Response) and outcome.status_code == 200


def _unreachable(answer: httpx.Response | Failure | None) -> bool:
    """No answer yet, or a failure without any HTTP status (an error status is an answer)."""
    return answer is None or (isinstance(answer, Failure) and answer.status is None)


def create(spec: BackendSpec) -> Backend:
    """Factory of the ``openai`` backend: options validated strictly (unknown keys are errors).

    Raises:
        ConfigError: unknown or invalid options, no base_url, no model name.
    """
    parse_options(spec, strict=True)
    return OpenAICompatBackend(spec)


def dry_run(spec: BackendSpec) -> Mapping[str, object]:
    """The endpoints, model and key source the ``openai`` backend would use (no request sent)."""
    parse_options(spec, strict=True)
    backend = OpenAICompatBackend(spec)
    facts = dict(backend.describe())
    variable = backend._options.api_key_env
    if variable is None:
        facts["authentication"] = "none"
    elif getenv(variable) is not None:
        facts["authentication"] = f"bearer token from ${variable} (set)"
    elif backend._loopback:
        facts["authentication"] = f"none (${variable} unset; loopback endpoint)"
    else:
        facts["authentication"] = f"${variable} is NOT set"
        facts["problem"] = f"${variable} is not set: the run would stop at start-up (export it first)"
    return facts


BACKEND = BackendKind(create=create, dry_run=dry_run)
