"""A resumed run's progress line (issue 46): the samples graded in earlier sessions count as graded,
and the generated count says it is this session's, so the two never read as a contradiction."""

from __future__ import annotations

import io

from rich.console import Console

from trex_eval.run.progress import RunProgress


def test_a_resumed_run_counts_earlier_grades_and_says_whose_generations_it_counts() -> None:
    buffer = io.StringIO()
    progress = RunProgress(
        {"optibench": ("OptiBench", 600)},
        console=Console(file=buffer, width=40),
        interval_s=30,
        clock=lambda: 0.0,
    )
    with progress:
        # 435 samples graded in the earlier session; this session asks the model for the other 165.
        progress.restore("optibench", done=435, passed=430)
        for _ in range(165):
            progress.generated("optibench")
            progress.graded("optibench", passed=True)
    assert buffer.getvalue().splitlines()[-1] == (
        "OptiBench: graded 600/600 · 165 generated this session · correct 595 · pass@1 so far 99.2% · 0m00s"
    )
