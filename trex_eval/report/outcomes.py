"""Outcome classes: the coarse verdict breakdown that reports chart and count. Pure.

A :class:`~trex_eval.records.Verdict` names the stage that failed; readers of a leaderboard want
fewer, plainer classes ("syntax / runtime / timeout / licence / infeasible / wrong / correct").
:func:`classify` maps one stored sample to one :class:`Outcome`; every verdict maps to exactly
one class, and a sample the run never stored (or stored as ``missing``: no completion recorded)
is :attr:`Outcome.MISSING`. A verdict this module does not list maps to the outcome of the same
name when there is one, else to :attr:`Outcome.OTHER`, so a new verdict needs no edit here.
"""

from __future__ import annotations

from enum import Enum
from types import MappingProxyType

from trex_eval.records import ObjectiveEvidence, SampleRecord, SolveStatus, Verdict


class Outcome(str, Enum):
    """What happened to one sample, in report order (best first, harness failures last)."""

    CORRECT = "correct"
    UNVERIFIED = "unverified"
    """The claim would pass, but the harness could not verify it: not counted as correct."""
    WRONG = "wrong"
    """The program ran and solved, but its objective value or model structure is not the reference's."""
    INFEASIBLE = "infeasible"
    """The program's model was infeasible or unbounded while the reference has an optimum."""
    UNDECIDED = "not_determinable"
    NO_SOLVE = "no_solve"
    """The program ran but never solved a model (or wrote none the grader could read)."""
    NO_CODE = "no_code"
    SYNTAX = "syntax_error"
    RUNTIME = "runtime_error"
    LIMIT = "limit"
    """Wall-clock timeout, memory or output limit, or killed by a signal."""
    SOLVER_ERROR = "solver_error"
    ENVIRONMENT = "environment"
    """Licence failure, gurobipy unavailable, or not run: the environment failed, not the model."""
    API_ERROR = "api_error"
    MISSING = "missing"
    """No stored sample, or no completion recorded for it: the run stopped early, lost it, or the
    replayed file lacks it. Counts as a failure; never an API error."""
    OTHER = "other"
    """A verdict without a class of its own (listed by name in the verdict breakdown)."""

    @property
    def label(self) -> str:
        """Short human label for tables and chart legends."""
        return _LABELS[self]


_LABELS = MappingProxyType(
    {
        Outcome.CORRECT: "correct",
        Outcome.UNVERIFIED: "unverified",
        Outcome.WRONG: "wrong answer",
        Outcome.INFEASIBLE: "infeasible / unbounded",
        Outcome.UNDECIDED: "not determinable",
        Outcome.NO_SOLVE: "no solve",
        Outcome.NO_CODE: "no code",
        Outcome.SYNTAX: "syntax error",
        Outcome.RUNTIME: "runtime error",
        Outcome.LIMIT: "timeout / limit",
        Outcome.SOLVER_ERROR: "solver error",
        Outcome.ENVIRONMENT: "licence / environment",
        Outcome.API_ERROR: "API error",
        Outcome.MISSING: "missing",
        Outcome.OTHER: "other",
    }
)

_BY_VERDICT = MappingProxyType(
    {
        Verdict.CORRECT: Outcome.CORRECT,
        Verdict.WRONG: Outcome.WRONG,
        Verdict.NOT_DETERMINABLE: Outcome.UNDECIDED,
        Verdict.API_ERROR: Outcome.API_ERROR,
        Verdict.NO_CODE: Outcome.NO_CODE,
        Verdict.SYNTAX_ERROR: Outcome.SYNTAX,
        Verdict.RUNTIME_ERROR: Outcome.RUNTIME,
        Verdict.TIMEOUT: Outcome.LIMIT,
        Verdict.MEMORY_LIMIT: Outcome.LIMIT,
        Verdict.OUTPUT_LIMIT: Outcome.LIMIT,
        Verdict.KILLED: Outcome.LIMIT,
        Verdict.LICENCE_ERROR: Outcome.ENVIRONMENT,
        Verdict.NEEDS_GUROBI: Outcome.ENVIRONMENT,
        Verdict.NEEDS_LIBRARY: Outcome.ENVIRONMENT,
        Verdict.NO_SOLVE: Outcome.NO_SOLVE,
        Verdict.SOLVER_ERROR: Outcome.SOLVER_ERROR,
        Verdict.NOT_RUN: Outcome.ENVIRONMENT,
        Verdict.HARNESS_ERROR: Outcome.ENVIRONMENT,
    }
)
_BY_VALUE = MappingProxyType({outcome.value: outcome for outcome in Outcome})

_NO_OPTIMUM = frozenset({SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INF_OR_UNBD})


def classify(record: SampleRecord | None) -> Outcome:
    """The outcome class of one sample; ``None`` (no stored sample) is :attr:`Outcome.MISSING`.

    A ``wrong`` verdict whose objective evidence shows the program's model without an optimum
    (infeasible, unbounded, or either) while the reference is optimal becomes
    :attr:`Outcome.INFEASIBLE`; every other verdict maps one-to-one onto its class.
    """
    if record is None:
        return Outcome.MISSING
    grade = record.grade
    if grade.verdict is Verdict.WRONG and _lost_the_optimum(grade.evidence):
        return Outcome.INFEASIBLE
    return _BY_VERDICT.get(grade.verdict) or _BY_VALUE.get(grade.verdict.value, Outcome.OTHER)


def _lost_the_optimum(evidence: object) -> bool:
    return (
        isinstance(evidence, ObjectiveEvidence)
        and evidence.reference_status is SolveStatus.OPTIMAL
        and evidence.predicted_status in _NO_OPTIMUM
    )
