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
    never counted as correct by ``strict``; see ``trex_eval.verify``."""
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


class DiagnosisCategory(str, Enum):
    """Why a sample that did not pass failed, decided mechanically (:mod:`trex_eval.grading.diagnosis`).

    Three groups: failures before a model existed (decided from the completion and the
    execution), a wrong solver status, and a model solved to a wrong value (decided by the
    smallest edit of the captured model whose harness re-solve the sample's rule accepts, or by
    what the judged value is to the reference: the value the verdict was decided on, the
    harness's re-solve where the judge made one, else the program's own solve). ``unexplained``
    is the honest rest.
    """

    NO_CODE = "no_code"
    """No program could be extracted from a completion that ended on its own."""
    TRUNCATED = "truncated"
    """The completion was cut off by the token limit (``finish_reason == "length"``) and its
    program is missing, does not parse, raised or never solved."""
    SYNTAX = "syntax"
    """The extracted program does not parse."""
    MISSING_LIBRARY = "missing_library"
    """The program imports a module that is not installed (``ModuleNotFoundError``/``ImportError``,
    or the sandbox's ``needs_library``)."""
    API_MISUSE = "api_misuse"
    """An exception raised by a solver library (its frames in the traceback, an exception class of
    its own such as ``GurobiError``, or a message about one of its objects), or a failed solve call."""
    DATA_ACCESS = "data_access"
    """Reading the instance data failed: ``KeyError``, ``IndexError``, ``FileNotFoundError``,
    ``JSONDecodeError`` raised outside a solver library."""
    RUNTIME_OTHER = "runtime_other"
    """Any other exception, a non-zero exit, an output limit or a killed process."""
    CRASHED_AFTER_SOLVE = "crashed_after_solve"
    """The program solved correctly, then raised: its last captured solve was optimal and the
    harness's re-solve of the captured model is accepted by the sample's rule (it would pass
    without the crash, or under the ``after-solve`` protocol option)."""
    TIMEOUT = "timeout"
    """The program ran out of wall or CPU time, or its last solve stopped at a time limit."""
    MEMORY = "memory"
    """The program ran out of memory."""
    NO_SOLVE = "no_solve"
    """The program finished without calling a hooked solver."""
    NO_OBJECTIVE_PRINTED = "no_objective_printed"
    """The program solved, but no objective value could be read (neither a finite objective of
    the last solve nor, where the rule reads stdout, a printed one)."""
    INFEASIBLE_MODEL = "infeasible_model"
    """The reference has an optimum but the program's model is infeasible."""
    UNBOUNDED_MODEL = "unbounded_model"
    """The reference has an optimum but the program's model is unbounded."""
    SENSE_FLIPPED = "sense_flipped"
    """The captured model, minimised instead of maximised (or the reverse), meets the reference."""
    INTEGRALITY_MISSING = "integrality_missing"
    """The captured model with every continuous variable integer meets the reference."""
    INTEGRALITY_EXTRA = "integrality_extra"
    """The captured model with integrality relaxed meets the reference; for a gurobipy model,
    which stores an integer variable's bounds rounded, also when the reference lies between the
    relaxation with those bounds and with them widened by one (the program's model lies between)."""
    BOUNDS_MISSING = "bounds_missing"
    """The captured model with non-negativity on its free (``lb = -inf``) variables meets the reference."""
    CONSTRAINT_EXTRA = "constraint_extra"
    """The captured model without one of its constraints, linear or quadratic (named in the
    detail), meets the reference."""
    OBJECTIVE_SCALED = "objective_scaled"
    """The judged value times ``10**k`` (``k`` in ±1..±6) meets the reference."""
    OBJECTIVE_NEGATED = "objective_negated"
    """The judged value negated meets the reference: the model optimises the negated objective
    (a minimise-only solver's maximisation, SciPy's ``linprog(-c)``) and the program gave the
    harness no sign to put back (it printed no negation of its optimum; see
    :mod:`trex_eval.grading.objective.sign`)."""
    ROUNDING = "rounding"
    """The judged value rounded to the label's decimals meets the reference."""
    NEAR_MISS = "near_miss"
    """The judged value is within 1e-3 (relative) of the reference, outside the rule's tolerance."""
    CONSTRAINT_MISSING = "constraint_missing"
    """Rows of the reference model have no counterpart in the generated one (named in the detail),
    and every generated row has one in the reference. Structure-graded samples against the
    reference LP; objective samples that no single edit explains, against the model the
    benchmark's reference program builds (:mod:`trex_eval.protocols.reference_programs`)."""
    CONSTRAINT_DIFFERS = "constraint_differs"
    """Structure-graded: rows on both sides lack a counterpart: coefficients or sides differ."""
    VARIABLES_DIFFER = "variables_differ"
    """Structure-graded: the rows match, but the models have different numbers of columns."""
    OBJECTIVE_DIFFERS = "objective_differs"
    """Structure-graded: rows and columns match, the objective coefficients do not."""
    UNEXPLAINED = "unexplained"
    """None of the above (or the diagnosis ran out of its budget, or the model is over its size
    cap: the detail says which)."""
