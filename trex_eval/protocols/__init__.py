"""Protocols: how a benchmark is evaluated between a completion and its grade.

``default`` is trex-eval's corrected grading; ``trex-compat`` reproduces the published SLAI
T-Rex harness. Each protocol is a package here holding a :class:`~.base.Protocol` instance named
``PROTOCOL``, registered by one line of :data:`PROTOCOLS`; :mod:`.plan` binds a protocol to one
benchmark for a run. Nothing outside this package tests a protocol's name.
"""

from __future__ import annotations

from trex_eval.errors import ConfigError
from trex_eval.protocols.base import ModelSource, Protocol, SummaryRow
from trex_eval.targets import load_target

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

PROTOCOLS: dict[str, str] = {
    "default": "trex_eval.protocols.default:PROTOCOL",
    "trex-compat": "trex_eval.protocols.trex_compat:PROTOCOL",
}
"""Protocol name -> ``"module:attribute"`` of its :class:`Protocol` instance (imported on use)."""


def register_protocol(name: str, target: str) -> None:
    """Register a protocol given as ``"module:attribute"`` (a plug-in's or a test's)."""
    PROTOCOLS[name] = target


def protocol_names() -> tuple[str, ...]:
    """The registered protocol names, in registration order."""
    return tuple(PROTOCOLS)


def get_protocol(name: str) -> Protocol:
    """The protocol registered as ``name``.

    Raises:
        ConfigError: no protocol has that name, or its target is not a :class:`Protocol`.
    """
    target = PROTOCOLS.get(name)
    if target is None:
        raise ConfigError(f"unknown protocol {name!r}", hint=f"choose one of: {', '.join(PROTOCOLS)}")
    protocol = load_target(target, what=f"protocol {name!r}")
    if not isinstance(protocol, Protocol):
        raise ConfigError(f"protocol {name!r}: {target} is not a Protocol instance")
    return protocol
