"""The grammar of rule specs, shared by every rule family. Pure.

A rule spec names a rule and, optionally, its version and parameters::

    spec   := name ["@" version] [":" param ("," param)*]
    param  := key "=" value          any position
            | value                  first position only: the rule's primary parameter

Whitespace around tokens is ignored; names and keys are case-insensitive. A family's factory
receives the parsed :class:`RuleSpec` and reads its parameters through :meth:`RuleSpec.values`
and the typed parsers, which raise :class:`~trex_eval.errors.ConfigError` naming the spec.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from trex_eval.errors import ConfigError
from trex_eval.records import GraderKind

GRAMMAR_HINT = "spec grammar: name[@version][:value][,key=value...], e.g. strict:rtol=1e-6 or rel:1e-4"

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


@dataclass(frozen=True)
class RuleSpec:
    """A parsed spec: ``name`` (lower case), ``version`` asked for (``None``: the implemented
    one), ``items`` as ``(key or None, value)`` in order, and the ``text`` it came from."""

    name: str
    version: str | None
    items: tuple[tuple[str | None, str], ...]
    text: str

    @classmethod
    def parse(cls, text: str) -> RuleSpec:
        """Split ``text`` by the grammar above.

        Raises:
            ConfigError: an empty name or version, an empty or malformed parameter, or a bare
                value after the first position.
        """
        head, has_params, tail = text.strip().partition(":")
        name, has_version, version = head.partition("@")
        name = name.strip().lower()
        if not name or (has_version and not version.strip()):
            raise ConfigError("malformed rule spec", where=text, hint=GRAMMAR_HINT)
        items: list[tuple[str | None, str]] = []
        if has_params:
            for index, item in enumerate(tail.split(",")):
                key, has_key, value = item.partition("=")
                if not item.strip() or (has_key and not (key.strip() and value.strip())):
                    raise ConfigError(f"empty or malformed parameter {item!r}", where=text, hint=GRAMMAR_HINT)
                if not has_key and index > 0:
                    raise ConfigError(f"bare value {item.strip()!r} after the first position", where=text)
                items.append((key.strip().lower(), value.strip()) if has_key else (None, item.strip()))
        return cls(name, version.strip() if has_version else None, tuple(items), text)

    def values(self, *, primary: str | None, allowed: tuple[str, ...]) -> dict[str, str]:
        """``key -> value`` text, a bare first value assigned to ``primary``.

        Raises:
            ConfigError: a bare value where the rule has no primary parameter, a key not in
                ``allowed``, or a key given twice.
        """
        values: dict[str, str] = {}
        for key, value in self.items:
            if key is None:
                if primary is None:
                    raise ConfigError(
                        f"the rule takes no bare value ({value!r})", where=self.text, hint=GRAMMAR_HINT
                    )
                key = primary
            if key not in allowed:
                hint = f"allowed: {', '.join(allowed)}" if allowed else "this rule takes no parameters"
                raise ConfigError(f"unknown parameter {key!r}", where=self.text, hint=hint)
            if key in values:
                raise ConfigError(f"parameter {key!r} given twice", where=self.text)
            values[key] = value
        return values

    def number(self, key: str, text: str) -> float:
        """A finite, non-negative float parameter.

        Raises:
            ConfigError: not a number, not finite, or negative.
        """
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"{key}={text!r} is not a number", where=self.text) from None
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{key}={text!r} must be a finite number >= 0", where=self.text)
        return value

    def integer(self, key: str, text: str) -> int:
        """An integer parameter. Raises ConfigError when it is not one."""
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{key}={text!r} is not an integer", where=self.text) from None

    def flag(self, key: str, text: str) -> bool:
        """A boolean parameter (true/yes/on/1, false/no/off/0). Raises ConfigError otherwise."""
        lowered = text.lower()
        if lowered in _TRUE or lowered in _FALSE:
            return lowered in _TRUE
        raise ConfigError(f"{key}={text!r} is not true/false", where=self.text)


def rule_spec(name: str, version: str, parameters: str) -> str:
    """Canonical spec of a rule: ``name@version``, then ``:parameters`` when any are not default."""
    head = f"{name}@{version}"
    return f"{head}:{parameters}" if parameters else head


@runtime_checkable
class RuleIdentity(Protocol):
    """What every rule carries, whatever it judges: its ``kind``, registry ``name``, implemented
    ``version``, canonical ``spec`` (``name@version[:params]``, what :attr:`Grade.rule` records and
    what the registry accepts back) and a one-line ``description`` printed beside its numbers."""

    @property
    def kind(self) -> GraderKind: ...

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def spec(self) -> str: ...
