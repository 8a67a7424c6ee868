"""The repair protocol's figures of one benchmark (``run --repair N``): pass@1 after each round,
what each round repaired, the cost per solved sample, and repairs by round-0 failure kind. Pure."""

from __future__ import annotations

from trex_eval.metrics import pass_at_1
from trex_eval.records import Record, Usage
from trex_eval.report.runs import BenchmarkResults
from trex_eval.store import RunSettings


class FailureRepairs(Record):
    """Samples whose round 0 failed with one kind of outcome that was fed back, and how many of
    them a repair round made correct."""

    samples: int
    repaired: int


class RepairSummary(Record):
    """The repair protocol's scores of one benchmark (``run --repair N``; see :data:`DEFINITIONS`).

    ``pass_at_1`` maps round ``K`` (0..N) to pass@1@rK, ``pass_at_1[0]`` being the benchmark's
    zero-shot pass@1; ``repaired`` maps ``K >= 1`` to repaired@rK (so ``pass_at_1[K] =
    pass_at_1[K-1] + repaired[K]``); ``asked`` maps ``K >= 1`` to the samples that round K asked
    the model again for. ``requests`` and ``tokens`` count every round of the stored samples
    (``tokens`` is ``None`` when no response reported usage); the ``*_per_solved`` figures divide
    them by ``solved_samples`` (correct after round N; ``None`` when none is). ``by_failure`` is
    keyed by the round-0 failure kind fed back (``syntax_error``, ``no_solve``, ...)."""

    rounds: int
    feedback: str
    pass_at_1: dict[int, float]
    repaired: dict[int, float]
    asked: dict[int, int]
    requests: int
    tokens: int | None
    solved_samples: int
    requests_per_solved: float | None
    tokens_per_solved: float | None
    by_failure: dict[str, FailureRepairs]


def repair_summary(bench: BenchmarkResults, run: RunSettings) -> RepairSummary:
    """pass@1 after each round, the share each round repaired, the cost per solved sample and the
    repair rate by round-0 failure kind (see :class:`RepairSummary`)."""
    by_round = {
        k: pass_at_1(
            [
                [record is not None and record.grade_after(k).passed for record in p.samples]
                for p in bench.problems
            ]
            + [[False] * bench.samples_per_problem for _ in range(bench.unseen)]
        )
        for k in range(run.repair + 1)
    }
    records = list(bench.records())
    asked = {
        k: sum(any(r.round == k for r in record.rounds) for record in records)
        for k in range(1, run.repair + 1)
    }
    requests = sum(1 + len(record.rounds) for record in records)
    usages = [
        tokens_of(completion.usage)
        for record in records
        for completion in (record.completion, *(r.completion for r in record.rounds))
    ]
    reported = [count for count in usages if count is not None]
    tokens = sum(reported) if reported else None
    solved = sum(record.grade_after(run.repair).passed for record in records)
    failures: dict[str, list[int]] = {}
    for record in records:
        if record.rounds:
            counts = failures.setdefault(record.rounds[0].failure, [0, 0])
            counts[0] += 1
            counts[1] += record.grade_after(run.repair).passed
    return RepairSummary(
        rounds=run.repair,
        feedback=run.repair_feedback,
        pass_at_1=by_round,
        repaired={k: by_round[k] - by_round[k - 1] for k in range(1, run.repair + 1)},
        asked=asked,
        requests=requests,
        tokens=tokens,
        solved_samples=solved,
        requests_per_solved=requests / solved if solved else None,
        tokens_per_solved=tokens / solved if solved and tokens is not None else None,
        by_failure={kind: FailureRepairs(samples=n, repaired=m) for kind, (n, m) in sorted(failures.items())},
    )


def tokens_of(usage: Usage) -> int | None:
    """Prompt plus completion tokens of one response, ``None`` when the server reported none."""
    if usage.total_tokens is not None:
        return usage.total_tokens
    if usage.prompt_tokens is None and usage.completion_tokens is None:
        return None
    return (usage.prompt_tokens or 0) + (usage.completion_tokens or 0)
