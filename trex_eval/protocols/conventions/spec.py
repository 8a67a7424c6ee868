"""The grammar of a composed protocol and its convention options. Pure; imports no protocol.

A composed protocol is one ``--protocol`` text: a registered base protocol followed by convention
options, each introduced by ``+``::

    BASE ( "+" OPTION [ "@" VERSION ] [ "=" VALUE ] )*

    orlm+after-solve
    default+rule=rel:0.05+preload=pulp+after-solve+zero-band=0.05+no-best-solution

Option names are case-insensitive; whitespace around parts is ignored; an option appears at most
once. Each option is registered with the version it implements (:data:`OPTIONS`, a versioned
:class:`~trex_eval.targets.Registry`): a version other than the implemented one is refused, an
unknown name gets the close matches. The canonical text (:func:`parse`,
:attr:`ProtocolSpec.text`) lists the options in registry order, each with its version and
canonical value (``default+rule@1=rel@3:rtol=0.05+preload@1=pulp+after-solve@1+zero-band@1=0.05
+no-best-solution@1``): that text is what manifests, summaries and every table header record.

No option is ever on by default: a bare base name is the base protocol itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from trex_eval.errors import ConfigError
from trex_eval.targets import Entry, Registry, instance_of

SEPARATOR = "+"
GRAMMAR_HINT = (
    "write BASE+OPTION[@VERSION][=VALUE]..., e.g. default+preload=pulp+after-solve+zero-band=0.05"
    "+no-best-solution (docs/protocols.md, 'Execution conventions')"
)

PRELOADS = MappingProxyType(
    {
        "pulp": "from pulp import *",
        "gurobipy": "from gurobipy import *",
        "coptpy": "from coptpy import *",
        "pyscipopt": "from pyscipopt import *",
        "pyomo": "from pyomo.environ import *",
    }
)
"""``preload=`` value -> the statement the harness puts before the program (inside the sandbox)."""

NO_BEST_SOLUTION = "No Best Solution"
"""The label text the ``no-best-solution`` option matches (ORLM's and its followers' spelling)."""


@dataclass(frozen=True)
class Option:
    """One convention option: ``name``, implemented ``version``, whether it takes a value and how
    that value is read to its canonical text (``canonical``: raises ``ConfigError`` for a bad
    one), one line for listings, and ``reward_risk``: why a reward server must not pay under it
    unless told to (empty: no risk)."""

    name: str
    version: str
    summary: str
    takes_value: bool = False
    canonical: Callable[[str], str] = field(default=str, repr=False)
    reward_risk: str = ""


def _preload(value: str) -> str:
    name = value.strip().lower()
    if name not in PRELOADS:
        raise _bad_value("preload", value, choices=tuple(PRELOADS))
    return name


def _band(value: str) -> str:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number <= 0.0:
        raise ConfigError(
            f"zero-band={value!r} is not a positive finite number",
            hint="write the band the peer accepts around a zero label, e.g. zero-band=0.05",
        )
    return repr(number)


def _rule(value: str) -> str:
    # Imported here: listing or parsing options without a rule loads no rule.
    from trex_eval.grading import get_rule
    from trex_eval.records import GraderKind

    rule = get_rule(value)
    if rule.kind is not GraderKind.OBJECTIVE:
        raise ConfigError(
            f"rule={value!r} is a {rule.kind.value} rule",
            hint="the rule option sets the objective rule; structure benchmarks keep the base's",
        )
    return rule.spec


def _bad_value(option: str, value: str, *, choices: tuple[str, ...]) -> ConfigError:
    import difflib

    close = difflib.get_close_matches(value.strip().lower(), choices, n=2, cutoff=0.6)
    guess = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return ConfigError(
        f"unknown {option} value {value!r}{guess}", hint=f"choose one of: {', '.join(choices)}"
    )


RULE = Option(
    "rule",
    "1",
    "rule=SPEC -- the objective rule of the composed protocol (a peer's comparison, e.g. rel:0.05)",
    takes_value=True,
    canonical=_rule,
)
PRELOAD = Option(
    "preload",
    "1",
    "preload=LIB -- the program runs as if `from LIB import *` preceded it (put there by the harness, "
    "inside the sandbox)",
    takes_value=True,
    canonical=_preload,
    reward_risk="a policy trained with an implicit import writes programs that fail everywhere else",
)
AFTER_SOLVE = Option(
    "after-solve",
    "1",
    "after-solve -- a program that raised after a captured solve is graded on that solve "
    "(the harness's capture and re-solve, never the program's output)",
    reward_risk="it pays programs that crash",
)
ZERO_BAND = Option(
    "zero-band",
    "1",
    "zero-band=B -- against a zero label, a harness value with |value| <= B passes",
    takes_value=True,
    canonical=_band,
    reward_risk="a zero band pays any model whose optimum is near 0 (an empty model's)",
)
NO_BEST = Option(
    "no-best-solution",
    "1",
    "no-best-solution -- a 'No Best Solution' label is matched by a program that built a model and "
    "never solved it",
    reward_risk="it pays a program that never solved for a label it did not check",
)

_MODULE = "trex_eval.protocols.conventions.spec"

OPTIONS: Registry[Option] = Registry(
    "protocol option",
    (
        Entry("rule", f"{_MODULE}:RULE", RULE.summary, version=RULE.version),
        Entry("preload", f"{_MODULE}:PRELOAD", PRELOAD.summary, version=PRELOAD.version),
        Entry("after-solve", f"{_MODULE}:AFTER_SOLVE", AFTER_SOLVE.summary, version=AFTER_SOLVE.version),
        Entry("zero-band", f"{_MODULE}:ZERO_BAND", ZERO_BAND.summary, version=ZERO_BAND.version),
        Entry("no-best-solution", f"{_MODULE}:NO_BEST", NO_BEST.summary, version=NO_BEST.version),
    ),
    accept=instance_of(Option),
    expects="an Option",
    versioned=True,
    version_of=lambda option: option.version,
)
"""The convention options, in canonical order (the order of the canonical text)."""


@dataclass(frozen=True)
class Conventions:
    """The options of a composed protocol (all off by default). ``rule``: a canonical objective
    rule spec; ``preload``: a key of :data:`PRELOADS`; ``after_solve``; ``zero_band``: the band
    around a zero label, in the objective's units; ``no_best_solution``."""

    rule: str | None = None
    preload: str | None = None
    after_solve: bool = False
    zero_band: float | None = None
    no_best_solution: bool = False

    @property
    def grades(self) -> bool:
        """Whether an option changes how an execution is graded (not only the job or the rule)."""
        return self.after_solve or self.zero_band is not None or self.no_best_solution


