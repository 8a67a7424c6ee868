"""The repair protocol (``trex-eval run --repair N``, and the reward server's repair environment,
:mod:`trex_eval.reward.environment`): which outcomes are fed back, what the feedback says, and the
conversation of each round. It lives with the protocols so that both the run and the reward
package (which may not import :mod:`trex_eval.run`) render the same feedback.

After a sample's program ran and was graded, :func:`repair_need` decides whether the outcome is
one the protocol repairs and gathers the facts the feedback may state (:class:`RepairFacts`);
:class:`RepairTemplate` renders them from ``prompts/repair.j2``; :func:`conversation` appends the
model's answer and the feedback to the prompt. The run (:mod:`trex_eval.run.repair_rounds`) asks
the model again, up to ``N`` times, and stores every round with the sample
(:class:`~trex_eval.records.RepairRound`).

**What is repaired** (the default feedback mode, ``execution``): no code extracted, a syntax or
runtime error, a timeout or another resource limit, a solver error, a program that never solved
a model (or, for structure benchmarks, wrote none), a last solve that ended neither optimal nor
with a decided "no optimum", and a model reported infeasible or unbounded when the benchmark's
reference has an optimum. **What is never repaired**: a correct sample; a model the program
solved to optimality (its objective may be wrong, and saying so would leak the label); a
structure whose comparison failed; environment failures (licence, gurobipy unavailable, not run)
and failed model requests, which say nothing about the program. Only with the feedback mode
``objective-differs`` is a wrong answer repaired too, and the feedback then says that the
objective (or model) differs from the expected one, never by how much.

**What the feedback says**: the execution status, the exception type, the last lines of the
sandbox's detail and of the program's stderr and stdout (capped: :data:`MESSAGE_CHARS`,
:data:`TAIL_LINES`, :data:`TAIL_CHARS`), and the last solve's status. Never the reference, never
the grade's reason (which quotes the reference). Pure except :class:`RepairTemplate`, which reads
its template file once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import jinja2

from trex_eval.benchmarks import assets
from trex_eval.errors import ConfigError
from trex_eval.records import (
    ChatMessage,
    Completion,
    ExecStatus,
    Execution,
    Grade,
    GraderKind,
    ObjectiveReference,
    Problem,
    Program,
    Prompt,
    SolveStatus,
    Verdict,
)
from trex_eval.store import RepairFeedbackMode

TEMPLATE = "repair.j2"
"""The feedback template in the prompts folder (its sha256 is recorded in the run settings)."""

MESSAGE_CHARS = 300
"""At most this many characters of the sandbox's detail (the error message) are fed back."""

TAIL_LINES = 12
"""At most this many last lines of stderr and of stdout are fed back ..."""

TAIL_CHARS = 400
"""... and of those, at most this many last characters each."""

FEEDBACK_MODES: tuple[RepairFeedbackMode, ...] = ("execution", "objective-differs")

FailureKind = str
"""The outcome a repair round answers: an execution status that failed (``syntax_error``,
``runtime_error``, ``timeout``, ``memory_limit``, ``output_limit``, ``killed``, ``solver_error``),
``no_code``, ``no_solve``, ``infeasible``, ``unbounded``, ``infeasible_or_unbounded`` (a model
without an optimum where the reference has one), ``not_optimal`` (a solve that stopped early or
failed), or, only under ``objective-differs``, ``objective_differs`` / ``model_differs``."""

_FAILED_RUN = frozenset(
    {
        ExecStatus.SYNTAX_ERROR,
        ExecStatus.RUNTIME_ERROR,
        ExecStatus.TIMEOUT,
        ExecStatus.MEMORY_LIMIT,
        ExecStatus.OUTPUT_LIMIT,
        ExecStatus.KILLED,
        ExecStatus.SOLVER_ERROR,
    }
)
_NO_OPTIMUM = {
    SolveStatus.INFEASIBLE: "infeasible",
    SolveStatus.UNBOUNDED: "unbounded",
    SolveStatus.INF_OR_UNBD: "infeasible_or_unbounded",
}


@dataclass(frozen=True)
class RepairFacts:
    """What a feedback message may state about one round's outcome (nothing about the reference).

    ``failure`` is the :data:`FailureKind`; ``status`` the execution status; ``error_type`` the
    exception's type; ``message`` the last lines of the sandbox's detail (at most
    :data:`MESSAGE_CHARS`); ``stdout``/``stderr`` the program's last output lines (at most
    :data:`TAIL_LINES` lines and :data:`TAIL_CHARS` characters each); ``solve_status`` and
    ``library`` describe the last solve, when there was one; ``grader`` is the benchmark's kind.
    """

    failure: FailureKind
    status: str
    grader: GraderKind
    error_type: str | None = None
    message: str = ""
    stdout: str = ""
    stderr: str = ""
    solve_status: str | None = None
    library: str | None = None


