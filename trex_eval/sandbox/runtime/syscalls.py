"""A seccomp filter that refuses the few system calls a job could use to escape its limits.

Installed by each job process on itself just before the program runs (after ``no_new_privs``, so
no privilege is needed) and inherited by everything the program starts; it cannot be removed.
Refused calls fail with ``EPERM``; nothing else changes. What is refused and why:

* ``memfd_create``: anonymous files hold memory that ``RLIMIT_AS`` does not count (48 memfds held
  3 GiB under a 2 GiB limit), and they outlive any mapping of them.
* ``shmget``, ``msgget``: System V segments and queues outlive the process that made them (they
  belong to the worker's IPC namespace) and ``RLIMIT_AS`` counts them only while attached.
* ``socket(AF_UNIX, ...)`` and ``socketpair(AF_UNIX, <not SOCK_STREAM>)``: a network namespace
  does not cover filesystem sockets, and ``connect``/``sendto`` work on a read-only mount, so a
  socket a host process creates in any bound directory (now or later) would be reachable. A
  stream ``socketpair`` is allowed: its ends are connected to each other only.
* ``io_uring_setup``: io_uring performs socket and file operations that seccomp never sees.
* every system call of another ABI (i386 ``int 0x80``, x32): their numbers differ, so a filter
  written for the native numbers would not apply to them.

The filter is written for x86_64 and aarch64; elsewhere :data:`SUPPORTED` is False and jobs run
without it (the isolation report says so).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

from . import native

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000
_NUMBERS = {
    # name: (x86_64, aarch64)
    "memfd_create": (319, 279),
    "shmget": (29, 194),
    "msgget": (68, 186),
    "io_uring_setup": (425, 425),
    "socket": (41, 198),
    "socketpair": (53, 199),
}
_REFUSED = ("memfd_create", "shmget", "msgget", "io_uring_setup")
_AF_UNIX = 1
_SOCK_STREAM = 1
_SOCK_TYPE_MASK = 0xF  # SOCK_NONBLOCK / SOCK_CLOEXEC are flags above the type

MACHINE = platform.machine()
SUPPORTED = MACHINE in _AUDIT_ARCH
"""Whether this machine's system call numbers are known to the filter."""

# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_AND_K = 0x54
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
# offsets in struct seccomp_data (little-endian: the low word of an argument comes first)
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24


class _Program(ctypes.Structure):
    """``struct sock_fprog``: the instruction count and the address of the encoded array."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def program(machine: str = MACHINE) -> list[tuple[int, int, int, int]]:
    """The filter as ``(code, jt, jf, k)`` instructions for ``machine`` (KeyError if unknown)."""
    column = 0 if machine == "x86_64" else 1
    number = {name: numbers[column] for name, numbers in _NUMBERS.items()}
    deny = (_RET_K, 0, 0, _RET_ERRNO | errno.EPERM)
    allow = (_RET_K, 0, 0, _RET_ALLOW)
    code: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, _AUDIT_ARCH[machine]),
        deny,
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if machine == "x86_64":
        code += [(_JGE_K, 0, 1, _X32_BIT), deny]
    for name in _REFUSED:
        code += [(_JEQ_K, 0, 1, number[name]), deny]
    # socket(2): refuse AF_UNIX.
    code += [
        (_JEQ_K, 0, 3, number["socket"]),
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JEQ_K, 0, 1, _AF_UNIX),
        deny,
        # socketpair(2): AF_UNIX only as a stream pair.
        (_JEQ_K, 0, 6, number["socketpair"]),
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JEQ_K, 0, 4, _AF_UNIX),
        (_LD_W_ABS, 0, 0, _ARG1),
        (_AND_K, 0, 0, _SOCK_TYPE_MASK),
        (_JEQ_K, 1, 0, _SOCK_STREAM),
        deny,
        allow,
    ]
    return code


def encode(instructions: list[tuple[int, int, int, int]]) -> bytes:
    """The instructions as the kernel's ``struct sock_filter`` array."""
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in instructions)


# Built once when the worker imports the runtime, so a job's fork only makes the prctl call.
_ENCODED = encode(program()) if SUPPORTED else b""
_BUFFER = ctypes.create_string_buffer(_ENCODED, len(_ENCODED))


def install() -> None:
    """Install the filter on the calling thread (and everything it starts from now on).

    Requires ``PR_SET_NO_NEW_PRIVS`` already set (or CAP_SYS_ADMIN).

    Raises:
        OSError: the machine is not supported or the kernel refused the filter.
    """
    if not _ENCODED:
        raise OSError(errno.ENOSYS, f"no seccomp filter for {MACHINE}")
    prog = _Program(len(_ENCODED) // 8, ctypes.addressof(_BUFFER))
    native.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog))
