"""A sample's record as stored: its JSON line held to the record budget in encoded bytes, or,
when the record cannot be stored at all, a record of that harness failure. Pure: no I/O.

The budget (``SandboxLimits.record_mib``, 16 MiB by default) holds for the line written to
``samples.jsonl``, measured as ``len(line)`` of the UTF-8 bytes. The sandbox keeps each execution
within it already (:mod:`trex_eval.sandbox.bounds`); a sample can still exceed it with its
repair rounds (one execution each), long tails or a long completion. Parts are then cut, the
largest first within each step, until the line fits, in this order (what a re-grade reads from a
stored execution goes last):

1. the contents of model files other than each execution's last one (the graders read the last);
2. the stdout and stderr tails (their ends are kept);
3. the matrices of solves other than each execution's last one;
4. the content of each execution's last model file (its start is kept);
5. the matrix of each execution's last solve;
6. the completion text and reasoning and the extracted code (``completions.jsonl`` keeps the
   whole completion; a re-grade runs a program whose stored code differs again).

Each cut is said at the front of that execution's ``detail`` (``stored record cut to its 16 MiB
budget: ...``). A record still over the budget after all of them, or one that cannot be
serialised, is stored as :func:`harness_failure` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from trex_eval.records import (
    Completion,
    ExecStatus,
    Execution,
    Grade,
    Program,
    Prompt,
    SampleRecord,
    SandboxLimits,
    Verdict,
)
from trex_eval.text import MESSAGE_CHARS, clean, clip, cut_to_bytes, json_bytes

RECORD_BYTES = SandboxLimits().record_mib << 20
"""The default record budget in bytes (``SandboxLimits.record_mib``)."""

_NOTE_ROOM = 64 << 10
"""Bytes left free by a cut for the notes that say what was cut."""


def encode(record: SampleRecord) -> bytes:
    """The line ``record`` is stored as (UTF-8, without the newline)."""
    return record.model_dump_json().encode("utf-8")


class OverBudget(ValueError):
    """A record that does not fit in its budget even with every program-controlled part cut."""


@dataclass(frozen=True)
class _Part:
    """One part that can be cut: its size in the line, the round it belongs to (0: the sample's
    own execution; ``k``: repair round ``k``), what it is, and its index (a file or solve)."""

    size: int
    round: int
    kind: str
    index: int = 0


@dataclass
class _Draft:
    """The rounds of a record being cut, with the notes on what was cut in each."""

    record: SampleRecord
    completions: list[Completion] = field(default_factory=list)
    programs: list[Program] = field(default_factory=list)
    executions: list[Execution] = field(default_factory=list)
    notes: list[list[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        rounds = [(self.record.completion, self.record.program, self.record.execution)]
        rounds += [(r.completion, r.program, r.execution) for r in self.record.rounds]
        for completion, program, execution in rounds:
            self.completions.append(completion)
            self.programs.append(program)
            self.executions.append(execution)
            self.notes.append([])

    def cut(self, part: _Part, keep: int) -> None:
        """Cut ``part`` to ``keep`` bytes (a text) or leave it out (a matrix, or ``keep`` 0)."""
        execution, note = self.executions[part.round], ""
        if part.kind == "file":
            files = list(execution.written_files)
            item = files[part.index]
            files[part.index] = item.model_copy(update={"content": cut_to_bytes(item.content, keep)})
            execution = execution.model_copy(update={"written_files": tuple(files)})
            note = f"{item.name} content {_to(keep, part.size)}"
        elif part.kind in ("stdout_tail", "stderr_tail"):
            kept = cut_to_bytes(getattr(execution, part.kind), keep, keep="tail")
            execution = execution.model_copy(update={part.kind: kept})
            note = f"{part.kind.replace('_', ' ')} {_to(keep, part.size)}"
        elif part.kind == "matrix":
            solves = list(execution.solves)
            solves[part.index] = solves[part.index].model_copy(update={"model": None})
            execution = execution.model_copy(update={"solves": tuple(solves)})
            note = f"matrix of solve {part.index + 1} left out ({_size(part.size)})"
        elif part.kind == "code":
            program = self.programs[part.round]
            assert program.code is not None
            self.programs[part.round] = program.model_copy(update={"code": cut_to_bytes(program.code, keep)})
            note = f"program code {_to(keep, part.size)}"
        else:  # text, reasoning: the completion (whole in completions.jsonl)
            completion = self.completions[part.round]
            value = getattr(completion, part.kind) or ""
            updated = completion.model_copy(update={part.kind: cut_to_bytes(value, keep)})
            self.completions[part.round] = updated
            note = f"completion {part.kind} {_to(keep, part.size)} (whole in completions.jsonl)"
        self.executions[part.round] = execution
        self.notes[part.round].append(note)

    def build(self, max_bytes: int) -> SampleRecord:
        """The record with every cut so far, each execution's cuts said in its ``detail``."""
        rounds = []
        for number in range(len(self.executions)):
            execution = self.executions[number]
            if self.notes[number]:
                said = f"stored record cut to its {_size(max_bytes)} budget: {', '.join(self.notes[number])}"
                detail = f"{said}; {execution.detail}" if execution.detail else said
                execution = execution.model_copy(update={"detail": detail})
            rounds.append((self.completions[number], self.programs[number], execution))
        (completion, program, execution), later = rounds[0], rounds[1:]
        repaired = tuple(
            r.model_copy(update={"completion": c, "program": p, "execution": e})
            for r, (c, p, e) in zip(self.record.rounds, later, strict=True)
        )
        return self.record.model_copy(
            update={"completion": completion, "program": program, "execution": execution, "rounds": repaired}
        )


