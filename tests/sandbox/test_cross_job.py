"""Jobs cannot see or move each other: nothing one job leaves behind (memory, files, counters,
pre-imported modules) reaches the next job of the same worker.

Each test runs a writer job, then a reader job on the same worker (a pool of one), and the reader
looks where the attacks of issue 28 looked: its own heap (inherited from the process it was forked
from), the inode numbers of its fresh ``/tmp``, its pids and ``/proc``, ``sys.modules``. Markers are
built at run time from hex text, so the reader's own source never holds the bytes it looks for.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import require_bwrap

from trex_eval.records import ExecStatus
from trex_eval.sandbox import Job, SandboxLimits, SandboxPool

REPO = Path(__file__).resolve().parents[2]

PULP_WRITER = """
import pulp
SECRET = "{source}"
print("{printed}")
problem = pulp.LpProblem("writer", pulp.LpMaximize)
x = pulp.LpVariable("x", 0, {objective})
problem += x
problem += x <= {objective}
problem.solve(pulp.PULP_CBC_CMD(msg=0))
"""

HEAP_READER = """
import ctypes, json
# Each marker as two halves, never joined: the reader must not hold what it looks for.
wanted = {{name: (bytes.fromhex(text[:8]), bytes.fromhex(text[8:])) for name, text in {wanted!r}.items()}}
found = set()
with open("/proc/self/maps") as maps:
    regions = [line.split() for line in maps]
for fields in regions:
    low, high = (int(part, 16) for part in fields[0].split("-"))
    if fields[1].startswith("rw") and not (len(fields) > 5 and fields[5].startswith("[v")):
        chunk = ctypes.string_at(low, high - low)
        for name, (head, rest) in wanted.items():
            at = chunk.find(head)
            while at >= 0 and name not in found:
                if chunk.startswith(rest, at + len(head)):
                    found.add(name)
                at = chunk.find(head, at + 1)
        del chunk
print("FOUND", json.dumps(sorted(found)))
"""


@pytest.fixture(scope="module")
def one_worker() -> Iterator[SandboxPool]:
    with SandboxPool(workers=1, limits=SandboxLimits(wall_s=60.0, cpu_s=60.0)) as pool:
        yield pool


def _last_json(stdout: str, tag: str) -> object:
    line = next(line for line in reversed(stdout.splitlines()) if line.startswith(tag + " "))
    return json.loads(line[len(tag) + 1 :])


def test_a_job_finds_nothing_of_the_previous_job_in_its_memory(one_worker: SandboxPool) -> None:
    """The attack: a later sample read an earlier sample's program, output and result record out
    of its own heap (freed memory of the worker it was forked from) and copied the objective."""
    token = secrets.token_hex(8)
    markers = {
        "source": f"TREXSRC{token}",
        "printed": f"TREXOUT{token}",
    }
    objective = f"{int(token[:4], 16) + 10_000}.5"
    # the objective as the writer's result record states it
    markers["record"] = f'"objective":{objective}'
    writer = PULP_WRITER.format(source=markers["source"], printed=markers["printed"], objective=objective)
    for _ in range(2):
        done = one_worker.run(Job(code=writer))
        assert done.status is ExecStatus.OK and done.last_solve is not None, done.detail
        assert done.last_solve.objective == float(objective)
    wanted = {name: text.encode().hex() for name, text in markers.items()}
    reader = one_worker.run(Job(code=HEAP_READER.format(wanted=wanted), expect="any"))

    assert reader.status is ExecStatus.OK, (reader.detail, reader.stderr_tail)
    assert _last_json(reader.stdout_tail, "FOUND") == []


INODE_WRITER = """
import os
for index in range({count}):
    open(os.path.join(os.environ["TMPDIR"], f"f{{index}}"), "w").close()
    os.mkdir(f"/dev/shm/d{{index}}")
