"""The vocabulary every record shares: the :class:`Record` base, the schema version, and the
names and enums of statuses, verdicts and policies. Imports nothing from trex_eval.

Re-exported by :mod:`trex_eval.records`, which is where callers import them from.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = "1.0"


class Record(BaseModel):
    """Base of every record: immutable, strict about field names, +/-inf survive JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")


# --------------------------------------------------------------------------- vocabularies

ProtocolName = str
"""A registered protocol name (:data:`trex_eval.protocols.PROTOCOLS`): ``default``, ``trex-compat``, ..."""

GurobiPolicy = Literal["auto", "real", "highs"]
"""Which gurobipy a program gets in the sandbox (see ``trex_eval.sandbox.Job.gurobi``); ``highs``
is the licence-free ``gurobipy_highs`` layer."""

GUROBI_POLICY_ALIASES: dict[str, GurobiPolicy] = {"compat": "highs"}
"""Older names of a :data:`GurobiPolicy`, still accepted from users and stored manifests
(``compat`` was the layer's policy name before it became the ``gurobipy_highs`` package)."""


def canonical_gurobi_policy(value: object) -> object:
    """``value`` with an old policy name (:data:`GUROBI_POLICY_ALIASES`) replaced by its current one."""
    return GUROBI_POLICY_ALIASES.get(value, value) if isinstance(value, str) else value


FewShotStrategy = Literal["random", "similar"]
"""How few-shot examples are chosen (see ``trex_eval.prompting.fewshot``)."""


# --------------------------------------------------------------------------- enums


class GraderKind(str, Enum):
    """How a benchmark is graded: compare an objective value, or compare model structure."""

    OBJECTIVE = "objective"
    STRUCTURE = "structure"


class SolveStatus(str, Enum):
    """Solver outcome normalised across libraries (gurobipy, pulp, OR-Tools, HiGHS, ...)."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INF_OR_UNBD = "inf_or_unbd"
    TIME_LIMIT = "time_limit"
    SUBOPTIMAL = "suboptimal"
    FEASIBLE = "feasible"
    INTERRUPTED = "interrupted"
    NUMERIC = "numeric"
    NOT_SOLVED = "not_solved"
    ERROR = "error"
    UNKNOWN = "unknown"


class ExecStatus(str, Enum):
    """Outcome of running one extracted program in the sandbox.

    Every value except ``OK`` is a failure of the *model's program* (data, not an exception);
    ``LICENCE_ERROR``, ``NEEDS_GUROBI`` and ``NEEDS_LIBRARY`` (the program imports a solver
    library the sandbox knows but this install lacks) are failures of the environment and are
    never counted as a wrong answer by the graders' reports.
    """

    OK = "ok"
    NO_CODE = "no_code"
    SYNTAX_ERROR = "syntax_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    KILLED = "killed"
    LICENCE_ERROR = "licence_error"
    NEEDS_GUROBI = "needs_gurobi"
    NEEDS_LIBRARY = "needs_library"
    NO_SOLVE = "no_solve"
    SOLVER_ERROR = "solver_error"
    NOT_RUN = "not_run"


class Verdict(str, Enum):
    """Final judgement of one sample. Non-``correct`` verdicts other than ``wrong`` and
    ``not_determinable`` name the stage that failed (API, extraction or execution)."""

    CORRECT = "correct"
    WRONG = "wrong"
    NOT_DETERMINABLE = "not_determinable"
    API_ERROR = "api_error"
    NO_CODE = "no_code"
    SYNTAX_ERROR = "syntax_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    KILLED = "killed"
    LICENCE_ERROR = "licence_error"
    NEEDS_GUROBI = "needs_gurobi"
    NEEDS_LIBRARY = "needs_library"
    """The program imports a solver library the sandbox knows but this install lacks (the
    install's failure: ``Grade.reason`` says what to install)."""
    NO_SOLVE = "no_solve"
    SOLVER_ERROR = "solver_error"
    NOT_RUN = "not_run"
    MISSING = "missing"
    """No completion was recorded for the sample (a replayed file without it): not a failed request."""
    UNVERIFIED = "unverified"
    """The program's claim would pass the rule, but the harness could not re-derive it from the
    captured model (no matrix, an unsupported model kind, a re-solve that failed or timed out):
    never counted as correct by ``strict``; see ``trex_eval.sandbox.verify``."""
    HARNESS_ERROR = "harness_error"
    """The harness failed this sample, not the model: its graded record could not be stored
    (``Grade.reason`` says why; ``trex_eval.budget.harness_failure``). An environment failure;
    a resumed run does not try the sample again (the same record would fail the same way), a
    re-grade of the run does."""

    @property
    def is_environment_failure(self) -> bool:
        """True for verdicts caused by the evaluation environment rather than the model."""
        return self in (
            Verdict.LICENCE_ERROR,
            Verdict.NEEDS_GUROBI,
            Verdict.NEEDS_LIBRARY,
            Verdict.NOT_RUN,
            Verdict.HARNESS_ERROR,
        )
