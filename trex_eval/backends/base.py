"""The model-backend seam: one Protocol, one registry of lazily imported factories.

A backend turns a :class:`GenerationRequest` into a :class:`~trex_eval.records.Completion`.
Transport failures that survive the backend's retry budget are returned as a ``Completion``
with ``error`` set (the sample then grades as ``api_error``); a backend raises
:class:`~trex_eval.errors.BackendError` only when it cannot work at all (server does not start,
endpoint unreachable at start-up, bad configuration).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from trex_eval.errors import ConfigError
from trex_eval.records import BackendSpec as BackendSpec  # defined there for the run store; re-exported
from trex_eval.records import Completion, Problem, Prompt, Record, SamplingParams


class GenerationRequest(Record):
    """Everything a backend may need for one sample.

    ``problem`` is given so that the ``reference`` and ``replay`` backends can answer without a
    model; network backends use only ``prompt`` and ``params``. ``seed`` is the per-sample seed
    (``params.seed + sample_index`` unless the run says otherwise). ``round`` is the repair round
    asked for (``run --repair N``): 0 for a sample's first answer; from 1 on, ``prompt.messages``
    is the whole conversation (the first prompt, then each earlier answer as an ``assistant``
    message and the harness's feedback as a ``user`` message), which network backends send as
    it is and the ``replay`` backend looks up by round.
    """

    problem: Problem
    prompt: Prompt
    params: SamplingParams
    sample_index: int = 0
    seed: int | None = None
    round: int = 0


@runtime_checkable
class Backend(Protocol):
    """A source of completions.

    Lifecycle: ``await start()`` once, any number of concurrent ``await generate(...)`` calls
    (the backend bounds its own concurrency), then ``await close()`` (idempotent).
    ``describe()`` returns JSON-safe provenance for the run manifest (server version, model
    path and sha256, endpoint without credentials, ...); it must never include secrets.
    """

    name: str

    async def start(self) -> None: ...

    async def generate(self, request: GenerationRequest) -> Completion: ...

    async def close(self) -> None: ...

    def describe(self) -> Mapping[str, object]: ...


BackendFactory = Callable[[BackendSpec], Backend]

# name -> "module:attribute" of a factory; imported only when the backend is used, so that
# optional heavy dependencies (xllamacpp, vllm) load lazily.
_REGISTRY: dict[str, str] = {
    "openai": "trex_eval.backends.openai_compat:create",
    "vllm": "trex_eval.backends.vllm:create",
    "local": "trex_eval.backends.local:create",
    "replay": "trex_eval.backends.replay:create",
    "reference": "trex_eval.backends.reference:create",
    "sglang": "trex_eval.backends.sglang:create",
}


def register_backend(name: str, target: str) -> None:
    """Register a backend factory given as ``"module:attribute"`` (imported on first use)."""
    _REGISTRY[name] = target


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def create_backend(spec: BackendSpec) -> Backend:
    """Instantiate the backend named by ``spec.backend``.

    Raises:
        ConfigError: unknown backend name, or its optional dependency is missing (the message
            names the pip extra to install).
    """
    target = _REGISTRY.get(spec.backend)
    if target is None:
        raise ConfigError(
            f"unknown backend '{spec.backend}' in model preset '{spec.name}'",
            hint=f"choose one of: {', '.join(backend_names())}",
        )
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    factory: BackendFactory = getattr(module, attr)
    return factory(spec)


def dry_run(spec: BackendSpec) -> Mapping[str, object]:
    """What the backend of ``spec`` would start or connect to, starting nothing (``run --dry-run``).

    A backend module may define ``dry_run(spec) -> Mapping`` (the ``vllm`` backend prints its
    server command line, parallelism and download source); for the others the spec is shown.

    Raises:
        ConfigError: unknown backend, or options the backend rejects.
    """
    target = _REGISTRY.get(spec.backend)
    if target is None:
        raise ConfigError(
            f"unknown backend '{spec.backend}'", hint=f"choose one of: {', '.join(backend_names())}"
        )
    module = importlib.import_module(target.partition(":")[0])
    planner: Callable[[BackendSpec], Mapping[str, object]] | None = getattr(module, "dry_run", None)
    if planner is not None:
        return planner(spec)
    return {"backend": spec.backend, "model": spec.model, "options": dict(spec.options)}
