"""A comparison as a table: one CSV row per (candidate, benchmark) and per candidate overall."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from trex_eval.report.compare import Comparison, ComparisonSet, PairedBenchmark, PairedOverall, RepairedPair

if TYPE_CHECKING:
    import pandas as pd

_REPAIRED = (
    "baseline_repair_rounds",
    "candidate_repair_rounds",
    "baseline_pass@1_repaired_pct",
    "candidate_pass@1_repaired_pct",
    "repaired_diff_pp",
    "repaired_{ci}_low_pp",
    "repaired_{ci}_high_pp",
)


def comparison_frame(result: ComparisonSet) -> pd.DataFrame:
    """One row per (candidate, benchmark) plus one ``overall`` row per candidate, columns:
    ``baseline_run_id, candidate_run_id, baseline, candidate, benchmark, rule_baseline,
    rule_candidate, dataset_sha256, n, baseline_pass@1_pct, candidate_pass@1_pct, diff_pp,
    ciNN_low_pp, ciNN_high_pp, won, lost, both, neither, mcnemar_p, gained_ids, dropped_ids``.
    Differences are in percentage points; flipped ids are space-separated. In ``overall`` rows the
    scores are macro means and ``mcnemar_p`` is pooled over problems. When a compared run was made
    with ``--repair``, seven more columns hold the scores after repair (:class:`RepairedPair`):
    ``baseline_repair_rounds, candidate_repair_rounds, baseline_pass@1_repaired_pct,
    candidate_pass@1_repaired_pct, repaired_diff_pp, repaired_ciNN_low_pp, repaired_ciNN_high_pp``
    (after the last round of each run; empty in ``overall`` rows and for unrepaired pairs)."""
    import pandas as pd  # ~0.3 s of start-up that only the tables need

    ci = f"ci{result.interval.confidence * 100:g}"
    with_repair = any(pair.repaired for comparison in result.comparisons for pair in comparison.benchmarks)
    records: list[dict[str, object]] = []
    for comparison in result.comparisons:
        for pair in comparison.benchmarks:
            records.append(_row(comparison, pair, ci=ci, with_repair=with_repair))
        if comparison.overall is not None:
            records.append(_row(comparison, comparison.overall, ci=ci, with_repair=with_repair))
    return pd.DataFrame.from_records(records)


def _row(
    comparison: Comparison, pair: PairedBenchmark | PairedOverall, *, ci: str, with_repair: bool
) -> dict[str, object]:
    """One CSV row: a benchmark's pair, or (a :class:`PairedOverall`) the macro means."""
    per_benchmark = isinstance(pair, PairedBenchmark)
    row: dict[str, object] = {
        "baseline_run_id": comparison.baseline.run_id,
        "candidate_run_id": comparison.candidate.run_id,
        "baseline": comparison.baseline_label,
        "candidate": comparison.candidate_label,
        "benchmark": pair.benchmark if isinstance(pair, PairedBenchmark) else "overall",
        "rule_baseline": pair.baseline_rule if isinstance(pair, PairedBenchmark) else None,
        "rule_candidate": pair.candidate_rule if isinstance(pair, PairedBenchmark) else None,
        "dataset_sha256": pair.dataset_sha256 if isinstance(pair, PairedBenchmark) else None,
        "n": pair.problems,
        "baseline_pass@1_pct": (
            pair.baseline_pass_at_1 if isinstance(pair, PairedBenchmark) else pair.baseline_macro
        )
        * 100,
        "candidate_pass@1_pct": (
            pair.candidate_pass_at_1 if isinstance(pair, PairedBenchmark) else pair.candidate_macro
        )
        * 100,
        "diff_pp": pair.difference * 100,
        f"{ci}_low_pp": pair.ci_low * 100,
        f"{ci}_high_pp": pair.ci_high * 100,
        "won": pair.won,
        "lost": pair.lost,
        "both": pair.both,
        "neither": pair.neither,
        "mcnemar_p": pair.mcnemar_p,
        "gained_ids": " ".join(pair.gained) if isinstance(pair, PairedBenchmark) else None,
        "dropped_ids": " ".join(pair.dropped) if isinstance(pair, PairedBenchmark) else None,
    }
    if with_repair:
        repaired = pair.repaired if per_benchmark and isinstance(pair, PairedBenchmark) else None
        row |= _repaired_columns(repaired, ci)
    return row


def _repaired_columns(repaired: RepairedPair | None, ci: str) -> dict[str, object]:
    names = [name.format(ci=ci) for name in _REPAIRED]
    if repaired is None:
        return dict.fromkeys(names)
    values = (
        len(repaired.baseline_rounds) - 1,
        len(repaired.candidate_rounds) - 1,
        repaired.baseline_rounds[-1] * 100,
        repaired.candidate_rounds[-1] * 100,
        repaired.difference * 100,
        repaired.ci_low * 100,
        repaired.ci_high * 100,
    )
    return dict(zip(names, values, strict=True))


def write_comparison_csv(result: ComparisonSet, path: Path) -> None:
    """Write :func:`comparison_frame` as UTF-8 CSV (header row, no index), creating parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    comparison_frame(result).to_csv(path, index=False)
