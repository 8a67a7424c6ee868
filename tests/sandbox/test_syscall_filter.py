"""The jobs' seccomp filter (issue 13: memory outside the limit, host unix sockets).

The filter's program is checked instruction by instruction with a small classic-BPF interpreter,
then its effect inside real sandboxed jobs at every isolation level.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import STAND_IN

from trex_eval.records import ExecStatus, SandboxLimits
from trex_eval.sandbox import Job, SandboxPool
from trex_eval.sandbox.runtime import syscalls

ESCAPES = (
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "open_tree",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "add_key",
    "request_key",
    "keyctl",
    "open_by_handle_at",
    "memfd_secret",
    "io_uring_enter",
    "kexec_load",
    "init_module",
    "iopl",
)
"""Calls a job could use to leave its limits or reach other processes (each refused)."""

ALLOW = 0x7FFF0000
EPERM = 0x00050000 | errno.EPERM
X86_64, AARCH64 = 0xC000003E, 0xC00000B7


def _run_filter(machine: str, *, arch: int, nr: int, args: tuple[int, ...] = ()) -> int:
    """What the filter returns for one system call (a minimal classic-BPF interpreter)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    program = syscalls.program(machine)
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        pc += 1
        if code == 0x20:  # ld [k]
            accumulator = struct.unpack_from("=I", data, k)[0]
        elif code == 0x54:  # and #k
            accumulator &= k
        elif code == 0x15:  # jeq #k
            pc += jt if accumulator == k else jf
        elif code == 0x35:  # jge #k
            pc += jt if accumulator >= k else jf
        elif code == 0x45:  # jset #k
            pc += jt if accumulator & k else jf
        elif code == 0x06:  # ret #k
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


@pytest.mark.parametrize(("machine", "arch"), [("x86_64", X86_64), ("aarch64", AARCH64)])
def test_the_filter_refuses_exactly_what_it_documents(machine: str, arch: int) -> None:
    column = 0 if machine == "x86_64" else 1
    number = {name: n for name, numbers in syscalls._NUMBERS.items() if (n := numbers[column]) is not None}
    verdict = lambda nr, *args: _run_filter(machine, arch=arch, nr=nr, args=args)  # noqa: E731

    for name in ("memfd_create", "shmget", "msgget", "semget", "mq_open", "io_uring_setup", *ESCAPES):
        if name in number:
            assert verdict(number[name]) == EPERM, name
    assert verdict(number["clone3"]) == 0x00050000 | errno.ENOSYS
    thread = 0x3D0F00  # CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | ...
    assert verdict(number["clone"], 17) == ALLOW  # fork: SIGCHLD
    assert verdict(number["clone"], thread) == ALLOW
    for flag in (0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000):
        assert verdict(number["clone"], flag | 17) == EPERM, hex(flag)
    assert verdict(number["socket"], socket.AF_UNIX, socket.SOCK_STREAM) == EPERM
    assert verdict(number["socket"], socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) == EPERM
    # Every family: no job needs a socket, and the worker's network namespace outlives a job.
    for family, kind in (
        (socket.AF_INET, socket.SOCK_STREAM),
        (socket.AF_INET6, socket.SOCK_DGRAM),
        (socket.AF_NETLINK, socket.SOCK_RAW),
        (socket.AF_PACKET, socket.SOCK_RAW),
        (40, socket.SOCK_STREAM),  # AF_VSOCK: the hypervisor's host, out of any namespace's reach
        (38, socket.SOCK_SEQPACKET),  # AF_ALG
    ):
        assert verdict(number["socket"], family, kind) == EPERM, family
    # The page cache: no reading it back, no pushing chosen pages out; allocators' advice is fine.
    for name in ("mincore", "cachestat", "fadvise64"):
        assert verdict(number[name]) == EPERM, name
    for advice, expected in ((0, ALLOW), (4, ALLOW), (8, ALLOW), (14, ALLOW), (20, EPERM), (21, EPERM)):
        assert verdict(number["madvise"], 0, 4096, advice) == expected, advice
    for name in ("preadv2", "pwritev2"):
        assert verdict(number[name], 3, 0, 1, 0, 0, 0) == ALLOW, name
        assert verdict(number[name], 3, 0, 1, 0, 0, 0x8) == EPERM, name  # RWF_NOWAIT
        assert verdict(number[name], 3, 0, 1, 0, 0, 0x10) == ALLOW, name  # RWF_APPEND
    # What other jobs can see: locks and notifications on shared files, kernel-wide counters.
    for name in ("flock", "pidfd_open", "sched_setaffinity", "setsid", "inotify_init1", "fanotify_init"):
        assert verdict(number[name]) == EPERM, name
    for cmd in (5, 6, 7, 36, 37, 38, 1026):  # F_GETLK, F_SETLK(W), the OFD forms, F_NOTIFY
        assert verdict(number["fcntl"], 3, cmd) == EPERM, cmd
    for cmd in (0, 1, 2, 3, 4, 1030):  # F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC
        assert verdict(number["fcntl"], 3, cmd) == ALLOW, cmd
    assert verdict(number["getsockopt"], 3, socket.SOL_SOCKET, 57) == EPERM  # SO_COOKIE
    assert verdict(number["getsockopt"], 3, socket.SOL_SOCKET, socket.SO_TYPE) == ALLOW
    assert verdict(number["clone"], 0x1000 | 17) == EPERM  # CLONE_PIDFD
    stream = socket.SOCK_STREAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK
    assert verdict(number["socketpair"], socket.AF_UNIX, stream) == ALLOW
    assert verdict(number["socketpair"], socket.AF_UNIX, socket.SOCK_DGRAM) == EPERM
    assert verdict(number["socketpair"], socket.AF_UNIX, socket.SOCK_SEQPACKET) == EPERM
    for ordinary in (0, 1, 2, 3, 9, 57, 59, 60, 231):  # read ... exit_group: never refused
        if ordinary not in number.values():
            assert verdict(ordinary) == ALLOW, ordinary
    assert _run_filter(machine, arch=0x40000003, nr=3) == EPERM  # i386 (AUDIT_ARCH_I386) numbers
    if machine == "x86_64":
        assert _run_filter(machine, arch=arch, nr=0x40000003) == EPERM  # x32 (bit 30 set)


