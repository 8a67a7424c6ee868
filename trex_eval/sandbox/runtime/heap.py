"""The zygote's C heap, left so that a job's first allocations touch no page it shares for nothing.

A job is a fork of the zygote: every page starts shared and is copied (a fault and 4 KiB) the
first time the job writes to it. glibc's ``malloc`` keeps freed chunks in lists threaded through
the chunks themselves, so taking a chunk from a list writes into its neighbours in that list,
which lie anywhere in the heap. The imports a zygote does leave a few hundred such chunks, and
every job then copied pages it never used, only to unlink a chunk: with HiGHS tiny programs,
0.37 ms of copy-on-write faults per job under ``unlink_chunk``/``_int_malloc`` (4 % of a program's
CPU, measured with ``perf record -a -g``; a worker that served jobs itself had none, because the
jobs' own churn had left its lists short and hot).

:func:`claim_free_chunks` allocates, and never frees, what the allocator's bins hold (largest
requests first, each size until it is served from the top of the heap instead), so that a job's
allocations come from the top: fresh pages, one after the other. What is claimed is the zygote's
own free memory from its start-up (the zygote never holds a job's bytes), a few hundred KiB that no
process writes again. Where the C library is not glibc 2.33 or later it does nothing.
"""

from __future__ import annotations

import ctypes
import time

_MOST_CLAIMED = 20_000
"""Chunks claimed at most in one call (a start-up heap has hundreds)."""

_BUDGET_S = 0.25
"""Seconds one call may take at most (each step walks the bins twice, for ``mallinfo2``)."""

# A request of r bytes takes a chunk of r + 8 rounded up to 16: these are every small-bin size,
# then a ladder of large requests below the default mmap threshold (128 KiB). Descending: once
# the heap's top serves a request, no binned chunk that large is left.
_REQUESTS = (
    *sorted({*(1 << k for k in range(10, 17)), *(3 << k for k in range(9, 15))}, reverse=True),
    *range(1000, 0, -16),
)


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def claim_free_chunks() -> int:
    """Claim the chunks glibc's bins hold in this process (see the module docstring); returns how
    many were claimed (0 where ``mallinfo2`` is missing). Stops early, leaving the rest binned,
    after :data:`_MOST_CLAIMED` chunks or :data:`_BUDGET_S` seconds; never raises for that."""
    try:
        libc = ctypes.CDLL(None)
        mallinfo2 = libc.mallinfo2
    except (OSError, AttributeError):
        return 0
    mallinfo2.restype = _MallInfo2
    malloc = libc.malloc
    malloc.restype = ctypes.c_void_p
    malloc.argtypes = [ctypes.c_size_t]
    free = libc.free
    free.restype = None
    free.argtypes = [ctypes.c_void_p]
    deadline = time.monotonic() + _BUDGET_S
    claimed = 0
    for size in _REQUESTS:
        while claimed < _MOST_CLAIMED and time.monotonic() < deadline:
            before = mallinfo2()
            pointer = malloc(size)
            if pointer is None:
                return claimed
            after = mallinfo2()
            # The top of the heap shrank, the heap grew, or the chunk was mapped on its own: no
            # binned chunk of this size is left, and this one goes back (next to the top).
            if (after.keepcost, after.arena, after.hblks) != (before.keepcost, before.arena, before.hblks):
                free(pointer)
                break
            claimed += 1
    return claimed