"""

PROBE = """
import json, os, subprocess
child = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
print("SEEN", json.dumps({
    "program_inode": os.stat("program.py").st_ino,
    "tmp_inode": os.stat("/tmp").st_ino,
    "tmp_entries": sorted(os.listdir("/tmp")),
    "proc_at": os.path.realpath("/proc"),
    "shm_entries": sorted(os.listdir("/dev/shm")),
    "pid": os.getpid(),
    "proc_self": os.readlink("/proc/self"),
    "child_pid": child,
    "processes": sorted(entry for entry in os.listdir("/proc") if entry.isdigit()),
    "machine_counters": [
        path for path in ("/proc/stat", "/proc/loadavg", "/proc/meminfo") if os.path.exists(path)
    ],
    "cwd": os.getcwd(),
}))
"""

FORKER = """
import os
for _ in range({count}):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_counters_do_not_carry_from_one_job_to_the_next(one_worker: SandboxPool) -> None:
    """The attacks: a writer set the private /tmp's inode counter to an answer (creating files
    until the last inode number was it) and the next job decoded it from program.py's inode; the
    PID counter carried over too (the reader's pid was the writer's + 38)."""
    require_bwrap(one_worker)
    seen = []
    for count in (3, 40, 0, 17):
        assert (
            one_worker.run(Job(code=INODE_WRITER.format(count=count), expect="any")).status is ExecStatus.OK
        )
        assert one_worker.run(Job(code=FORKER.format(count=count), expect="any")).status is ExecStatus.OK
        probe = one_worker.run(Job(code=PROBE, expect="any"))
        assert probe.status is ExecStatus.OK, (probe.detail, probe.stderr_tail)
        seen.append(_last_json(probe.stdout_tail, "SEEN"))

    assert all(view == seen[0] for view in seen), seen
    first = seen[0]
    assert isinstance(first, dict)
    # Besides the job's folders and its /proc (which /proc leads to), a fresh /tmp holds only what
    # the worker binds back into every one: the first folder under /tmp of a checkout or
    # interpreter living there (a clone in /tmp).
    kept = {_under_tmp(path) for path in (str(REPO), sys.prefix, sys.base_prefix, sys.executable)} - {None}
    assert first["proc_at"] == "/tmp/.proc"
    assert sorted(set(first["tmp_entries"]) - kept) == [".proc", "job", "tmp"] and first["shm_entries"] == []
    # The job's own PID namespace, numbered from 1, and a /proc that shows only it.
    assert first["pid"] == 1 and first["proc_self"] == "1" and first["processes"] == ["1"]
    assert first["machine_counters"] == []
    assert one_worker.describe()["jobs"]["random_pids"] is True  # type: ignore[index]


def _under_tmp(path: str) -> str | None:
    parts = Path(os.path.realpath(path)).parts
    return parts[2] if len(parts) > 2 and parts[1] == "tmp" else None


FAKED = ("cvxpy", "pyomo.environ", "scipy.optimize")
"""Warmable modules that nothing the other tests warm imports (PuLP imports coptpy, pyscipopt,
highspy and gurobipy itself)."""
FAKER = f"""
import sys, types
for name in {FAKED!r}:
    sys.modules[name] = types.ModuleType(name)
"""


def test_what_a_job_does_to_its_modules_does_not_decide_what_later_jobs_are_forked_with(
    one_worker: SandboxPool,
) -> None:
    """The attack: faked ``sys.modules`` entries made the worker pre-import coptpy and cvxpy for
    every later fork (it warmed what jobs said they had imported), and later jobs could see it."""
    for _ in range(4):
        assert one_worker.run(Job(code=FAKER, expect="any")).status is ExecStatus.OK
    check = f"import sys\nprint('PRELOADED', sorted(n for n in {FAKED!r} if n in sys.modules))\n"
    seen = one_worker.run(Job(code=check, expect="any"))

    assert seen.status is ExecStatus.OK and "PRELOADED []" in seen.stdout_tail, seen.stdout_tail


SOCKETS = """
import asyncio, json, socket
refused = {}
for name, family, kind in (
    ("inet", socket.AF_INET, socket.SOCK_STREAM),
    ("inet6", socket.AF_INET6, socket.SOCK_DGRAM),
    ("unix", socket.AF_UNIX, socket.SOCK_STREAM),
    ("netlink", socket.AF_NETLINK, socket.SOCK_RAW),
    ("packet", socket.AF_PACKET, socket.SOCK_RAW),
    ("vsock", 40, socket.SOCK_STREAM),
):
    try:
        socket.socket(family, kind).close()
        refused[name] = None
    except OSError as error:
        refused[name] = error.errno
left, right = socket.socketpair()
left.sendall(b"x")
asyncio.run(asyncio.sleep(0))
print("SOCKETS", json.dumps({"refused": refused, "pair": right.recv(1).decode()}))
"""


def test_a_job_gets_no_socket_of_any_family(one_worker: SandboxPool) -> None:
    """The attack: ``socket(AF_VSOCK, ...)`` succeeded (no network namespace covers it); loopback
    sockets share the worker's network namespace with later jobs."""
    done = one_worker.run(Job(code=SOCKETS, expect="any"))

    assert done.status is ExecStatus.OK, (done.detail, done.stderr_tail)
    seen = _last_json(done.stdout_tail, "SOCKETS")
    assert isinstance(seen, dict)
    assert all(code == 1 for code in seen["refused"].values()), seen  # EPERM, from the filter
    assert seen["pair"] == "x"  # a connected stream pair (asyncio, multiprocessing) still works


