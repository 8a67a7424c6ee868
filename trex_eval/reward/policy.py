"""Reward policies: how a graded rollout becomes a number. Pure but for reading a policy file; one
registry (:data:`POLICIES`).

A policy is a versioned spec of weighted terms (:class:`PolicySpec`, the terms in :mod:`.terms`),
named and versioned like a rule (``name@version``): a change to what it pays bumps its version,
and every :class:`~trex_eval.reward.records.RewardRecord` names the policy that paid it and
carries each term's value. ``combine: sum`` pays the weighted sum of the terms; ``combine: max``
the largest weighted term (a ladder of stages, as ``staged``).

=========  ========  ==================================================================================
policy     combine   terms (weight)
=========  ========  ==================================================================================
binary@1   sum       objective (1): 1.0 for ``correct``, else 0.0 (the default: exactly the run's
                     pass/fail)
staged@2   max       extracted (0.1), executed (0.2), feasible (0.5), objective (1.0): 0.1 a program was
                     extracted; 0.2 it ran to its end without error; 0.5 its last solve was re-solved
                     by the harness to the optimum claimed and the model passes the trivial-model
                     guard (a feasible, verified model of the wrong problem); 1.0 ``correct``
sirl@1     sum       objective (1), format (1, SIRL's tag score halved), executed (1): SIRL's reward,
                     ``policies/sirl.yaml``
=========  ========  ==================================================================================

An ``unverified`` rollout (a claim the harness could not re-derive) is never paid as correct nor as
feasible. The trivial-model guard (:mod:`.guard`) keeps ``feasible`` from paying ``max x, x <= 1``:
``staged@2`` pays such a program 0.2 (it ran), where ``staged@1`` (before the guard, no longer
served) paid 0.5; every other rollout is paid as ``staged@1`` paid it.

A policy is declared in YAML (a file path given to ``--policy`` or ``ScorerSettings(policy=...)``,
:func:`load_policy`) or in Python (a :class:`PolicySpec`, registered as a plug-in:
``POLICIES.register(name, "module:SPEC", version="1")``). docs/rl-reward.md says how.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import yaml
from pydantic import Field, ValidationError, model_validator

from trex_eval.errors import ConfigError
from trex_eval.records import Verdict
from trex_eval.reward.records import RewardTerm
from trex_eval.reward.terms import ExecutedTerm, ExtractedTerm, FeasibleTerm, Graded, ObjectiveTerm, Term
from trex_eval.targets import Entry, Registry
from trex_eval.vocabulary import Record

STAGES = ("no_code", "format", "executes", "feasible", "correct")
"""The stages a rollout can reach, in order (``RewardRecord.stage``)."""

POLICY_DIR = Path(__file__).with_name("policies")
"""The shipped policy files (``sirl.yaml``)."""


class Payment(Record):
    """What a policy paid one rollout: the ``reward``, the furthest ``stage`` reached
    (:data:`STAGES`) and every term's value."""

    reward: float
    stage: str
    terms: tuple[RewardTerm, ...]


@runtime_checkable
class RewardPolicy(Protocol):
    """Turns a graded rollout into its reward (a registry entry's target is checked to be one)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int: ...

    @property
    def description(self) -> str: ...

    @property
    def verify_wrong(self) -> bool:
        """Whether a ``wrong`` rollout's last solve must be re-solved by the harness before
        :meth:`pay` (only a policy that pays for a verified feasible model needs it)."""
        ...

    @property
    def needs_diagnosis(self) -> bool:
        """Whether :meth:`pay` reads a failing rollout's diagnosis (the scorer must diagnose)."""
        ...

    @property
    def spec(self) -> str: ...

    def pay(self, graded: Graded) -> Payment:
        """The reward, the stage reached and each term's value."""
        ...

    def manifest(self) -> dict[str, Any]:
        """The policy as a reward log's manifest keeps it (JSON-ready, with a ``sha256``)."""
        ...


def stage_of(graded: Graded) -> str:
    """The furthest of :data:`STAGES` a rollout reached, from the harness's own evidence
    (``feasible``: a ``wrong`` rollout whose verified model passes the trivial-model guard)."""
    if graded.grade.verdict is Verdict.CORRECT:
        return "correct"
    if graded.program.code is None:
        return "no_code"
    if not graded.ran:
        return "format"
    if graded.grade.verdict is Verdict.WRONG and graded.feasible:
        return "feasible"
    return "executes"