def _other_files(draft: _Draft) -> Iterator[_Part]:
    for number, execution in enumerate(draft.executions):
        for index, item in enumerate(execution.written_files[:-1]):
            yield _Part(json_bytes(item.content), number, "file", index)


def _tails(draft: _Draft) -> Iterator[_Part]:
    for number, execution in enumerate(draft.executions):
        yield _Part(json_bytes(execution.stdout_tail), number, "stdout_tail")
        yield _Part(json_bytes(execution.stderr_tail), number, "stderr_tail")


def _other_matrices(draft: _Draft) -> Iterator[_Part]:
    for number, execution in enumerate(draft.executions):
        for index, solve in enumerate(execution.solves[:-1]):
            if solve.model is not None:
                yield _Part(len(solve.model.model_dump_json()), number, "matrix", index)


def _last_files(draft: _Draft) -> Iterator[_Part]:
    for number, execution in enumerate(draft.executions):
        if execution.written_files:
            last = len(execution.written_files) - 1
            yield _Part(json_bytes(execution.written_files[last].content), number, "file", last)


def _last_matrices(draft: _Draft) -> Iterator[_Part]:
    for number, execution in enumerate(draft.executions):
        if execution.solves and execution.solves[-1].model is not None:
            last = execution.solves[-1].model
            yield _Part(len(last.model_dump_json()), number, "matrix", len(execution.solves) - 1)


def _model_text(draft: _Draft) -> Iterator[_Part]:
    for number, (completion, program) in enumerate(zip(draft.completions, draft.programs, strict=True)):
        yield _Part(json_bytes(completion.text), number, "text")
        if completion.reasoning:
            yield _Part(json_bytes(completion.reasoning), number, "reasoning")
        if program.code:
            yield _Part(json_bytes(program.code), number, "code")


_STEPS: tuple[Callable[[_Draft], Iterator[_Part]], ...] = (
    _other_files,
    _tails,
    _other_matrices,
    _last_files,
    _last_matrices,
    _model_text,
)
_TEXTS = frozenset({"file", "stdout_tail", "stderr_tail", "text", "reasoning", "code"})


def fit_record(record: SampleRecord, *, max_bytes: int = RECORD_BYTES) -> tuple[SampleRecord, bytes]:
    """``record`` and its line when the line takes at most ``max_bytes``; else the record with
    parts cut in the order of the module docstring, and its line.

    Raises:
        OverBudget: the line is over ``max_bytes`` with every part cut.
        Exception: whatever serialising ``record`` raises (pydantic, a text that cannot be UTF-8).
    """
    line = encode(record)
    if len(line) <= max_bytes:
        return record, line
    draft = _Draft(record)
    over = len(line) - max_bytes + _NOTE_ROOM
    for step in _STEPS:
        for part in sorted(step(draft), key=lambda part: part.size, reverse=True):
            if over <= 0:
                break
            if part.size == 0:
                continue
            keep = part.size - over if part.kind in _TEXTS and part.size > over else 0
            draft.cut(part, keep)
            over -= part.size - keep
        if over <= 0:
            candidate = draft.build(max_bytes)
            line = encode(candidate)
            if len(line) <= max_bytes:
                return candidate, line
            over = len(line) - max_bytes + _NOTE_ROOM
    candidate = draft.build(max_bytes)  # the room kept for the notes may not all be needed
    line = encode(candidate)
    if len(line) <= max_bytes:
        return candidate, line
    raise OverBudget(
        f"the record takes {_size(len(line))} with every program-controlled part cut "
        f"(budget {_size(max_bytes)})"
    )


HARNESS_FAILURE = "the harness could not store this sample's record"


def harness_failure(record: SampleRecord, *, reason: str) -> SampleRecord:
    """The record stored instead of ``record`` when it cannot be stored (``reason`` says why):
    the sample's identity, its rule, and verdict :attr:`~trex_eval.records.Verdict.HARNESS_ERROR`;
    nothing the program or the model produced (its completion is in ``completions.jsonl``).
    Its strings are the harness's own, cleaned all the same (:func:`~trex_eval.text.clean`)."""
    why = clip(f"{HARNESS_FAILURE}: {reason}", MESSAGE_CHARS)
    problem_id = clean(record.problem_id)
    return SampleRecord(
        benchmark=clean(record.benchmark),
        problem_id=problem_id,
        sample_index=record.sample_index,
        prompt=Prompt(
            problem_id=problem_id,
            prompt_set=clean(record.prompt.prompt_set),
            messages=(),
            template_sha256=clean(record.prompt.template_sha256),
        ),
        completion=Completion(problem_id=problem_id, sample_index=record.sample_index, text=""),
        program=Program(code=None, extractor=clean(record.program.extractor), reason="not stored"),
        execution=Execution(status=ExecStatus.NOT_RUN, detail=why),
        grade=Grade(verdict=Verdict.HARNESS_ERROR, rule=clean(record.grade.rule), reason=why),
    )


def _to(keep: int, size: int) -> str:
    return f"left out ({_size(size)})" if keep <= 0 else f"cut to {_size(keep)} of {_size(size)}"


def _size(count: int) -> str:
    if count >= 1 << 20:
        return f"{count / (1 << 20):.1f} MiB"
    return f"{count / 1024:.1f} KiB"
