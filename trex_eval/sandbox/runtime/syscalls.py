"""A seccomp filter that refuses the few system calls a job could use to escape its limits or reach
the network, the host or a later job.

Installed by each job process on itself just before the program runs (after ``no_new_privs``, so
no privilege is needed) and inherited by everything the program starts; it cannot be removed.
Refused calls fail with ``EPERM`` (``clone3`` with ``ENOSYS``); nothing else changes. What is refused and why:

* ``memfd_create``: anonymous files hold memory that ``RLIMIT_AS`` does not count (48 memfds held
  3 GiB under a 2 GiB limit), and they outlive any mapping of them.
* ``shmget``, ``msgget``: System V segments and queues outlive the process that made them (they
  belong to the worker's IPC namespace) and ``RLIMIT_AS`` counts them only while attached.
* ``semget``, ``mq_open``: System V semaphore sets and POSIX message queues also live in the
  worker's IPC namespace, so a job could leave values in them for a later job to read (a
  channel between samples). Python's own semaphores (``sem_open``) are files in the job's
  private ``/dev/shm`` and still work.
* ``socket(2)`` of every family, and ``socketpair(2)`` but for ``AF_UNIX`` streams: no job needs
  a socket (no solver the hooks cover opens one; a licence served over the network is not
  reachable from the sandbox anyway). ``AF_UNIX``: a network namespace does not cover filesystem
  sockets, and ``connect``/``sendto`` work on a read-only mount, so a socket a host process creates
  in any bound directory would be reachable. ``AF_INET``/``AF_INET6``: the worker's network
  namespace, loopback only, outlives a job, and its counters (``/proc/net/dev``, ``snmp``), ports
  in ``TIME_WAIT`` and bound ports would carry values from one job to the next. ``AF_VSOCK``
  reaches the hypervisor's host, which no network namespace covers; ``AF_NETLINK``,
  ``AF_PACKET``, ``AF_ALG`` and the rest are kernel interfaces no program needs. A stream
  ``socketpair`` is allowed (``asyncio`` and ``multiprocessing`` use it): its ends are
  connected to each other only.
* ``io_uring_setup`` (and ``io_uring_enter``/``io_uring_register``): io_uring performs socket
  and file operations that seccomp never sees.
* new namespaces: ``unshare``, ``setns``, and ``clone`` with any ``CLONE_NEW*`` flag. In a user
  namespace of its own a job is root there and may mount a tmpfs of any size (memory no limit
  counts) or hide the view's masks; nothing a program needs creates namespaces. ``clone3``
  fails with ``ENOSYS`` instead (its flags are in memory, where seccomp cannot look), so the C
  library falls back to ``clone``, which is checked.
* mounting (``mount``, ``umount2``, ``pivot_root``, ``chroot``, the new mount API), should a
  job ever hold a capability.
* reaching other processes' memory or the kernel's: ``ptrace``, ``process_vm_readv``/``writev``,
  ``kcmp``, ``pidfd_getfd``, ``bpf``, ``perf_event_open``, ``userfaultfd``, the key
  retention service (``add_key``, ``request_key``, ``keyctl``: kernel memory that outlives the
  job, shared by every process of a uid), ``open_by_handle_at``/``name_to_handle_at`` (file
  handles bypass the mount view), ``memfd_secret`` (memory as ``memfd_create``), module, kexec,
  swap, reboot, accounting, quota and port-I/O calls.
* the page cache, which is the machine's and outlives a job: a program could evict chosen pages
  of a library file (``fadvise64``; ``madvise`` with ``MADV_COLD``/``MADV_PAGEOUT``) for a later
  job to read back as bits (``mincore``, ``cachestat``, ``preadv2(RWF_NOWAIT)``), thousands of bits
  per pair of jobs. Other ``madvise`` advice and plain ``preadv2`` stay allowed (allocators use them).
* what another job, now or later, can see: locks on the files of the view, which every worker
  shares (``flock``; ``fcntl`` ``F_SETLK``/``F_GETLK`` and the OFD forms: 2000 bits in 0.6 s
  between concurrent jobs), notifications of their use (``inotify``, ``fanotify``,
  ``fcntl(F_NOTIFY)``), and counters of the whole kernel (``SO_COOKIE``; the inode numbers of
  pidfds, ``pidfd_open`` and ``clone(CLONE_PIDFD)``; the autogroup counter, which every
  ``setsid`` moves and ``/proc/<pid>/autogroup`` shows a later job: 12 bits a pair of jobs measured,
  so a job starts in its own session and its processes cannot start another); and pinning threads to CPUs
  (``sched_setaffinity``), with which a job made itself look starved of CPU by its neighbours.
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
_NUMBERS: dict[str, tuple[int | None, int | None]] = {
    # name: (x86_64, aarch64); None where the call does not exist
    "memfd_create": (319, 279),
    "memfd_secret": (447, 447),
    "shmget": (29, 194),
    "msgget": (68, 186),
    "semget": (64, 190),
    "mq_open": (240, 180),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "pidfd_getfd": (438, 438),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "iopl": (172, None),
    "ioperm": (173, None),
    "clone": (56, 220),
    "clone3": (435, 435),
    "socket": (41, 198),
    "socketpair": (53, 199),
    "mincore": (27, 232),
    "cachestat": (451, 451),
    "fadvise64": (221, 223),
    "madvise": (28, 233),
    "preadv2": (327, 286),
    "pwritev2": (328, 287),
    "pidfd_open": (434, 434),
    "sched_setaffinity": (203, 122),
    "setsid": (112, 157),
    "flock": (73, 32),
    "fcntl": (72, 25),
    "inotify_init": (253, None),
    "inotify_init1": (294, 26),
    "fanotify_init": (300, 262),
    "getsockopt": (55, 209),
}
_CHECKED = ("clone", "clone3", "socketpair", "madvise", "preadv2", "pwritev2", "fcntl", "getsockopt")
_REFUSED = tuple(name for name in _NUMBERS if name not in _CHECKED)
"""Refused whatever their arguments (the others are checked below)."""
_CLONE_NEW = 0x7E020000
"""``CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
CLONE_NEWNET`` (``CLONE_NEWTIME`` exists for ``clone3`` and ``unshare`` only)."""
_CLONE_PIDFD = 0x1000
_FCNTL_LOCKS = (5, 6, 7, 36, 37, 38, 1026)
"""``F_GETLK``, ``F_SETLK``, ``F_SETLKW``, ``F_OFD_GETLK``, ``F_OFD_SETLK``, ``F_OFD_SETLKW``,
``F_NOTIFY``."""
_SOL_SOCKET, _SO_COOKIE = 1, 57
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
_JSET_K = 0x45
_AND_K = 0x54
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
# offsets in struct seccomp_data (little-endian: the low word of an argument comes first)
_NR, _ARCH, _ARG0, _ARG1, _ARG2, _ARG5 = 0, 4, 16, 24, 32, 56
_MADV_COLD, _MADV_PAGEOUT = 20, 21
_RWF_NOWAIT = 0x8


class _Program(ctypes.Structure):
    """``struct sock_fprog``: the instruction count and the address of the encoded array."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def program(machine: str = MACHINE) -> list[tuple[int, int, int, int]]:
    """The filter as ``(code, jt, jf, k)`` instructions for ``machine`` (KeyError if unknown)."""
    column = 0 if machine == "x86_64" else 1
    number = {name: found for name, numbers in _NUMBERS.items() if (found := numbers[column]) is not None}
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
    blocks = {number[name]: [deny] for name in _REFUSED if name in number}
    # clone3(2): ENOSYS, so that the C library uses clone(2), whose flags seccomp can see.
    blocks[number["clone3"]] = [(_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS)]
    # clone(2): refuse every CLONE_NEW* flag (the flags are its first argument on both).
    blocks[number["clone"]] = [
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JSET_K, 0, 1, _CLONE_NEW | _CLONE_PIDFD),
        deny,
        allow,
    ]
    # fcntl(2): all commands but file locks and directory notifications.
    blocks[number["fcntl"]] = [
        (_LD_W_ABS, 0, 0, _ARG1),
        *[(_JEQ_K, len(_FCNTL_LOCKS) - index, 0, cmd) for index, cmd in enumerate(_FCNTL_LOCKS)],
        allow,
        deny,
    ]
    # getsockopt(2): all options but SO_COOKIE (a counter of the whole kernel).
    blocks[number["getsockopt"]] = [
        (_LD_W_ABS, 0, 0, _ARG1),
        (_JEQ_K, 0, 3, _SOL_SOCKET),
        (_LD_W_ABS, 0, 0, _ARG2),
        (_JEQ_K, 0, 1, _SO_COOKIE),
        deny,
        allow,
    ]
    # socketpair(2): AF_UNIX only as a stream pair.
    blocks[number["socketpair"]] = [
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JEQ_K, 0, 4, _AF_UNIX),
        (_LD_W_ABS, 0, 0, _ARG1),
        (_AND_K, 0, 0, _SOCK_TYPE_MASK),
        (_JEQ_K, 1, 0, _SOCK_STREAM),
        deny,
        allow,
    ]
    # madvise(2): all advice but pushing pages out of memory (which shows in the page cache).
    blocks[number["madvise"]] = [
        (_LD_W_ABS, 0, 0, _ARG2),
        (_JEQ_K, 1, 0, _MADV_COLD),
        (_JEQ_K, 0, 1, _MADV_PAGEOUT),
        deny,
        allow,
    ]
    # preadv2/pwritev2(2): RWF_NOWAIT fails where the data is not cached: a residency oracle.
    for name in ("preadv2", "pwritev2"):
        blocks[number[name]] = [(_LD_W_ABS, 0, 0, _ARG5), (_JSET_K, 0, 1, _RWF_NOWAIT), deny, allow]
    code += _search(sorted(blocks), blocks, allow)
    return code


