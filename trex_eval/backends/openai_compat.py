"""Backend for any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Serves vLLM and SGLang servers, llama.cpp's server, OpenAI and DeepSeek alike. The ``vllm`` and
``local`` backends start a server and then delegate every request to :class:`OpenAICompatBackend`,
passing the server's address as ``base_url``.

Why plain ``httpx`` and not the ``openai`` SDK: the retry contract below *is* this module's job,
and with the SDK we would switch its own retries off and then re-derive every decision (which
status, which ``Retry-After`` form, how many attempts so far, whether a 200 body was garbage) from
its exception classes. Non-standard fields also pass straight through a dict: ``reasoning_content``
(DeepSeek, vLLM reasoning parsers) in the response, ``chat_template_kwargs`` in the request.
``httpx`` is a dependency either way (the SDK is built on it).

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

Options (``BackendSpec.options``; defaults in :class:`ClientOptions`):

``base_url``
    Root of the API, as the OpenAI client takes it (``http://127.0.0.1:8000/v1``). A URL with no
    path gets ``/v1`` appended (``https://api.deepseek.com`` -> ``https://api.deepseek.com/v1``).
``api_key_env``
    Name of the environment variable that holds the API key. The key is read at ``start()``,
    sent as ``Authorization: Bearer``, never written anywhere, and scrubbed from error texts.
``concurrency``, ``timeout_s``, ``max_retries``, ``backoff_base_s``, ``backoff_max_s``, ``retry_after_max_s``
    See :class:`ClientOptions`.
``extra_body``
    A JSON object merged into every request body, e.g.
    ``{"chat_template_kwargs": {"enable_thinking": true}}``. It may not override the fields this
    module sets (model, messages and the sampling parameters).
``send_seed``
    Send the per-sample seed (default true); switch off for endpoints that reject ``seed``.
``verify_model``
    At start, when the server lists its models (``GET /models``), require the configured model
    among them (default true); switch off for endpoints that accept unlisted aliases.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trex_eval._version import __version__
from trex_eval.backends.base import Backend, BackendSpec, GenerationRequest
from trex_eval.config import getenv
from trex_eval.errors import BackendError, ConfigError
from trex_eval.records import Completion, Usage

_T = TypeVar("_T")

# Request fields this module owns; ``extra_body`` may add fields but not replace these.
_RESERVED_BODY_KEYS = frozenset(
    {"model", "messages", "temperature", "top_p", "max_tokens", "seed", "stop", "n"}
)
_RETRYABLE_STATUSES = frozenset({408, 409, 429})
_ERROR_EXCERPT_CHARS = 300
_PROBE_TIMEOUT_S = 30.0


class ClientOptions(BaseModel):
    """Validated options of the OpenAI-compatible client (see the module docstring).

    Attributes:
        base_url: API root; required unless the constructor is given one.
        api_key_env: environment variable holding the API key; ``None``: send no key.
        concurrency: most HTTP requests in flight at once (default 16).
        timeout_s: wall-clock limit of one attempt in seconds, connection to last byte
            (default 600). An attempt past it is abandoned and counts as a retryable failure.
        max_retries: retries after the first attempt (default 6, so at most 7 attempts).
        backoff_base_s: first backoff ceiling in seconds (default 0.5), doubled per retry.
        backoff_max_s: largest backoff ceiling in seconds (default 30).
        retry_after_max_s: longest server-requested wait honoured, in seconds (default 300);
            a longer ``Retry-After`` is cut to this.
        extra_body: JSON object merged into every request body (given as JSON text).
        send_seed: whether to send the per-sample seed.
        verify_model: whether to check the model against the server's ``/models`` list at start.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: int = Field(default=16, ge=1, le=4096)
    timeout_s: float = Field(default=600.0, gt=0)
    max_retries: int = Field(default=6, ge=0, le=100)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    retry_after_max_s: float = Field(default=300.0, ge=0)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    send_seed: bool = True
    verify_model: bool = True

    @field_validator("extra_body", mode="before")
    @classmethod
    def _parse_extra_body(cls, value: object) -> object:
        if value is None:
            return {}
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not valid JSON ({exc.msg} at char {exc.pos})") from None
        if not isinstance(value, dict):
            raise ValueError(
                'must be a JSON object, e.g. {"chat_template_kwargs": {"enable_thinking": true}}'
            )
        clashes = sorted(_RESERVED_BODY_KEYS.intersection(value))
        if clashes:
            raise ValueError(f"may not set {', '.join(clashes)}: use the preset's sampling settings instead")
        return value

    @model_validator(mode="after")
    def _check_backoff(self) -> ClientOptions:
        if self.backoff_max_s < self.backoff_base_s:
            raise ValueError("backoff_max_s must be at least backoff_base_s")
        return self

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_retries=self.max_retries,
            backoff_base_s=self.backoff_base_s,
            backoff_max_s=self.backoff_max_s,
            retry_after_max_s=self.retry_after_max_s,
        )