KERNEL_WIDE = """
import ctypes, fcntl, json, os, socket
refused = {}
def attempt(name, call):
    try:
        call()
        refused[name] = None
    except OSError as error:
        refused[name] = error.errno
with open("/etc/passwd", "rb") as shared:
    attempt("flock", lambda: fcntl.flock(shared, fcntl.LOCK_SH | fcntl.LOCK_NB))
    attempt("fcntl_lock", lambda: fcntl.lockf(shared, fcntl.LOCK_SH | fcntl.LOCK_NB))
left, right = socket.socketpair()
attempt("so_cookie", lambda: left.getsockopt(socket.SOL_SOCKET, 57, 8))
attempt("pidfd_open", lambda: os.close(os.pidfd_open(os.getpid())))
attempt("sched_setaffinity", lambda: os.sched_setaffinity(0, {0}))
libc = ctypes.CDLL(None, use_errno=True)
refused["inotify"] = ctypes.get_errno() if libc.inotify_init1(0) < 0 else None
print("KERNEL", json.dumps(refused))
"""


def test_locks_and_counters_shared_by_every_job_are_out_of_reach(one_worker: SandboxPool) -> None:
    """The attacks: ``flock`` on a file of the view every worker shares carried 2000 bits in
    0.6 s between concurrent jobs; ``SO_COOKIE`` and pidfd inode numbers are counters of the whole
    kernel that carried 16 and 10 bits from one job to the next; pinning two processes to one
    CPU made a job look starved by others and lengthened its wall-clock limit."""
    done = one_worker.run(Job(code=KERNEL_WIDE, expect="any"))

    assert done.status is ExecStatus.OK, (done.detail, done.stderr_tail)
    seen = _last_json(done.stdout_tail, "KERNEL")
    assert seen == {name: 1 for name in seen} and len(seen) == 6, seen  # EPERM, from the filter


def test_each_job_draws_its_own_random_sequence(one_worker: SandboxPool) -> None:
    """Jobs are forked without the interpreter's after-fork hooks (``native.lean_fork``), one of
    which re-seeds ``random``: forked from one zygote, every job would otherwise draw the same
    numbers, unlike separate ``python program.py`` runs."""
    # PuLP imports random: once the zygote warms PuLP, every job inherits its generator.
    code = "import pulp, random, sys\nprint('DRAWN', random.getrandbits(64))\n"
    check = "import sys\nprint('WARM', 'random' in sys.modules)\n"
    # Two PuLP programs make the zygote warm PuLP before it forks the next job.
    for _ in range(2):
        one_worker.run(Job(code=code, expect="any"))
    assert "WARM True" in one_worker.run(Job(code=check, expect="any")).stdout_tail
    drawn = [one_worker.run(Job(code=code, expect="any")).stdout_tail for _ in range(3)]

    assert all("DRAWN" in text for text in drawn), drawn
    assert len(set(drawn)) == 3, drawn


HOLDINGS = """
import json, os, resource
fds = {}
for name in os.listdir("/proc/self/fd"):
    try:
        fds[name] = os.readlink(f"/proc/self/fd/{name}")
    except OSError:
        pass  # the directory listing's own descriptor, closed by now
with open("/proc/self/status") as status:
    flags = dict(line.split(":", 1) for line in status if line.startswith(("NoNewPrivs", "Seccomp:")))
print("HELD", json.dumps({
    "fds": sorted(fds.values()),
    "numbers": sorted(int(name) for name in fds),
    "flags": {key: value.strip() for key, value in flags.items()},
    "core": resource.getrlimit(resource.RLIMIT_CORE),
    "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
}))
"""


def test_a_job_holds_its_own_output_channel_and_limits_and_nothing_of_the_zygote(
    one_worker: SandboxPool,
) -> None:
    """The zygote makes a job's output files and result channel before it forks the job, and
    sets the limits every job shares once, in itself: a job must still start with nothing but
    ``/dev/null``, its two outputs, its result channel and its listing, no descriptor of the
    zygote's (its socket, its ``statm``, a PID namespace) nor of an earlier job, no core files,
    at most 1024 descriptors, no privileges to gain and the seccomp filter on."""
    for _ in range(3):
        done = one_worker.run(Job(code=HOLDINGS, expect="any"))
        assert done.status is ExecStatus.OK, (done.detail, done.stderr_tail)
        held = _last_json(done.stdout_tail, "HELD")
        assert isinstance(held, dict)

        fds = held["fds"]
        assert fds[0] == "/dev/null" and len(fds) == 4, fds
        assert sorted(target.split(" ")[0] for target in fds[1:]) == [
            "/memfd:stderr",
            "/memfd:stdout",
            "/memfd:trex-result",
        ], fds
        assert held["numbers"][:3] == [0, 1, 2], held
        assert held["flags"] == {"NoNewPrivs": "1", "Seccomp": "2"}, held
        assert held["core"] == [0, 0], held
        assert held["nofile"][0] <= 1024 and held["nofile"][0] == held["nofile"][1], held
