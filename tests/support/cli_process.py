"""The real ``trex-eval`` command in a subprocess, as a user's terminal would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def trex_eval(
    *args: str, columns: int, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m trex_eval ARGS`` with a terminal ``columns`` wide (rich reads ``COLUMNS``)
    and ``env`` added to this process's environment; fails the test on a non-zero exit."""
    done = subprocess.run(
        [sys.executable, "-m", "trex_eval", *args],
        cwd=cwd,
        env={**os.environ, **(env or {}), "COLUMNS": str(columns)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done
