"""A run's stored samples arranged as a problem × sample grid, the shape every report reads.

:func:`load_run` reads a run directory through :class:`~trex_eval.store.RunStore`;
:func:`arrange` (pure) turns a manifest and its samples into a :class:`RunResults`. Every later
computation (summary, leaderboard, comparison, HTML) starts from a ``RunResults``, so they all
agree on the two rules that make numbers comparable:

* **The denominator is the number of problems selected** (``BenchmarkEntry.problems``), never
  the number of records present (reference-harness W28/W33). A selected problem the run holds no
  sample for, and a sample index it never stored, count as failures and are reported as missing.
* **Problems are ordered by natural id order** (``"2" < "10"``, ``"BENCH4OPT_2" < "BENCH4OPT_10"``),
  with the problems the run never stored last, so that bootstrap resampling is reproducible.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from trex_eval.errors import ConfigError, StoreError
from trex_eval.records import SampleRecord, Verdict
from trex_eval.report.outcomes import Outcome, classify
from trex_eval.store import BenchmarkEntry, RunManifest, RunStore

_DIGITS = re.compile(r"(\d+)")


def natural_key(problem_id: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key ordering embedded numbers by value: ``"BENCH4OPT_2"`` before ``"BENCH4OPT_10"``."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in _DIGITS.split(problem_id) if part
    )


@dataclass(frozen=True)
class ProblemSamples:
    """One problem's samples in sample order; ``samples[i]`` is ``None`` when sample ``i`` is missing."""

    problem_id: str
    samples: tuple[SampleRecord | None, ...]

    @property
    def correct(self) -> tuple[bool, ...]:
        """Per-sample correctness; a missing sample is ``False``."""
        return tuple(record is not None and record.grade.passed for record in self.samples)

    @property
    def score(self) -> float:
        """Fraction of this problem's samples that are correct (missing ones included as wrong)."""
        return sum(self.correct) / len(self.samples)

    @property
    def first_correct(self) -> bool:
        """Whether sample 0 (seed 42, the reference harness's 1-pass attempt) is correct."""
        return self.correct[0]

    @property
    def outcomes(self) -> tuple[Outcome, ...]:
        return tuple(classify(record) for record in self.samples)


@dataclass(frozen=True)
class BenchmarkResults:
    """One benchmark of one run: its manifest entry and every selected problem.

    ``problems`` holds the problems with at least one stored sample, in natural id order;
    ``unseen`` counts the selected problems without any (their ids are unknown to the run, as
    the manifest records how many problems were selected, not which).
    """

    entry: BenchmarkEntry
    samples_per_problem: int
    problems: tuple[ProblemSamples, ...]
    unseen: int

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def selected(self) -> int:
        """The denominator: problems selected for this benchmark."""
        return self.entry.problems

    @property
    def stored_samples(self) -> int:
        return sum(record is not None for problem in self.problems for record in problem.samples)

    @property
    def missing_samples(self) -> int:
        """Samples expected (problems selected × samples per problem) but not stored, plus the stored
        ones graded ``missing`` (no completion recorded for them)."""
        unrecorded = sum(record.grade.verdict is Verdict.MISSING for record in self.records())
        return self.selected * self.samples_per_problem - self.stored_samples + unrecorded

    def correctness(self) -> list[list[bool]]:
        """Per-problem per-sample correctness for all selected problems (unseen ones all ``False``)."""
        rows = [list(problem.correct) for problem in self.problems]
        rows.extend([False] * self.samples_per_problem for _ in range(self.unseen))
        return rows

    def problem_scores(self) -> list[float]:
        """Per-problem fraction correct for all selected problems, in the order of :meth:`correctness`."""
        return [sum(row) / len(row) for row in self.correctness()]

    def records(self) -> Iterable[SampleRecord]:
        for problem in self.problems:
            yield from (record for record in problem.samples if record is not None)

    def verdict_counts(self) -> dict[Verdict, int]:
        """Stored samples per verdict, every verdict present (zero when unseen)."""
        counts = dict.fromkeys(Verdict, 0)
        for record in self.records():
            counts[record.grade.verdict] += 1
        return counts

    def outcome_counts(self) -> dict[Outcome, int]:
        """Samples per outcome class over all expected samples; the missing ones as ``missing``."""
        counts = dict.fromkeys(Outcome, 0)
        for problem in self.problems:
            for outcome in problem.outcomes:
                counts[outcome] += 1
        counts[Outcome.MISSING] += self.unseen * self.samples_per_problem
        return counts


