"""Model backends. See :mod:`trex_eval.backends.base` for the Protocol and the registry."""

from trex_eval.backends.base import (
    Backend,
    BackendSpec,
    GenerationRequest,
    backend_names,
    create_backend,
    register_backend,
)

__all__ = [
    "Backend",
    "BackendSpec",
    "GenerationRequest",
    "backend_names",
    "create_backend",
    "register_backend",
]