@pytest.mark.parametrize(("machine", "arch"), [("x86_64", X86_64), ("aarch64", AARCH64)])
def test_every_other_system_call_number_is_allowed(machine: str, arch: int) -> None:
    """The filter's binary search: each number up to 600 gets exactly its documented verdict."""
    column = 0 if machine == "x86_64" else 1
    refused = {n for name in syscalls._REFUSED if (n := syscalls._NUMBERS[name][column]) is not None}
    checked = {syscalls._NUMBERS[name][column] for name in syscalls._CHECKED}
    verdicts = {nr: _run_filter(machine, arch=arch, nr=nr) for nr in range(600)}

    assert {nr for nr, verdict in verdicts.items() if verdict == EPERM} == refused
    assert {nr for nr, verdict in verdicts.items() if verdict not in (EPERM, ALLOW)} == {
        syscalls._NUMBERS["clone3"][column]
    }
    assert all(verdicts[nr] == ALLOW for nr in checked - {syscalls._NUMBERS["clone3"][column]})
    assert len(refused) >= 40


def test_the_encoded_program_is_the_kernel_layout() -> None:
    program = syscalls.program("x86_64")
    encoded = syscalls.encode(program)

    assert len(encoded) == 8 * len(program)
    assert struct.unpack_from("=HBBI", encoded, 0) == program[0]


PROBE = """
import ctypes, errno, json, mmap, os, socket
libc = ctypes.CDLL(None, use_errno=True)
found = dict()
def attempt(name, call):
    try:
        call()
        found[name] = "allowed"
    except OSError as error:
        found[name] = errno.errorcode.get(error.errno, str(error.errno))
def raw(number, *args):
    def call():
        if libc.syscall(number, *args) < 0:
            raise OSError(ctypes.get_errno(), "refused")
    return call
attempt("memfd", lambda: os.memfd_create("hold"))
attempt("shmget", raw(29, 0, 1 << 20, 0o1600))   # IPC_PRIVATE, IPC_CREAT | 0600
attempt("msgget", raw(68, 0, 0o1600))
attempt("semget", raw(64, 0, 4, 0o1600))         # IPC_PRIVATE, 4 semaphores, IPC_CREAT | 0600
attempt("mq_open", raw(240, b"/trex-leak", 0o100 | 0o2, 0o600, None))  # O_CREAT | O_RDWR
attempt("io_uring", raw(425, 8, ctypes.create_string_buffer(120)))
attempt("unix_stream", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
attempt("unix_dgram", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
attempt("pair_dgram", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
left, right = socket.socketpair()
left.sendall(b"ping")
found["pair_stream"] = right.recv(4).decode()
connected = []
for path in {paths!r}:
    try:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        connected.append(path)
    except OSError:
        pass
found["connected"] = connected
found["visible"] = [path for path in {paths!r} if os.path.exists(path)]
shm = []
try:
    for index in range(256 if {flood} else 0):
        with open(f"/dev/shm/hold{{index}}", "wb") as handle:
            handle.write(b"x" * (4 << 20))
        shm.append(index)
except OSError as error:
    found["shm_stopped"] = errno.errorcode.get(error.errno, str(error.errno))
found["shm_mib"] = 4 * len(shm)
for index in shm:
    os.unlink(f"/dev/shm/hold{{index}}")
print("OUTCOME " + json.dumps(found))
"""


@pytest.fixture
def socket_in_a_bound_folder() -> Iterator[str]:
    """A world-writable host socket created inside a folder the sandbox binds (the stand-in
    gurobipy layer), after nothing: the view is live, so it appears inside the jobs' view."""
    path = STAND_IN / "host.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o777)
    listener.listen(4)
    listener.setblocking(False)
    yield str(path)
    listener.close()
    path.unlink()


