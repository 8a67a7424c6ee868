"""Protocols: how a benchmark is evaluated between a completion and its grade.

``default`` is trex-eval's corrected grading; ``trex-compat`` reproduces the published SLAI
T-Rex harness; ``orlm`` reproduces ORLM's ``eval/execute.py``. Each protocol is a package here
holding a :class:`~.base.Protocol` instance named ``PROTOCOL``, registered by one line of
:data:`PROTOCOLS`; :mod:`.plan` binds a protocol to one benchmark for a run. Nothing outside
this package tests a protocol's name.

Importing this package loads only the registry: the CLI reads the names at start-up, and
:class:`~.base.Protocol` (with the benchmark and sandbox packages it needs) loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trex_eval.targets import Entry, Registry

if TYPE_CHECKING:
    from trex_eval.protocols.base import ModelSource, Protocol, SummaryRow

_FROM_BASE = frozenset({"ModelSource", "Protocol", "SummaryRow"})

__all__ = [
    "DEFAULT_PROTOCOL",
    "PROTOCOLS",
    "ModelSource",
    "Protocol",
    "SummaryRow",
    "get_protocol",
    "protocol_names",
    "register_protocol",
]

DEFAULT_PROTOCOL = "default"


def _as_protocol(value: object) -> Protocol | None:
    # Imported here, not above: listing the names must not load the protocol machinery.
    from trex_eval.protocols.base import Protocol

    return value if isinstance(value, Protocol) else None


PROTOCOLS: Registry[Protocol] = Registry(
    "protocol",
    (
        Entry("default", "trex_eval.protocols.default:PROTOCOL"),
        Entry("trex-compat", "trex_eval.protocols.trex_compat:PROTOCOL"),
        Entry("orlm", "trex_eval.protocols.orlm:PROTOCOL"),
    ),
    accept=_as_protocol,
    expects="a Protocol instance",
)
"""Protocol name -> ``"module:attribute"`` of its :class:`Protocol` instance (imported on use)."""


def register_protocol(name: str, target: str) -> None:
    """Register a protocol given as ``"module:attribute"`` (a plug-in's or a test's)."""
    PROTOCOLS.register(name, target)


def protocol_names() -> tuple[str, ...]:
    """The registered protocol names, in registration order."""
    return PROTOCOLS.names()


def get_protocol(name: str) -> Protocol:
    """The protocol registered as ``name``.

    Raises:
        ConfigError: no protocol has that name (with the close matches), or its target is not a
            :class:`Protocol`.
    """
    return PROTOCOLS.get(name)


def __getattr__(name: str) -> Any:
    if name in _FROM_BASE:
        from trex_eval.protocols import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
