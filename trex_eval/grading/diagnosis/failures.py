"""Diagnoses decided before any model is looked at: from the completion, the verdict and what the
execution kept (its status, exception type and the traceback in ``stderr_tail``). Pure.

The exception of a failed program is classified by where it was raised and what it is:

* ``ModuleNotFoundError``/``ImportError`` (or the sandbox's ``needs_library``): ``missing_library``;
* ``JSONDecodeError``/``FileNotFoundError`` always, ``KeyError``/``IndexError`` raised outside a
  solver library's frames: ``data_access`` (the program read its instance data wrong);
* an exception class of a solver library (``GurobiError``, ``PulpError``, ...), any exception
  whose innermost frame is a library's (``src/gurobipy/...``, ``.../site-packages/pulp/...``), an
  ``AttributeError``/``TypeError``/``ValueError`` whose message names a solver object, and a
  failed solve call (``solver_error``): ``api_misuse``;
* anything else: ``runtime_other``.
"""

from __future__ import annotations

import re

from trex_eval.records import (
    Completion,
    Diagnosis,
    DiagnosisCategory,
    ExecStatus,
    Execution,
    Grade,
    Verdict,
)

Category = DiagnosisCategory

NOT_DIAGNOSED = frozenset(
    {
        Verdict.CORRECT,
        Verdict.UNVERIFIED,
        Verdict.API_ERROR,
        Verdict.MISSING,
        Verdict.LICENCE_ERROR,
        Verdict.NEEDS_GUROBI,
        Verdict.NOT_RUN,
        Verdict.HARNESS_ERROR,
    }
)
"""Verdicts that get no diagnosis: passing ones (``unverified`` would pass but for a proof), and
failures of the environment or the model request, which say nothing about the program."""

_DATA_ERRORS = frozenset({"KeyError", "IndexError", "FileNotFoundError", "JSONDecodeError"})
_ALWAYS_DATA = frozenset({"FileNotFoundError", "JSONDecodeError"})
# JSONDecodeError is raised in json's own frames and a missing file in io's: where they come from
# does not make them a solver library's.
_IMPORT_ERRORS = frozenset({"ModuleNotFoundError", "ImportError"})
_MISUSE_ERRORS = frozenset({"AttributeError", "TypeError", "ValueError", "NotImplementedError"})
_LIBRARY_ERROR = re.compile(
    r"Gurobi|Pulp|Highs|Scip|Copt|Mosek|Cplex|Xpress|Solver|Pyomo|Cvxpy|OrTools", re.I
)
_LIBRARY_PATH = re.compile(
    r"site-packages|dist-packages|^src/|gurobipy|pulp|pyscipopt|highspy|ortools|pyomo|cvxpy|coptpy|mip/"
)
_SOLVER_OBJECT = re.compile(
    r"gurobipy|\b(?:Model|Var|Constr|LinExpr|QuadExpr|TempConstr|tupledict|tuplelist|MVar|"
    r"LpProblem|LpVariable|LpAffineExpression|LpConstraint|Highs|Solver|IntVar|CpModel)\b"
)
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')


def _exception_category(execution: Execution) -> tuple[Category, str]:
    """The category of a program that raised (see the module docstring) and a detail line."""
    error = execution.error_type or ""
    message = _last_line(execution)
    detail = message or error or execution.status.value
    if error in _IMPORT_ERRORS:
        return Category.MISSING_LIBRARY, detail
    in_library = _raised_in_library(execution.stderr_tail)
    if error in _ALWAYS_DATA or (error in _DATA_ERRORS and not in_library):
        return Category.DATA_ACCESS, detail
    if execution.status is ExecStatus.SOLVER_ERROR or (error and _LIBRARY_ERROR.search(error)):
        return Category.API_MISUSE, detail
    if error in _MISUSE_ERRORS and (in_library or _SOLVER_OBJECT.search(message)):
        return Category.API_MISUSE, detail
    if error and in_library:
        return Category.API_MISUSE, detail
    return Category.RUNTIME_OTHER, detail


def _last_line(execution: Execution) -> str:
    lines = (execution.detail or "").strip().splitlines()
    return lines[-1].strip() if lines else ""


def _raised_in_library(stderr: str) -> bool:
    """Whether the innermost frame of the last traceback in ``stderr`` is a library's, not the
    program's (the sandbox runs it as ``program.py``; ``<string>`` for exec'd code)."""
    frames = [match.group(1) for line in stderr.splitlines() if (match := _FRAME.match(line))]
    if not frames:
        return False
    innermost = frames[-1]
    if innermost.endswith("program.py") or innermost.startswith("<"):
        return False
    return bool(_LIBRARY_PATH.search(innermost))


_CUT_SHORT = frozenset({Verdict.NO_CODE, Verdict.SYNTAX_ERROR, Verdict.RUNTIME_ERROR, Verdict.NO_SOLVE})
"""Verdicts that a completion cut off by the token limit explains."""

_BY_STATUS: dict[Verdict, Category] = {
    Verdict.TIMEOUT: Category.TIMEOUT,
    Verdict.MEMORY_LIMIT: Category.MEMORY,
    Verdict.OUTPUT_LIMIT: Category.RUNTIME_OTHER,
    Verdict.KILLED: Category.RUNTIME_OTHER,
    Verdict.NEEDS_LIBRARY: Category.MISSING_LIBRARY,
}


def failure_diagnosis(completion: Completion | None, execution: Execution, grade: Grade) -> Diagnosis | None:
    """The diagnosis of a sample that failed before its model could be judged (no code, a syntax
    error, an exception, a limit, no solve), or ``None`` when the verdict is ``wrong`` or
    ``not_determinable`` (the caller looks at the model) or is in :data:`NOT_DIAGNOSED`."""
    verdict = grade.verdict
    if verdict in _CUT_SHORT and completion is not None and completion.finish_reason == "length":
        # A program cut off by the token limit fails however it fails: the cut is the cause.
        detail = f"the completion hit the token limit ({verdict.value})"
        return Diagnosis(category=Category.TRUNCATED, detail=detail)
    if verdict is Verdict.NO_CODE:
        return Diagnosis(category=Category.NO_CODE, detail=execution.detail or grade.reason)
    if verdict is Verdict.SYNTAX_ERROR:
        return Diagnosis(category=Category.SYNTAX, detail=_last_line(execution) or grade.reason)
    if verdict in (Verdict.RUNTIME_ERROR, Verdict.SOLVER_ERROR):
        category, detail = _exception_category(execution)
        return Diagnosis(category=category, detail=detail)
    if verdict in _BY_STATUS:
        return Diagnosis(category=_BY_STATUS[verdict], detail=execution.detail or grade.reason)
    if verdict is Verdict.NO_SOLVE and not execution.solves:
        return Diagnosis(category=Category.NO_SOLVE, detail=execution.detail or grade.reason)
    return None
