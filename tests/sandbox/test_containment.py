"""A worker nothing can break (deep trees, stale scratch) and bounded records (issue 13)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import STAND_IN

from trex_eval.records import ExecStatus, SandboxLimits
from trex_eval.sandbox import Job, SandboxPool
from trex_eval.sandbox.runtime import workdir
from trex_eval.sandbox.runtime.contract import PROGRAM_FILE
from trex_eval.sandbox.scratch import OWNER_FILE, SCRATCH_PREFIX, _owner_stamp, remove_stale_scratch

NEST = """
import os
for i in range({files}):
    open(f"f{{i}}.txt", "w").write("x")
open("top.lp", "w").write("Minimize\\n obj: x\\nEnd\\n")
for i in range({depth}):
    os.mkdir("d")
    os.chdir("d")
    open("m.lp", "w").write("Minimize\\n obj: x\\nEnd\\n")
print("nested")
"""


@pytest.fixture(scope="module")
def single() -> Iterator[SandboxPool]:
    """One worker, so the job after a hostile one runs on the same pool's only worker (or its
    replacement)."""
    with SandboxPool(limits=SandboxLimits(wall_s=60.0), workers=1, highs_package=STAND_IN) as started:
        yield started


@pytest.mark.parametrize("depth", [1500, 5000])
def test_deep_trees_do_not_break_the_worker(single: SandboxPool, depth: int) -> None:
    execution = single.run(Job(code=NEST.format(depth=depth, files=3000), expect="model_file"))

    assert execution.status is ExecStatus.OK, execution.detail
    assert "RecursionError" not in execution.detail
    assert "top.lp" in [item.name for item in execution.written_files]
    after = single.run(Job(code="import os\nprint(sorted(os.listdir('.')))\n", expect="any"))
    assert after.status is ExecStatus.OK, after.detail
    assert after.stdout_tail.strip() == str([PROGRAM_FILE])


def test_remove_tree_is_iterative_and_handles_locked_folders(tmp_path: Path) -> None:
    root = tmp_path / "job"
    root.mkdir()
    current = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for index in range(3000):  # deeper than PATH_MAX and the recursion limit
        os.mkdir("dd", dir_fd=current)
        child = os.open("dd", os.O_RDONLY | os.O_DIRECTORY, dir_fd=current)
        os.close(os.open("f.lp", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=current))
        if index % 97 == 0:
            os.fchmod(current, 0o500)
        os.close(current)
        current = child
    os.close(current)

    files, dropped = workdir.collect_files(str(root), ["**/*.lp"], limit_bytes=1 << 20)
    assert 0 < len(files) <= 100 and dropped["files"] == 0
    assert workdir.wipe(str(root), str(tmp_path / "tmp"), (), ()) == []
    assert not root.exists()


def _stale(base: Path, stamp: str, name: str) -> Path:
    folder = base / f"{SCRATCH_PREFIX}{name}"
    (folder / "worker-0" / "job-1").mkdir(parents=True)
    (folder / OWNER_FILE).write_text(stamp)
    return folder


def test_stale_scratch_removed_at_pool_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(finished.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        live_stamp = _owner_stamp(live.pid)
        assert live_stamp is not None
        dead = _stale(tmp_path, f"{dead_pid} 12345", f"{dead_pid}-abc")
        reused = _stale(tmp_path, f"{live.pid} 1", f"{live.pid}-reused")  # the pid now names another
        kept = _stale(tmp_path, live_stamp, f"{live.pid}-def")
        unknown = tmp_path / f"{SCRATCH_PREFIX}old-format"
        unknown.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        with SandboxPool(workers=1, highs_package=STAND_IN) as started:
            assert started.run(Job(code="print(1)", expect="any")).status is ExecStatus.OK
            assert not dead.exists() and not reused.exists()
            assert kept.exists() and unknown.exists()
            assert remove_stale_scratch(str(tmp_path)) == []
    finally:
        live.kill()
        live.wait()


BLOAT = """
import highspy
import numpy as np
for i in range(60):
    with open(f"model_{i:02d}.lp", "w") as handle:
        handle.write("\\\\" + "x" * (1 << 20) + "\\nMinimize\\n obj: x\\nEnd\\n")