def repair_need(
    problem: Problem,
    program: Program,
    execution: Execution,
    grade: Grade,
    *,
    grader: GraderKind,
    mode: RepairFeedbackMode = "execution",
) -> RepairFacts | None:
    """The facts to feed back when this round's outcome is one the repair protocol repairs (see
    the module docstring), else ``None``.

    The decision reads the program, its execution and, of the reference, only whether it has an
    optimum (for a model the program found infeasible or unbounded). ``grade`` is read only to
    stop at a correct sample, to tell that a structure program left no model the grader could
    read (verdict ``no_solve``, decided without the reference), and, under ``objective-differs``,
    to repair a ``wrong`` answer.
    """
    verdict = grade.verdict
    if grade.passed or verdict in (Verdict.API_ERROR, Verdict.MISSING) or verdict.is_environment_failure:
        return None
    if program.code is None or execution.status is ExecStatus.NO_CODE:
        return _facts("no_code", execution, grader=grader, message=program.reason)
    status = execution.status
    if status in _FAILED_RUN:
        return _facts(status.value, execution, grader=grader)
    if status is ExecStatus.NO_SOLVE:
        return _facts("no_solve", execution, grader=grader)
    if status is not ExecStatus.OK:
        return None  # an environment failure the verdict did not name
    if grader is GraderKind.STRUCTURE:
        if verdict is Verdict.NO_SOLVE:
            return _facts("no_solve", execution, grader=grader)
    else:
        solve = execution.last_solve
        if solve is None:
            # A printed objective is an answer (a rule may read it): not fed back.
            if execution.printed_objective is None:
                return _facts("no_solve", execution, grader=grader)
        elif solve.status in _NO_OPTIMUM:
            reference = problem.reference
            if isinstance(reference, ObjectiveReference) and reference.status is SolveStatus.OPTIMAL:
                return _facts(_NO_OPTIMUM[solve.status], execution, grader=grader)
        elif solve.status is not SolveStatus.OPTIMAL:
            return _facts("not_optimal", execution, grader=grader)
    if mode == "objective-differs" and verdict is Verdict.WRONG:
        kind = "model_differs" if grader is GraderKind.STRUCTURE else "objective_differs"
        return _facts(kind, execution, grader=grader)
    return None


def _facts(
    failure: FailureKind, execution: Execution, *, grader: GraderKind, message: str | None = None
) -> RepairFacts:
    solve = execution.last_solve
    return RepairFacts(
        failure=failure,
        status=execution.status.value,
        grader=grader,
        error_type=execution.error_type,
        message=_tail(execution.detail if message is None else message, lines=5, chars=MESSAGE_CHARS),
        stdout=_tail(execution.stdout_tail, lines=TAIL_LINES, chars=TAIL_CHARS),
        stderr=_tail(execution.stderr_tail, lines=TAIL_LINES, chars=TAIL_CHARS),
        solve_status=None if solve is None else solve.status.value,
        library=None if solve is None else solve.library,
    )


_JOB_DIRECTORY = re.compile(r"/(?:[^\s\"'/]+/)*job(?:-\d+)?/")
"""The sandbox's working directory of one job (``/tmp/job/``, or a worker's scratch folder at the
weaker isolation levels, which differs between sessions; ``job-7/`` in runs of earlier versions)."""


def _tail(text: str, *, lines: int, chars: int) -> str:
    """The last ``lines`` lines of ``text``, cut to its last ``chars`` characters (a cut is marked
    with a leading ``...``), with the job's working directory left out of paths
    (``/tmp/job/program.py`` reads ``program.py``): the feedback for the same outcome is then
    the same text in every session, which is what lets a resumed run reuse a stored round."""
    text = _JOB_DIRECTORY.sub("", text)
    kept = "\n".join(text.rstrip().splitlines()[-lines:])
    return kept if len(kept) <= chars else "..." + kept[-(chars - 3) :]


class RepairTemplate:
    """``prompts/repair.j2``, loaded once (``StrictUndefined``: a missing variable is an error).

    :attr:`sha256` hashes the template's source (recorded as ``repair_template_sha256``).

    Raises:
        ConfigError: the template file is missing.
    """

    def __init__(self) -> None:
        folder = assets.prompts_dir()
        path = folder / TEMPLATE
        try:
            source = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the repair template: {exc.strerror}", where=str(path)) from None
        self.sha256 = hashlib.sha256(source.encode("utf-8")).hexdigest()
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(folder),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=False,
            autoescape=False,
        )
        self._template = env.get_template(TEMPLATE)

    def render(self, facts: RepairFacts, *, round_index: int, rounds: int) -> str:
        """The feedback message asking for round ``round_index`` (1-based) of ``rounds``."""
        return self._template.render(
            failure=facts.failure,
            status=facts.status,
            grader=facts.grader.value,
            error_type=facts.error_type,
            message=facts.message,
            stdout=facts.stdout,
            stderr=facts.stderr,
            solve_status=facts.solve_status,
            library=facts.library,
            round=round_index,
            rounds=rounds,
        ).strip()


_EMPTY_ANSWER = "(empty answer)"
"""What stands for an answer without text in the conversation (servers refuse empty turns)."""


def conversation(prompt: Prompt, turns: Sequence[tuple[Completion, str]]) -> Prompt:
    """``prompt`` followed, for each ``(answer, feedback)`` in ``turns``, by the answer's text as an
    assistant message and the feedback as a user message: the conversation that asks for round
    ``len(turns)``. The reasoning channel of an answer is not sent back."""
    messages = list(prompt.messages)
    for answer, feedback in turns:
        messages.append(ChatMessage(role="assistant", content=answer.text or _EMPTY_ANSWER))
        messages.append(ChatMessage(role="user", content=feedback))
    return prompt.model_copy(update={"messages": tuple(messages)})
