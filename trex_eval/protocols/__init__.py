"""Protocols: how a benchmark is evaluated between a completion and its grade.

``default`` is trex-eval's corrected grading; ``trex-compat`` reproduces the published SLAI
T-Rex harness; ``orlm`` reproduces ORLM's ``eval/execute.py``. Each protocol is a package here
holding a :class:`~.base.Protocol` instance named ``PROTOCOL``, registered by one line of
:data:`PROTOCOLS`; :mod:`.plan` binds a protocol to one benchmark for a run. A protocol text may
add the field's execution conventions to a registered protocol as named, versioned options
(``orlm+after-solve``, :mod:`.conventions`): :func:`get_protocol` accepts it and
:func:`protocol_spec` gives its canonical text. Nothing outside this package tests a protocol's
name.

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
    "protocol_spec",
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
    """The protocol ``name`` names: a registered protocol, or one with convention options
    (``BASE+OPTION[@VERSION][=VALUE]...``, :mod:`.conventions`), whose ``name`` is then the
    canonical text.

    Raises:
        ConfigError: no protocol has that name (with the close matches), its target is not a
            :class:`Protocol`, or an option is unknown, malformed or of another version.
    """
    if name in PROTOCOLS:
        return PROTOCOLS.get(name)
    from trex_eval.protocols.conventions.protocol import composed

    return composed(name)


def protocol_spec(text: str) -> str:
    """The canonical text of a protocol text: a registered name as it is, options in registry
    order with their versions and canonical values. Loads no protocol.

    Raises:
        ConfigError: as :func:`get_protocol`, for the name and the options.
    """
    if text in PROTOCOLS:
        return text
    from trex_eval.protocols.conventions.spec import parse

    return parse(text).text


def __getattr__(name: str) -> Any:
    if name in _FROM_BASE:
        from trex_eval.protocols import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
