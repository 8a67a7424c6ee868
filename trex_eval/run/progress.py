"""Live progress of a run, per benchmark: generated, graded of total, correct, pass@1 so far, ETA.

On a terminal this is one rich bar per benchmark. When stderr is not a terminal (a log file, CI,
``nohup``) bars would print nothing until the end, so plain lines are printed instead: one per
benchmark every ``interval_s`` seconds while it moves, and one when it completes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

PLAIN_INTERVAL_S = 30.0
"""Seconds between two plain progress lines of one benchmark (stderr not a terminal)."""


class RunProgress:
    """Progress display on stderr. ``benchmarks`` maps name -> (title, number of samples).

    With ``enabled=False`` nothing is drawn, but notes are still printed. ``console`` (default:
    stderr) decides between bars (a terminal) and plain lines every ``interval_s`` seconds;
    ``clock`` (default :func:`time.monotonic`, seconds) times them.
    """

    def __init__(
        self,
        benchmarks: Mapping[str, tuple[str, int]],
        *,
        enabled: bool = True,
        console: Console | None = None,
        interval_s: float = PLAIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._console = console or Console(stderr=True)
        self._bars = enabled and self._console.is_terminal
        self._plain = enabled and not self._console.is_terminal
        self._interval_s = interval_s
        self._clock = clock
        self._started = clock()
        counts = TextColumn(
            "graded {task.completed:.0f}/{task.total:.0f} · generated {task.fields[generated]} "
            "· correct {task.fields[correct]} · pass@1 so far {task.fields[rate]}"
        )
        # The counts are what matters; bar and times only where the line still fits.
        wide = self._console.width >= 120
        label = TextColumn("[bold]{task.description:<12}")
        times = [TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()]
        columns = [label, BarColumn(bar_width=20), counts, *times] if wide else [label, counts]
        self._progress = Progress(
            *columns,
            console=self._console,
            disable=not self._bars,
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}
        self._titles: dict[str, str] = {}
        self._totals: dict[str, int] = {}
        self._passed: dict[str, int] = {}
        self._done: dict[str, int] = {}
        self._generated: dict[str, int] = {}
        self._printed_at: dict[str, float] = {}
        for name, (title, total) in benchmarks.items():
            self._tasks[name] = self._progress.add_task(title, total=total, generated=0, correct=0, rate="-")
            self._titles[name], self._totals[name] = title, total
            self._passed[name] = self._done[name] = self._generated[name] = 0
            self._printed_at[name] = self._started

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def note(self, text: str) -> None:
        # soft_wrap: a note is one line in a log, never split at the console width (URLs, paths).
        self._console.print(text, highlight=False, markup=False, soft_wrap=True)

    def restore(self, name: str, *, done: int, passed: int) -> None:
        """Account for samples graded before a resume."""
        self._done[name] += done
        self._passed[name] += passed
        self._generated[name] += done
        self._update(name)

    def generated(self, name: str) -> None:
        self._generated[name] += 1
        self._update(name)

    def graded(self, name: str, *, passed: bool) -> None:
        self._done[name] += 1
        self._passed[name] += int(passed)
        self._update(name)

    def line(self, name: str) -> str:
        """The plain progress line of one benchmark, e.g. ``nl4opt: graded 120/289 · generated
        130 · correct 100 · pass@1 so far 83.3% · 1m02s``."""
        done = self._done[name]
        elapsed = int(self._clock() - self._started)
        return (
            f"{self._titles[name]}: graded {done}/{self._totals[name]} · generated {self._generated[name]} "
            f"· correct {self._passed[name]} · pass@1 so far {self._rate(name)} "
            f"· {elapsed // 60}m{elapsed % 60:02d}s"
        )

    def _rate(self, name: str) -> str:
        done = self._done[name]
        return f"{100 * self._passed[name] / done:.1f}%" if done else "-"

    def _update(self, name: str) -> None:
        if self._plain:
            now = self._clock()
            finished = self._done[name] == self._totals[name]
            if finished or now - self._printed_at[name] >= self._interval_s:
                self._printed_at[name] = now
                self.note(self.line(name))
        self._progress.update(
            self._tasks[name],
            completed=self._done[name],
            generated=self._generated[name],
            correct=self._passed[name],
            rate=self._rate(name),
        )
