"""A sample's repair rounds (``trex-eval run --repair N``), the effectful half of
:mod:`trex_eval.run.repair`: while the last round's outcome is one the protocol repairs and rounds
are left, the model is asked again with the feedback appended to the conversation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from trex_eval.protocols.plan import EvaluationPlan
from trex_eval.records import Completion, Problem, Prompt, RepairRound, SampleRecord, Verdict
from trex_eval.run.repair import RepairTemplate, conversation, repair_need
from trex_eval.run.spec import RepairSettings
from trex_eval.store import CompletionLine

RETRIED = frozenset({Verdict.API_ERROR, Verdict.MISSING})
"""Verdicts of a sample tried again on resume (its model request failed, or nothing was
recorded for it): a round ending so ends the repair rounds."""

Generate = Callable[[Prompt, int], Awaitable[CompletionLine]]
"""Ask the model: (the whole conversation, round number) -> the stored completion line."""
Grade = Callable[[Prompt, Completion, int], Awaitable[SampleRecord]]
"""Extract, run and grade one round's completion: (prompt, completion, round) -> its record."""


async def repair_rounds(
    record: SampleRecord,
    *,
    problem: Problem,
    template: RepairTemplate,
    plan: EvaluationPlan,
    settings: RepairSettings,
    stored: Callable[[int], CompletionLine | None],
    generate: Generate,
    grade: Grade,
) -> SampleRecord:
    """``record`` (round 0) with its repair rounds.

    A round's completion stored by an earlier session (``stored(round)``) is reused only when it
    answered exactly the conversation asked now (a re-run program that behaves otherwise gets its
    feedback answered anew). A failed request ends the rounds; the sample is then tried again on
    resume, from its stored rounds."""
    rounds: list[RepairRound] = []
    turns: list[tuple[Completion, str]] = []
    completion, program, execution = record.completion, record.program, record.execution
    graded = record.grade
    for number in range(1, settings.rounds + 1):
        facts = repair_need(problem, program, execution, graded, grader=plan.kind, mode=settings.feedback)
        if facts is None:
            break
        feedback = template.render(facts, round_index=number, rounds=settings.rounds)
        turns.append((completion, feedback))
        prompt = conversation(record.prompt, turns)
        line = stored(number)
        if line is None or line.prompt.messages != prompt.messages:
            line = await generate(prompt, number)
        result = await grade(prompt, line.completion, number)
        completion, program, execution, graded = (
            result.completion,
            result.program,
            result.execution,
            result.grade,
        )
        rounds.append(
            RepairRound(
                round=number,
                failure=facts.failure,
                feedback=feedback,
                completion=completion,
                program=program,
                execution=execution,
                grade=graded,
            )
        )
        if graded.verdict in RETRIED:
            break
    return record.model_copy(update={"rounds": tuple(rounds)})
