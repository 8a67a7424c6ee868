"""Reward policies: how a graded rollout becomes a number. Pure; one registry (:data:`POLICIES`).

A policy is named and versioned like a rule (``name@version``): a change to what it pays bumps its
version, and every :class:`~trex_eval.reward.records.RewardRecord` names the one that paid it.

=========  =======================================================================================
policy     reward
=========  =======================================================================================
binary@1   1.0 for ``correct``, else 0.0 (the default: exactly the run's pass/fail)
staged@1   0.0 no program; 0.1 a program was extracted; 0.2 it ran to the end without error (solving or not);
           0.5 its last solve was re-solved by the harness to the same optimal value (a feasible,
           verified model of the wrong problem); 1.0 ``correct``
=========  =======================================================================================

An ``unverified`` rollout (a claim the harness could not re-derive) is never paid as correct nor
as feasible: under ``staged`` it earns what running earns. Stages other than ``correct`` only
ever describe what the harness saw, never what the program printed.

Adding a policy: a class with ``name``, ``version``, ``spec``, ``description``, ``verify_wrong``
and ``pay`` in a module, an instance of it, and one line in :data:`POLICIES` naming that instance
and its version (a plug-in: ``POLICIES.register(name, "module:INSTANCE", version="1")``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from trex_eval.records import ExecStatus, Execution, Program, SolveStatus, Verdict
from trex_eval.targets import Entry, Registry

STAGES = ("no_code", "format", "executes", "feasible", "correct")
"""The stages a rollout can reach, in order (``RewardRecord.stage``)."""

_RAN = frozenset({ExecStatus.OK, ExecStatus.NO_SOLVE})
"""Execution statuses of a program that ran to its end without an error (solving or not)."""


@runtime_checkable
class RewardPolicy(Protocol):
    """Turns a rollout's grade into its reward (a registry entry's target is checked to be one)."""

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
    def spec(self) -> str: ...

    def pay(self, verdict: Verdict, execution: Execution | None, program: Program) -> tuple[float, str]:
        """The reward and the stage reached."""
        ...


def stage_of(verdict: Verdict, execution: Execution | None, program: Program) -> str:
    """The furthest of :data:`STAGES` a rollout reached, from the harness's own evidence."""
    if verdict is Verdict.CORRECT:
        return "correct"
    if program.code is None:
        return "no_code"
    if execution is None or execution.status not in _RAN:
        return "format"
    solve = execution.last_solve
    if (
        verdict is Verdict.WRONG
        and solve is not None
        and solve.verification == "match"
        and solve.status is SolveStatus.OPTIMAL
        and solve.verified_objective is not None
    ):
        return "feasible"
    return "executes"


class _Versioned:
    """``spec`` from ``name`` and ``version``, as rules spell theirs."""

    name: str
    version: int

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class Binary(_Versioned):
    name: str = "binary"
    version: int = 1
    description: str = "1.0 for correct, else 0.0"
    verify_wrong: bool = False

    def pay(self, verdict: Verdict, execution: Execution | None, program: Program) -> tuple[float, str]:
        stage = stage_of(verdict, execution, program)
        return (1.0 if stage == "correct" else 0.0), stage


@dataclass(frozen=True)
class Staged(_Versioned):
    name: str = "staged"
    version: int = 1
    description: str = "0 no program, 0.1 format, 0.2 executes, 0.5 verified feasible, 1.0 correct"
    verify_wrong: bool = True
    paid: tuple[tuple[str, float], ...] = (
        ("no_code", 0.0),
        ("format", 0.1),
        ("executes", 0.2),
        ("feasible", 0.5),
        ("correct", 1.0),
    )

    def pay(self, verdict: Verdict, execution: Execution | None, program: Program) -> tuple[float, str]:
        stage = stage_of(verdict, execution, program)
        return dict(self.paid)[stage], stage


BINARY = Binary()
STAGED = Staged()


def _as_policy(value: object) -> RewardPolicy | None:
    return value if isinstance(value, RewardPolicy) else None


POLICIES: Registry[RewardPolicy] = Registry(
    "reward policy",
    (
        Entry("binary", "trex_eval.reward.policy:BINARY", BINARY.description, version="1"),
        Entry("staged", "trex_eval.reward.policy:STAGED", STAGED.description, version="1"),
    ),
    accept=_as_policy,
    expects="a RewardPolicy instance",
    versioned=True,
    version_of=lambda policy: str(policy.version),
)
"""Policy name -> ``"module:attribute"`` of a :class:`RewardPolicy` instance at its version."""


def get_policy(spec: str) -> RewardPolicy:
    """The policy ``spec`` names (``binary``, ``staged@1``, ...).

    Raises:
        ConfigError: an unknown name (with the close matches), or a version other than the
            implemented one.
    """
    return POLICIES.get(spec.strip())
