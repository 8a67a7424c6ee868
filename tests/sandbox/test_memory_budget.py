"""Under bubblewrap and unshare the jobs' private /tmp and /dev/shm are tmpfs, which is memory: they
count against ``memory_mib`` (issue 13), so address space plus everything a job can store stays
under the limit."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from trex_eval.records import SHM_MIB, ExecStatus, SandboxLimits
from trex_eval.sandbox import Job, SandboxPool

# Fill /tmp and /dev/shm to their caps, then find the largest allocation that still succeeds.
PROBE = """
import errno, json, mmap, os
found = {}
for folder in FOLDERS:
    held = 0
    try:
        for index in range(1000):  # files of 32 MiB: RLIMIT_FSIZE caps each file, not the folder
            with open(os.path.join(folder, f"fill{index}"), "wb") as handle:
                for _ in range(32):
                    handle.write(b"x" * (1 << 20))
                    handle.flush()
                    held += 1
    except OSError as error:
        found[folder] = [held, errno.errorcode.get(error.errno)]
largest = 0
for mib in range(64, 4096, 32):
    try:
        block = mmap.mmap(-1, mib << 20)
    except OSError:
        break
    block.close()
    largest = mib
found["largest_mib"] = largest
print("OUTCOME " + json.dumps(found))
"""


def _outcome(pool: SandboxPool, *, fill: bool) -> dict[str, object]:
    # Only bwrap and unshare have private tmpfs: at rlimits /tmp and /dev/shm are the host's.
    folders = ("/tmp", "/dev/shm") if fill else ()
    execution = pool.run(Job(code=f"FOLDERS = {folders!r}\n" + PROBE, expect="any"))
    assert execution.status is ExecStatus.OK, (execution.detail, execution.stderr_tail)
    line = [item for item in execution.stdout_tail.splitlines() if item.startswith("OUTCOME ")][-1]
    return dict(json.loads(line[len("OUTCOME ") :]))


@pytest.mark.parametrize("level", ["bwrap", "unshare"])
def test_a_job_holds_no_more_than_memory_mib_in_address_space_and_tmpfs_together(level: str) -> None:
    limits = SandboxLimits(wall_s=60.0, memory_mib=1024, disk_mib=128)
    with SandboxPool(limits=limits, workers=1, isolation=level) as pool:  # type: ignore[arg-type]
        assert level == "unshare" or pool.isolation_report.supports_tmpfs_size
        found = _outcome(pool, fill=True)
    tmp_mib, tmp_stop = found["/tmp"]  # type: ignore[misc]
    shm_mib, shm_stop = found["/dev/shm"]  # type: ignore[misc]
    assert (tmp_stop, shm_stop) == ("ENOSPC", "ENOSPC")
    assert tmp_mib <= 128 and shm_mib <= SHM_MIB
    largest = int(found["largest_mib"])  # type: ignore[arg-type]
    # The allowance is 1024 - 128 - 64 = 832 MiB on top of the worker (the program's own
    # interpreter state takes some of it); without the budget ~1000 MiB would map.
    assert 600 <= largest <= 832, found
    assert tmp_mib + shm_mib + largest <= 1024


def test_the_rlimits_level_keeps_the_whole_allowance_for_address_space() -> None:
    limits = SandboxLimits(wall_s=60.0, memory_mib=1024, disk_mib=128)
    with SandboxPool(limits=limits, workers=1, isolation="rlimits") as pool:
        largest = int(_outcome(pool, fill=False)["largest_mib"])  # type: ignore[arg-type]
    assert 832 < largest <= 1024


def test_limits_that_leave_no_room_beside_the_tmpfs_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"memory_mib \(600\) must exceed disk_mib \(512\)"):
        SandboxLimits(memory_mib=600)
    assert SandboxLimits(memory_mib=600, disk_mib=64).address_space_mib(private_tmpfs=True) == 472
    assert SandboxLimits().address_space_mib(private_tmpfs=False) == 2048


def test_every_job_is_the_out_of_memory_killers_first_pick(pool: SandboxPool) -> None:
    """A job raises its own ``oom_score_adj`` once it has its ``/proc``: a job forked ahead used to
    try it at once, while ``/proc`` still led to the /proc of the job before it (gone with its PID
    namespace), and one job in eight kept the zygote's score."""
    code = "print('SCORE', open('/proc/self/oom_score_adj').read().strip())"
    scores = []
    for _ in range(16):
        done = pool.run(Job(code=code, expect="any"))
        assert done.status is ExecStatus.OK, (done.detail, done.stderr_tail)
        scores.append(done.stdout_tail.split("SCORE", 1)[1].strip())

    assert scores == ["1000"] * 16
