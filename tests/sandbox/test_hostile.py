"""Hostile programs: each must be contained, recorded with the right status, leave no process
behind, and leave the pool serving.

Processes a program starts are tagged with a unique marker (``sleep <marker>`` or a process name
set with ``prctl``) so that survivors can be found in the host's ``/proc`` afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import STAND_IN, TIGHT, marker, processes_with, require_bwrap

from trex_eval.records import ExecStatus, Execution, SolveStatus
from trex_eval.sandbox import Job, SandboxPool, instances
from trex_eval.sandbox.runtime import syscalls
from trex_eval.verify import verify_solve

REPO = Path(__file__).resolve().parents[2]

TEXTBOOK_MILP = """
import gurobipy as gp
from gurobipy import GRB
m = gp.Model("textbook")
x = m.addVar(vtype=GRB.INTEGER, name="x")
y = m.addVar(vtype=GRB.INTEGER, name="y")
m.addConstr(6 * x + 4 * y <= 24, name="wood")
m.addConstr(x + 2 * y <= 6, name="labour")
m.setObjective(5 * x + 4 * y, GRB.MAXIMIZE)
m.optimize()
"""
"""A real solve whose optimum is 20 (see test_libraries)."""

NAME_PROCESS = """
import ctypes
ctypes.CDLL(None).prctl(15, ctypes.c_char_p({name!r}.encode()), 0, 0, 0)
"""
"""Set this process's name (PR_SET_NAME = 15); forked children inherit it."""


def run(pool: SandboxPool, code: str, **job: object) -> Execution:
    return pool.run(Job(code=code, gurobi="real", **job))  # type: ignore[arg-type]


def assert_no_survivors(tag: str) -> None:
    deadline = time.monotonic() + 2.0
    while processes_with(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(tag) == []


@pytest.fixture(autouse=True)
def _pool_keeps_serving(tight_pool: SandboxPool) -> Iterator[None]:
    yield
    after = tight_pool.run(Job(code="print('still serving')", expect="any"))
    assert after.status is ExecStatus.OK and "still serving" in after.stdout_tail


def require_namespaces(pool: SandboxPool) -> None:
    if pool.isolation == "rlimits":
        if os.environ.get("CI"):
            pytest.fail("CI must run the sandbox with namespace isolation (bwrap or unshare)")
        pytest.skip("needs bwrap or unshare isolation")


# ----------------------------------------------------------------------------- network


def test_loopback_connection_to_the_host_is_impossible(tight_pool: SandboxPool) -> None:
    require_namespaces(tight_pool)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(0.2)
        port = listener.getsockname()[1]
        code = (
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'stolen')\n"
        )
        execution = run(tight_pool, code, expect="any")
        with pytest.raises(TimeoutError):
            listener.accept()
    assert execution.status is ExecStatus.RUNTIME_ERROR
    # socket() itself is refused (seccomp): a job gets no socket of any family.
    assert execution.error_type == "PermissionError"


def test_dns_lookup_fails(tight_pool: SandboxPool) -> None:
    require_namespaces(tight_pool)
    execution = run(tight_pool, "import socket\nsocket.getaddrinfo('example.com', 443)\n", expect="any")

    assert execution.status is ExecStatus.RUNTIME_ERROR
    assert execution.error_type == "gaierror"


# ----------------------------------------------------------------------------- secrets and files


