"""Repair as a multi-turn RL environment: the policy writes a program, the environment runs it
and answers with the feedback ``trex-eval run --repair`` renders, up to a bounded number of turns;
the final turn is paid by the scorer's reward policy.

One :class:`RepairEpisode` is one rollout's conversation with the environment. Each
:meth:`~RepairEpisode.step` grades one answer exactly as ``/v1/score`` grades a rollout (the
scorer's :class:`~trex_eval.protocols.judge.SampleJudge`: extraction, a fresh sandbox job,
re-solve), then asks :func:`~trex_eval.protocols.repair.repair_need` whether the outcome is one the
repair protocol feeds back: a program that failed to run, never solved, or whose model the harness
found infeasible or unbounded where the reference has an optimum. Then the answer's feedback is
the rendered ``prompts/repair.j2`` (status, exception, the last lines of the program's output; never
the reference, never the grade's reason) and another turn is open. Otherwise (a correct program, a
program that solved a model to optimality, whose value is not discussed since that would leak the
label, or the last turn spent) the episode is over, and the answer's ``reward`` is the policy's
reward of that last turn.

**Per-turn reward** (``progress``): what a turn's policy reward adds over the best reward of the
earlier turns, never below 0. A policy that breaks a program on purpose and fixes it again earns
nothing for the fix: the sum of an episode's ``progress`` is its best turn's reward, whatever path
led there. ``progress`` is a shaping signal only; the episode's reward is ``reward``.

The records answered carry what :meth:`~.front.ScorerFront.score_target` carries: label-free
unless the scorer's settings ask for the reference (:mod:`.labels`).
"""

from __future__ import annotations

import asyncio
import time

from pydantic import Field

from trex_eval.errors import ConfigError
from trex_eval.protocols.repair import RepairTemplate, repair_need
from trex_eval.reward.catalogue import Target
from trex_eval.reward.deadline import Batch, Missed, new_tenant, not_graded
from trex_eval.reward.records import RewardRecord, Rollout
from trex_eval.reward.service import Scorer
from trex_eval.vocabulary import Record

MAX_TURNS = 8
"""The most turns (programs) an episode may have; a request for more is refused."""

DEFAULT_TURNS = 3
"""Turns of an episode that names none: the first program and two repairs."""

OVER = "The episode is over: no more programs are run."
"""The feedback of the turn that ended the episode (nothing about the grade: the trainer reads the
reward, the policy reads nothing it could learn the label from)."""

NOT_GRADED = (
    "The harness could not grade this program (its deadline passed or the harness failed): "
    "the episode is over without a reward."
)
"""The feedback of a turn the harness did not grade (its record has no reward)."""


class StepAnswer(Record):
    """What one turn of a repair episode answers.

    ``turn`` (1-based) of at most ``turns``; ``done``: no further turn is taken; ``feedback``: the
    text for the policy (the rendered repair feedback while ``done`` is False, :data:`OVER` or
    :data:`NOT_GRADED` once it is True); ``reward``: the episode's reward, the policy's reward of
    this last turn, only when ``done`` (None before, and for a turn not graded); ``progress``: this
    turn's policy reward less the best of the earlier turns, at least 0 (None for a turn not
    graded); ``failure``: the repair protocol's name for what is fed back (``syntax_error``,
    ``no_solve``, ``infeasible``, ...), None when nothing is; ``record``: the turn's reward record.
    """

    turn: int
    turns: int
    done: bool
    feedback: str
    reward: float | None = None
    progress: float | None = None
    failure: str | None = None
    record: RewardRecord
    rewards: tuple[float | None, ...] = Field(default=())
    """Every turn's policy reward so far, in order (this one last)."""


