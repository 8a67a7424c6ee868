"""Backends that start their own model server and delegate every request to it over HTTP.

:class:`ServedBackend` is the shared lifecycle of the ``vllm`` and ``local`` backends: ``start()``
prepares and launches a :class:`~trex_eval.backends.server_process.ServerProcess`, waits until it
is ready, then opens an :class:`~trex_eval.backends.openai_compat.OpenAICompatBackend` on its
loopback address; ``generate()`` is that client's; ``close()`` closes the client and stops the
server. A subclass says only how to launch its server and what to record about it.

Options: a served backend's preset mixes its own options (validated by a pydantic model the
subclass names) with the HTTP client's (``concurrency``, ``timeout_s``, retries, ``extra_body``,
...; see :mod:`trex_eval.backends.openai_compat`). ``base_url`` and ``api_key_env`` are refused:
the backend sets the address itself.
"""

from __future__ import annotations

import abc
import asyncio
import shlex
from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from trex_eval.backends.base import BackendSpec, GenerationRequest
from trex_eval.backends.openai_compat import CLIENT_OPTION_KEYS, OpenAICompatBackend, parse_options
from trex_eval.backends.option_errors import invalid_options, unknown_options
from trex_eval.backends.server_process import ServerLaunch, ServerProcess
from trex_eval.errors import BackendError, ConfigError
from trex_eval.records import Completion

_OwnOptions = TypeVar("_OwnOptions", bound=BaseModel)

_ADDRESS_OPTIONS = frozenset({"base_url", "api_key_env"})
"""Client options a served backend sets itself."""


def split_options(
    spec: BackendSpec, own: type[_OwnOptions], *, client_defaults: Mapping[str, object] | None = None
) -> tuple[_OwnOptions, BackendSpec]:
    """Validate ``spec.options``: the backend's own keys into ``own``, the rest into a client spec.

    ``client_defaults`` fill client options the preset leaves unset (a local server decodes one
    request at a time, so its default ``concurrency`` differs from a remote API's).

    Returns:
        The backend's options, and ``spec`` with only (defaulted) client options, for
        :class:`OpenAICompatBackend`.

    Raises:
        ConfigError: an option neither the backend nor the client knows, ``base_url`` or
            ``api_key_env``, or an invalid value; the message names the preset and the option.
    """
    where = f"model preset '{spec.name}'"
    own_keys = frozenset(own.model_fields)
    client_keys = CLIENT_OPTION_KEYS - _ADDRESS_OPTIONS
    fixed = sorted(_ADDRESS_OPTIONS.intersection(spec.options))
    if fixed:
        raise ConfigError(
            f"option(s) {', '.join(fixed)} cannot be set for backend '{spec.backend}': "
            "it starts its own server and connects to it",
            where=where,
            hint="use backend 'openai' to connect to a server that is already running",
        )
    unknown = sorted(set(spec.options) - own_keys - client_keys)
    if unknown:
        raise unknown_options(unknown, own_keys | client_keys, backend=spec.backend, where=where)
    try:
        options = own.model_validate({k: v for k, v in spec.options.items() if k in own_keys})
    except ValidationError as error:
        raise invalid_options(error, own_keys | client_keys, backend=spec.backend, where=where) from None
    client_options = {k: v for k, v in (client_defaults or {}).items() if k not in spec.options}
    client_options.update({k: v for k, v in spec.options.items() if k in client_keys})
    client_spec = spec.model_copy(update={"options": client_options})
    parse_options(client_spec, strict=True)
    return options, client_spec


def extra_server_args(
    text: str | None, *, owned: frozenset[str], backend: str, hint: str | None = None
) -> list[str]:
    """The ``extra_args`` option of a managed server, split as a shell would.

    Raises:
        ConfigError: not valid shell quoting, or it sets a flag in ``owned`` (the backend sets
            those itself: host, port, served model name, ...).
    """
    try:
        extra = shlex.split(text or "")
    except ValueError as error:
        raise ConfigError(f"option extra_args is not valid shell quoting: {error}") from None
    taken = sorted({arg.split("=", 1)[0] for arg in extra} & owned)
    if taken:
        raise ConfigError(
            f"option extra_args may not set {', '.join(taken)}: the {backend} backend owns them", hint=hint
        )
    return extra