def test_parent_environment_is_unreachable(tight_pool: SandboxPool, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = f"sk-canary-{marker()}"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    code = f"""
import os, glob
print(sorted(os.environ))
print(dict(os.environ))
for path in glob.glob('/proc/*/environ') + ['/proc/{os.getpid()}/environ', '/proc/1/environ']:
    try:
        print(path, open(path, 'rb').read())
    except OSError as error:
        print(path, 'blocked', type(error).__name__)
"""
    execution = tight_pool.run(Job(code=code, expect="any"))

    assert execution.status is ExecStatus.OK
    assert canary not in execution.stdout_tail
    variables = eval(execution.stdout_tail.splitlines()[0])  # the program printed sorted(os.environ)
    assert "OPENAI_API_KEY" not in variables
    assert set(variables) <= {"PATH", "LANG", "LC_ALL", "PYTHONHASHSEED", "HOME", "TMPDIR", "PWD"} | {
        name for name in variables if name.endswith("_THREADS")
    }


def test_writes_outside_the_working_directory_fail(tight_pool: SandboxPool) -> None:
    require_bwrap(tight_pool)
    tag = marker()
    targets = [
        REPO / f"escape-{tag}",
        Path("/etc") / f"escape-{tag}",
        Path("/root") / f"escape-{tag}",
        Path("/var/tmp") / f"escape-{tag}",
    ]
    code = (
        "import os\n"
        + "".join(
            f"try:\n    open({str(t)!r}, 'w').write('x')\n    print('WROTE', {str(t)!r})\n"
            f"except OSError as error:\n    print('blocked', type(error).__name__)\n"
            for t in targets
        )
        + "open('inside.txt', 'w').write('fine')\nprint('inside ok')\n"
    )
    execution = run(tight_pool, code, expect="any")

    assert execution.status is ExecStatus.OK
    assert "WROTE" not in execution.stdout_tail and "inside ok" in execution.stdout_tail
    assert not any(target.exists() for target in targets)


def test_home_directories_are_hidden(tight_pool: SandboxPool) -> None:
    require_bwrap(tight_pool)
    # What a pool binds under the home folder: the interpreter (pyenv) and the instance store
    # (data files handed to programs by reference, <cache>/instances); the folders on the way to
    # them show up empty but for that path, and nothing else of the home folder does.
    store = instances.store_root().absolute()
    home = Path.home()
    on_the_way = {".pyenv"} | ({store.relative_to(home).parts[0]} if store.is_relative_to(home) else set())
    between = [str(parent) for parent in store.parents if parent.is_relative_to(home) and parent != home]
    code = (
        "import os\nprint(sorted(os.listdir('/root')), sorted(os.listdir('/home')))\n"
        f"for path in {between!r}:\n"
        "    print('IN', path, sorted(os.listdir(path)))\n"
    )
    execution = run(tight_pool, code, expect="any")

    assert execution.status is ExecStatus.OK
    hidden = [entry for entry in os.listdir("/root") if entry not in on_the_way]
    assert not any(f"'{entry}'" in execution.stdout_tail for entry in hidden)
    for line in execution.stdout_tail.splitlines():
        if line.startswith("IN "):
            _, path, listed = line.split(" ", 2)
            child = next(parent for parent in (store, *store.parents) if parent.parent == Path(path))
            assert listed == repr([child.name]), line


def test_another_jobs_directory_is_invisible(tight_pool: SandboxPool) -> None:
    require_bwrap(tight_pool)
    secret = f"secret-{marker()}"
    writer = (
        f"import os, time\nopen('answer.txt', 'w').write({secret!r})\n"
        f"open('/tmp/{secret}', 'w').write({secret!r})\nopen('/dev/shm/{secret}', 'w').write({secret!r})\n"
        "time.sleep(2.5)\n"
    )
    # Prints only what could be a leak, and skips read-only mounts (the interpreter itself may be
    # bound read-only under /tmp, a virtualenv in /tmp, too big to read within the limits) and
    # the job's own /proc (which /proc leads to, in /tmp under bubblewrap).
    reader = """
import os
own_proc = os.path.realpath('/proc')
for root in ('/tmp', '/dev/shm', '/var/tmp'):
    for folder, dirs, names in os.walk(root):
        dirs[:] = [
            d for d in dirs
            if os.path.join(folder, d) != own_proc
            and not os.statvfs(os.path.join(folder, d)).f_flag & os.ST_RDONLY
        ]
        for name in names:
            path = os.path.join(folder, name)
            try:
                text = open(path, errors='replace').read(200)
            except OSError as error:
                text = f'unreadable {error}'
            if 'secret-' in name or 'secret-' in text or 'answer' in name:
                print(path, text)
"""
    results: dict[str, Execution] = {}
    thread = threading.Thread(target=lambda: results.update(writer=run(tight_pool, writer, expect="any")))
    thread.start()
    time.sleep(1.0)
    results["reader"] = run(tight_pool, reader, expect="any")
    thread.join()

    assert results["writer"].status is ExecStatus.OK
    assert results["reader"].status is ExecStatus.OK
    assert secret not in results["reader"].stdout_tail


def test_a_later_job_on_the_same_worker_finds_nothing(tight_pool: SandboxPool) -> None:
    require_bwrap(tight_pool)
    secret = f"secret-{marker()}"
    writer = (
        f"open('left-behind.txt', 'w').write({secret!r})\nopen('/tmp/{secret}', 'w').write('x')\n"
        f"open('/dev/shm/{secret}', 'w').write('x')\n"
    )
    reader = "import os\nprint(os.listdir('/tmp'), os.listdir('/dev/shm'), os.listdir('.'))\n"
    # Two workers: after two writers, the next two readers have met both of them.
    for _ in range(2):
        assert run(tight_pool, writer, expect="any").status is ExecStatus.OK
    for _ in range(2):
        execution = run(tight_pool, reader, expect="any")
        assert execution.status is ExecStatus.OK
        assert secret not in execution.stdout_tail and "left-behind" not in execution.stdout_tail


def test_collection_ignores_symlinks_and_special_files(tight_pool: SandboxPool) -> None:
    code = (
        "import os\nos.symlink('/etc/passwd', 'passwd.lp')\nos.mkfifo('pipe.lp')\n"
        "os.symlink('/etc', 'linked')\nopen('real.lp', 'w').write('Minimize\\n obj: x\\nEnd\\n')\n"
    )
    execution = run(tight_pool, code, expect="model_file")

    assert execution.status is ExecStatus.OK
    assert [written.name for written in execution.written_files] == ["real.lp"]


# ----------------------------------------------------------------------------- resources


def test_fork_bomb_hits_the_process_limit(tight_pool: SandboxPool) -> None:
    tag = f"bomb{marker()[-6:]}"
    code = NAME_PROCESS.format(name=tag) + "import os\nwhile True:\n    os.fork()\n"
    execution = run(tight_pool, code, expect="any")

    assert execution.status in (ExecStatus.RUNTIME_ERROR, ExecStatus.KILLED)
    if execution.status is ExecStatus.RUNTIME_ERROR:
        assert execution.error_type == "BlockingIOError"
    assert_no_survivors(tag)


def test_memory_bomb_hits_the_memory_limit(tight_pool: SandboxPool) -> None:
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 2**20))\n"
    # Zero-filling a GiB costs CPU on a loaded machine: give time, so that memory is what runs out.
    roomy = TIGHT.model_copy(update={"cpu_s": 30.0, "wall_s": 30.0})
    execution = tight_pool.run(Job(code=code, expect="any"), limits=roomy)

    assert execution.status is ExecStatus.MEMORY_LIMIT
    assert execution.error_type == "MemoryError"