def checked_turns(turns: object, *, where: str) -> int:
    """``turns`` as an episode's turn count: an integer in 1..:data:`MAX_TURNS`.

    Raises:
        ConfigError: anything else (the message names ``where`` and the bound).
    """
    if isinstance(turns, bool) or not isinstance(turns, int) or not 1 <= turns <= MAX_TURNS:
        raise ConfigError(
            f"{where}: turns must be an integer from 1 to {MAX_TURNS}, not {str(turns)[:40]!r}",
            hint=f"ask for at most {MAX_TURNS} turns (the environment's bound, MAX_TURNS)",
        )
    return turns


class RepairEpisode:
    """One rollout's repair episode for ``target`` on a started ``scorer``; see the module
    docstring. ``turns``: programs run at most (1..:data:`MAX_TURNS`); ``deadline_s``: seconds
    one turn may take from its start (None: no limit), past which the turn is not graded and the
    episode ends without a reward. Turns are taken one at a time (a second concurrent
    :meth:`step` waits for the first).

    Raises (from the constructor): ConfigError for a turn count outside the bound.
    """

    def __init__(
        self,
        scorer: Scorer,
        target: Target,
        *,
        template: RepairTemplate,
        turns: int = DEFAULT_TURNS,
        deadline_s: float | None = None,
    ) -> None:
        self.scorer, self.target, self.template = scorer, target, template
        self.turns = checked_turns(turns, where="repair episode")
        self.deadline_s = deadline_s
        self.rewards: list[float | None] = []
        self.done = False
        self._best = 0.0
        self._lock = asyncio.Lock()
        self._tenant = new_tenant("episode")

    @property
    def turn(self) -> int:
        """Turns taken so far."""
        return len(self.rewards)

    @property
    def busy(self) -> bool:
        """Whether a turn is being graded now."""
        return self._lock.locked()

    async def step(self, completion: str) -> StepAnswer:
        """Grade ``completion`` (the policy's whole answer, code fences and prose included) as
        the next turn, as a fresh sandbox job.

        Raises:
            ConfigError: the episode is over already.
        """
        async with self._lock:
            if self.done:
                raise ConfigError(
                    f"the repair episode is over after {self.turn} turn(s)",
                    hint="start a new episode for another rollout",
                )
            started = time.monotonic()
            batch = Batch(
                [self.scorer.score_rollout(self.target, completion)],
                tenant=self._tenant,
                deadline_s=self.deadline_s,
            )
            try:
                (outcome,) = await batch.settle()
            except asyncio.CancelledError:  # nobody waits for the answer: the turn is not taken
                for task in batch.tasks:
                    task.cancel()
                raise
            if isinstance(outcome, Missed):
                record = not_graded(
                    self.target,
                    outcome,
                    policy=self.scorer.policy.spec,
                    elapsed_s=time.monotonic() - started,
                )
                return self._ended(record)
            return self._answer(outcome)

    def _answer(self, rollout: Rollout) -> StepAnswer:
        record = rollout.record
        if record.reward is None:
            return self._ended(record)
        progress = max(0.0, record.reward - self._best)
        self._best = max(self._best, record.reward)
        self.rewards.append(record.reward)
        facts = repair_need(
            self.target.problem,
            rollout.program,
            rollout.execution,
            rollout.grade,
            grader=self.target.plan.kind,
        )
        self.done = facts is None or self.turn >= self.turns
        feedback = (
            OVER
            if self.done or facts is None
            else self.template.render(facts, round_index=self.turn, rounds=self.turns - 1)
        )
        return StepAnswer(
            turn=self.turn,
            turns=self.turns,
            done=self.done,
            feedback=feedback,
            reward=record.reward if self.done else None,
            progress=progress,
            failure=None if facts is None else facts.failure,
            record=record,
            rewards=tuple(self.rewards),
        )

    def _ended(self, record: RewardRecord) -> StepAnswer:
        """A turn the harness did not grade: the episode ends without a reward (a retry would
        pay the policy for the harness's failure, or charge it for one)."""
        self.rewards.append(None)
        self.done = True
        return StepAnswer(
            turn=self.turn,
            turns=self.turns,
            done=True,
            feedback=NOT_GRADED,
            record=record,
            rewards=tuple(self.rewards),
        )
