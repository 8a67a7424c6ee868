"""What a job can write to the temporary file systems is bounded at every isolation level
(issue 13: at the weaker levels a probe wrote 16 GB to the host's ``/tmp``).

``bwrap`` and ``unshare``: private tmpfs over ``/tmp`` (holding the job's directory) of
``disk_mib`` and over ``/dev/shm`` of 64 MiB, invisible to the host. ``rlimits``: ``/tmp`` is the
host's; no file may exceed ``disk_mib`` (``RLIMIT_FSIZE``) and a job that takes more than
``disk_mib`` of the watched file systems' free space is killed. The writer stops by itself at
``CAP_MIB`` so that a broken bound never writes much.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

import pytest
from sandbox_support import STAND_IN

from trex_eval.records import SHM_MIB, ExecStatus, Execution, SandboxLimits
from trex_eval.sandbox import Job, SandboxPool

DISK_MIB = 16
CAP_MIB = 96

WRITER = """
import errno, json, os, sys, time
found = {}
def report():
    print("OUTCOME " + json.dumps(found), flush=True)
def fill(folder, *, one_file):
    os.makedirs(folder, exist_ok=True)
    written = 0
    handle = open(os.path.join(folder, "big"), "wb", buffering=0) if one_file else None
    try:
        while written < CAP_MIB:
            if not one_file:
                handle = open(os.path.join(folder, f"part{written}"), "wb", buffering=0)
            handle.write(b"x" * (1 << 20))
            handle.flush()
            if not one_file:
                handle.close()
            written += 1
            found[folder + (":one" if one_file else "")] = [written, None]
            report()
            time.sleep(0.003)  # a writer the 20 ms disk watch can keep up with
        return [written, "cap"]
    except OSError as error:
        return [written, errno.errorcode.get(error.errno, str(error.errno))]
    finally:
        if one_file and handle is not None:
            handle.close()
for folder, one_file in TARGETS:
    found[folder + (":one" if one_file else "")] = fill(folder, one_file=one_file)
    report()
    if one_file:
        os.unlink(os.path.join(folder, "big"))
"""


def _write(pool: SandboxPool, targets: list[tuple[str, bool]]) -> tuple[Execution, dict[str, list[object]]]:
    code = f"CAP_MIB = {CAP_MIB}\nTARGETS = {targets!r}\n" + WRITER
    execution = pool.run(Job(code=code, expect="any"))
    lines = [line for line in execution.stdout_tail.splitlines() if line.startswith("OUTCOME ")]
    assert lines, (execution.status, execution.detail, execution.stderr_tail)
    return execution, json.loads(lines[-1][len("OUTCOME ") :])


@pytest.mark.parametrize("level", ["bwrap", "unshare", "rlimits"])
def test_jobs_cannot_fill_the_temporary_file_systems(level: str) -> None:
    limits = SandboxLimits(wall_s=60.0, memory_mib=1024, disk_mib=DISK_MIB)
    own = f"/tmp/trex-fill-{secrets.token_hex(6)}"
    shm = f"/dev/shm/trex-fill-{secrets.token_hex(6)}"
    try:
        with SandboxPool(limits=limits, workers=1, isolation=level, highs_package=STAND_IN) as pool:  # type: ignore[arg-type]
            assert pool.isolation == level
            single, single_found = _write(pool, [(own, True)])
            tmp, tmp_found = _write(pool, [(own, False)])
            workdir, workdir_found = _write(pool, [("sub", False)])
            shared, shm_found = _write(pool, [(shm, False)])
            seen_by_host = os.path.exists(own) or os.path.exists(shm)
    finally:
        # Only at rlimits can the job's files be on the host; remove them whatever happened.
        shutil.rmtree(own, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)

    # A single file never exceeds disk_mib (RLIMIT_FSIZE, or the full tmpfs first).
    written, stop = single_found[own + ":one"]
    assert single.status is ExecStatus.OK, (single.detail, single.stderr_tail)
    assert stop in ("EFBIG", "ENOSPC") and int(written) <= DISK_MIB  # type: ignore[call-overload]
    if level == "rlimits":
        # The host's /tmp: the disk watch kills the writer past disk_mib, long before the cap.
        for execution, found, key in ((tmp, tmp_found, own), (shared, shm_found, shm)):
            assert execution.status is ExecStatus.OUTPUT_LIMIT, (execution.detail, found)
            assert "MiB to the temporary file systems" in execution.detail
            assert DISK_MIB <= int(found[key][0]) < CAP_MIB / 2, found  # type: ignore[call-overload]
        assert workdir.status is ExecStatus.OUTPUT_LIMIT, (workdir.detail, workdir_found)
    else:
        # Private tmpfs: the job's own directory and /tmp share disk_mib, /dev/shm has 64 MiB,
        # and the host saw none of it.
        assert not seen_by_host
        for execution, found, key, cap in (
            (tmp, tmp_found, own, DISK_MIB),
            (workdir, workdir_found, "sub", DISK_MIB),
            (shared, shm_found, shm, SHM_MIB),
        ):
            assert execution.status is ExecStatus.OK, (execution.detail, execution.stderr_tail)
            written, stop = found[key]
            assert stop == "ENOSPC" and int(written) <= cap, found  # type: ignore[call-overload]


def test_unshare_workers_bind_back_what_they_need_from_under_tmp() -> None:
    """The private /tmp, a fresh one for every job, hides the host's: a gurobipy layer (like an
    interpreter or a checkout) that lives under the host's /tmp is bound back into each, read-only."""
    layer = Path(f"/tmp/trex-layer-{secrets.token_hex(6)}") / "gurobipy_highs"
    shutil.copytree(STAND_IN, layer)
    code = (
        "import errno, gurobipy, os\n"
        "try:\n"
        "    open(os.path.join(os.path.dirname(gurobipy.__file__), 'planted.py'), 'w')\n"
        "    print('WROTE')\n"
        "except OSError as error:\n"
        "    print('REFUSED', errno.errorcode[error.errno])\n"
        "print('LAYER', gurobipy.__file__)\n"
    )
    try:
        with SandboxPool(workers=1, isolation="unshare", highs_package=layer) as pool:
            executions = [pool.run(Job(code=code, gurobi="highs", expect="any")) for _ in range(2)]
            jobs = pool.describe()["jobs"]
    finally:
        shutil.rmtree(layer.parent, ignore_errors=True)

    for execution in executions:
        assert execution.status is ExecStatus.OK, (execution.detail, execution.stderr_tail)
        assert f"LAYER {layer}/__init__.py" in execution.stdout_tail
        assert "REFUSED EROFS" in execution.stdout_tail
    assert jobs["job_tmpfs"] == ["/tmp", "/dev/shm"]  # type: ignore[index]
