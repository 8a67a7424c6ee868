"""A neighbour cannot change a verdict: a job is charged the CPU it received and the time it had.

The attack: a program that forked 63 spinners, each in a session of its own, made an honest
program running beside it time out (its limits were per process, and its wall clock counted the
time it was starved). Both ways of keeping jobs apart are tried here: a cgroup per worker (equal
CPU weights, where the harness may make them: as root, in CI) and, without cgroups, the
supervisor's charging (CPU summed over the job's processes, wall-clock time less time starved).
"""

from __future__ import annotations

import threading
import time

import pytest

from trex_eval.records import ExecStatus, Execution
from trex_eval.sandbox import Job, SandboxLimits, SandboxPool

HOG = """
import os
for _ in range(63):
    if os.fork() == 0:
        try:
            os.setsid()  # refused where the syscall filter applies (the autogroup counter)
        except PermissionError:
            pass
        while True:
            pass
while True:
    pass
"""

HONEST = """
import time
started = time.process_time()
spins = 0
while time.process_time() - started < 1.0:
    spins += 1
print("DONE", spins > 0)
"""


def _pool(*, cgroups: bool, limits: SandboxLimits) -> SandboxPool:
    return SandboxPool(workers=2, limits=limits, cgroups=cgroups)


@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroups", "charging"])
def test_a_fork_bomb_of_spinners_does_not_time_out_its_neighbour(cgroups: bool) -> None:
    # The honest program needs 1 s of CPU; the hog would starve it to 1/32 of a core for its
    # whole 3 s wall limit: without protection it cannot finish in its own 3 s.
    limits = SandboxLimits(wall_s=3.0, cpu_s=30.0, max_processes=80)
    with _pool(cgroups=cgroups, limits=limits) as pool:
        if cgroups and pool.fair_share["cgroups"] is None:
            pytest.skip(f"no cgroups for the workers here: {pool.fair_share['why_none']}")
        found: dict[str, Execution] = {}
        hog = threading.Thread(target=lambda: found.setdefault("hog", pool.run(Job(code=HOG, expect="any"))))
        hog.start()
        time.sleep(0.5)  # the spinners are running
        found["honest"] = pool.run(Job(code=HONEST, expect="any"))
        hog.join()

    honest, hog_run = found["honest"], found["hog"]
    assert honest.status is ExecStatus.OK, (honest.status, honest.detail, honest.wall_s)
    assert "DONE True" in honest.stdout_tail
    assert hog_run.status is ExecStatus.TIMEOUT, (hog_run.status, hog_run.detail)


def test_a_job_is_charged_the_cpu_of_all_its_processes() -> None:
    """``RLIMIT_CPU`` is per process: 63 spinners each under the limit took 63 times it."""
    limits = SandboxLimits(wall_s=60.0, cpu_s=2.0, max_processes=80)
    with SandboxPool(workers=1, limits=limits) as pool:
        started = time.monotonic()
        execution = pool.run(Job(code=HOG, expect="any"))
        elapsed = time.monotonic() - started

    assert execution.status is ExecStatus.TIMEOUT, (execution.status, execution.detail)
    assert "all its processes together" in execution.detail
    # 2 CPU seconds over the machine's cores, not the 60 s wall limit (a generous bound).
    assert elapsed < 20.0, elapsed


FORKED_HOGS = """
import os, time
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray(350 << 20)  # touched: resident, each under the job's RLIMIT_AS
        for at in range(0, len(block), 4096):
            block[at] = 1
        time.sleep(2)  # all four hold theirs at once
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print("ALL DONE")
"""


@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroups", "sampled"])
def test_a_job_is_held_to_its_memory_with_all_its_processes(cgroups: bool) -> None:
    """``RLIMIT_AS`` is per process: four children each under it took 4.8 GiB under a 2 GiB limit."""
    limits = SandboxLimits(wall_s=60.0, cpu_s=60.0, memory_mib=1024)
    with _pool(cgroups=cgroups, limits=limits) as pool:
        if cgroups and pool.fair_share["cgroups"] is None:
            pytest.skip(f"no cgroups for the workers here: {pool.fair_share['why_none']}")
        execution = pool.run(Job(code=FORKED_HOGS, expect="any"))
        after = pool.run(Job(code="print('next')", expect="any"))

    # (The cgroup's limit kills a child, and the job may go on: it exceeded its memory all the same.)
    assert execution.status is ExecStatus.MEMORY_LIMIT, (execution.status, execution.detail)
    assert after.status is ExecStatus.OK
