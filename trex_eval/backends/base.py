"""The model-backend seam: one Protocol, one registry (:data:`BACKENDS`) of lazily imported kinds.

A backend turns a :class:`GenerationRequest` into a :class:`~trex_eval.records.Completion`.
Transport failures that survive the backend's retry budget are returned as a ``Completion``
with ``error`` set (the sample then grades as ``api_error``); a backend raises
:class:`~trex_eval.errors.BackendError` only when it cannot work at all (server does not start,
endpoint unreachable at start-up, bad configuration).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from trex_eval.records import BackendSpec as BackendSpec  # defined there for the run store; re-exported
from trex_eval.records import Completion, Problem, Prompt, Record, SamplingParams
from trex_eval.targets import Entry, Registry, instance_of


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


@runtime_checkable
class ReportsEndpoints(Protocol):
    """A backend's optional capability, checked with ``isinstance``: it spreads requests over
    endpoints and counts, per endpoint, the completions, failed attempts and latency of this
    session (``endpoint_stats()``, JSON-safe, what the run's summary shows)."""

    def endpoint_stats(self) -> list[dict[str, object]]: ...


BackendFactory = Callable[[BackendSpec], Backend]
"""Builds a backend for a spec, starting nothing; ConfigError for options it rejects."""

DryRun = Callable[[BackendSpec], Mapping[str, object]]
"""What a backend would start or connect to for a spec (``run --dry-run``), starting nothing."""


@dataclass(frozen=True)
class BackendKind:
    """What a backend module declares for its registry line (``BACKEND = BackendKind(create=...)``):
    its factory and, when it has one, its :data:`DryRun` (else the dry run shows the spec)."""

    create: BackendFactory
    dry_run: DryRun | None = None


# Each line names a module's BACKEND, imported only when the backend is used, so that optional
# heavy dependencies (xllamacpp, vllm) load lazily.
BACKENDS: Registry[BackendKind] = Registry(
    "backend",
    (
        Entry("openai", "trex_eval.backends.openai_compat:BACKEND"),
        Entry("vllm", "trex_eval.backends.vllm:BACKEND"),
        Entry("local", "trex_eval.backends.local:BACKEND"),
        Entry("replay", "trex_eval.backends.replay:BACKEND"),
        Entry("reference", "trex_eval.backends.reference:BACKEND"),
        Entry("sglang", "trex_eval.backends.sglang:BACKEND"),
    ),
    accept=instance_of(BackendKind),
    expects="a BackendKind (BACKEND = BackendKind(create=..., dry_run=...))",
)


def register_backend(name: str, target: str) -> None:
    """Register a backend given as the ``"module:attribute"`` of its :class:`BackendKind`
    (imported on first use)."""
    BACKENDS.register(name, target)


def backend_names() -> list[str]:
    """The registered backend names, sorted. Imports no backend."""
    return sorted(BACKENDS.names())


def create_backend(spec: BackendSpec) -> Backend:
    """Instantiate the backend named by ``spec.backend``.

    Raises:
        ConfigError: unknown backend name (with the close matches), or its optional dependency is
            missing (the message names the pip extra to install).
    """
    return BACKENDS.get(spec.backend, where=f"model preset '{spec.name}'").create(spec)


def dry_run(spec: BackendSpec) -> Mapping[str, object]:
    """What the backend of ``spec`` would start or connect to, starting nothing (``run --dry-run``).

    A backend declares its :data:`DryRun` in its :class:`BackendKind` (the ``vllm`` backend
    prints its server command line, parallelism and download source); for the others the spec is
    shown.

    Raises:
        ConfigError: unknown backend, or options the backend rejects.
    """
    kind = BACKENDS.get(spec.backend, where=f"model preset '{spec.name}'")
    if kind.dry_run is not None:
        return kind.dry_run(spec)
    return {"backend": spec.backend, "model": spec.model, "options": dict(spec.options)}