@dataclass(frozen=True)
class ProtocolSpec:
    """A parsed ``--protocol`` text: its ``base`` protocol name, the ``options`` given as
    ``(name, canonical value or None)`` in canonical order, and the :class:`Conventions` they set."""

    base: str
    options: tuple[tuple[str, str | None], ...]
    conventions: Conventions

    @property
    def text(self) -> str:
        """The canonical text: base, then each option as ``name@version[=value]``."""
        parts = [self.base]
        for name, value in self.options:
            spec = OPTIONS.entry(name).spec
            parts.append(spec if value is None else f"{spec}={value}")
        return SEPARATOR.join(parts)

    @property
    def composed(self) -> bool:
        return bool(self.options)

    def reward_risks(self) -> tuple[str, ...]:
        """``"option: why"`` for each option a reward server must not pay under by default."""
        found = (OPTIONS.get(name) for name, _ in self.options)
        return tuple(f"{option.name}: {option.reward_risk}" for option in found if option.reward_risk)


def parse(text: str, *, bases: Registry[Any] | None = None) -> ProtocolSpec:
    """Parse a protocol text (see the module docstring). ``bases`` is the protocol registry the
    base name must be in (default: :data:`trex_eval.protocols.PROTOCOLS`); nothing is imported
    but the option values' own checks (a ``rule=`` value loads that rule).

    Raises:
        ConfigError: an empty part, an unknown base or option (with the close matches), an
            option given twice, a version other than the implemented one, a value missing,
            unexpected or malformed. The message names the part and the hint the grammar.
    """
    if bases is None:
        from trex_eval.protocols import PROTOCOLS

        bases = PROTOCOLS
    head, *parts = (part.strip() for part in text.split(SEPARATOR))
    if not head or "=" in head or head.lower() in OPTIONS:
        raise ConfigError(
            f"protocol {text!r} does not start with a base protocol",
            hint=f"start with one of: {bases.describe()}; then {GRAMMAR_HINT}",
        )
    if head not in bases:
        names = bases.names()
        allowed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
        # "unknown protocol 'orml' (did you mean 'orlm'?)"
        raise ConfigError(bases.unknown(head).message, hint=f"use {allowed}; options: {GRAMMAR_HINT}")
    given: dict[str, str | None] = {}
    for part in parts:
        name, value = _option(part, text=text)
        if name in given:
            raise ConfigError(f"option {name!r} is given twice", where=text, hint=GRAMMAR_HINT)
        given[name] = value
    options = tuple((name, given[name]) for name in OPTIONS.names() if name in given)
    band = given.get("zero-band")
    conventions = Conventions(
        rule=given.get("rule"),
        preload=given.get("preload"),
        after_solve="after-solve" in given,
        zero_band=None if band is None else float(band),
        no_best_solution="no-best-solution" in given,
    )
    return ProtocolSpec(base=head, options=options, conventions=conventions)


def _option(part: str, *, text: str) -> tuple[str, str | None]:
    """One ``name[@version][=value]`` part: its registered name and canonical value."""
    if not part:
        raise ConfigError(f"empty option in protocol {text!r}", hint=GRAMMAR_HINT)
    head, has_value, value = part.partition("=")
    name, _, version = (piece.strip() for piece in head.partition("@"))
    name = name.lower()
    option = OPTIONS.get(name, version=version or None, where=text)
    if option.takes_value and (not has_value or not value.strip()):
        raise ConfigError(f"option {name!r} needs a value", where=text, hint=option.summary)
    if not option.takes_value and has_value:
        raise ConfigError(f"option {name!r} takes no value (got {value!r})", where=text, hint=option.summary)
    if not option.takes_value:
        return name, None
    try:
        return name, option.canonical(value.strip())
    except ConfigError as error:
        raise ConfigError(error.message, where=text, hint=error.hint) from None