CLIENT_OPTION_KEYS: frozenset[str] = frozenset(ClientOptions.model_fields)
"""Option names the client reads; a backend delegating to it should accept these in its spec."""


def parse_options(spec: BackendSpec, *, strict: bool) -> ClientOptions:
    """Validate the client options in ``spec.options``.

    With ``strict`` an option the client does not know is an error (the ``openai`` backend);
    without, such keys are left to the backend that owns the spec (``vllm``, ``local``).

    Raises:
        ConfigError: an unknown (strict) or invalid option, naming the preset and the option.
    """
    known = {key: value for key, value in spec.options.items() if key in CLIENT_OPTION_KEYS}
    unknown = sorted(set(spec.options) - CLIENT_OPTION_KEYS)
    if strict and unknown:
        raise ConfigError(
            f"unknown option(s) {', '.join(unknown)} for backend '{spec.backend}'",
            where=f"model preset '{spec.name}'",
            hint=f"known options: {', '.join(sorted(CLIENT_OPTION_KEYS))}",
        )
    try:
        return ClientOptions.model_validate(known)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid option: {problems}", where=f"model preset '{spec.name}'") from None


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


@dataclass(frozen=True)
class _Failure:
    """One failed attempt: why, whether another attempt may succeed, the server's requested wait,
    and the HTTP status when the server answered at all."""

    reason: str
    retryable: bool
    retry_after_s: float | None = None
    status: int | None = None


@dataclass(frozen=True)
class _Reply:
    """The parts of a chat completion response that a Completion records."""

    text: str
    reasoning: str | None
    finish_reason: str | None
    usage: Usage
    model: str | None


def api_root(base_url: str) -> httpx.URL:
    """The API root URL: ``base_url`` without a trailing slash, ``/v1`` when it has no path.

    Raises:
        ConfigError: not an absolute http(s) URL.
    """
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"invalid base_url '{base_url}': {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"invalid base_url '{base_url}': expected an absolute http:// or https:// URL",
            hint="e.g. http://127.0.0.1:8000/v1",
        )
    path = url.path.rstrip("/")
    return url.copy_with(path=path or "/v1")


