"""The reference harness's summary row (reference-harness §6.4). Pure.

``Score`` is acc@k over the selected problems (k = samples); ``Code pass`` counts problems whose
selected attempt produced an optimal objective (solver benchmarks) or a model the structure
check could read (ORGEval); the selected attempt is the first correct sample, else the last
stored one. Datasets are printed under the reference's names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from trex_eval.protocols.base import SummaryRow
from trex_eval.records import ObjectiveEvidence, SampleRecord, SolveStatus, StructureEvidence, Verdict

UPSTREAM_DATASETS: Mapping[str, str] = MappingProxyType(
    {
        "nl4opt": "nl4opt",
        "optibench": "optibench",
        "b4o-feasible": "bench4opt-feasible",
        "b4o-orgeval": "bench4opt",
    }
)
"""trex-eval benchmark name -> the dataset name the reference harness's summary prints."""


def summary_row(
    benchmark: str, problems: Sequence[Sequence[SampleRecord | None]], *, selected: int
) -> SummaryRow:
    """The row of ``benchmark`` (see the module docstring); ``count`` is ``selected``."""
    score = code = api = 0
    for samples in problems:
        chosen = _selected_attempt(samples)
        if chosen is None:
            continue
        score += any(record is not None and record.grade.passed for record in samples)
        code += _code_passed(chosen)
        api += chosen.grade.verdict is Verdict.API_ERROR
    return SummaryRow(
        dataset=UPSTREAM_DATASETS.get(benchmark, benchmark),
        score_count=score,
        code_pass_count=code,
        api_error_count=api,
        count=selected,
    )


def _selected_attempt(samples: Sequence[SampleRecord | None]) -> SampleRecord | None:
    """The attempt the reference harness keeps: the first correct sample, else the last stored one."""
    stored = [record for record in samples if record is not None]
    for record in stored:
        if record.grade.passed:
            return record
    return stored[-1] if stored else None


def _code_passed(record: SampleRecord) -> bool:
    evidence = record.grade.evidence
    if isinstance(evidence, StructureEvidence):
        # The structure check ran on a model it could read (an unreadable file has no checks).
        return bool(evidence.checks)
    return (
        isinstance(evidence, ObjectiveEvidence)
        and evidence.predicted is not None
        and evidence.predicted_status is SolveStatus.OPTIMAL
    )
