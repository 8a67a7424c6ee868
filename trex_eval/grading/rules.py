"""Registry of objective rules and the grammar of rule specs. Pure.

A rule spec names a rule and, optionally, its version and parameters::

    spec   := name ["@" version] [":" param ("," param)*]
    param  := key "=" value          any position
            | value                  first position only: the rule's primary parameter

Examples: ``strict``, ``strict:rtol=1e-6,atol=1e-9``, ``strict:printed=true``, ``rel:1e-4``,
``abs:1e-6``, ``round:2``, ``round:0,rtol=0.05``, ``orlm``, ``sirl``, ``trex-compat``,
``trex-compat:1e-5``, ``strict@1``. Whitespace around tokens is ignored; names are
case-insensitive.

=============  =========  =================================================================
rule           primary    meaning (defaults in brackets)
=============  =========  =================================================================
strict         --         optimal and ``|Δ| ≤ atol + rtol·|ref|`` [rtol 1e-4, atol 1e-6]
rel            rtol       ``|Δ| ≤ rtol·|ref|`` [atol 0]; the primary value is required
abs            atol       ``|Δ| ≤ atol`` [rtol 0]; the primary value is required
round          digits     both rounded to ``digits`` decimals, then equal [rtol 0, atol 0]
orlm           --         ORLM: rounded to integers, ``|Δ| ≤ 0.05·|ref|`` [digits 0, rtol 0.05]
sirl           --         SIRL: ``|Δ| / (|ref| + 1) ≤ 1e-6``, i.e. rtol = atol = 1e-6
trex-compat    atol       the reference harness's rule and model discovery [atol 1e-6]
=============  =========  =================================================================

Every tolerance rule (all but ``trex-compat``) accepts the keys ``rtol``, ``atol`` (finite,
>= 0), ``digits`` (integer) and ``printed`` (``true``/``false``: use ``Execution.printed_objective``
when no solve was hooked; off by default). ``trex-compat`` accepts ``atol`` only.

The canonical spec a rule reports (``Grade.rule``) is ``name@version`` followed by the
parameters that differ from the rule's defaults, always as ``key=value`` in the order above,
e.g. ``strict@1:rtol=1e-06``; it parses back to an equal rule. A spec naming a version other
than the implemented one is refused rather than silently graded by different code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from trex_eval.errors import ConfigError
from trex_eval.grading.objective_base import ObjectiveRule
from trex_eval.grading.objective_compat import TREX_COMPAT_ATOL, TREX_COMPAT_VERSION, TrexCompatRule
from trex_eval.grading.objective_tolerance import TOLERANCE_RULE_VERSION, Tolerance, ToleranceRule

DEFAULT_RULE = "strict"

_GRAMMAR_HINT = "spec grammar: name[@version][:value][,key=value...], e.g. strict:rtol=1e-6 or rel:1e-4"


@dataclass(frozen=True)
class _Preset:
    """A tolerance rule as registered: its title, defaults and primary key (``None``: no bare value;
    a primary key must be given)."""

    title: str
    defaults: Tolerance
    primary: str | None = None


_TOLERANCE_PRESETS: Mapping[str, _Preset] = MappingProxyType(
    {
        "strict": _Preset("strict", Tolerance()),
        "rel": _Preset("relative", Tolerance(rtol=0.0, atol=0.0), primary="rtol"),
        "abs": _Preset("absolute", Tolerance(rtol=0.0, atol=0.0), primary="atol"),
        "round": _Preset("rounded", Tolerance(rtol=0.0, atol=0.0), primary="digits"),
        "orlm": _Preset("ORLM convention", Tolerance(rtol=0.05, atol=0.0, digits=0)),
        "sirl": _Preset("SIRL convention |Δ|/(|ref|+1)", Tolerance(rtol=1e-6, atol=1e-6)),
    }
)
_COMPAT_NAME = "trex-compat"
_TOLERANCE_KEYS = ("rtol", "atol", "digits", "printed")

RULE_SUMMARIES: Mapping[str, str] = MappingProxyType(
    {
        "strict": "default: solver status optimal and |Δ| ≤ atol + rtol·|ref| (rtol 1e-4, atol 1e-6)",
        "rel": "rel:RTOL -- optimal and |Δ| ≤ RTOL·|ref|",
        "abs": "abs:ATOL -- optimal and |Δ| ≤ ATOL",
        "round": "round:DIGITS -- optimal and both values equal after rounding to DIGITS decimals",
        "orlm": "ORLM convention: both rounded to integers, |Δ| ≤ 0.05·|ref|",
        "sirl": "SIRL convention: |Δ| / (|ref| + 1) ≤ 1e-6",
        _COMPAT_NAME: "reference T-Rex harness: module-level model/m, status OPTIMAL, |Δ| ≤ 1e-6 absolute",
    }
)
"""One line per registered rule name, for ``--help`` and listings."""


def rule_names() -> tuple[str, ...]:
    """Names of the registered objective rules, in listing order."""
    return tuple(RULE_SUMMARIES)


def resolve_rule(rule: ObjectiveRule | str) -> ObjectiveRule:
    """``rule`` itself if it is a rule object, else :func:`get_rule` of the spec."""
    return get_rule(rule) if isinstance(rule, str) else rule


@lru_cache(maxsize=128)
def get_rule(spec: str) -> ObjectiveRule:
    """The objective rule a spec names (grammar in the module docstring).

    Raises:
        ConfigError: unknown name, wrong version, unknown or repeated key, malformed value,
            a bare value where the rule has no primary parameter, or a missing primary value.
    """
    name, version, items = _split(spec)
    if name == _COMPAT_NAME:
        _check_version(spec, name, version, TREX_COMPAT_VERSION)
        values = _assign(spec, items, primary="atol", allowed=("atol",))
        atol = _parse_float(spec, "atol", values["atol"]) if "atol" in values else TREX_COMPAT_ATOL
        return TrexCompatRule(atol=atol, parameters=f"atol={atol!r}" if atol != TREX_COMPAT_ATOL else "")
    preset = _TOLERANCE_PRESETS.get(name)
    if preset is None:
        raise ConfigError(
            f"unknown objective rule {name!r}", where=spec, hint=f"choose one of: {', '.join(rule_names())}"
        )
    _check_version(spec, name, version, TOLERANCE_RULE_VERSION)
    values = _assign(spec, items, primary=preset.primary, allowed=_TOLERANCE_KEYS)
    if preset.primary is not None and preset.primary not in values:
        raise ConfigError(
            f"rule {name!r} needs its {preset.primary} value", where=spec, hint=f"e.g. {RULE_SUMMARIES[name]}"
        )
    tolerance = Tolerance(
        rtol=_parse_float(spec, "rtol", values["rtol"]) if "rtol" in values else preset.defaults.rtol,
        atol=_parse_float(spec, "atol", values["atol"]) if "atol" in values else preset.defaults.atol,
        digits=_parse_int(spec, "digits", values["digits"]) if "digits" in values else preset.defaults.digits,
    )
    printed = _parse_bool(spec, "printed", values["printed"]) if "printed" in values else False
    return ToleranceRule(
        name=name,
        tolerance=tolerance,
        use_printed=printed,
        title=preset.title,
        parameters=_canonical(tolerance, printed=printed, preset=preset),
    )


# --------------------------------------------------------------------------- parsing helpers


def _split(spec: str) -> tuple[str, str | None, list[tuple[str | None, str]]]:
    """``name``, ``version`` (or ``None``) and the ``(key or None, value)`` items of a spec."""
    head, has_params, tail = spec.strip().partition(":")
    name, has_version, version = head.partition("@")
    name = name.strip().lower()
    if not name or (has_version and not version.strip()):
        raise ConfigError("malformed objective rule spec", where=spec, hint=_GRAMMAR_HINT)
    items: list[tuple[str | None, str]] = []
    if has_params:
        for index, item in enumerate(tail.split(",")):
            key, has_key, value = item.partition("=")
            if not item.strip() or (has_key and not (key.strip() and value.strip())):
                raise ConfigError(f"empty or malformed parameter {item!r}", where=spec, hint=_GRAMMAR_HINT)
            if not has_key and index > 0:
                raise ConfigError(f"bare value {item.strip()!r} after the first position", where=spec)
            items.append((key.strip().lower(), value.strip()) if has_key else (None, item.strip()))
    return name, version.strip() if has_version else None, items


def _check_version(spec: str, name: str, asked: str | None, implemented: str) -> None:
    if asked is not None and asked != implemented:
        raise ConfigError(
            f"rule {name!r} is implemented at version {implemented}, the spec asks for {asked}",
            where=spec,
            hint=f"use {name}@{implemented} (or no version) and note the change in results",
        )


def _assign(
    spec: str, items: list[tuple[str | None, str]], *, primary: str | None, allowed: tuple[str, ...]
) -> dict[str, str]:
    values: dict[str, str] = {}
    for key, value in items:
        if key is None:
            if primary is None:
                raise ConfigError(f"the rule takes no bare value ({value!r})", where=spec, hint=_GRAMMAR_HINT)
            key = primary
        if key not in allowed:
            raise ConfigError(f"unknown parameter {key!r}", where=spec, hint=f"allowed: {', '.join(allowed)}")
        if key in values:
            raise ConfigError(f"parameter {key!r} given twice", where=spec)
        values[key] = value
    return values


def _parse_float(spec: str, key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{key}={text!r} is not a number", where=spec) from None
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{key}={text!r} must be a finite number >= 0", where=spec)
    return value


def _parse_int(spec: str, key: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{key}={text!r} is not an integer", where=spec) from None


_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


def _parse_bool(spec: str, key: str, text: str) -> bool:
    lowered = text.lower()
    if lowered in _TRUE or lowered in _FALSE:
        return lowered in _TRUE
    raise ConfigError(f"{key}={text!r} is not true/false", where=spec)


def _canonical(tolerance: Tolerance, *, printed: bool, preset: _Preset) -> str:
    """``key=value`` text of the parameters that differ from the preset (its primary always)."""
    shown: list[str] = []
    defaults = preset.defaults
    if preset.primary == "rtol" or tolerance.rtol != defaults.rtol:
        shown.append(f"rtol={tolerance.rtol!r}")
    if preset.primary == "atol" or tolerance.atol != defaults.atol:
        shown.append(f"atol={tolerance.atol!r}")
    if preset.primary == "digits" or tolerance.digits != defaults.digits:
        shown.append(f"digits={tolerance.digits}")
    if printed:
        shown.append("printed=true")
    return ",".join(shown)
