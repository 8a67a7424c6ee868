"""Running a run's event loop so that SIGTERM ends it cleanly, as Ctrl-C does.

The CLI turns SIGTERM into ``SystemExit(143)`` (``trex_eval.cli.main``) so that clean-up runs.
Raised by a Python signal handler, that exception lands in whatever the main thread is doing:
inside the event loop, often in the middle of some task's step (a sample task extracting a long
program, an HTTP read). asyncio then finishes that task with SystemExit, re-raises it out of the
loop and, while the loop is wound down, prints "Task exception was never retrieved ...
SystemExit: 143" with a traceback.

:func:`run_main` runs the loop with its own SIGTERM handler instead: the signal cancels the main
task between two steps (what :func:`asyncio.run` does for Ctrl-C), the run unwinds (sample tasks
cancelled, the model server and sandbox workers stopped, the store closed), the loop is closed, and
only then is the signal handed to the handler that was installed before (the CLI's raises
``SystemExit(143)``, now outside any loop; the default handler ends the process by the signal). A
second SIGTERM while the run unwinds goes to that handler at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar

_T = TypeVar("_T")


def run_main(main: Coroutine[Any, Any, _T]) -> _T:
    """:func:`asyncio.run` of ``main``, with SIGTERM deferred to after the loop (module docstring).

    Off the main thread, or where SIGTERM is ignored or was not installed from Python, this is
    plain :func:`asyncio.run`. After a SIGTERM the earlier handler runs once the loop is closed,
    whatever ``main`` returned or raised, so its exception (``SystemExit(143)`` for the CLI) is
    what leaves; a handler that returns lets ``main``'s outcome (``CancelledError``) leave.
    """
    previous = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread() or previous in (signal.SIG_IGN, None):
        return asyncio.run(main)
    received: list[int] = []

    async def tracked() -> _T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()

        def on_sigterm(signum: int, frame: FrameType | None) -> None:
            if received:  # asked twice: no more waiting for the clean-up
                _deliver(previous, signum, frame)
            received.append(signum)
            # Nothing is raised here: the loop cancels the main task between two steps.
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(task.cancel)

        # Installed from inside the loop, once the task exists, so no signal finds nothing to
        # cancel (a SIGTERM before this point goes to the earlier handler, as without this module).
        signal.signal(signal.SIGTERM, on_sigterm)
        return await main

    try:
        return asyncio.run(tracked())
    finally:
        signal.signal(signal.SIGTERM, previous)
        if received:
            _deliver(previous, signal.SIGTERM, None)


def _deliver(
    handler: Callable[[int, FrameType | None], Any] | int | None, signum: int, frame: FrameType | None
) -> None:
    """Run the SIGTERM handler ``handler`` (as :func:`signal.getsignal` returned it) now."""
    if callable(handler):
        handler(signum, frame)
        return
    # The default action: end the process by the signal, as it would have without run_main.
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)