class ServedBackend(abc.ABC):
    """A Backend whose model server is a child process it manages (see the module docstring).

    Args:
        spec: the model preset, as given to the factory.
        client_spec: ``spec`` reduced to client options (from :func:`split_options`).

    Lifecycle errors: ``start()`` raises :class:`BackendError` when the server cannot be launched
    or never becomes ready (the message quotes its log), and :class:`ConfigError` when the model
    cannot be prepared; a failed ``start()`` leaves no process behind. ``generate()`` before a
    successful ``start()`` or after ``close()`` raises :class:`BackendError`.
    """

    def __init__(self, spec: BackendSpec, *, client_spec: BackendSpec) -> None:
        self.name = spec.name
        self.spec = spec
        self._client_spec = client_spec
        self._server: ServerProcess | None = None
        self._client: OpenAICompatBackend | None = None

    # ------------------------------------------------------------------ subclass hooks

    @abc.abstractmethod
    def _launch(self) -> ServerLaunch:
        """Prepare the model and describe the server to start. Runs in a worker thread, so it
        may block (hashing or assembling model files)."""

    @abc.abstractmethod
    def _served_model(self) -> str:
        """The model id the server lists in ``/v1/models`` and expects in requests."""

    async def _on_ready(self, server: ServerProcess) -> None:  # noqa: B027 (optional hook)
        """Called once the server answers its ready paths, before the client opens."""

    @abc.abstractmethod
    def _provenance(self) -> dict[str, object]:
        """Backend-specific, JSON-safe facts for :meth:`describe`."""

    # ------------------------------------------------------------------ Backend protocol

    async def start(self) -> None:
        """Launch the server, wait until ready, open the client. Idempotent once started."""
        if self._client is not None:
            return
        launch = await asyncio.to_thread(self._launch)
        server = ServerProcess(launch)
        self._server = server
        await server.start()
        try:
            await self._on_ready(server)
            client = OpenAICompatBackend(
                self._client_spec,
                base_url=server.base_url,
                served_model=self._served_model(),
                trust_env=False,
            )
            await client.start()
        except BaseException:
            await server.stop()
            raise
        self._client = client

    async def generate(self, request: GenerationRequest) -> Completion:
        """One completion from the managed server (retries and failures as in the client)."""
        client = self._client
        if client is None:
            raise BackendError(f"backend for model preset '{self.name}' is not started: call start() first")
        server = self._server
        if server is not None and not server.running:
            raise BackendError(
                f"the {server.launch.label} of model preset '{self.name}' has stopped",
                where=str(server.log_path),
                hint="read the server log named above",
            )
        return await client.generate(request)

    async def close(self) -> None:
        """Close the client, then stop the server (SIGTERM, SIGKILL after a grace). Idempotent."""
        client, self._client = self._client, None
        try:
            if client is not None:
                await client.close()
        finally:
            if self._server is not None:
                await self._server.stop()

    def endpoint_stats(self) -> list[dict[str, object]]:
        """The client's per-endpoint counters (one endpoint: the managed server); empty before
        :meth:`start` and after :meth:`close`."""
        return self._client.endpoint_stats() if self._client is not None else []

    def describe(self) -> Mapping[str, object]:
        """Backend facts, server endpoint and log, and the client's own description."""
        server = self._server
        facts: dict[str, object] = {"backend": self.spec.backend, "model": self.spec.model}
        facts.update(self._provenance())
        if server is not None:
            facts["endpoint"] = server.base_url
            facts["server_log"] = str(server.log_path)
        if self._client is not None:
            facts["client"] = dict(self._client.describe())
        return facts
