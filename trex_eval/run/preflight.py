"""What a run needs from the install, checked before it starts: the solver libraries that the
benchmarks' reference programs and the completions at hand import, which this install lacks.
Samples that need one are graded ``needs_library`` (an environment failure); the notes say what
to install, so that two installs do not silently produce two leaderboards."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from trex_eval.run.prepare import PreparedBenchmark
from trex_eval.sandbox.libraries import missing_among


def missing_library_notes(
    prepared: Sequence[PreparedBenchmark], completions: Iterable[str] = ()
) -> list[str]:
    """One note per solver library that the reference programs of ``prepared`` or the
    ``completions`` (texts) import and this install lacks."""
    notes = []
    for item in prepared:
        references = [problem.reference_code for problem in item.problems if problem.reference_code]
        for lacking, count in missing_among(references).values():
            notes.append(
                f"{item.bench.name}: {count} reference program(s) import {lacking.module}, which "
                f"is not installed here ({lacking.install}); "
                "samples that need it are graded needs_library (an environment failure)"
            )
    for lacking, count in missing_among(completions).values():
        notes.append(
            f"{count} completion(s) import {lacking.module}, which is not installed here "
            f"({lacking.install}): they are graded needs_library (an environment failure), not as the "
            "model's failure"
        )
    return notes
