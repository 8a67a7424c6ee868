"""Live progress of a run, per benchmark: generated, graded of total, correct, pass@1 so far, ETA.

On a terminal this is one rich bar per benchmark. When stderr is not a terminal (a log file, CI,
``nohup``) bars would print nothing until the end, so plain lines are printed instead: one per
benchmark at least every ``interval_s`` seconds (``TREX_PROGRESS_INTERVAL_S``, default 30) and
one when it completes. A line due while nothing moved (a slow model, a retry back-off, programs
queued for the sandbox, a server loading its model) is printed all the same by the heartbeat
(:meth:`RunProgress.heartbeat`), ending with what the run is waiting on, as the waiting code
reported it to the run's :class:`~trex_eval.waits.WaitBoard`::

    nl4opt: graded 0/289 · 0 generated this session · correct 0 · pass@1 so far - · 1m16s · waiting on: a
    model reply from http://127.0.0.1:8000/v1 ×8 (oldest 1m15s); a free request slot (option
    concurrency) ×281 (oldest 1m16s)

(one line in the log: wrapped here). ``graded`` counts every sample the run directory holds a grade
of, a resumed run's earlier sessions included; ``generated this session`` only the model's answers
this process asked for (a resumed run grades the answers stored earlier without asking again).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
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

from trex_eval import config, waits
from trex_eval.errors import ConfigError

PLAIN_INTERVAL_S = 30.0
"""Seconds between two plain progress lines of one benchmark (stderr not a terminal), unless
``TREX_PROGRESS_INTERVAL_S`` says otherwise."""

_STARTING = "the run to start (sandbox workers, model backend)"
_IDLE = "no model request, back-off or sandbox run outstanding (the harness is grading)"


def plain_interval_s() -> float:
    """``TREX_PROGRESS_INTERVAL_S`` in seconds, else :data:`PLAIN_INTERVAL_S`.

    Raises:
        ConfigError: the variable is not a finite number of seconds > 0.
    """
    text = config.progress_interval()
    if text is None:
        return PLAIN_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise ConfigError(
            f"TREX_PROGRESS_INTERVAL_S={text!r} is not a number of seconds > 0",
            where="environment",
            hint="set it to the seconds between progress lines (e.g. 30), or unset it",
        )
    return value


class RunProgress:
    """Progress display on stderr. ``benchmarks`` maps name -> (title, number of samples).

    With ``enabled=False`` nothing is drawn, but notes are still printed. ``console`` (default:
    stderr) decides between bars (a terminal) and plain lines at least every ``interval_s``
    seconds (default :func:`plain_interval_s`); ``clock`` (default :func:`time.monotonic`,
    seconds) times them and the waits of :attr:`board`.

    Raises:
        ConfigError: ``interval_s`` left to the environment, which holds no valid interval.
    """

    def __init__(
        self,
        benchmarks: Mapping[str, tuple[str, int]],
        *,
        enabled: bool = True,
        console: Console | None = None,
        interval_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._console = console or Console(stderr=True)
        self._bars = enabled and self._console.is_terminal
        self._plain = enabled and not self._console.is_terminal
        self._interval_s = plain_interval_s() if interval_s is None else interval_s
        self._clock = clock
        self._started = clock()
        self.board = waits.WaitBoard(clock=clock)
        """What the run waits on, filled by the code that waits while :meth:`heartbeat` runs."""
        # The heartbeat thread and the event loop both print lines and stamp _printed_at.
        self._lines = threading.Lock()
        self._samples_started = False
        counts = TextColumn(
            "graded {task.completed:.0f}/{task.total:.0f} · {task.fields[generated]} generated this session "
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
        self._samples_started = True
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
        """Account for samples graded before a resume (in the graded and correct counts; none was
        generated this session)."""
        self._done[name] += done
        self._passed[name] += passed
        self._update(name)

    def generated(self, name: str) -> None:
        self._generated[name] += 1
        self._update(name)

    def graded(self, name: str, *, passed: bool) -> None:
        self._done[name] += 1
        self._passed[name] += int(passed)
        self._update(name)

    def line(self, name: str) -> str:
        """The plain progress line of one benchmark, e.g. ``nl4opt: graded 120/289 · 130 generated
        this session · correct 100 · pass@1 so far 83.3% · 1m02s``."""
        done = self._done[name]
        elapsed = int(self._clock() - self._started)
        return (
            f"{self._titles[name]}: graded {done}/{self._totals[name]} · {self._generated[name]} generated "
            f"this session · correct {self._passed[name]} · pass@1 so far {self._rate(name)} "
            f"· {elapsed // 60}m{elapsed % 60:02d}s"
        )

    def _rate(self, name: str) -> str:
        done = self._done[name]
        return f"{100 * self._passed[name] / done:.1f}%" if done else "-"

    @contextlib.contextmanager
    def heartbeat(self) -> Iterator[None]:
        """For the block: :attr:`board` is the current :data:`~trex_eval.waits.BOARD` (the tasks and
        threads started in it report their waits there) and, with plain lines, a thread prints
        each unfinished benchmark's line once ``interval_s`` passed without one (:meth:`tick`).
        Not re-entrant; the thread is stopped and joined when the block ends, however it ends."""
        token = waits.BOARD.set(self.board)
        stop = threading.Event()
        beat = threading.Thread(target=self._beat, args=(stop,), name="trex-progress", daemon=True)
        if self._plain:
            beat.start()
        try:
            yield
        finally:
            stop.set()
            if beat.is_alive():
                beat.join()
            waits.BOARD.reset(token)

    def tick(self) -> None:
        """Print the line of each unfinished benchmark that has had none for ``interval_s``
        seconds, ending ``· waiting on: WHAT`` (plain lines only)."""
        if not self._plain:
            return
        with self._lines:
            now = self._clock()
            due = [name for name in self._unfinished() if now - self._printed_at[name] >= self._interval_s]
            if not due:
                return
            what = self.board.describe() or (_IDLE if self._samples_started else _STARTING)
            for name in due:
                self._printed_at[name] = now
                self.note(f"{self.line(name)} · waiting on: {what}")

    def _unfinished(self) -> list[str]:
        return [name for name, total in self._totals.items() if self._done[name] < total]

    def _beat(self, stop: threading.Event) -> None:
        # Wakes when the next line falls due (never busier than 20 times a second).
        while True:
            with self._lines:
                pending = [self._printed_at[name] for name in self._unfinished()]
            wait_s = min(pending) + self._interval_s - self._clock() if pending else self._interval_s
            if stop.wait(max(0.05, wait_s)):
                return
            self.tick()

    def _update(self, name: str) -> None:
        if self._plain:
            with self._lines:
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
