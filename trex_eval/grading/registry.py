"""The one registry of grading rules, objective and structural alike. Pure.

Every rule is a family (one line of :data:`FAMILIES`: name, the ``"module:function"`` factory
that builds a rule object from a parsed spec, one-line summary, version and grader kind; all held
by :data:`RULES`, a :class:`~trex_eval.targets.Registry`) plus the rule objects the factory
returns. A rule object carries ``kind``, ``name``, ``version``, ``spec``
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
budgeted               objective  cpu      strict under CPU budgets; unproven points fail [600, verify 120]
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

Adding a rule: a module with a ``build(spec: RuleSpec) -> rule`` factory and one line here (a
plug-in: :func:`register_rule`). A spec naming a version other than its line's is refused, before
anything loads, rather than silently graded by different code; a line whose version its rules do
not carry is refused too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import cast

from trex_eval.errors import ConfigError
from trex_eval.grading.objective.base import ObjectiveRule
from trex_eval.grading.spec import RuleSpec
from trex_eval.grading.structure.base import StructureRule
from trex_eval.records import GraderKind
from trex_eval.targets import Entry, Registry, takes_arguments

Rule = ObjectiveRule | StructureRule
"""A rule of either kind; ``rule.kind`` says which."""


RuleBuilder = Callable[[RuleSpec], Rule]
"""What a family's target names: ``build(spec) -> Rule``."""


@dataclass(frozen=True)
class RuleFamily(Entry):
    """One registry line: ``target`` names a :data:`RuleBuilder` of rules of grader ``kind`` at
    ``version`` (checked against every rule it builds)."""

    kind: GraderKind = field(kw_only=True)


_OBJECTIVE, _STRUCTURE = GraderKind.OBJECTIVE, GraderKind.STRUCTURE
_TOLERANCE = "trex_eval.grading.objective.presets:build"
# objective.tolerance.TOLERANCE_RULE_VERSION, written out: importing it here would load every
# tolerance rule at start-up (get_rule refuses a line whose version its rules do not carry).
_TOLERANCE_VERSION = "3"

FAMILIES: tuple[RuleFamily, ...] = (
    RuleFamily(
        "strict", _TOLERANCE,
        "default: solver status optimal and |Δ| ≤ atol + rtol·|ref| (rtol 1e-4, atol 1e-6)",
        version=_TOLERANCE_VERSION, kind=_OBJECTIVE,
    ),
    RuleFamily(
        "rel", _TOLERANCE, "rel:RTOL -- optimal and |Δ| ≤ RTOL·|ref|",
        version=_TOLERANCE_VERSION, kind=_OBJECTIVE,
    ),
    RuleFamily(
        "abs", _TOLERANCE, "abs:ATOL -- optimal and |Δ| ≤ ATOL", version=_TOLERANCE_VERSION, kind=_OBJECTIVE
    ),
    RuleFamily(
        "round", _TOLERANCE,
        "round:DIGITS -- optimal and both values equal after rounding to DIGITS decimals",
        version=_TOLERANCE_VERSION, kind=_OBJECTIVE,
    ),
    RuleFamily(
        "orlm", _TOLERANCE, "ORLM convention: both rounded to integers, |Δ| ≤ 0.05·|ref|",
        version=_TOLERANCE_VERSION, kind=_OBJECTIVE,
    ),
    RuleFamily(
        "sirl", _TOLERANCE, "SIRL convention: |Δ| / (|ref| + 1) ≤ 1e-6",
        version=_TOLERANCE_VERSION, kind=_OBJECTIVE,
    ),
    RuleFamily(
        "optmath", _TOLERANCE,
        "OptMATH convention: both rounded to integers, |Δ| ≤ 0.05·|ref| "
        "(optsuite/OptMATH@b797149 eval/executor.py); fallback=true adds its conversion fallback",
        version=_TOLERANCE_VERSION, kind=_OBJECTIVE,
    ),
    RuleFamily(
        "mamo", _TOLERANCE,
        "Mamo convention: |Δ|·10^max(2, label decimals) < 1, or |Δ| ≤ 1e-4·|ref| "
        "(FreedomIntelligence/Mamo@5da0854 "
        "scripts/scripts_optimization/mamo_script_optimization/3.run_code_comp_optimization.py)",
        version=_TOLERANCE_VERSION, kind=_OBJECTIVE,
    ),
    RuleFamily(
        "orthought", _TOLERANCE,
        "ORThought convention: |Δ| < 0.01 (ZJU-TSELab/ORThought@ce5dc6b analyze.py)",
        version=_TOLERANCE_VERSION, kind=_OBJECTIVE,
    ),
    RuleFamily(
        "budgeted", "trex_eval.grading.objective.budgeted:build",
        "solves that may not finish: budgeted:CPU,verify=CPU -- program and re-solve CPU seconds stated; "
        "a proven optimum within strict's tolerance is correct, a feasible point not proven optimal never is",
        version="1", kind=_OBJECTIVE,
    ),
    RuleFamily(
        "trex-compat", "trex_eval.protocols.trex_compat.objective:build",
        "reference T-Rex harness: module-level model/m, status OPTIMAL, |Δ| ≤ 1e-6 absolute",
        version="1", kind=_OBJECTIVE,
    ),
    RuleFamily(
        "orlm-compat", "trex_eval.protocols.orlm.objective:build",
        "ORLM harness: module-level coptpy `model` at COPT.OPTIMAL, round + 5 %, 'No Best Solution' "
        "(Cardinal-Operations/ORLM@38712c9 eval/execute.py); the orlm protocol's rule",
        version="2", kind=_OBJECTIVE,
    ),
    RuleFamily(
        "orgeval-fixed", "trex_eval.grading.structure.fixed:build",
        "structural equivalence incl. sense, constant, bounds, integrality, class sizes",
        version="1", kind=_STRUCTURE,
    ),
    RuleFamily(
        "orgeval-exact", "trex_eval.grading.structure.exact:build",
        "exact structural equivalence: quadratic, SOS and indicator parts in the graph, isomorphism search",
        version="2", kind=_STRUCTURE,
    ),
    RuleFamily(
        "orgeval-trex-compat", "trex_eval.protocols.trex_compat.structure:build",
        "the reference ORGEval check (LP round trip, md5-WL colour sets, sufficiency)",
        version="1", kind=_STRUCTURE,
    ),
)  # fmt: skip
"""The shipped families, in listing order (:data:`RULES` holds these and any registered since)."""


