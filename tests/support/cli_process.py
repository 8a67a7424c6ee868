"""The real ``trex-eval`` command in a subprocess, as a user's terminal would run it.

The one helper every test that runs the CLI uses (``python -m trex_eval`` in a fresh process).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def trex_eval(
    *args: str,
    columns: int | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    expect: int | None = 0,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m trex_eval ARGS`` and return the finished process (text output captured).

    Args:
        columns: terminal width (rich reads ``COLUMNS``); ``None`` keeps this process's.
        env: variables added to this process's environment.
        cwd: working directory (default: this process's).
        expect: the exit status the test requires (it fails otherwise, showing the output's
            tails); ``None`` leaves checking the status to the caller.
        timeout: seconds before ``subprocess.TimeoutExpired`` fails the test.
    """
    full_env = {**os.environ, **(env or {})}
    if columns is not None:
        full_env["COLUMNS"] = str(columns)
    done = subprocess.run(
        [sys.executable, "-m", "trex_eval", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if expect is not None:
        assert done.returncode == expect, (
            f"`trex-eval {' '.join(args)}` exited {done.returncode}, expected {expect}\n"
            f"stdout (tail):\n{done.stdout[-2000:]}\nstderr (tail):\n{done.stderr[-3000:]}"
        )
    return done
