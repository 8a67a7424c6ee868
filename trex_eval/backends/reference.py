"""The ``reference`` backend: each problem's reference solution as the completion.

A self-test of an installation (extraction, sandbox, solver hooks, graders) that needs no model:
run a benchmark with ``--model reference`` and it should score close to 100 % (the exceptions are
known data defects, e.g. golden facts G9 and G13 of the reference-harness spec).

What is emitted, in a ```` ```python ```` fence:

* a problem with ``reference_code`` (Bench4Opt rows: gurobipy code that reads ``data.json`` and
  builds ``model`` without solving it): that code, followed by ``model.optimize()`` when the
  problem is objective-graded (B4O-Feasible) and unchanged when structure-graded (ORGEval, whose
  code writes the model as an LP file itself);
* a problem with only an objective answer (NL4OPT, OptiBench): a one-variable model whose optimum
  is the reference value, written for gurobipy, PuLP, highspy or OR-Tools ``pywraplp``, chosen by
  ``problem.index`` modulo the library list, so that a self-test run exercises every library's
  hook. An infeasible or unbounded reference gets a model with that status instead.

Every answer program binds its solver object to the module-level name ``model`` and prints one
line: ``objective: <value>`` or ``status: <status>``. Only the gurobipy programs can pass the
``trex-compat`` rule, which looks for a gurobipy model: ``trex-eval run --protocol trex-compat``
(and ``trex-eval audit``) therefore default this backend to ``libraries=gurobipy`` unless
``--opt libraries=...`` says otherwise.

Options:
    ``libraries``: comma-separated rotation, from ``gurobipy``, ``pulp``, ``highspy``, ``ortools``
    (default: all four, in that order).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from trex_eval.backends.base import Backend, BackendKind, BackendSpec, GenerationRequest
from trex_eval.backends.option_errors import invalid_options
from trex_eval.records import Completion, ObjectiveReference, Problem, SolveStatus

MODEL_NAME = "reference"
LIBRARIES = ("gurobipy", "pulp", "highspy", "ortools")


class ReferenceOptions(BaseModel):
    """Options of the ``reference`` backend (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    libraries: tuple[str, ...] = LIBRARIES

    @field_validator("libraries", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            value = tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, tuple | list):
            unknown = sorted(set(value) - set(LIBRARIES))
            if unknown:
                raise ValueError(f"unknown library {', '.join(unknown)}; choose from {', '.join(LIBRARIES)}")
            if not value:
                raise ValueError("name at least one library")
        return value


# --------------------------------------------------------------------------- answer programs
#
# One template per (library, outcome). Optimal: minimise x subject to x >= value, so the optimum
# is the reference value bit for bit (a row, not a bound, so that the model has a constraint).
# PuLP is the exception: CBC hands solutions back through a text file with about 8 significant
# digits, so the value goes into the objective constant and x is fixed at its bound 0.
# Infeasible: x >= 1 and x <= 0. Unbounded: maximise x subject to x >= 1. Gurobi gets
# DualReductions=0 so that it reports INFEASIBLE/UNBOUNDED rather than INF_OR_UNBD, and OR-Tools
# uses SCIP because GLOP reports an unbounded LP as infeasible.

_Bodies = Mapping[SolveStatus, tuple[str, ...]]

_GUROBIPY = """\
import gurobipy as gp
from gurobipy import GRB

env = gp.Env(empty=True)
env.setParam("OutputFlag", 0)
env.start()
model = gp.Model("reference", env=env)
model.Params.DualReductions = 0
x = model.addVar(lb=-GRB.INFINITY, name="x")
{body}
model.optimize()
if model.Status == GRB.OPTIMAL:
    print("objective:", repr(model.ObjVal))
elif model.Status == GRB.INFEASIBLE:
    print("status: infeasible")
elif model.Status == GRB.UNBOUNDED:
    print("status: unbounded")
else:
    print("status:", model.Status)
"""
_GUROBIPY_BODY: _Bodies = {
    SolveStatus.OPTIMAL: (
        'model.addConstr(x >= {value}, name="reference")',
        "model.setObjective(x, GRB.MINIMIZE)",
    ),
    SolveStatus.INFEASIBLE: (
        'model.addConstr(x >= 1, name="low")',
        'model.addConstr(x <= 0, name="high")',
        "model.setObjective(x, GRB.MINIMIZE)",
    ),
    SolveStatus.UNBOUNDED: ('model.addConstr(x >= 1, name="low")', "model.setObjective(x, GRB.MAXIMIZE)"),
}

_PULP = """\
import pulp

{body}
model.solve(pulp.PULP_CBC_CMD(msg=False))
if model.status == pulp.LpStatusOptimal:
    print("objective:", repr(pulp.value(model.objective)))
else:
    print("status:", pulp.LpStatus[model.status].lower())
"""
_PULP_BODY: _Bodies = {
    SolveStatus.OPTIMAL: (
        'model = pulp.LpProblem("reference", pulp.LpMinimize)',
        'x = pulp.LpVariable("x", lowBound=0)',
        "model += x + {value}",
    ),
    SolveStatus.INFEASIBLE: (
        'model = pulp.LpProblem("reference", pulp.LpMinimize)',
        'x = pulp.LpVariable("x")',
        "model += x",
        'model += x >= 1, "low"',
        'model += x <= 0, "high"',
    ),
    SolveStatus.UNBOUNDED: (
        'model = pulp.LpProblem("reference", pulp.LpMaximize)',
        'x = pulp.LpVariable("x")',
        "model += x",
        'model += x >= 1, "low"',
    ),
}

_HIGHSPY = """\
import highspy

inf = highspy.kHighsInf
model = highspy.Highs()
model.setOptionValue("output_flag", False)
model.addVar(-inf, inf)
model.changeColCost(0, 1.0)
{body}
model.run()
status = model.getModelStatus()
if status == highspy.HighsModelStatus.kOptimal:
    print("objective:", repr(model.getInfo().objective_function_value))
else:
    print("status:", model.modelStatusToString(status).lower())
"""
_HIGHSPY_BODY: _Bodies = {
    SolveStatus.OPTIMAL: ("model.addRow({value}, inf, 1, [0], [1.0])",),
    SolveStatus.INFEASIBLE: (
        "model.addRow(1.0, inf, 1, [0], [1.0])",
        "model.addRow(-inf, 0.0, 1, [0], [1.0])",
    ),
    SolveStatus.UNBOUNDED: (
        "model.addRow(1.0, inf, 1, [0], [1.0])",
        "model.changeObjectiveSense(highspy.ObjSense.kMaximize)",
    ),
}

_ORTOOLS = """\
from ortools.linear_solver import pywraplp

model = pywraplp.Solver.CreateSolver("SCIP")
x = model.NumVar(-model.infinity(), model.infinity(), "x")
{body}
status = model.Solve()
if status == pywraplp.Solver.OPTIMAL:
    print("objective:", repr(model.Objective().Value()))
elif status == pywraplp.Solver.INFEASIBLE:
    print("status: infeasible")
elif status == pywraplp.Solver.UNBOUNDED:
    print("status: unbounded")
else:
    print("status:", status)
"""
_ORTOOLS_BODY: _Bodies = {
    SolveStatus.OPTIMAL: ('model.Add(x >= {value}, "reference")', "model.Minimize(x)"),
    SolveStatus.INFEASIBLE: ('model.Add(x >= 1, "low")', 'model.Add(x <= 0, "high")', "model.Minimize(x)"),
    SolveStatus.UNBOUNDED: ('model.Add(x >= 1, "low")', "model.Maximize(x)"),
}

_TEMPLATES: dict[str, tuple[str, _Bodies]] = {
    "gurobipy": (_GUROBIPY, _GUROBIPY_BODY),
    "pulp": (_PULP, _PULP_BODY),
    "highspy": (_HIGHSPY, _HIGHSPY_BODY),
    "ortools": (_ORTOOLS, _ORTOOLS_BODY),
}


# Bench4Opt reference programs build `model` but never solve it; user benchmarks may ship complete
# programs, which must run unchanged.
_SOLVE_CALL = re.compile(r"\.(optimize|solve|Solve|run|minimize)\s*\(")


def answer_program(reference: ObjectiveReference, *, library: str) -> str:
    """A program, for ``library``, whose solve ends in ``reference``'s status and value.

    Raises:
        ValueError: an unknown library, or a status other than optimal, infeasible, unbounded
            or inf_or_unbd (answered as infeasible); no one-variable model reliably produces the
            others.
    """
    template, bodies = _TEMPLATES[library]
    # A "no finite optimum" label (infeasible or unbounded, undecided) is answered by an
    # infeasible model: every objective rule accepts that status against it.
    status = SolveStatus.INFEASIBLE if reference.status is SolveStatus.INF_OR_UNBD else reference.status
    body = bodies.get(status)
    if body is None or (reference.status is SolveStatus.OPTIMAL and reference.value is None):
        raise ValueError(f"no reference program for status '{reference.status.value}'")
    # repr() round-trips the float exactly; the program then optimises to that very double.
    return template.format(body="\n".join(body).format(value=repr(reference.value)))


def reference_completion_text(problem: Problem, *, libraries: tuple[str, ...] = LIBRARIES) -> str:
    """The completion text the ``reference`` backend emits for ``problem``.

    Raises:
        ValueError: the problem has neither ``reference_code`` nor an objective reference the
            answer programs can reproduce.
    """
    if problem.reference_code is not None:
        code = problem.reference_code.rstrip()
        if isinstance(problem.reference, ObjectiveReference) and not _SOLVE_CALL.search(code):
            code += "\n\nmodel.optimize()"
        return _fenced(code)
    if isinstance(problem.reference, ObjectiveReference):
        library = libraries[problem.index % len(libraries)]
        return _fenced(answer_program(problem.reference, library=library).rstrip())
    raise ValueError("the problem has no reference_code and no objective reference")


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```\n"


class ReferenceBackend:
    """Emits reference solutions; no model, no network. ``describe()`` names the rotation."""

    def __init__(self, spec: BackendSpec) -> None:
        self.name = spec.name
        try:
            self._options = ReferenceOptions.model_validate(spec.options)
        except ValidationError as exc:
            raise invalid_options(
                exc, ReferenceOptions.model_fields, backend=spec.backend, where=f"model preset '{spec.name}'"
            ) from None

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def describe(self) -> Mapping[str, object]:
        return {"backend": "reference", "model": MODEL_NAME, "libraries": list(self._options.libraries)}

    async def generate(self, request: GenerationRequest) -> Completion:
        """The reference completion; a problem without a usable reference gets ``error`` set."""
        problem = request.problem
        seed = request.seed if request.seed is not None else request.params.seed
        try:
            text = reference_completion_text(problem, libraries=self._options.libraries)
        except ValueError as exc:
            return Completion(
                problem_id=problem.id,
                sample_index=request.sample_index,
                text="",
                model=MODEL_NAME,
                seed=seed,
                error=f"no reference solution for {problem.id}: {exc}",
            )
        return Completion(
            problem_id=problem.id,
            sample_index=request.sample_index,
            text=text,
            finish_reason="stop",
            model=MODEL_NAME,
            seed=seed,
        )


def create(spec: BackendSpec) -> Backend:
    """Factory of the ``reference`` backend.

    Raises:
        ConfigError: an unknown option or library name.
    """
    return ReferenceBackend(spec)


BACKEND = BackendKind(create=create)