def _as_builder(value: object) -> RuleBuilder | None:
    return cast(RuleBuilder, value) if takes_arguments(value, 1) else None


RULES: Registry[RuleBuilder] = Registry(
    "grading rule",
    FAMILIES,
    accept=_as_builder,
    expects="a function build(spec: RuleSpec) -> rule",
    versioned=True,
)

DEFAULT_RULES: dict[GraderKind, str] = {_OBJECTIVE: "strict", _STRUCTURE: "orgeval-exact"}
"""The rule a benchmark of each kind is graded by unless its YAML or the run says otherwise."""

DEFAULT_RULE = DEFAULT_RULES[_OBJECTIVE]


def register_rule(entry: RuleFamily) -> None:
    """Register a rule family (a plug-in's or a test's), replacing one of the same name."""
    RULES.add(entry)
    get_rule.cache_clear()


def families(kind: GraderKind | None = None) -> tuple[RuleFamily, ...]:
    """The registered families (of ``kind`` only, when given), in listing order. Imports nothing."""
    return tuple(f for f in RULES.entries() if isinstance(f, RuleFamily) and (kind is None or f.kind is kind))


def family(name: str) -> RuleFamily:
    """The family registered as ``name`` (case-insensitive).

    Raises:
        ConfigError: no family has that name (with the close matches).
    """
    entry = RULES.entry(name.strip().lower())
    if not isinstance(entry, RuleFamily):
        raise ConfigError(
            f"grading rule {entry.name!r} was registered without its grader kind",
            hint="register rules with register_rule(RuleFamily(...))",
        )
    return entry


@lru_cache(maxsize=256)
def get_rule(spec: str) -> Rule:
    """The rule a spec names, of either kind (``rule.kind`` says which).

    Raises:
        ConfigError: unknown name, wrong version, unknown or repeated key, malformed value, a bare
            value where the rule has no primary parameter, or a missing primary value.
    """
    parsed = RuleSpec.parse(spec)
    entry = family(parsed.name)
    rule = RULES.get(entry.name, version=parsed.version, where=spec)(parsed)
    if rule.version != entry.version:
        raise ConfigError(
            f"grading rule {entry.name!r}: {entry.target} built {rule.spec}, "
            f"its registry line says version {entry.version}",
            hint="make the RuleFamily line's version the one its rules carry",
        )
    return rule


def superseded(spec: str) -> str | None:
    """The canonical spec of the rule as implemented now when ``spec`` names it at another
    version (``"strict@1"`` -> ``"strict@3"``, parameters kept), else ``None`` (no version, the
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