n = 1000
for i in range(60):
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = 10
    lp.col_cost_ = np.ones(n)
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.full(n, 10.0)
    lp.row_lower_ = np.full(10, 1.0)
    lp.row_upper_ = np.full(10, 1e30)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(0, 10 * n + 1, 10, dtype=np.int32)
    lp.a_matrix_.index_ = np.tile(np.arange(10, dtype=np.int32), n)
    lp.a_matrix_.value_ = np.ones(10 * n)
    h.passModel(lp)
    h.run()
print("done")
"""


def test_records_stay_under_the_budget(single: SandboxPool) -> None:
    execution = single.run(Job(code=BLOAT, expect="any"), limits=SandboxLimits(wall_s=120.0, cpu_s=120.0))

    assert execution.status is ExecStatus.OK, execution.detail
    size = len(execution.model_dump_json())
    assert size < 16 << 20, size
    assert execution.written_files[-1].name == "model_59.lp"
    assert "collected files" in execution.detail and "dropped" in execution.detail
    assert "solve records dropped" in execution.detail
    assert len(execution.solves) == 40
    assert execution.solves[-1].model is not None
    assert any(solve.verification == "skipped: matrix too large" for solve in execution.solves)


def test_wipe_reports_what_it_could_not_remove(tmp_path: Path) -> None:
    """A directory wipe cannot delete (a read-only parent, or for root, whom permissions do not
    stop, a mount point) is reported, never raised."""
    locked = tmp_path / "locked"
    (locked / "job").mkdir(parents=True)
    mounted = os.geteuid() == 0
    if mounted:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "none", str(locked / "job")], check=True)
    else:
        locked.chmod(0o500)
    try:
        problems = workdir.wipe(str(locked / "job"), str(tmp_path / "tmp"), (), ())
    finally:
        if mounted:
            subprocess.run(["umount", str(locked / "job")], check=True)
        else:
            locked.chmod(0o700)
    assert problems and "cannot remove" in problems[0]


FLOOD_CHANNEL = """
import os
for name in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        continue
    if "trex-result" in target:
        line = b'{"kind":"junk","pad":"' + b"x" * 1000 + b'"}\\n'
        for _ in range(40_000):
            os.write(int(name), line)
print("flooded")
"""


def test_a_flooded_result_channel_is_read_only_up_to_twice_the_record_budget(single: SandboxPool) -> None:
    """40 MB of lines written straight into the result channel: the worker passes on at most
    2 x record_mib of it (head and tail), and the cut is noted."""
    execution = single.run(Job(code=FLOOD_CHANNEL, expect="any"), limits=SandboxLimits(record_mib=4))
    assert "flooded" in execution.stdout_tail, (execution.status, execution.detail)
    assert "bytes of solve records left out of the middle of the result channel" in execution.detail
    assert len(execution.model_dump_json()) < 4 << 20


SWAP_WORKDIR = """
import os
here = os.getcwd()
open("mine.lp", "w").write("Minimize\\n obj: x\\nEnd\\n")
os.chdir("/")
os.rename(here, here + ".moved")
os.symlink(here + ".moved", here)
print("swapped")
"""


def test_a_working_directory_swapped_for_a_symbolic_link_is_not_followed(single: SandboxPool) -> None:
    """A program replaced its working directory with a symbolic link (an attack pointed it at
    ``/``: the root worker walked the whole sandbox view, about a second per job, and returned
    every ``*.lp`` in it as the program's): the worker collects nothing through the link, and
    the next job runs in a working directory of its own again."""
    execution = single.run(Job(code=SWAP_WORKDIR, expect="any"))

    assert "swapped" in execution.stdout_tail, (execution.status, execution.detail, execution.stderr_tail)
    assert execution.written_files == ()
    after = single.run(
        Job(code="import os\nprint('HERE', os.path.islink(os.getcwd()), os.listdir('.'))\n", expect="any")
    )
    assert after.status is ExecStatus.OK, after.detail
    assert "HERE False ['program.py']" in after.stdout_tail, after.stdout_tail
