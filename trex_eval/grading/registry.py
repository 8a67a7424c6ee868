"""The one registry of grading rules, objective and structural alike. Pure.

Every rule is a family (one line of :data:`FAMILIES`: name, kind, one-line summary, and the
``"module:function"`` factory that builds a rule object from a parsed spec) plus the rule
objects the factory returns. A rule object carries ``kind``, ``name``, ``version``, ``spec``
(canonical ``name@version[:params]``, what every :class:`~trex_eval.records.Grade`, manifest
entry and leaderboard column records) and ``description`` (one line printed beside its
numbers). Spec grammar: :mod:`trex_eval.grading.spec`.

=====================  =========  =======  ====================================================
family                 kind       primary  meaning (defaults in brackets)
=====================  =========  =======  ====================================================
strict                 objective  --       optimal and ``|Δ| ≤ atol + rtol·|ref|`` [rtol 1e-4, atol 1e-6]
rel                    objective  rtol     ``|Δ| ≤ rtol·|ref|`` [atol 0]; the value is required
abs                    objective  atol     ``|Δ| ≤ atol`` [rtol 0]; the value is required
round                  objective  digits   both rounded to ``digits`` decimals, then equal
orlm                   objective  --       ORLM: rounded to integers, ``|Δ| ≤ 0.05·|ref|``
sirl                   objective  --       SIRL: ``|Δ| / (|ref| + 1) ≤ 1e-6``
optmath                objective  --       OptMATH: rounded to integers, ``|Δ| ≤ 0.05·|ref|`` [fallback off]
mamo                   objective  --       Mamo: ``|Δ|·10^max(2, label decimals) < 1`` or ``|Δ| ≤ 1e-4·|ref|``
orthought              objective  --       ORThought: ``|Δ| < 0.01``
trex-compat            objective  atol     the reference harness's rule and model discovery [1e-6]
orlm-compat            objective  --       ORLM's harness: coptpy ``model`` optimal, round + 5 %
orgeval-fixed          structure  --       structural equivalence, the reference's defects fixed
orgeval-exact          structure  --       exact: typed graph (quadratic, SOS, indicators), isomorphism search
orgeval-trex-compat    structure  --       the reference ORGEval check, bugs included
=====================  =========  =======  ====================================================

``Δ`` is that of the harness's re-solve of the program's captured model, never of the program's
claim, for every objective family but ``trex-compat`` (which reproduces the reference harness:
the claim of ``model.ObjVal``); the claim only has to agree with the re-solve
(:mod:`trex_eval.verify`).

Adding a rule: a module with a ``build(spec: RuleSpec) -> rule`` factory and one line here. A
spec naming a version other than the implemented one is refused rather than silently graded by
different code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from trex_eval.errors import ConfigError
from trex_eval.grading.objective.base import ObjectiveRule
from trex_eval.grading.spec import RuleSpec
from trex_eval.grading.structure.base import StructureRule
from trex_eval.records import GraderKind
from trex_eval.targets import load_target

Rule = ObjectiveRule | StructureRule
"""A rule of either kind; ``rule.kind`` says which."""


@dataclass(frozen=True)
class RuleFamily:
    """One registry line: ``target`` names ``build(spec: RuleSpec) -> Rule``."""

    name: str
    kind: GraderKind
    summary: str
    target: str


_OBJECTIVE, _STRUCTURE = GraderKind.OBJECTIVE, GraderKind.STRUCTURE
_TOLERANCE = "trex_eval.grading.objective.presets:build"

FAMILIES: tuple[RuleFamily, ...] = (
    RuleFamily(
        "strict", _OBJECTIVE,
        "default: solver status optimal and |Δ| ≤ atol + rtol·|ref| (rtol 1e-4, atol 1e-6)",
        _TOLERANCE,
    ),
    RuleFamily("rel", _OBJECTIVE, "rel:RTOL -- optimal and |Δ| ≤ RTOL·|ref|", _TOLERANCE),
    RuleFamily("abs", _OBJECTIVE, "abs:ATOL -- optimal and |Δ| ≤ ATOL", _TOLERANCE),
    RuleFamily(
        "round", _OBJECTIVE,
        "round:DIGITS -- optimal and both values equal after rounding to DIGITS decimals",
        _TOLERANCE,
    ),
    RuleFamily("orlm", _OBJECTIVE, "ORLM convention: both rounded to integers, |Δ| ≤ 0.05·|ref|", _TOLERANCE),
    RuleFamily("sirl", _OBJECTIVE, "SIRL convention: |Δ| / (|ref| + 1) ≤ 1e-6", _TOLERANCE),
    RuleFamily(
        "optmath", _OBJECTIVE,
        "OptMATH convention: both rounded to integers, |Δ| ≤ 0.05·|ref| "
        "(optsuite/OptMATH@b797149 eval/executor.py); fallback=true adds its conversion fallback",
        _TOLERANCE,
    ),
    RuleFamily(
        "mamo", _OBJECTIVE,
        "Mamo convention: |Δ|·10^max(2, label decimals) < 1, or |Δ| ≤ 1e-4·|ref| "
        "(FreedomIntelligence/Mamo@5da0854 "
        "scripts/scripts_optimization/mamo_script_optimization/3.run_code_comp_optimization.py)",
        _TOLERANCE,
    ),
    RuleFamily(
        "orthought", _OBJECTIVE,
        "ORThought convention: |Δ| < 0.01 (ZJU-TSELab/ORThought@ce5dc6b analyze.py)",
        _TOLERANCE,
    ),
    RuleFamily(
        "trex-compat", _OBJECTIVE,
        "reference T-Rex harness: module-level model/m, status OPTIMAL, |Δ| ≤ 1e-6 absolute",
        "trex_eval.protocols.trex_compat.objective:build",
    ),
    RuleFamily(
        "orlm-compat", _OBJECTIVE,
        "ORLM harness: module-level coptpy `model` at COPT.OPTIMAL, round + 5 %, 'No Best Solution' "
        "(Cardinal-Operations/ORLM@38712c9 eval/execute.py); the orlm protocol's rule",
        "trex_eval.protocols.orlm.objective:build",
    ),
    RuleFamily(
        "orgeval-fixed", _STRUCTURE,
        "structural equivalence incl. sense, constant, bounds, integrality, class sizes",
        "trex_eval.grading.structure.fixed:build",
    ),
    RuleFamily(
        "orgeval-exact", _STRUCTURE,
        "exact structural equivalence: quadratic, SOS and indicator parts in the graph, isomorphism search",
        "trex_eval.grading.structure.exact:build",
    ),
    RuleFamily(
        "orgeval-trex-compat", _STRUCTURE,
        "the reference ORGEval check (LP round trip, md5-WL colour sets, sufficiency)",
        "trex_eval.protocols.trex_compat.structure:build",
    ),
)  # fmt: skip

DEFAULT_RULES: dict[GraderKind, str] = {_OBJECTIVE: "strict", _STRUCTURE: "orgeval-exact"}
"""The rule a benchmark of each kind is graded by unless its YAML or the run says otherwise."""

DEFAULT_RULE = DEFAULT_RULES[_OBJECTIVE]


def families(kind: GraderKind | None = None) -> tuple[RuleFamily, ...]:
    """The registered families (of ``kind`` only, when given), in listing order."""
    return tuple(f for f in FAMILIES if kind is None or f.kind is kind)


def family(name: str) -> RuleFamily:
    """The family registered as ``name`` (case-insensitive).

    Raises:
        ConfigError: no family has that name.
    """
    wanted = name.strip().lower()
    for entry in FAMILIES:
        if entry.name == wanted:
            return entry
    raise ConfigError(
        f"unknown grading rule {wanted!r}", hint=f"choose one of: {', '.join(f.name for f in FAMILIES)}"
    )


@lru_cache(maxsize=256)
def get_rule(spec: str) -> Rule:
    """The rule a spec names, of either kind (``rule.kind`` says which).

    Raises:
        ConfigError: unknown name, wrong version, unknown or repeated key, malformed value, a bare
            value where the rule has no primary parameter, or a missing primary value.
    """
    parsed = RuleSpec.parse(spec)
    entry = family(parsed.name)
    build = cast(Callable[[RuleSpec], Rule], load_target(entry.target, what=f"rule {entry.name!r}"))
    rule = build(parsed)
    if parsed.version is not None and parsed.version != rule.version:
        raise ConfigError(
            f"rule {entry.name!r} is implemented at version {rule.version}, "
            f"the spec asks for {parsed.version}",
            where=spec,
            hint=f"use {entry.name}@{rule.version} (or no version) and note the change in results",
        )
    return rule


def superseded(spec: str) -> str | None:
    """The canonical spec of the rule as implemented now when ``spec`` names it at another
    version (``"strict@1"`` -> ``"strict@2"``, parameters kept), else ``None`` (no version, the
    implemented one, or a spec that is not valid apart from its version: :func:`get_rule` says
    why). What a stored run's recorded rule is checked with before it is resumed or re-graded."""
    try:
        parsed = RuleSpec.parse(spec)
        _, _, parameters = spec.partition(":")
        current = get_rule(parsed.name + (f":{parameters}" if parameters else ""))
    except ConfigError:
        return None
    return current.spec if parsed.version not in (None, current.version) else None


def objective_rule(spec: str) -> ObjectiveRule:
    """:func:`get_rule` for a spec that must name an objective rule (ConfigError otherwise)."""
    rule = get_rule(spec)
    if not isinstance(rule, ObjectiveRule) or rule.kind is not _OBJECTIVE:
        raise ConfigError(f"{spec!r} is a {rule.kind.value} rule, an objective rule is needed", where=spec)
    return rule


def structure_rule(spec: str) -> StructureRule:
    """:func:`get_rule` for a spec that must name a structure rule (ConfigError otherwise)."""
    rule = get_rule(spec)
    if rule.kind is not _STRUCTURE:
        raise ConfigError(f"{spec!r} is an {rule.kind.value} rule, a structure rule is needed", where=spec)
    return cast(StructureRule, rule)


def rule_for(kind: GraderKind, spec: str) -> Rule:
    """The rule ``spec`` names, checked to be of ``kind``."""
    return objective_rule(spec) if kind is _OBJECTIVE else structure_rule(spec)