@pytest.mark.parametrize("level", ["bwrap", "unshare", "rlimits"])
def test_jobs_cannot_hold_memory_outside_the_limit_nor_reach_host_sockets(
    level: str, socket_in_a_bound_folder: str
) -> None:
    limits = SandboxLimits(wall_s=60.0)
    with SandboxPool(limits=limits, workers=1, isolation=level, highs_package=STAND_IN) as pool:  # type: ignore[arg-type]
        started_socket = Path(STAND_IN / "late.sock")
        late = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        late.bind(str(started_socket))  # created after the workers started
        os.chmod(started_socket, 0o777)
        late.listen(4)
        try:
            paths = [socket_in_a_bound_folder, str(started_socket)]
            execution = pool.run(Job(code=PROBE.format(paths=paths, flood=level == "bwrap"), expect="any"))
        finally:
            late.close()
            started_socket.unlink()
        isolation = pool.isolation_report

    assert execution.status is ExecStatus.OK, (execution.detail, execution.stderr_tail)
    line = [item for item in execution.stdout_tail.splitlines() if item.startswith("OUTCOME ")][-1]
    found = json.loads(line[len("OUTCOME ") :])
    names = ("memfd", "shmget", "msgget", "semget", "mq_open", "io_uring", "unix_stream", "unix_dgram")
    for name in (*names, "pair_dgram"):
        assert found[name] == "EPERM", (name, found)
    assert found["pair_stream"] == "ping"
    assert found["connected"] == []
    assert isolation.syscall_filter
    if level == "bwrap":
        assert found["visible"] == paths  # the sockets are there; the filter alone stops them
        assert found["shm_stopped"] == "ENOSPC" and found["shm_mib"] <= 64


ATTACKS = """
import ctypes, errno, json, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
N = NUMBERS
found = {}
def raw(name, *args):
    result = libc.syscall(ctypes.c_long(N[name]), *[ctypes.c_long(arg) for arg in args])
    if result == 0 and name == "clone":
        os._exit(0)  # the clone went through: this is its child
    found[name] = "allowed" if result >= 0 else errno.errorcode.get(ctypes.get_errno())
    return result
# Namespaces: a user namespace would make the job root there, free to mount a tmpfs of any size.
raw("unshare", 0x10000000 | 0x20000)  # CLONE_NEWUSER | CLONE_NEWNS
raw("clone", 0x10000000 | 17, 0, 0, 0, 0)
raw("setns", 0, 0)
raw("mount", 0, 0, 0, 0, 0)
mounted = libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, b"size=1g")
found["mount_tmpfs"] = "allowed" if mounted == 0 else errno.errorcode.get(ctypes.get_errno())
raw("bpf", 0, 0, 0)
raw("perf_event_open", 0, 0, -1, -1, 0)
raw("userfaultfd", 0)
raw("add_key", 0, 0, 0, 0, -4)
raw("keyctl", 0, -4, 0)
raw("open_by_handle_at", -100, 0, 0)
raw("io_uring_enter", 0, 0, 0, 0, 0, 0)
child = os.fork()
if child == 0:
    import time
    time.sleep(30)
    os._exit(0)
raw("ptrace", 16, child, 0, 0)  # PTRACE_ATTACH to its own child
buffer = ctypes.create_string_buffer(8)
local = (ctypes.c_void_p * 2)(ctypes.addressof(buffer), 8)
raw("process_vm_readv", child, ctypes.addressof(local), 1, ctypes.addressof(local), 1, 0)
os.kill(child, 9)
os.waitpid(child, 0)
# What programs do must still work: threads, fork, subprocesses (clone3 falls back to clone).
done = []
worker = threading.Thread(target=lambda: done.append(1))
worker.start(); worker.join()
found["thread"] = done == [1]
found["subprocess"] = subprocess.run(["/bin/echo", "hi"], capture_output=True, text=True).stdout.strip()
print("OUTCOME " + json.dumps(found))
"""


@pytest.mark.parametrize("level", ["bwrap", "unshare", "rlimits"])
def test_jobs_cannot_create_namespaces_mount_or_reach_kernel_and_process_internals(level: str) -> None:
    column = 0 if syscalls.MACHINE == "x86_64" else 1
    numbers = {name: n for name, pair in syscalls._NUMBERS.items() if (n := pair[column]) is not None}
    code = ATTACKS.replace("NUMBERS", repr(numbers))
    with SandboxPool(
        limits=SandboxLimits(wall_s=60.0), workers=1, isolation=level, highs_package=STAND_IN
    ) as pool:  # type: ignore[arg-type]
        execution = pool.run(Job(code=code, expect="any"))

    assert execution.status is ExecStatus.OK, (execution.detail, execution.stderr_tail)
    line = [item for item in execution.stdout_tail.splitlines() if item.startswith("OUTCOME ")][-1]
    found = json.loads(line[len("OUTCOME ") :])
    refused = ("unshare", "clone", "setns", "mount", "mount_tmpfs", "bpf", "perf_event_open")
    refused += ("userfaultfd", "add_key", "keyctl", "open_by_handle_at", "io_uring_enter", "ptrace")
    for name in (*refused, "process_vm_readv"):
        assert found[name] == "EPERM", (name, found)
    assert found["thread"] is True and found["subprocess"] == "hi"
