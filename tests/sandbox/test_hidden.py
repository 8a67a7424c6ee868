"""Directories the harness hides from programs (benchmark answers, run directories)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import require_bwrap

from trex_eval.records import ExecStatus
from trex_eval.sandbox import Job, SandboxPool


@pytest.fixture(scope="module")
def secret_dir() -> Iterator[Path]:
    # Under a private (0700) folder in /tmp, like pytest's own temporary directories.
    root = Path(tempfile.mkdtemp())
    os.chmod(root, 0o700)
    secret = root / "answers"
    secret.mkdir()
    (secret / "labels.json").write_text('{"0": 3000.0}')
    yield secret
    shutil.rmtree(root)


def test_hidden_directories_are_empty_for_programs_and_jobs_keep_working(secret_dir: Path) -> None:
    code = f"""
import os, highspy
path = {str(secret_dir)!r}
print(sorted(os.listdir(path)) if os.path.isdir(path) else 'absent')
"""
    with SandboxPool(workers=1, hidden=(str(secret_dir),)) as pool:
        require_bwrap(pool)
        runs = [pool.run(Job(code=code, expect="any")) for _ in range(3)]
    # Every job, not only the first: the wipe between jobs must not break the sandbox's mounts.
    assert [run.status for run in runs] == [ExecStatus.OK] * 3, [run.stderr_tail for run in runs]
    assert all("labels.json" not in run.stdout_tail for run in runs)