def test_one_huge_allocation_hits_the_memory_limit(tight_pool: SandboxPool) -> None:
    execution = run(tight_pool, "import numpy\nnumpy.ones(4 * 2**30 // 8)\n", expect="any")

    assert execution.status is ExecStatus.MEMORY_LIMIT


def test_busy_loop_hits_the_cpu_limit(tight_pool: SandboxPool) -> None:
    # A wall clock far beyond the CPU limit, so that a loaded CI machine cannot turn this into a wall timeout.
    limits = TIGHT.model_copy(update={"wall_s": 60.0})
    execution = tight_pool.run(Job(code="while True:\n    pass\n", expect="any"), limits=limits)

    assert execution.status is ExecStatus.TIMEOUT
    assert "CPU" in execution.detail
    # rusage samples CPU time: a process killed at its limit may report somewhat less.
    assert execution.cpu_s is not None and execution.cpu_s >= 0.75 * TIGHT.cpu_s


def test_sleeping_program_hits_the_wall_clock(tight_pool: SandboxPool) -> None:
    started = time.monotonic()
    execution = run(tight_pool, "import time\ntime.sleep(600)\n", expect="any")

    assert execution.status is ExecStatus.TIMEOUT
    assert "wall-clock" in execution.detail
    assert time.monotonic() - started < TIGHT.wall_s + 5


def test_child_sleeping_past_the_timeout_is_killed(tight_pool: SandboxPool) -> None:
    tag = marker()
    code = f"import subprocess\nsubprocess.run(['sleep', '{tag}'])\n"
    execution = run(tight_pool, code, expect="any")

    assert execution.status is ExecStatus.TIMEOUT
    assert_no_survivors(tag)


def test_setsid_escapees_die_with_the_program(tight_pool: SandboxPool) -> None:
    tag, daemon_tag = marker(), marker()
    # setsid is refused where the syscall filter applies; where it is not, escapees still die.
    code = f"""
import os, subprocess
try:
    subprocess.Popen(['sleep', '{tag}'], start_new_session=True)
except PermissionError:
    subprocess.Popen(['sleep', '{tag}'])
if os.fork() == 0:
    try:
        os.setsid()
    except PermissionError:
        pass
    if os.fork() == 0:
        os.execvp('sleep', ['sleep', '{daemon_tag}'])
    os._exit(0)
print('parent leaves')
"""
    execution = run(tight_pool, code, expect="any")

    assert execution.status is ExecStatus.OK
    assert_no_survivors(tag)
    assert_no_survivors(daemon_tag)


