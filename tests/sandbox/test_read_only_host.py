"""At the ``unshare`` level the host's file system is read-only for jobs: a job writes only its own
fresh ``/tmp`` and ``/dev/shm``, never the installation, the runtime, ``/etc`` or the data that the
harness and later jobs read (the worker makes every mount of its mount namespace read-only before
its first job). Real pool, real writes, as root where the machine allows (``id -u`` 0 in CI)."""

from __future__ import annotations

import hashlib
import json
import secrets
import sys
import sysconfig
from pathlib import Path

import pytest

from trex_eval.records import ExecStatus
from trex_eval.sandbox import Job, SandboxLimits, SandboxPool
from trex_eval.sandbox.launch import RUNTIME_DIR, find_tool

WRITER = """\
import errno, json, os
found = {}
for path, how in TARGETS:
    try:
        if how == "create":
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        else:  # open for writing, write nothing: a success leaves the file as it was
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        found[path] = "written"
    except OSError as error:
        found[path] = errno.errorcode.get(error.errno, str(error.errno))
print("OUTCOME " + json.dumps(found))
"""

LP = (
    "import pulp\np = pulp.LpProblem('lp', pulp.LpMaximize)\nx = pulp.LpVariable('x', 0, 3)\n"
    "y = pulp.LpVariable('y', 0)\np += 3 * x + 2 * y\np += x + y <= 4\np += x + 3 * y <= 6\n"
    "p.solve(pulp.PULP_CBC_CMD(msg=0))\nprint(pulp.value(p.objective))\n"
)
"""Optimum 11; CBC writes its model and solution files to /tmp."""


def _state(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def _targets(data_dir: Path) -> tuple[list[Path], list[Path]]:
    """What the harness or a later job reads: existing files to open for writing, new files to
    plant (a ``.pth`` runs inside the harness's interpreter at its next start)."""
    tag = secrets.token_hex(4)
    sites = sorted({Path(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")})
    data_file = next(path for path in sorted(data_dir.rglob("*")) if path.is_file())
    existing = [
        Path("/etc/passwd"),
        Path("/etc/ld.so.cache"),
        RUNTIME_DIR / "hooks" / "__init__.py",
        RUNTIME_DIR / "server.py",
        data_file,
        *sorted(sites[0].glob("*.pth"))[:2],
    ]
    planted = [
        *(site / f"trex-planted-{tag}.pth" for site in sites),
        sites[0] / f"trex_planted_{tag}.py",
        Path(sys.executable).parent / f"trex-planted-{tag}",
        RUNTIME_DIR / "hooks" / f"planted_{tag}.py",
        data_dir / f"planted-{tag}.json",
        Path("/etc") / f"trex-planted-{tag}",
    ]
    return [path for path in existing if path.is_file()], planted


@pytest.mark.skipif(not find_tool("unshare") or not find_tool("setpriv"), reason="needs util-linux unshare")
def test_unshare_jobs_write_nothing_the_harness_or_a_later_job_reads(data_dir: Path) -> None:
    existing, planted = _targets(data_dir)
    before = {path: _state(path) for path in existing}
    targets = [(str(path), "append") for path in existing] + [(str(path), "create") for path in planted]
    code = f"TARGETS = {targets!r}\n" + WRITER
    try:
        with SandboxPool(workers=1, isolation="unshare", limits=SandboxLimits(wall_s=60.0)) as pool:
            if pool.isolation != "unshare":  # pragma: no cover - asked for exactly this level
                pytest.fail(f"got {pool.isolation}")
            attack = pool.run(Job(code=code, expect="any"))
            honest = pool.run(Job(code=LP))
            report, jobs = pool.isolation_report, pool.describe()["jobs"]
        left = [path for path in planted if path.exists()]
    finally:
        for path in planted:
            path.unlink(missing_ok=True)

    assert attack.status is ExecStatus.OK, (attack.detail, attack.stderr_tail)
    lines = [line for line in attack.stdout_tail.splitlines() if line.startswith("OUTCOME ")]
    found = json.loads(lines[-1][len("OUTCOME ") :])
    assert set(found) == {path for path, _ in targets}
    assert {path: how for path, how in found.items() if how not in ("EROFS", "EACCES")} == {}
    assert left == []
    assert {path: _state(path) for path in existing} == before
    # The level says so, and an honest program (CBC writes its files to its own /tmp) still solves.
    assert report.root_read_only and "read-only" in report.host_view
    assert any("host file system read-only" in note for note in jobs["notes"])  # type: ignore[index]
    assert honest.status is ExecStatus.OK, (honest.detail, honest.stderr_tail)
    assert honest.last_solve is not None and honest.last_solve.objective == pytest.approx(11.0)