def _endpoint(root: httpx.URL, leaf: str) -> httpx.URL:
    return root.copy_with(path=f"{root.path}/{leaf}")


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
        self._root = api_root(root)
        self._public_endpoint = str(self._root.copy_with(username=None, password=None, query=None))
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
        concurrency = self._options.concurrency
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
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the connection pool. Idempotent."""
        client, self._client = self._client, None
        self._closed = True
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
            "model": self._model,
            "served_models": list(self._served_models) if self._served_models is not None else None,
            "authentication": self._authentication_label(),
            "options": options,
        }

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
        url = _endpoint(self._root, "chat/completions")
        timeout_s = self._options.timeout_s
        latencies: list[float] = []

        async def attempt() -> _Reply | _Failure:
            self._raise_if_unauthorised()
            async with slots:
                started = time.perf_counter()
                exchanged = await self._exchange(client, "POST", url, body=body, timeout_s=timeout_s)
                latencies.append(time.perf_counter() - started)
            if isinstance(exchanged, _Failure):
                return exchanged
            return self._read_chat_response(exchanged)

        outcome, attempts = await self._with_retries(attempt)
        seed = self._seed(request)
        if isinstance(outcome, _Failure):
            return Completion(
                problem_id=request.problem.id,
                sample_index=request.sample_index,
                text="",
                model=self._model,
                seed=seed,
                attempts=attempts,
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
        if self._options.api_key_env:
            return f"bearer token from ${self._options.api_key_env}"
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

    async def _with_retries(
        self, attempt: Callable[[], Awaitable[_T | _Failure]]
    ) -> tuple[_T | _Failure, int]:
        """Run ``attempt`` until it succeeds, fails for good, or the budget is spent."""
        number = 1
        while True:
            outcome = await attempt()
            if (
                not isinstance(outcome, _Failure)
                or not outcome.retryable
                or number > self._policy.max_retries
            ):
                return outcome, number
            await asyncio.sleep(
                self._policy.delay_s(number, retry_after_s=outcome.retry_after_s, rng=self._rng)
            )
            number += 1

    async def _exchange(
        self,
        client: httpx.AsyncClient,
        method: str,
        url: httpx.URL,
        *,
        body: Mapping[str, Any] | None,
        timeout_s: float,
    ) -> httpx.Response | _Failure:
        """One HTTP attempt: the response (any status, body read), or a transport failure.

        A 401 is latched and raised as BackendError: no later request can succeed either.
        """
        try:
            response = await asyncio.wait_for(client.request(method, url, json=body), timeout=timeout_s)
        except (asyncio.TimeoutError, httpx.TimeoutException):
            return _Failure(f"no response within {timeout_s:g} s", retryable=True)
        except httpx.TransportError as exc:
            return _Failure(f"connection error: {type(exc).__name__}: {exc}", retryable=True)
        except httpx.DecodingError as exc:
            return _Failure(f"undecodable response body: {exc}", retryable=True)
        if response.status_code == 401:
            self._auth_failure = f"the endpoint rejected the API key (HTTP 401: {self._excerpt(response)})"
            self._raise_if_unauthorised()
        return response

    def _raise_if_unauthorised(self) -> None:
        if self._auth_failure is None:
            return
        variable = self._options.api_key_env
        if self._explicit_key:
            hint = "the launcher's generated key was refused: the server may belong to another process"
        elif variable:
            hint = f"check the API key in the environment variable {variable}"
        else:
            hint = "this preset sends no API key: set option api_key_env to the variable that holds one"
        raise BackendError(
            self._auth_failure, where=f"model preset '{self.name}', {self._public_endpoint}", hint=hint
        )

    def _read_chat_response(self, response: httpx.Response) -> _Reply | _Failure:
        status = response.status_code
        if not 200 <= status < 300:
            return self._status_failure(response)
        try:
            payload = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _Failure(
                f"malformed response: body is not JSON: {self._excerpt(response)}", retryable=True
            )
        return _parse_chat_payload(payload)

    def _status_failure(self, response: httpx.Response) -> _Failure:
        status = response.status_code
        retryable = _is_retryable_status(status)
        retry_after = (
            parse_retry_after(response.headers.get("Retry-After"), now=time.time()) if retryable else None
        )
        return _Failure(
            f"HTTP {status}{'' if retryable else ', not retried'}: {self._excerpt(response)}",
            retryable=retryable,
            retry_after_s=retry_after,
            status=status,
        )

    def _excerpt(self, response: httpx.Response) -> str:
        """A short, key-free description of an error body (its ``error.message`` if JSON)."""
        try:
            text = response.text
        except UnicodeDecodeError:
            return f"<{len(response.content)} undecodable bytes>"
        try:
            payload = json.loads(text)
        except json.JSONDecodeError:
            payload = None
        if isinstance(payload, dict):
            error = payload.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            if isinstance(message, str) and message:
                text = message
        text = " ".join(text.split())
        if len(text) > _ERROR_EXCERPT_CHARS:
            text = text[:_ERROR_EXCERPT_CHARS] + "..."
        return self._redact(text or "<empty body>")

    def _redact(self, text: str) -> str:
        # A misconfigured proxy may echo request headers into an error body; the key must not
        # reach a Completion, the run directory or a log.
        return text.replace(self._api_key, "<redacted>") if self._api_key else text

    async def _probe_models(self) -> tuple[str, ...] | None:
        client, _ = self._require_started()
        url = _endpoint(self._root, "models")
        timeout_s = min(self._options.timeout_s, _PROBE_TIMEOUT_S)

        async def attempt() -> httpx.Response | _Failure:
            outcome = await self._exchange(client, "GET", url, body=None, timeout_s=timeout_s)
            if isinstance(outcome, httpx.Response) and not outcome.is_success:
                return self._status_failure(outcome)
            return outcome

        outcome, attempts = await self._with_retries(attempt)
        if isinstance(outcome, _Failure):
            if outcome.status is not None:
                return None  # the server answers but lists no models: generation may still work
            raise BackendError(
                f"cannot reach the endpoint after {attempts} attempt(s): {self._redact(outcome.reason)}",
                where=f"model preset '{self.name}', {self._public_endpoint}",
                hint="check base_url and that the server is running",
            )
        served = _model_ids(outcome)
        if served is not None and self._options.verify_model and self._model not in served:
            listed = ", ".join(served[:20]) or "none"
            raise BackendError(
                f"the endpoint does not serve model '{self._model}' (it serves: {listed})",
                where=f"model preset '{self.name}', {self._root}",
                hint="override the model name (--opt model=NAME), or set option verify_model=false "
                "if the endpoint accepts names it does not list",
            )
        return served


def _is_retryable_status(status: int) -> bool:
    return status in _RETRYABLE_STATUSES or status >= 500


def _model_ids(response: httpx.Response) -> tuple[str, ...] | None:
    """Model ids from a ``/models`` response, or ``None`` if it is not the expected shape."""
    try:
        payload = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        return None
    return tuple(e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str))


def _parse_chat_payload(payload: object) -> _Reply | _Failure:
    """The reply inside a chat completion body; a malformed body is a retryable failure."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(payload, dict) or not isinstance(choices, list) or not choices:
        error = payload.get("error") if isinstance(payload, dict) else None
        detail = f"error {json.dumps(error)[:_ERROR_EXCERPT_CHARS]}" if error else "no choices"
        return _Failure(f"malformed response: {detail}", retryable=True)
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(first, dict) or not isinstance(message, dict):
        return _Failure("malformed response: choices[0] has no message", retryable=True)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return _Failure("malformed response: message.content is not a string", retryable=True)
    # vLLM's reasoning parsers and DeepSeek use ``reasoning_content``; newer vLLM uses ``reasoning``.
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    finish_reason = first.get("finish_reason")
    model = payload.get("model")
    return _Reply(
        text=content or "",
        reasoning=reasoning if isinstance(reasoning, str) else None,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=_usage(payload.get("usage")),
        model=model if isinstance(model, str) and model else None,
    )


def _usage(raw: object) -> Usage:
    if not isinstance(raw, dict):
        return Usage()

    def count(key: str) -> int | None:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    return Usage(
        prompt_tokens=count("prompt_tokens"),
        completion_tokens=count("completion_tokens"),
        total_tokens=count("total_tokens"),
    )


def create(spec: BackendSpec) -> Backend:
    """Factory of the ``openai`` backend: options validated strictly (unknown keys are errors).

    Raises:
        ConfigError: unknown or invalid options, no base_url, no model name.
    """
    parse_options(spec, strict=True)
    return OpenAICompatBackend(spec)