def _search(
    numbers: list[int],
    blocks: dict[int, list[tuple[int, int, int, int]]],
    allow: tuple[int, int, int, int],
) -> list[tuple[int, int, int, int]]:
    """A binary search over the sorted system call ``numbers`` (loaded in the accumulator):
    each one runs its block (every block ends in a return), every other number is allowed.
    Every system call of a job runs the filter: a search costs a handful of comparisons where
    a linear scan costs one per refused call (~60 ns per system call, measured)."""
    if len(numbers) <= 3:
        code: list[tuple[int, int, int, int]] = []
        for value in numbers:
            code += [(_JEQ_K, 0, len(blocks[value]), value), *blocks[value]]
        return [*code, allow]
    middle = len(numbers) // 2
    upper = _search(numbers[middle:], blocks, allow)
    lower = _search(numbers[:middle], blocks, allow)
    if len(upper) > 255:  # jump offsets are 8 bits
        raise ValueError("seccomp filter too large for one jump")
    return [(_JGE_K, 0, len(upper), numbers[middle]), *upper, *lower]


def encode(instructions: list[tuple[int, int, int, int]]) -> bytes:
    """The instructions as the kernel's ``struct sock_filter`` array."""
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in instructions)


# Built once when the worker imports the runtime, so a job's fork only makes the prctl call.
_ENCODED = encode(program()) if SUPPORTED else b""
_BUFFER = ctypes.create_string_buffer(_ENCODED, len(_ENCODED))


_PROGRAM = _Program(len(_ENCODED) // 8, ctypes.addressof(_BUFFER))
_PROGRAM_ADDRESS = ctypes.addressof(_PROGRAM)


def install() -> None:
    """Install the filter on the calling thread (and everything it starts from now on).

    Requires ``PR_SET_NO_NEW_PRIVS`` already set (or CAP_SYS_ADMIN).

    Raises:
        OSError: the machine is not supported or the kernel refused the filter.
    """
    if not _ENCODED:
        raise OSError(errno.ENOSYS, f"no seccomp filter for {MACHINE}")
    native.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, _PROGRAM_ADDRESS)