def test_output_written_past_the_cap_within_one_tick_is_still_over_it(tight_pool: SandboxPool) -> None:
    # One write of 40 times the cap, then exit: done before the watcher's first look.
    code = f"import os\nos.write(1, b'x' * {TIGHT.output_bytes * 40})\n"
    for _ in range(3):
        assert run(tight_pool, code, expect="any").status is ExecStatus.OUTPUT_LIMIT


def test_a_job_cannot_start_a_session_whose_counter_a_later_job_reads(tight_pool: SandboxPool) -> None:
    # Each setsid moves the kernel's autogroup counter, which /proc/<pid>/autogroup shows a later
    # job: a held-out attack carried 12 bits a pair of jobs through it.
    # In a child: the job itself leads its session already, where setsid fails anyway.
    code = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.setsid()
        print('NEW SESSION', flush=True)
    except PermissionError:
        print('REFUSED', flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""
    if not syscalls.SUPPORTED:
        pytest.skip("no syscall filter on this machine")
    assert run(tight_pool, code, expect="any").stdout_tail.strip() == "REFUSED"


def test_gigabyte_of_output_hits_the_output_limit(tight_pool: SandboxPool) -> None:
    code = "import sys\nchunk = 'x' * 2**20\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n"
    execution = run(tight_pool, code, expect="any")

    assert execution.status is ExecStatus.OUTPUT_LIMIT
    assert len(execution.stdout_tail) <= TIGHT.tail_chars


def test_filling_the_disk_hits_the_quota(tight_pool: SandboxPool) -> None:
    require_bwrap(tight_pool)
    free_before = shutil.disk_usage("/").free
    code = "import itertools\nfor i in itertools.count():\n    open(f'f{i}', 'wb').write(bytes(4 * 2**20))\n"
    execution = run(tight_pool, code, expect="any")
    again = run(tight_pool, "open('big.bin', 'wb').write(bytes(6 * 2**20))\nprint('room')\n", expect="any")

    assert execution.status is ExecStatus.OUTPUT_LIMIT
    assert "No space left" in execution.detail
    assert abs(shutil.disk_usage("/").free - free_before) < 2**30
    assert again.status is ExecStatus.OK and "room" in again.stdout_tail


def test_oversized_file_hits_the_file_size_limit(tight_pool: SandboxPool) -> None:
    execution = run(
        tight_pool, f"open('big.lp', 'wb').write(bytes({TIGHT.file_size_mib + 1} * 2**20))\n", expect="any"
    )

    assert execution.status is ExecStatus.OUTPUT_LIMIT
    assert execution.error_type == "OSError" and "File too large" in execution.detail


# ----------------------------------------------------------------------------- crashes and exits


def test_segfault_is_recorded_as_killed(tight_pool: SandboxPool) -> None:
    execution = run(tight_pool, "import ctypes\nctypes.string_at(0)\n", expect="any")

    assert execution.status is ExecStatus.KILLED
    assert execution.signal == 11 and "SIGSEGV" in execution.detail


@pytest.mark.parametrize(
    ("ending", "status", "exit_code", "sys_exit"),
    [
        ("import sys\nsys.exit(0)\n", ExecStatus.OK, 0, True),
        ("import sys\nsys.exit(3)\n", ExecStatus.RUNTIME_ERROR, 3, True),
        ("import os\nos._exit(0)\n", ExecStatus.OK, 0, False),
        ("import os\nos._exit(7)\n", ExecStatus.RUNTIME_ERROR, 7, False),
        ("raise RuntimeError('after the solve')\n", ExecStatus.RUNTIME_ERROR, 1, False),
    ],
    ids=["sys.exit(0)", "sys.exit(3)", "os._exit(0)", "os._exit(7)", "raise"],
)
def test_exits_after_a_solve(
    tight_pool: SandboxPool, ending: str, status: ExecStatus, exit_code: int, sys_exit: bool
) -> None:
    execution = run(tight_pool, TEXTBOOK_MILP + ending)

    assert execution.status is status, execution.detail
    assert execution.exit_code == exit_code
    assert execution.called_sys_exit is sys_exit
    assert [solve.objective for solve in execution.solves] == [20.0]


def test_killing_the_parent_and_everyone_else_is_contained(tight_pool: SandboxPool) -> None:
    code = """
import os, signal
for target in (os.getppid(), 1, -1):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError as error:
        print('kill', target, type(error).__name__)
for entry in os.listdir('/proc'):
    if entry.isdigit() and int(entry) != os.getpid():
        try:
            os.kill(int(entry), signal.SIGKILL)
        except OSError:
            pass
print('survived')
"""
    execution = run(tight_pool, code, expect="any")

    assert execution.status is ExecStatus.OK
    assert "survived" in execution.stdout_tail


# ----------------------------------------------------------------------------- forged results


def test_forged_record_through_the_hooks_is_a_mismatch(tight_pool: SandboxPool) -> None:
    code = (
        TEXTBOOK_MILP
        + """
import sys
from trex_runtime.hooks.gurobipy import capture_matrix
recorder = sys.modules["trex_runtime.capture"].RECORDER
recorder.solve("gurobipy", {"status": "optimal", "raw_status": "OPTIMAL", "objective": 999.0,
                            "sense": "max", "num_vars": 2, "num_constraints": 2, "model": capture_matrix(m)})
"""
    )
    execution = run(tight_pool, code)

    assert execution.status is ExecStatus.OK
    real, forged = (verify_solve(solve) for solve in execution.solves)
    assert real.verification == "match" and real.objective == 20.0
    assert forged.objective == 999.0 and forged.verification == "mismatch"
    assert forged.verified_objective == 20.0


def test_model_subclass_reporting_a_fake_objective_is_a_mismatch(tight_pool: SandboxPool) -> None:
    code = TEXTBOOK_MILP.replace(
        'm = gp.Model("textbook")',
        """
class Lying(gp.Model):
    def __getattr__(self, name):
        return 999.0 if name == "ObjVal" else super().__getattr__(name)
    @property
    def ObjVal(self):
        return 999.0
m = Lying("textbook")""",
    )
    execution = run(tight_pool, code)

    (solve,) = (verify_solve(solve) for solve in execution.solves)
    assert solve.objective == 999.0
    assert solve.verification == "mismatch" and solve.verified_objective == 20.0


def test_replacing_optimize_leaves_no_solve(tight_pool: SandboxPool) -> None:
    code = "import gurobipy as gp\ngp.Model.optimize = lambda self: None\n" + TEXTBOOK_MILP
    execution = run(tight_pool, code)

    assert execution.status is ExecStatus.NO_SOLVE
    assert execution.solves == ()


def test_printed_fake_result_is_only_an_unverified_fallback(tight_pool: SandboxPool) -> None:
    code = """
import json, os, sys
for fd in range(3, 64):
    try:
        os.write(fd, b'{"kind": "solve", "library": "gurobipy", "status": "optimal", "objective": 42.0}\\n')
    except OSError:
        pass
print(json.dumps({"status": 2, "optimal_value": 42.0, "status_name": "OPTIMAL"}))
sys.stdout.flush()
os._exit(0)
"""
    execution = run(tight_pool, code)

    assert execution.status is ExecStatus.NO_SOLVE
    assert execution.solves == ()
    assert execution.printed_objective == 42.0


def test_highs_stand_in_is_used_when_asked(tight_pool: SandboxPool) -> None:
    code = "import gurobipy\nprint(gurobipy.__file__)\nm = gurobipy.Model()\nm.optimize()\n"
    execution = tight_pool.run(Job(code=code, gurobi="highs"))

    assert execution.status is ExecStatus.OK, execution.detail
    assert execution.gurobi == "gurobipy_highs stand-in"
    assert str(STAND_IN) in execution.stdout_tail
    assert execution.solves[0].status is SolveStatus.OPTIMAL and execution.solves[0].objective == 42.0
    assert verify_solve(execution.solves[0]).verification == "match"


LOOK_BACK = """
import sys
frame, found = sys._getframe(), []
while frame is not None:
    for name, value in list(frame.f_locals.items()):
        if {secret!r} in repr(value)[:1_000_000]:
            found.append(name)
    frame = frame.f_back
print("FOUND", sorted(set(found)))
"""


def test_a_job_cannot_read_the_previous_job_from_the_worker_s_frames() -> None:
    """Each job is forked from the worker's loop: the previous job's request (its program) and
    reply (its output and records) must be gone from that loop's locals by then."""
    secret = f"answer-{marker()}"
    with SandboxPool(workers=1, highs_package=STAND_IN) as pool:
        first = pool.run(Job(code=f"print({secret!r})", expect="any"))
        second = pool.run(Job(code=LOOK_BACK.format(secret=secret), expect="any"))

    assert first.status is ExecStatus.OK and secret in first.stdout_tail
    assert second.status is ExecStatus.OK, second.stderr_tail
    # The second program's own source holds the secret (its `request`); nothing else may.
    found = eval(second.stdout_tail.split("FOUND", 1)[1])
    assert set(found) <= {"request", "source", "plan"}, found
