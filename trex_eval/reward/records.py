"""The records of the reward seam: what a trainer asks (:class:`RewardRequest`) and what it gets
back (:class:`RewardRecord`), one per rollout. Frozen and JSON-ready: the reward server sends them
as they are, and a reward log is one :class:`RewardRecord` per line."""

from __future__ import annotations

from pydantic import Field

from trex_eval.records import (
    ChatMessage,
    Completion,
    Diagnosis,
    ExecStatus,
    Execution,
    Grade,
    Program,
    SolveStatus,
    Verdict,
)
from trex_eval.text import Text, Unicode
from trex_eval.vocabulary import Record


class ProblemKey(Record):
    """A problem of a shipped or BYO benchmark: ``benchmark`` as ``trex-eval run --benchmark``
    takes it (a registered name or a YAML path), ``problem_id`` as its rows name it."""

    benchmark: str
    problem_id: str


class InlineProblem(Record):
    """A problem given in the request itself, graded by an objective rule against ``value``.

    ``value`` is the optimal objective (None with ``status`` ``infeasible``/``unbounded``);
    ``files`` are placed in the program's working directory, name -> text; ``problem_id`` only
    names it in records and logs.
    """

    problem_id: str = "inline"
    question: Unicode = ""
    value: float | None
    status: SolveStatus = SolveStatus.OPTIMAL
    files: dict[str, str] = Field(default_factory=dict)


class RewardRequest(Record):
    """One rollout to score: the model's whole answer (``completion``, code fences and prose
    included, as a chat model returns it) for ``problem``.

    ``prompt`` is what the trainer asked (text, or chat messages), optional: it changes no reward,
    and a reward log (:mod:`.runlog`) stores it as the sample's prompt.
    """

    problem: ProblemKey | InlineProblem
    completion: Unicode
    prompt: Unicode | tuple[ChatMessage, ...] = ""

    def messages(self) -> tuple[ChatMessage, ...]:
        """:attr:`prompt` as chat messages (text is one user message; none when empty)."""
        if isinstance(self.prompt, str):
            return (ChatMessage(role="user", content=self.prompt),) if self.prompt else ()
        return self.prompt


class RewardTimings(Record):
    """Wall seconds of one rollout's stages (``execute_s``: in the sandbox, queueing for a lane
    included; ``grade_s``: the rule and any re-solve of the captured model)."""

    extract_s: float = 0.0
    execute_s: float = 0.0
    grade_s: float = 0.0
    total_s: float = 0.0


class RewardTerm(Record):
    """One term of a reward policy as it paid a rollout (:mod:`.terms`): ``value`` in [0, 1] is
    what the rollout earned of the term, ``weight`` its weight in the policy, ``detail`` why (one
    line, nothing of the label)."""

    name: str
    kind: str
    value: float
    weight: float
    detail: Text = ""


class RewardRecord(Record):
    """The reward of one rollout and everything that decided it.

    ``reward`` is the policy's value (``policy``: ``name@version``); ``verdict``, ``reason`` and
    ``rule`` (``name@version``) are the grade as a run would store it; ``stage`` is the furthest
    stage the rollout reached (``no_code``, ``format``, ``executes``, ``feasible``, ``correct``);
    ``status`` is the sandbox's execution status (None when nothing ran).

    ``reward`` is None ("no reward", JSON ``null``) for a rollout the harness did not grade for
    reasons of its own: its request's deadline passed while it waited for a lane, ran, or was
    being graded, or the harness failed while grading it. Its ``verdict`` is then ``not_run``,
    its ``stage`` ``not_graded`` and its ``reason`` says where it was; it says nothing of the
    program, and a trainer must not read it as a wrong answer. A program that ran over its own
    limits is graded (``timeout``, ``memory_limit``...) and paid like any failure.
    """

    benchmark: str
    problem_id: str
    reward: float | None
    verdict: Verdict
    reason: Text
    rule: str
    policy: str
    stage: str
    status: ExecStatus | None = None
    objective: float | None = None
    """The harness's re-derived objective of the last solve, where it re-solved it."""
    diagnosis: Diagnosis | None = None
    """Why a failing rollout failed, where the scorer diagnoses (``ScorerSettings.diagnose``)."""
    timings: RewardTimings = RewardTimings()
    terms: tuple[RewardTerm, ...] = ()
    """Every term of the policy as it paid this rollout, in the policy's order (empty for a
    rollout without a reward); ``reward`` is their total as the policy combines them."""


class Rollout(Record):
    """A scored rollout with the evidence a run directory keeps for a sample: its record, and the
    completion, extracted program, execution and grade that decided it."""

    record: RewardRecord
    completion: Completion
    program: Program
    execution: Execution
    grade: Grade
