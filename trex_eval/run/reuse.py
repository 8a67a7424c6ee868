"""Reusing stored executions: a re-grade under another rule runs no program again when the
program, the protocol, the gurobipy policy, the data, the extractor and the limits are those of
the run it re-grades."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from trex_eval.records import Execution, Program
from trex_eval.run.prepare import PreparedBenchmark
from trex_eval.run.spec import RunSpec
from trex_eval.store import RunStore

Reusable = dict[str, dict[tuple[str, int, int], tuple[Program, Execution]]]
"""Benchmark -> (problem id, sample index, round) -> the stored program and its execution."""


def reusable_executions(
    source: Path | None, prepared: Sequence[PreparedBenchmark], spec: RunSpec
) -> tuple[Reusable, list[str]]:
    """Benchmark -> (problem id, sample, round) -> the stored program and execution of the run in
    ``source``, for the benchmarks whose programs would run exactly as they did there; and a note
    for each other benchmark saying why its programs run again."""
    if source is None:
        return {}, []
    notes: list[str] = []
    settings = RunStore(source).read_manifest().settings
    entries = {entry.name: entry for entry in settings.benchmarks}
    usable: set[str] = set()
    for item in prepared:
        entry = entries.get(item.bench.name)
        differs = [
            what
            for what, same in (
                ("the protocol", settings.protocol == spec.protocol),
                ("the gurobipy policy", settings.gurobi == spec.gurobi),
                ("the benchmark data", entry is not None and entry.sha256 == item.entry.sha256),
                ("the extractor", entry is not None and entry.extractor == item.entry.extractor),
                ("the sandbox limits", entry is not None and entry.limits == item.entry.limits),
            )
            if not same
        ]
        if differs:
            notes.append(
                f"{item.bench.name}: programs run again ({', '.join(differs)} "
                f"{'differs' if len(differs) == 1 else 'differ'} from {source}); "
                "only a change of grading rule reuses the stored executions"
            )
        else:
            usable.add(item.bench.name)
    reusable: Reusable = {name: {} for name in usable}
    for record in RunStore(source).iter_samples():
        if record.benchmark not in reusable:
            continue
        rounds = [(0, record.program, record.execution)]
        rounds += [(r.round, r.program, r.execution) for r in record.rounds]
        for number, program, execution in rounds:
            if program.code is not None:
                key = (record.problem_id, record.sample_index, number)
                reusable[record.benchmark][key] = (program, execution)
    return reusable, notes


def stored_execution(stored: tuple[Program, Execution] | None, program: Program) -> Execution | None:
    """The stored execution of ``stored`` when it ran exactly ``program`` (the same code), else
    ``None`` (the program runs). A conversion of a program is never the program stored."""
    return stored[1] if stored is not None and stored[0].code == program.code else None