@dataclass(frozen=True)
class RunResults:
    """A whole run: where it lives (``None`` when built in memory), its manifest, and its benchmarks
    in manifest order."""

    path: Path | None
    manifest: RunManifest
    benchmarks: tuple[BenchmarkResults, ...]

    @property
    def run_id(self) -> str:
        return self.manifest.run_id

    def benchmark(self, name: str) -> BenchmarkResults:
        for results in self.benchmarks:
            if results.name == name:
                return results
        raise KeyError(name)


def arrange(
    manifest: RunManifest, samples: Iterable[SampleRecord], *, path: Path | None = None
) -> RunResults:
    """Group ``samples`` by benchmark and problem into the grid the manifest promises. Pure.

    Raises:
        StoreError: a sample names a benchmark the manifest does not list, has a sample index
            outside ``0 .. samples − 1``, or a benchmark holds more distinct problems than were
            selected: the run directory does not belong together.
    """
    settings = manifest.settings
    width = settings.samples
    where = str(path) if path is not None else manifest.run_id
    entries = {entry.name: entry for entry in settings.benchmarks}
    grouped: dict[str, dict[str, list[SampleRecord | None]]] = {name: {} for name in entries}
    for record in samples:
        if record.benchmark not in entries:
            raise StoreError(
                f"sample {record.key} is for benchmark {record.benchmark!r}, "
                "which the manifest does not list",
                where=where,
            )
        if not 0 <= record.sample_index < width:
            raise StoreError(
                f"sample {record.key} has index {record.sample_index}; "
                f"the run takes {width} sample(s) per problem",
                where=where,
            )
        row = grouped[record.benchmark].setdefault(record.problem_id, [None] * width)
        row[record.sample_index] = record
    results = []
    for name, entry in entries.items():
        problems = grouped[name]
        if len(problems) > entry.problems:
            raise StoreError(
                f"{name}: samples for {len(problems)} distinct problems, but {entry.problems} were selected",
                where=where,
            )
        ordered = tuple(
            ProblemSamples(problem_id, tuple(problems[problem_id]))
            for problem_id in sorted(problems, key=natural_key)
        )
        results.append(
            BenchmarkResults(
                entry=entry, samples_per_problem=width, problems=ordered, unseen=entry.problems - len(ordered)
            )
        )
    return RunResults(path=path, manifest=manifest, benchmarks=tuple(results))


def load_run(root: Path) -> RunResults:
    """Read and arrange the run directory ``root``.

    Raises:
        StoreError: ``root`` is not a run directory, its files are corrupt, or its samples do not
            match its manifest (see :func:`arrange`).
    """
    store = RunStore(root)
    manifest = store.read_manifest()
    return arrange(manifest, store.iter_samples(), path=root)


def load_runs(roots: Sequence[Path]) -> list[RunResults]:
    """:func:`load_run` for each root, in order.

    Raises:
        StoreError: as :func:`load_run`.
        ConfigError: the same run (by run id) is given twice.
    """
    runs = [load_run(root) for root in roots]
    seen: dict[str, Path | None] = {}
    for run in runs:
        if run.run_id in seen:
            raise ConfigError(
                f"run {run.run_id} is given twice ({seen[run.run_id]} and {run.path})",
                hint="pass each run directory once",
            )
        seen[run.run_id] = run.path
    return runs