class PolicySpec(Record):
    """A reward policy as weighted terms; see the module docstring. ``name`` and ``version``
    (≥ 1) make its ``spec``; term names (a term's ``name``, else its kind) are unique."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    version: int = Field(ge=1)
    description: str = ""
    source: str = ""
    """Where the shape comes from (a paper, a repository file), for readers of the manifest."""
    combine: Literal["sum", "max"] = "sum"
    terms: tuple[Term, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> PolicySpec:
        names = [term.label for term in self.terms]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"term names repeat: {', '.join(repeated)} (give each a distinct name)")
        return self

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def verify_wrong(self) -> bool:
        return any(term.kind == "feasible" and term.weight > 0 for term in self.terms)

    @property
    def needs_diagnosis(self) -> bool:
        return any(term.kind == "diagnosis" and term.weight > 0 for term in self.terms)

    def pay(self, graded: Graded) -> Payment:
        paid = []
        for term in self.terms:
            value, detail = term.score(graded)
            paid.append(
                RewardTerm(name=term.label, kind=term.kind, value=value, weight=term.weight, detail=detail)
            )
        weighted = [term.value * term.weight for term in paid]
        reward = sum(weighted) if self.combine == "sum" else max(weighted)
        return Payment(reward=reward, stage=stage_of(graded), terms=tuple(paid))

    def manifest(self) -> dict[str, Any]:
        body = self.model_dump(mode="json")
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return {"spec": self.spec, "sha256": hashlib.sha256(canonical.encode()).hexdigest(), **body}


def load_policy(path: Path) -> PolicySpec:
    """The policy a YAML file declares (the fields of :class:`PolicySpec`).

    Raises:
        ConfigError: the file cannot be read, is not YAML, or does not declare a valid policy (the
            message names the file and each field at fault).
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read the reward policy file: {error}", where=str(path)) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"the reward policy file is not YAML: {error}", where=str(path)) from None
    if not isinstance(data, dict):
        raise ConfigError("a reward policy file holds a mapping (name, version, terms, ...)", where=str(path))
    try:
        return PolicySpec.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or 'policy'}: {item['msg']}"
            for item in error.errors()
        )
        raise ConfigError(
            f"invalid reward policy: {problems}",
            where=str(path),
            hint="see docs/rl-reward.md, 'Writing a policy', for the fields and the term kinds",
        ) from None


BINARY = PolicySpec(
    name="binary",
    version=1,
    description="1.0 for correct, else 0.0",
    terms=(ObjectiveTerm(),),
)
STAGED = PolicySpec(
    name="staged",
    version=2,
    description="0 no program, 0.1 format, 0.2 executes, 0.5 verified feasible (guarded), 1.0 correct",
    combine="max",
    terms=(
        ExtractedTerm(weight=0.1),
        ExecutedTerm(weight=0.2),
        FeasibleTerm(weight=0.5),
        ObjectiveTerm(weight=1.0),
    ),
)
SIRL = load_policy(POLICY_DIR / "sirl.yaml")
"""SIRL's reward (``policies/sirl.yaml``: the answer, SIRL's tag score, code that ran)."""


def _as_policy(value: object) -> RewardPolicy | None:
    return value if isinstance(value, RewardPolicy) else None


POLICIES: Registry[RewardPolicy] = Registry(
    "reward policy",
    (
        Entry("binary", "trex_eval.reward.policy:BINARY", BINARY.description, version="1"),
        Entry("staged", "trex_eval.reward.policy:STAGED", STAGED.description, version="2"),
        Entry("sirl", "trex_eval.reward.policy:SIRL", SIRL.description, version="1"),
    ),
    accept=_as_policy,
    expects="a RewardPolicy instance",
    versioned=True,
    version_of=lambda policy: str(policy.version),
)
"""Policy name -> ``"module:attribute"`` of a :class:`RewardPolicy` instance at its version."""


def get_policy(spec: str) -> RewardPolicy:
    """The policy ``spec`` names: a registered one (``binary``, ``staged@2``, ``sirl``) or a YAML
    file (a path ending in ``.yaml`` or ``.yml``).

    Raises:
        ConfigError: an unknown name (with the close matches), a version other than the
            implemented one, or a policy file that cannot be read or is invalid.
    """
    spec = spec.strip()
    if spec.lower().endswith((".yaml", ".yml")):
        return load_policy(Path(spec).expanduser())
    return POLICIES.get(spec)


def require_diagnosis(policy: RewardPolicy, *, diagnose: bool) -> None:
    """Refuse a policy that pays by diagnosis on a scorer that does not diagnose.

    Raises:
        ConfigError: naming the policy and the setting to turn on.
    """
    if policy.needs_diagnosis and not diagnose:
        raise ConfigError(
            f"reward policy {policy.spec} has a diagnosis term, and the scorer does not diagnose",
            hint="serve with --diagnose (ScorerSettings(diagnose=True)), or drop the diagnosis term",
        )
