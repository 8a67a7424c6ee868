"""Live progress of a run: one bar per benchmark with graded/total, generated count, pass rate, ETA."""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class RunProgress:
    """Progress display on stderr. ``benchmarks`` maps name -> (title, number of samples).

    With ``enabled=False`` nothing is drawn, but notes are still printed.
    """

    def __init__(self, benchmarks: Mapping[str, tuple[str, int]], *, enabled: bool = True) -> None:
        self._console = Console(stderr=True)
        self._enabled = enabled
        self._progress = Progress(
            TextColumn("[bold]{task.description:<14}"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TextColumn("gen {task.fields[generated]:>5}"),
            TextColumn("pass {task.fields[rate]:>6}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self._console,
            disable=not enabled,
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}
        self._passed: dict[str, int] = {}
        self._done: dict[str, int] = {}
        self._generated: dict[str, int] = {}
        for name, (title, total) in benchmarks.items():
            self._tasks[name] = self._progress.add_task(title, total=total, generated=0, rate="-")
            self._passed[name] = self._done[name] = self._generated[name] = 0

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def note(self, text: str) -> None:
        self._console.print(text, highlight=False)

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

    def _update(self, name: str) -> None:
        done = self._done[name]
        rate = f"{100 * self._passed[name] / done:5.1f}%" if done else "-"
        self._progress.update(self._tasks[name], completed=done, generated=self._generated[name], rate=rate)
