"""Fixtures for the sandbox tests: real pools at the strongest isolation this machine allows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sandbox_support import STAND_IN, TIGHT

from trex_eval.sandbox import SandboxLimits, SandboxPool


@pytest.fixture(scope="session")
def pool() -> Iterator[SandboxPool]:
    """Two workers with generous limits, for programs that are expected to work."""
    with SandboxPool(
        limits=SandboxLimits(wall_s=60.0, cpu_s=60.0), workers=2, highs_package=STAND_IN
    ) as started:
        yield started


@pytest.fixture(scope="session")
def tight_pool() -> Iterator[SandboxPool]:
    """Two workers with small limits (:data:`TIGHT`), for hostile programs."""
    with SandboxPool(limits=TIGHT, workers=2, highs_package=STAND_IN) as started:
        yield started
