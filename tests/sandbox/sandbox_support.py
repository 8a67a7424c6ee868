"""Helpers shared by the sandbox tests (kept out of conftest so test modules can import them)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from trex_eval.sandbox import SandboxLimits, SandboxPool

STAND_IN = Path(__file__).parent / "highs_stand_in"
"""A test-only stand-in for the gurobipy_highs layer (every model solves to 42)."""

TIGHT = SandboxLimits(
    wall_s=5.0,
    cpu_s=2.0,
    memory_mib=1024,
    file_size_mib=8,
    max_processes=16,
    output_bytes=200_000,
    disk_mib=64,
)


def marker() -> str:
    """A unique ``sleep`` duration: hostile programs run ``sleep <marker>`` so survivors can be found."""
    return f"{900000 + secrets.randbelow(99999)}.{secrets.randbelow(10**6):06d}"


def processes_with(text: str) -> list[int]:
    """Host processes whose command line or name (``comm``, what ``prctl(PR_SET_NAME)`` sets)
    contains ``text``; zombies count, they have not been reaped."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            command = (
                Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
            name = Path(f"/proc/{entry}/comm").read_text(errors="replace")
        except OSError:
            continue
        if text in command or text in name:
            found.append(int(entry))
    return found


def require_bwrap(pool: SandboxPool) -> None:
    """Skip (fail under CI) tests that need the bubblewrap isolation level."""
    if pool.isolation != "bwrap":
        if os.environ.get("CI"):
            pytest.fail("CI must run the sandbox under bubblewrap")
        pytest.skip("needs bwrap isolation")
