"""Options of the OpenAI-compatible client: the validated value object and the API root URL.

What each option means is documented in :mod:`trex_eval.backends.openai_compat`; this module
holds their types, defaults and validation, shared by the ``openai`` backend and the backends
that delegate to its client (``vllm``, ``local``).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trex_eval.backends.base import BackendSpec
from trex_eval.backends.openai_retry import RetryPolicy
from trex_eval.backends.option_errors import invalid_options, unknown_options
from trex_eval.errors import ConfigError

# Request fields the client owns; ``extra_body`` may add fields but not replace these.
_RESERVED_BODY_KEYS = frozenset(
    {"model", "messages", "temperature", "top_p", "max_tokens", "seed", "stop", "n"}
)


class ClientOptions(BaseModel):
    """Validated options of the OpenAI-compatible client (see :mod:`~trex_eval.backends.openai_compat`).

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
        raise unknown_options(
            unknown, CLIENT_OPTION_KEYS, backend=spec.backend, where=f"model preset '{spec.name}'"
        )
    try:
        return ClientOptions.model_validate(known)
    except ValidationError as exc:
        raise invalid_options(
            exc, CLIENT_OPTION_KEYS, backend=spec.backend, where=f"model preset '{spec.name}'"
        ) from None


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


def endpoint(root: httpx.URL, leaf: str) -> httpx.URL:
    """The URL of ``leaf`` (``"chat/completions"``, ``"models"``) under the API root."""
    return root.copy_with(path=f"{root.path}/{leaf}")
